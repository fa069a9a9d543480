"""The finite-set engine: terminals that are an alternation of many literal strings.

`finite_set_dfa` is the hook `pda.regex.product.terminal_dfa` calls: when a
terminal's pattern is a pure alternation of literals (Lark `"a" | "b" | ...`),
its minimal DFA is built directly from the sorted strings (`build_literal_dfa`)
instead of through regex → NFA → subset construction. The language is exactly
the regex path's.

`pda.trie.join` joins such a DFA's states with the vocabulary trie, and
`pda.trie.lookup` answers the token index from that table (`pda.compile` wires
it in). They are not imported here: they import the token index, which imports
this package through the lexer. See docs/finite_set.md.
"""

from __future__ import annotations

from pda.grammar.ir import TerminalDef
from pda.regex.dfa import DEFAULT_MAX_DFA_STATES, LexerDFA
from pda.trie.builder import LiteralTrie, build_literal_dfa
from pda.trie.literals import literal_alternatives

# Below this many alternatives the regex path is as fast (both ~10 ms); see docs/finite_set.md.
FINITE_SET_MIN_CHOICES = 8


def finite_set_dfa(t: TerminalDef, *, max_states: int = DEFAULT_MAX_DFA_STATES) -> LexerDFA | None:
    """The terminal's DFA built as a literal trie, or None when it is not a finite literal set.

    Only strings that are valid UTF-8 (no lone surrogates) qualify: the byte-level
    regex path would never match the others, and the trie would.
    """
    if t.lazy:
        return None
    strings = literal_alternatives(t.pattern, t.flags)
    if strings is None or len(strings) < FINITE_SET_MIN_CHOICES:
        return None
    try:
        encoded = [s.encode("utf-8") for s in strings]
    except UnicodeEncodeError:
        return None
    return build_literal_dfa(encoded, name=t.name, max_states=max_states)


__all__ = ["FINITE_SET_MIN_CHOICES", "LiteralTrie", "build_literal_dfa", "finite_set_dfa", "literal_alternatives"]
