"""Counted JSON strings (`minLength`/`maxLength`) served lazily give the eager path's masks at every position.

A JSON Schema string with a length bound is a counted repeat of one JSON character (`"(?:<char>){m,n}"`; past
64 the front end splits it into HEAD/CHUNK/TAIL terminals): lazily its states are derivative terms, one per
remaining count, made as walks and the shared product's grower reach them. Each schema here is compiled with every
terminal lazy (`LAZY_MIN_COUNT` 0) and eagerly, then both are fed the same tokens, chosen to stay inside the string
most of the time so that the walk reaches the string's last counts (where the lazy states are the ones a walk
ends in), and their masks and `can_end` are compared at every step.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

import pda
from pda.lexer import terminals as terminals_module
from pda.regex.lazy import LazyDFA
from tests.classifications import mask_ids
from tests.test_masks import synthetic_vocab

EAGER = pda.Limits(max_lexer_states=pda.Limits().max_lexer_states - 1)  # another recognizer than the default's

# (minLength, maxLength): around the front end's chunk of 64, the walk's reach and small counts.
BOUNDS = [(0, 1), (0, 5), (2, 16), (0, 17), (0, 63), (64, 64), (0, 65), (3, 100), (70, 129), (0, 200), (0, 257)]


@pytest.fixture(autouse=True)
def scratch_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def vocab() -> pda.Vocabulary:
    return synthetic_vocab()


def compile_both(schema: dict, vocab: pda.Vocabulary,
                 monkeypatch: pytest.MonkeyPatch) -> tuple[pda.CompiledGrammar, pda.CompiledGrammar]:
    """(lazy, eager) compilations of one schema: every regex terminal lazy in the first, none in the second."""
    grammar = pda.Grammar.from_json_schema(schema)
    monkeypatch.setattr(terminals_module, "LAZY_MIN_COUNT", 0)
    lazy = pda.CompiledGrammar(grammar, vocab, warmup_seconds=0, disk_cache=False)
    monkeypatch.setattr(terminals_module, "LAZY_MIN_COUNT", 10**9)
    eager = pda.CompiledGrammar(grammar, vocab, warmup_seconds=0, disk_cache=False, limits=EAGER)
    assert any(isinstance(d, LazyDFA) for d in lazy.lexer.dfas)
    assert not any(isinstance(d, LazyDFA) for d in eager.lexer.dfas)
    return lazy, eager


def drive_in_lockstep(lazy: pda.CompiledGrammar, eager: pda.CompiledGrammar, vocab: pda.Vocabulary,
                      rng: random.Random, steps: int) -> int:
    """Feed both the same tokens from the lazy mask, nine in ten without a quote (deep into the string): equal masks
    and `can_end` at each step. Returns the bytes fed."""
    state, other = lazy.initial_state(), eager.initial_state()
    fed = 0
    for _ in range(steps):
        mask = lazy.text_mask(*state)
        assert np.array_equal(mask, eager.text_mask(*other)), fed
        assert lazy.can_end(*state) == eager.can_end(*other)
        allowed = [int(t) for t in mask_ids(mask) if vocab.tokens[int(t)] is not None]
        if not allowed:
            break
        inside = [t for t in allowed if b'"' not in vocab.tokens[t]]
        token = vocab.tokens[rng.choice(inside if inside and rng.random() < 0.9 else allowed)]
        state, other = lazy.scanner.feed(*state, token), eager.scanner.feed(*other, token)
        fed += len(token)
    return fed


@pytest.mark.parametrize("bounds", BOUNDS, ids=[f"{lo}-{hi}" for lo, hi in BOUNDS])
def test_counted_string_lazy_masks_equal_eager_at_every_length(bounds: tuple[int, int], vocab: pda.Vocabulary,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    lo, hi = bounds
    schema = {"type": "object", "properties": {"s": {"type": "string", "minLength": lo, "maxLength": hi}},
              "required": ["s"], "additionalProperties": False}
    lazy, eager = compile_both(schema, vocab, monkeypatch)
    rng = random.Random(lo * 1000 + hi)
    longest = max(drive_in_lockstep(lazy, eager, vocab, rng, hi + 12) for _ in range(4))
    assert longest >= min(hi, 40)  # the walks went deep into the string, not only around its quotes


def test_strings_of_several_bounds_side_by_side(vocab: pda.Vocabulary, monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted strings that are live together (an anyOf of bounds, a nullable one): the shared product's mixed
    states of two lazy counted strings, as a JSON Schema's split strings meet them."""
    schema = {"type": "object", "properties": {
        "a": {"anyOf": [{"type": "string", "maxLength": 16}, {"type": "string", "minLength": 20, "maxLength": 90}]},
        "b": {"type": ["string", "null"], "maxLength": 150},
        "c": {"type": "string", "maxLength": 64},
    }, "required": ["a", "b", "c"], "additionalProperties": False}
    lazy, eager = compile_both(schema, vocab, monkeypatch)
    rng = random.Random(11)
    for _ in range(8):
        drive_in_lockstep(lazy, eager, vocab, rng, 120)
