"""The Matcher's serving API: EOS, rollback, copy, forced bytes, bitmask layout, errors, limits."""

from __future__ import annotations

import time

import numpy as np
import pytest

import pda
from pda.integrations.bitmask import allocate_token_bitmask, apply_token_bitmask_inplace, unpack_bitmask
from tests.conftest import GRAMMARS

TOKENS = [b"{", b"}", b'"', b"a", b"b", b":", b",", b" ", b'{"', b'":', b'"a"', b"1", b"12", b"true", b"tr", b"[", b"]", None, None]
EOS, SPECIAL = 17, 18


@pytest.fixture(scope="module")
def vocab() -> pda.Vocabulary:
    return pda.Vocabulary.from_tokens(TOKENS, eos_ids=[EOS], special_ids=[SPECIAL])


@pytest.fixture(scope="module")
def json_compiled(vocab: pda.Vocabulary) -> pda.CompiledGrammar:
    return pda.compile(pda.Grammar.load(str(GRAMMARS / "json.lark")), vocab)


def ids(*pieces: bytes) -> list[int]:
    return [TOKENS.index(p) for p in pieces]


def test_eos_only_where_the_grammar_can_end(json_compiled: pda.CompiledGrammar) -> None:
    m = pda.Matcher(json_compiled)
    assert not m.can_end() and EOS not in m.allowed_token_ids()
    assert not m.accept_token(EOS)
    for t in ids(b'{"', b"a", b'":', b"1", b"}"):
        assert m.accept_token(t)
    assert m.can_end() and EOS in m.allowed_token_ids()
    assert m.accept_token(EOS) and m.is_terminated()
    assert m.allowed_token_ids().tolist() == [EOS]
    assert not m.accept_token(ids(b" ")[0])


def test_rejected_token_leaves_state_unchanged(json_compiled: pda.CompiledGrammar) -> None:
    m = pda.Matcher(json_compiled)
    assert m.accept_token(ids(b"{")[0])
    before = m.allowed_token_ids()
    assert not m.accept_token(ids(b"1")[0])
    assert np.array_equal(before, m.allowed_token_ids())


def test_rollback_and_copy(json_compiled: pda.CompiledGrammar) -> None:
    m = pda.Matcher(json_compiled)
    start = m.allowed_token_ids()
    for t in ids(b"[", b"12", b",", b"true", b"]"):
        assert m.accept_token(t)
    assert m.accept_token(EOS)
    fork = m.copy()
    m.rollback(2)
    assert not m.is_terminated() and not m.can_end()
    assert m.accept_token(ids(b"]")[0]) and m.can_end()
    assert fork.is_terminated()
    m.rollback(m.num_tokens)
    assert np.array_equal(m.allowed_token_ids(), start)
    with pytest.raises(ValueError):
        m.rollback(1)


def test_forced_bytes(json_compiled: pda.CompiledGrammar) -> None:
    m = pda.Matcher(json_compiled)
    assert m.accept_token(ids(b"tr")[0])
    assert m.forced_bytes() == b"ue"
    assert m.accept_bytes(b"ue") and m.can_end()
    assert m.forced_bytes() == b""


def test_fill_bitmask_bad_bitmasks_are_named(json_compiled: pda.CompiledGrammar) -> None:
    """A bitmask fill_bitmask cannot write gets an error that says why, on every path, and leaves the matcher usable."""
    torch = pytest.importorskip("torch")
    m = pda.Matcher(json_compiled)
    words = json_compiled.mask_words
    read_only = np.zeros((1, words), dtype=np.int32)
    read_only.flags.writeable = False
    cases = [
        (np.zeros((2, words), dtype=np.int32), 2, IndexError, "row 2 is outside a bitmask of 2 rows"),
        (np.zeros((2, words), dtype=np.int32), -1, IndexError, "row -1 is outside"),
        (np.zeros((2, 2 * words), dtype=np.int32)[:, ::2], 5, IndexError, "row 5 is outside"),  # strided
        (torch.zeros((1, words), dtype=torch.int32), 1, IndexError, "row 1 is outside"),
        (np.zeros(words, dtype=np.int32), 0, ValueError, "must be 2-D"),
        (read_only, 0, ValueError, "read-only"),
    ]
    for bitmask, row, error, message in cases:
        with pytest.raises(error, match=message):
            m.fill_bitmask(bitmask, row)
    good = np.zeros((1, words), dtype=np.int32)
    m.fill_bitmask(good)
    assert np.array_equal(good[0], m._mask())


