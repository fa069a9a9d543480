"""The matcher's per-step hot path (`accept_token`, `fill_bitmask`) keeps its hooks and answers.

`accept_token` checks an in-range int id inline and `fill_bitmask` asks the masks' owner for the row
itself (one frame fewer each); these tests pin what that must not change: every accepted token goes
through `_advance` (the hook `pda.reasoning` extends), ids are checked as before, and a written row is
the step mask, on memo misses and hits alike.
"""

from __future__ import annotations

import numpy as np
import pytest

import pda
from pda.errors import TokenRejected
from pda.integrations.bitmask import unpack_bitmask
from tests.conftest import GRAMMARS

TOKENS = [b"{", b"}", b'"', b"a", b"b", b":", b",", b" ", b'{"', b'":', b'"a"', b"1", b"12", b"true", b"[", b"]", None, None]
EOS, SPECIAL = 16, 17
DOCUMENT = [b"{", b'"a"', b":", b" ", b"[", b"12", b",", b"true", b"]", b",", b'"', b"b", b'":', b"1", b"}"]


@pytest.fixture(scope="module")
def compiled() -> pda.CompiledGrammar:
    vocab = pda.Vocabulary.from_tokens(TOKENS, eos_ids=[EOS], special_ids=[SPECIAL])
    return pda.compile(pda.Grammar.load(str(GRAMMARS / "json.lark")), vocab)


class _Counting(pda.Matcher):
    """A matcher that records the steps its `_advance` hook sees."""

    def __init__(self, compiled: pda.CompiledGrammar) -> None:
        super().__init__(compiled)
        self.seen: list[tuple[bytes, int | bytes]] = []

    def _advance(self, data: bytes, step: int | bytes) -> bool:
        self.seen.append((data, step))
        return super()._advance(data, step)


def test_every_token_goes_through_the_advance_hook(compiled: pda.CompiledGrammar) -> None:
    m = _Counting(compiled)
    ids = [TOKENS.index(t) for t in DOCUMENT]
    for t in ids:
        assert m.accept_token(t)
    assert m.seen == [(TOKENS[t], t) for t in ids]
    assert not m.accept_token(TOKENS.index(b"}"))  # refused by the grammar, still through the hook
    assert m.seen[-1] == (b"}", TOKENS.index(b"}"))
    assert m.accept_token(EOS) and m.is_terminated()
    assert len(m.seen) == len(ids) + 1  # EOS is not a text step


def test_ids_are_checked_as_before(compiled: pda.CompiledGrammar) -> None:
    m = pda.Matcher(compiled)
    assert m.accept_token(np.int64(TOKENS.index(b"{")))  # a numpy integer takes the general check
    for bad in (-1, len(TOKENS), 10**30):
        with pytest.raises(TokenRejected):
            m.accept_token(bad)
    with pytest.raises(TokenRejected):
        m.accept_token(SPECIAL)
    for wrong in (True, 1.0, "1"):
        with pytest.raises(TypeError):
            m.accept_token(wrong)
    assert m.accept_token(TOKENS.index(b"}")) and m.can_end()


def test_rows_are_the_step_masks_on_misses_and_hits(compiled: pda.CompiledGrammar) -> None:
    bitmask = np.full((2, compiled.mask_words), -1, dtype=np.int32)
    for _ in range(2):  # the first pass computes the masks, the second reads them back
        m = pda.Matcher(compiled)
        for t in [TOKENS.index(t) for t in DOCUMENT]:
            m.fill_bitmask(bitmask, 1)
            assert np.flatnonzero(unpack_bitmask(bitmask[1:], len(TOKENS))[0]).tolist() == m.allowed_token_ids().tolist()
            assert np.array_equal(bitmask[0], np.full(compiled.mask_words, -1, dtype=np.int32))
            assert m.accept_token(t)
        m.fill_bitmask(bitmask, 1)
        assert np.flatnonzero(unpack_bitmask(bitmask[1:], len(TOKENS))[0]).tolist() == m.allowed_token_ids().tolist()
        assert EOS in m.allowed_token_ids().tolist()
