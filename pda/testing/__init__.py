"""Testing tools: a grammar sampler, hypothesis strategies, an equivalence checker.

`from_grammar` and `near_misses` need `hypothesis` (a test dependency); they are
imported on first use so the rest works without it.
"""

from __future__ import annotations

from typing import Any

from pda.testing.sampler import GrammarSampler, RandomChoices, ReferenceRecognizer


def from_grammar(grammar: Any, **options: Any) -> Any:
    """Hypothesis strategy of sentences of `grammar` (see `pda.testing.strategies`)."""
    from pda.testing.strategies import from_grammar as strategy

    return strategy(grammar, **options)


def near_misses(grammar: Any, **options: Any) -> Any:
    """Hypothesis strategy of mutated sentences of `grammar` (see `pda.testing.strategies`)."""
    from pda.testing.strategies import near_misses as strategy

    return strategy(grammar, **options)


__all__ = ["GrammarSampler", "RandomChoices", "ReferenceRecognizer", "from_grammar", "near_misses"]
