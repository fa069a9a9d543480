"""The matcher calls serving engines make: `accept_tokens`, `validate_tokens`, per-matcher stop ids, batch fills.

Each is checked against the single-step API it is built on (`accept_token`, `rollback`,
`fill_bitmask`), on random token sequences that include what speculative drafts hold:
special ids, padding ids past the vocabulary, tokens the grammar refuses.
"""

from __future__ import annotations

import pickle
import random

import numpy as np
import pytest

import pda
from pda.integrations.bitmask import allocate_token_bitmask, unpack_bitmask
from tests.conftest import GRAMMARS

TOKENS = [b"[", b"]", b"1", b",", b"12", b" ", None, None, None, b'"a"', b"{", b"}", b":", b"[1", b"],"]
EOS, SPECIAL, STOP = 6, 7, 8
WIDTH = 64  # a model's logits: ids past the vocabulary are padding


@pytest.fixture(scope="module")
def compiled() -> pda.CompiledGrammar:
    vocab = pda.Vocabulary.from_tokens(TOKENS, eos_ids=[EOS], special_ids=[SPECIAL, STOP])
    return pda.compile(pda.Grammar.load(str(GRAMMARS / "json.lark")), vocab, mask_width=WIDTH)


def state(m: pda.Matcher) -> tuple:
    """What a caller can observe of a matcher."""
    return (m.num_tokens, m.is_terminated(), m.can_end(), m.allowed_token_ids().tolist(), m.error)


def draft(rng: random.Random) -> list[int]:
    """A speculative draft: mostly text tokens, sometimes EOS, a special id or padding past the vocabulary."""
    pool = [0, 0, 1, 2, 3, 4, 5, 9, 10, 11, 12, 13, 14, EOS, SPECIAL, STOP, len(TOKENS) + 3, WIDTH - 1]
    return [rng.choice(pool) for _ in range(rng.randint(0, 8))]


def single_steps(m: pda.Matcher, tokens: list[int]) -> int:
    """How many of `tokens` `accept_token` takes in a row on `m` (advancing it)."""
    for n, token in enumerate(tokens):
        try:
            if not m.accept_token(token):
                return n
        except pda.TokenRejected:
            return n
    return len(tokens)


@pytest.mark.parametrize("seed", range(40))
def test_validate_and_accept_tokens_agree_with_single_steps(compiled: pda.CompiledGrammar, seed: int) -> None:
    rng = random.Random(seed)
    m = pda.Matcher(compiled)
    for _ in range(20):
        tokens = draft(rng)
        before = state(m)
        expected = single_steps(m.copy(), tokens)
        assert m.validate_tokens(tokens) == tokens[:expected]
        assert state(m) == before  # validation changes nothing
        if m.accept_tokens(tokens):
            assert expected == len(tokens) and m.num_tokens == before[0] + len(tokens)
        else:
            assert expected < len(tokens) and state(m) == before  # all or nothing
            m.accept_tokens(tokens[:expected])
        if m.is_terminated():
            m.reset()


def test_accept_tokens_refuses_drafts_with_special_and_padding_ids(compiled: pda.CompiledGrammar) -> None:
    m = pda.Matcher(compiled)
    for tokens in ([0, SPECIAL], [0, 2, WIDTH - 1], [0, WIDTH + 100], [0, -1], [1]):
        assert not m.accept_tokens(tokens) and m.num_tokens == 0
        assert m.validate_tokens(tokens) == ([0, 2] if tokens[:2] == [0, 2] else [0] if tokens[0] == 0 else [])
    assert m.accept_tokens([0, 2, 1, EOS]) and m.is_terminated()
    assert not m.accept_tokens([0]) and m.validate_tokens([0, EOS]) == []
    m.reset()
    for bad in ([0, "1"], [0, 2.0]):  # checked before anything is accepted
        with pytest.raises(TypeError, match="token id"):
            m.validate_tokens(bad)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="token id"):
            m.accept_tokens(bad)  # type: ignore[arg-type]
        assert m.num_tokens == 0


