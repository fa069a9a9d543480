"""Parts of a cold compile built faster than they were, against the way they were built."""

from __future__ import annotations

import random

import numpy as np

import pda


def test_eos_mask_is_the_packed_bool_row() -> None:
    """`CompiledGrammar.eos_mask` is written bit by bit; it equals a bool row over the mask width packed
    little-endian (the former construction), for EOS ids anywhere in the vocabulary and any mask width."""
    rng = random.Random(3)
    grammar = pda.Grammar.from_json_schema({"type": "boolean"})
    for _ in range(30):
        size = rng.randint(2, 200)
        tokens = [bytes([97 + i % 26]) * (1 + i // 26) for i in range(size)]
        eos = rng.sample(range(size), rng.randint(1, min(4, size - 1)))
        vocab = pda.Vocabulary.from_tokens(tokens, eos_ids=eos)
        width = rng.choice([None, size, size + rng.randint(1, 100)])
        compiled = pda.compile(grammar, vocab, mask_width=width)
        row = np.zeros(compiled.mask_words * 32, dtype=bool)
        row[eos] = True
        expected = np.packbits(row, bitorder="little").view(np.int32)
        assert compiled.eos_mask.dtype == np.int32
        np.testing.assert_array_equal(compiled.eos_mask, expected)
