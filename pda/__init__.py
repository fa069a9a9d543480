"""pda: constrain a language model's output to a context-free grammar, exactly and fast.

The public surface (docs/design.md): `Grammar`, `Vocabulary`, `compile`, `Matcher`, `fill_bitmasks`,
`Limits`, the in-memory caches' budgets (`set_memory_budget`, `memory_budgets`), the
error types, and `pda.integrations`.
"""

from pda._version import __version__
from pda.compiler import CompiledGrammar, compile
from pda.errors import GrammarError, LimitExceeded, ParseError, PdaError, RegexError, TokenRejected
from pda import integrations
from pda.grammar.grammar import Grammar
from pda.limits import Limits
from pda.lru import memory_budgets, set_memory_budget
from pda.matcher import Matcher, fill_bitmasks
from pda.reasoning import ReasoningMatcher
from pda.vocab import Vocabulary



def __getattr__(name: str):
    """`pda.generate` loads the generation loop (and torch) only when used."""
    if name == "generate":
        from pda.generation import generate

        return generate
    raise AttributeError(f"module 'pda' has no attribute {name!r}")


__all__ = [
    "CompiledGrammar",
    "Grammar",
    "GrammarError",
    "LimitExceeded",
    "Limits",
    "Matcher",
    "ParseError",
    "PdaError",
    "ReasoningMatcher",
    "RegexError",
    "TokenRejected",
    "Vocabulary",
    "__version__",
    "compile",
    "fill_bitmasks",
    "memory_budgets",
    "set_memory_budget",
    "generate",
]
