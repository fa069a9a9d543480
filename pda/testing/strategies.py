"""Hypothesis strategies over a grammar's sentences and near-misses.

Every random decision of the sampler is one `integers(0, n-1)` draw with 0 the
simplest option (the least-height rule, the minimum repeat count, the simplest
character), so hypothesis shrinks a failing sentence towards a short one with
few derivation steps.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from pda.testing.sampler import GrammarSampler


class _DrawChoices:
    """`Choices` backed by hypothesis draws."""

    def __init__(self, draw: Any) -> None:
        self.draw = draw

    def below(self, n: int) -> int:
        return self.draw(st.integers(0, n - 1)) if n > 1 else 0


def _sampler(grammar: Any, max_depth: int, max_lexemes: int) -> GrammarSampler:
    if isinstance(grammar, GrammarSampler):
        return grammar
    return GrammarSampler(grammar, max_depth=max_depth, max_lexemes=max_lexemes)


def from_grammar(grammar: Any, *, max_depth: int = 40, max_lexemes: int = 60) -> st.SearchStrategy[str]:
    """Sentences of `grammar` (a `pda.Grammar`, a `GrammarIR`, or a `GrammarSampler`)."""
    sampler = _sampler(grammar, max_depth, max_lexemes)

    @st.composite
    def sentences(draw: Any) -> str:
        return sampler.sample(_DrawChoices(draw))

    return sentences()


def near_misses(grammar: Any, *, max_depth: int = 40, max_lexemes: int = 60) -> st.SearchStrategy[str]:
    """Sentences of `grammar` with one mutation (a lexeme or character deleted,
    duplicated, swapped, inserted or replaced, or the text truncated)."""
    sampler = _sampler(grammar, max_depth, max_lexemes)

    @st.composite
    def mutated(draw: Any) -> str:
        return sampler.near_miss(_DrawChoices(draw))

    return mutated()


__all__ = ["from_grammar", "near_misses"]