def test_a_limit_hit_in_accept_tokens_leaves_the_sticky_error() -> None:
    vocab = pda.Vocabulary.from_tokens([b"a", None], eos_ids=[1])
    grammar = pda.Grammar.from_lark('start: x*\nx: x x | "a" |')  # ambiguous: every node grows
    m = pda.Matcher(pda.compile(grammar, vocab, limits=pda.Limits(max_node_work=400)))
    assert not m.accept_tokens([0] * 60)
    assert m.num_tokens == 0 and m.error is not None and m.allowed_token_ids().tolist() == [1]
    assert m.validate_tokens([1]) == [1] and m.error is not None  # validation keeps the error too


def test_stop_ids_replace_eos_without_recompiling(compiled: pda.CompiledGrammar) -> None:
    plain = pda.Matcher(compiled)
    stopped = pda.Matcher(compiled, stop_token_ids=[STOP, SPECIAL])
    rng = random.Random(3)
    bitmask, other = allocate_token_bitmask(1, WIDTH), allocate_token_bitmask(1, WIDTH)
    for _ in range(30):
        plain.fill_bitmask(bitmask)
        stopped.fill_bitmask(other)
        a, b = unpack_bitmask(bitmask, WIDTH)[0], unpack_bitmask(other, WIDTH)[0]
        assert b[STOP] == b[SPECIAL] == a[EOS] and not b[EOS]  # the stop ids where EOS would be
        a[[EOS, STOP, SPECIAL]] = b[[EOS, STOP, SPECIAL]] = False
        assert np.array_equal(a, b)
        assert stopped.allowed_token_ids().tolist() == np.flatnonzero(unpack_bitmask(other, WIDTH)[0]).tolist()
        choices = [t for t in np.flatnonzero(a) if t < len(TOKENS)]
        if not choices:
            break
        token = int(rng.choice(choices))
        assert plain.accept_token(token) and stopped.accept_token(token)
    assert pda.Matcher(compiled, stop_token_ids=[STOP]).accept_tokens([2, STOP])
    with pytest.raises(pda.TokenRejected):
        stopped.accept_token(EOS)  # not a stop id here: a special id no text holds
    restored = pickle.loads(pickle.dumps(stopped))
    assert state(restored) == state(stopped) and state(stopped.copy()) == state(stopped)
    with pytest.raises(ValueError, match="text token"):
        pda.Matcher(compiled, stop_token_ids=[0])
    with pytest.raises(pda.TokenRejected):
        pda.Matcher(compiled, stop_token_ids=[WIDTH])


def test_fill_bitmasks_equals_single_fills(compiled: pda.CompiledGrammar) -> None:
    rng = random.Random(5)
    matchers = []
    for i in range(24):
        m = pda.Matcher(compiled, stop_token_ids=[STOP] if i % 5 == 0 else None)
        m.accept_tokens([t for t in m.validate_tokens(draft(rng))])
        matchers.append(m)
    matchers[3].error = pda.LimitExceeded("a limit hit earlier")
    rows = list(range(len(matchers)))[::-1]
    batch, single = allocate_token_bitmask(len(matchers), WIDTH), allocate_token_bitmask(len(matchers), WIDTH)
    pda.fill_bitmasks(matchers, batch, rows)
    for m, row in zip(matchers, rows):
        m.fill_next_token_bitmask(single, row)
    assert np.array_equal(batch, single)
    strided = np.zeros((len(matchers), 2 * batch.shape[1]), dtype=np.int32)[:, ::2]  # the general path
    pda.fill_bitmasks(matchers, strided, rows)
    assert np.array_equal(strided, single)
    with pytest.raises(ValueError, match="rows"):
        pda.fill_bitmasks(matchers, batch, rows[:-1])
