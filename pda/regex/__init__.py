"""Regular half of pda: terminals' regexes compiled to one byte-level DFA.

`build_lexer_dfa(terminals)` is what the lexer uses; `compile_regex` is the
one-terminal shorthand; `compile_lazy` / `lazy_terminal` build one terminal's DFA
lazily, by derivatives (`pda.regex.lazy`; imported here so that its memory budget,
`lazy_dfa_states`, is always registered). Semantics and refusals are documented in
`pda.regex.syntax` and `pda.regex.dfa`.
"""

from pda.regex.dfa import (
    DEFAULT_MAX_DFA_STATES,
    LexerDFA,
    build_lexer_dfa,
    compile_regex,
    sample_from_dfa,
)
from pda.regex.lazy import LazyDFA, compile_lazy, lazy_terminal
from pda.regex.syntax import has_lazy_quantifier, release_parses

__all__ = [
    "DEFAULT_MAX_DFA_STATES",
    "LazyDFA",
    "LexerDFA",
    "build_lexer_dfa",
    "compile_lazy",
    "compile_regex",
    "has_lazy_quantifier",
    "lazy_terminal",
    "release_parses",
    "sample_from_dfa",
]