def test_fill_bitmask_numpy_and_torch_rows(json_compiled: pda.CompiledGrammar, vocab: pda.Vocabulary) -> None:
    torch = pytest.importorskip("torch")
    m = pda.Matcher(json_compiled)
    m.accept_token(ids(b"{")[0])
    for bitmask in (allocate_token_bitmask(3, 100), allocate_token_bitmask(3, 100, torch_tensor=True)):
        m.fill_bitmask(bitmask, row=1)
        arr = bitmask.numpy() if hasattr(bitmask, "numpy") else bitmask
        allowed = np.flatnonzero(unpack_bitmask(arr[1:2], 100)[0])
        assert allowed.tolist() == m.allowed_token_ids().tolist()
        assert (arr[0] == -1).all() and (arr[2] == -1).all()  # other rows untouched
    logits = torch.zeros(1, 100)
    bm = allocate_token_bitmask(1, 100, torch_tensor=True)
    m.fill_bitmask(bm)
    apply_token_bitmask_inplace(logits, bm)
    assert torch.isfinite(logits[0]).nonzero().flatten().tolist() == m.allowed_token_ids().tolist()


def test_mask_wider_than_vocabulary(vocab: pda.Vocabulary) -> None:
    compiled = pda.compile(pda.Grammar.load(str(GRAMMARS / "json.lark")), vocab, mask_width=70)
    m = pda.Matcher(compiled)
    bm = allocate_token_bitmask(1, 70)
    m.fill_bitmask(bm)
    assert not unpack_bitmask(bm, 70)[0, len(TOKENS) :].any()
    with pytest.raises(pda.TokenRejected, match="special or unused"):
        m.accept_token(60)
    with pytest.raises(pda.TokenRejected, match="outside the vocabulary"):
        m.accept_token(70)


def test_special_token_is_a_clear_error(json_compiled: pda.CompiledGrammar) -> None:
    m = pda.Matcher(json_compiled)
    with pytest.raises(pda.TokenRejected, match="special"):
        m.accept_token(SPECIAL)
    with pytest.raises(pda.TokenRejected):
        m.accept_token(-1)


def test_limit_exceeded_is_sticky_not_a_crash(vocab: pda.Vocabulary) -> None:
    grammar = pda.Grammar.from_lark('start: s\ns: s s | "a"\n')
    compiled = pda.compile(grammar, vocab, limits=pda.Limits(max_node_items=20))
    m = pda.Matcher(compiled)
    a = ids(b"a")[0]
    for _ in range(200):  # past the nodes compile-time warm-up already built
        if not m.accept_token(a):
            break
    assert isinstance(m.error, pda.LimitExceeded)
    assert "max_node_items" in str(m.error)
    assert m.allowed_token_ids().tolist() == [EOS]
    m.reset()
    assert m.error is None and m.accept_token(a)


def test_one_grammar_compiled_for_two_vocabularies_keeps_masks_apart(vocab: pda.Vocabulary) -> None:
    grammar = pda.Grammar.load(str(GRAMMARS / "json.lark"))
    other = pda.Vocabulary.from_tokens([b"1", b"[", b"]", b",", None], eos_ids=[4])
    first = pda.Matcher(pda.compile(grammar, vocab, mask_width=64))
    second = pda.Matcher(pda.compile(grammar, other))
    assert first.allowed_token_ids().tolist() != second.allowed_token_ids().tolist()
    assert second.allowed_token_ids().tolist() == [0, 1]
    assert ids(b"[")[0] in first.allowed_token_ids()


def _only_byte_by_steps(scanner, node, q):  # the definition: every byte through `Scanner.step`
    viable = [(b, nxt) for b in range(256) if (nxt := scanner.step(node, q, b)) is not None]
    return viable[0] if len(viable) == 1 else None


@pytest.mark.parametrize(
    "grammar, texts",
    [
        (str(GRAMMARS / "json.lark"), ['{"a": [1, tr', '{"a"', "[1", '{"ab": nul', "[]"]),
        ('// pda: lexer=basic\nstart: "select" NAME ";"\nNAME: /[a-z]+/\n%ignore " "\n', ["", "selec", "select x", "select x "]),
        ('start: "abc" ("def" | "dg") "!"\n', ["", "ab", "abc", "abcd", "abcde", "abcdg"]),
    ],
)
def test_only_byte_is_step_over_every_byte(grammar: str, texts: list[str]) -> None:
    g = pda.Grammar.load(grammar) if grammar.endswith(".lark") else pda.Grammar.from_lark(grammar)
    scanner = g.recognizer.scanner
    for text in texts:
        state = scanner.feed(g.recognizer.root, 0, text.encode())
        assert state is not None, text
        assert scanner.only_byte(*state) == _only_byte_by_steps(scanner, *state), text


def test_forced_bytes_of_a_long_literal_is_fast(vocab: pda.Vocabulary) -> None:
    grammar = pda.Grammar.from_lark('start: "' + "x" * 4000 + '" "y"\n')
    m = pda.Matcher(pda.compile(grammar, vocab, limits=pda.Limits(warmup_seconds=0)))
    started = time.perf_counter()
    assert m.forced_bytes() == b"x" * 4000 + b"y"
    assert time.perf_counter() - started < 0.5  # ~20 us a byte; stepping all 256 bytes took ~220
