"""Two compiled grammars driven by the same random tokens: their masks must agree at every step (shared by the tests)."""

from __future__ import annotations

import random

import numpy as np

import pda
from tests.classifications import mask_ids


def assert_same_masks_in_lockstep(a: pda.CompiledGrammar, b: pda.CompiledGrammar, vocab: pda.Vocabulary,
                                  rng: random.Random, steps: int) -> None:
    """From both start states, feed tokens drawn from `a`'s mask: equal masks and `can_end` at each step."""
    state, other = a.initial_state(), b.initial_state()
    for _step in range(steps):
        mask = a.text_mask(*state)
        assert np.array_equal(mask, b.text_mask(*other))
        assert a.can_end(*state) == b.can_end(*other)
        allowed = mask_ids(mask)
        if not len(allowed):
            break
        token = vocab.tokens[int(allowed[rng.randrange(len(allowed))])]
        state, other = a.scanner.feed(*state, token), b.scanner.feed(*other, token)
