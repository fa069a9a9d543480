"""The public boundary of `Matcher`, `compile` and `Vocabulary`: argument checks, copies and pickling."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
import torch

import pda
from pda.integrations.bitmask import allocate_token_bitmask, unpack_bitmask
from tests.conftest import GRAMMARS

TOKENS = [b"[", b"]", b"1", b",", b"12", b" ", None, None] + [b"x"] * 40  # 48 ids: two mask words
EOS, SPECIAL = 6, 7


@pytest.fixture(scope="module")
def vocab() -> pda.Vocabulary:
    return pda.Vocabulary.from_tokens(TOKENS, eos_ids=[EOS], special_ids=[SPECIAL])


@pytest.fixture(scope="module")
def compiled(vocab: pda.Vocabulary) -> pda.CompiledGrammar:
    return pda.compile(pda.Grammar.load(str(GRAMMARS / "json.lark")), vocab)


def started(compiled: pda.CompiledGrammar) -> pda.Matcher:
    m = pda.Matcher(compiled)
    assert m.accept_token(0) and m.accept_token(2)
    return m


@pytest.mark.parametrize("bad", [1.9, 1.0, "2", True, np.bool_(True), None, b"2"])
def test_token_ids_must_be_integers(compiled: pda.CompiledGrammar, bad: object) -> None:
    m = pda.Matcher(compiled)
    with pytest.raises(TypeError, match="token id"):
        m.accept_token(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="token id"):
        m.is_allowed(bad)  # type: ignore[arg-type]
    assert m.num_tokens == 0


def test_numpy_and_torch_integers_are_ids(compiled: pda.CompiledGrammar) -> None:
    m = pda.Matcher(compiled)
    assert m.accept_token(np.int64(0)) and m.accept_token(torch.tensor(2)) and m.accept_token(np.uint8(1))
    assert m.is_allowed(np.int32(EOS)) and m.accept_token(np.int16(EOS)) and m.is_terminated()


def test_ids_outside_the_vocabulary_are_rejected(compiled: pda.CompiledGrammar) -> None:
    m = pda.Matcher(compiled)
    for bad in (-1, -29, len(TOKENS), 10**30):
        with pytest.raises(pda.TokenRejected, match="outside the vocabulary"):
            m.is_allowed(bad)
        with pytest.raises(pda.TokenRejected, match="outside the vocabulary"):
            m.accept_token(bad)
    assert not m.is_allowed(1) and m.is_allowed(0)


def test_fill_bitmask_rows(compiled: pda.CompiledGrammar) -> None:
    m = started(compiled)
    expected = m.allowed_token_ids().tolist()
    bitmask = allocate_token_bitmask(2, len(TOKENS))
    m.fill_bitmask(bitmask, np.int64(1))
    assert np.flatnonzero(unpack_bitmask(bitmask, len(TOKENS))[1]).tolist() == expected
    for bad in (True, 1.0, "1"):
        with pytest.raises(TypeError, match="row"):
            m.fill_bitmask(bitmask, bad)  # type: ignore[arg-type]
    for bad in (-1, 2, np.int8(-1)):
        with pytest.raises(ValueError, match="outside a bitmask of 2 rows"):
            m.fill_bitmask(bitmask, bad)
        with pytest.raises(IndexError):
            m.fill_bitmask(torch.from_numpy(bitmask), bad)


@pytest.mark.parametrize("dtype", [np.float32, np.bool_, np.int8, np.int16, np.int64, np.uint64])
def test_numpy_bitmasks_of_other_dtypes_are_refused(compiled: pda.CompiledGrammar, dtype: type) -> None:
    bitmask = np.full((1, 2), 7, dtype=dtype)
    before = bitmask.copy()
    with pytest.raises(TypeError, match="int32 or uint32"):
        started(compiled).fill_bitmask(bitmask)
    assert np.array_equal(bitmask, before)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_torch_bitmasks_of_other_dtypes_are_refused(compiled: pda.CompiledGrammar, dtype: torch.dtype) -> None:
    with pytest.raises(TypeError, match="int32 or uint32"):
        started(compiled).fill_bitmask(torch.zeros((1, 2), dtype=dtype))


def test_uint32_and_non_array_bitmasks(compiled: pda.CompiledGrammar) -> None:
    m = started(compiled)
    reference = allocate_token_bitmask(1, len(TOKENS))
    m.fill_bitmask(reference)
    unsigned = np.zeros((1, 2), dtype=np.uint32)
    m.fill_bitmask(unsigned)
    assert np.array_equal(unsigned.view(np.int32), reference)
    if hasattr(torch, "uint32"):
        tensor = torch.zeros((1, 2), dtype=torch.uint32)
        m.fill_bitmask(tensor)
        assert np.array_equal(tensor.numpy().view(np.int32), reference)
    with pytest.raises(TypeError, match="numpy array or a torch tensor"):
        m.fill_bitmask([[0, 0]])
    with pytest.raises(ValueError, match="2-D"):
        m.fill_bitmask(np.zeros(2, dtype=np.int32))


def test_copies_are_independent(compiled: pda.CompiledGrammar) -> None:
    m = started(compiled)
    for other in (copy.copy(m), copy.deepcopy(m), m.copy()):
        assert other.compiled is compiled
        assert other.accept_token(1) and other.is_allowed(EOS)
        assert m.num_tokens == 2 and not m.is_allowed(EOS)
        other.rollback(3)
        assert m.num_tokens == 2
    assert copy.deepcopy(compiled) is compiled and copy.copy(compiled) is compiled


def test_compiled_grammar_pickles_by_key(compiled: pda.CompiledGrammar, vocab: pda.Vocabulary) -> None:
    assert pickle.loads(pickle.dumps(compiled)) is compiled  # the memo hit in this process
    limits = pda.Limits(max_node_work=5000, warmup_seconds=0)
    direct = pda.CompiledGrammar(compiled.grammar, vocab, mask_width=100, limits=limits, disk_cache=False)
    rebuilt = pickle.loads(pickle.dumps(direct))
    assert rebuilt is pda.compile(compiled.grammar, vocab, mask_width=100, limits=limits)
    assert rebuilt.limits == limits and rebuilt.vocab_size == 100
    assert np.array_equal(pda.Matcher(rebuilt).allowed_token_ids(), pda.Matcher(direct).allowed_token_ids())


def test_grammar_pickles_by_value_after_use(compiled: pda.CompiledGrammar) -> None:
    grammar = compiled.grammar
    assert grammar.accepts("[1]")  # the recogniser (parser nodes, weak tables) is built
    back = pickle.loads(pickle.dumps(grammar))
    assert back.ir == grammar.ir and back.accepts("[1, 12]") and not back.accepts("[1")


def test_vocabulary_pickles_by_value(vocab: pda.Vocabulary) -> None:
    back = pickle.loads(pickle.dumps(vocab))
    assert back == vocab and back.tokens == vocab.tokens and back.eos_ids == vocab.eos_ids


def test_matcher_pickles_with_its_steps(compiled: pda.CompiledGrammar) -> None:
    m = started(compiled)
    assert m.accept_bytes(b", 1")
    back = pickle.loads(pickle.dumps(m))
    assert back.compiled is compiled and back._steps == [0, 2, b", 1"]
    assert back.allowed_token_ids().tolist() == m.allowed_token_ids().tolist()
    assert back.accept_token(1) and back.accept_token(EOS) and back.is_terminated()
    done = pickle.loads(pickle.dumps(back))
    assert done.is_terminated() and done.num_tokens == 5
    done.rollback(2)
    assert done.allowed_token_ids().tolist() == m.allowed_token_ids().tolist()


def test_matcher_in_the_error_state_pickles(vocab: pda.Vocabulary) -> None:
    grammar = pda.Grammar.from_lark('start: e\ne: e e | "1"\n')
    m = pda.Matcher(pda.compile(grammar, vocab, limits=pda.Limits(max_node_work=500)))
    while m.accept_token(2):
        pass
    assert m.error is not None
    back = pickle.loads(pickle.dumps(m))
    assert isinstance(back.error, pda.LimitExceeded) and back.num_tokens == m.num_tokens
    assert back.allowed_token_ids().tolist() == [EOS]
    assert m.accept_token(EOS)
    ended = pickle.loads(pickle.dumps(m))
    assert ended.is_terminated() and ended.error is not None


def test_compile_checks_its_arguments(vocab: pda.Vocabulary) -> None:
    grammar = pda.Grammar.from_lark('start: "1"\n')
    with pytest.raises(TypeError, match="grammar"):
        pda.compile("start: x", vocab)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="vocab"):
        pda.compile(grammar, TOKENS)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="mask_width"):
        pda.compile(grammar, vocab, mask_width=True)
    with pytest.raises(TypeError, match="mask_width"):
        pda.compile(grammar, vocab, mask_width=64.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="mask_width"):
        pda.compile(grammar, vocab, mask_width=-1)
    with pytest.raises(TypeError, match="limits"):
        pda.compile(grammar, vocab, limits={"max_node_work": 1})  # type: ignore[arg-type]
    assert pda.compile(grammar, vocab, mask_width=np.int64(64)).vocab_size == 64
    with pytest.raises(TypeError, match="CompiledGrammar"):
        pda.Matcher(grammar)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="bytes or str"):
        pda.Matcher(pda.compile(grammar, vocab)).accept_bytes(1)  # type: ignore[arg-type]


def test_empty_vocabulary_is_refused_at_construction() -> None:
    with pytest.raises(pda.PdaError, match="at least one token") as info:
        pda.Vocabulary.from_tokens([])
    assert isinstance(info.value, ValueError)


def test_allocate_token_bitmask_checks_sizes() -> None:
    assert allocate_token_bitmask(np.int64(2), 33).shape == (2, 2)
    with pytest.raises(TypeError, match="vocab_size"):
        allocate_token_bitmask(1, 33.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="batch_size"):
        allocate_token_bitmask(True, 33)
    with pytest.raises(ValueError, match="batch_size"):
        allocate_token_bitmask(-1, 33)
