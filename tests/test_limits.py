"""`pda.Limits`: every budget reachable from `compile`, and the sticky error state ending a generation cleanly."""

from __future__ import annotations

import dataclasses
import gc
import time

import numpy as np
import pytest

import pda
from pda.integrations.bitmask import allocate_token_bitmask, unpack_bitmask
from tests.conftest import GRAMMARS

TOKENS = [b"a", b"b", b"ab", b"abcdefghij", None]
EOS = 4
AMBIGUOUS = 'start: e\ne: e e | "a"\n'


@pytest.fixture(scope="module")
def vocab() -> pda.Vocabulary:
    return pda.Vocabulary.from_tokens(TOKENS, eos_ids=[EOS])


def run_until_error(m: pda.Matcher, token: int, most: int) -> int:
    """Accept `token` until the matcher refuses it; the number accepted."""
    for n in range(most):
        if not m.accept_token(token):
            return n
    return most


def test_limits_are_frozen_hashable_and_checked() -> None:
    limits = pda.Limits()
    assert limits == pda.Limits() and hash(limits) == hash(pda.Limits())
    with pytest.raises(dataclasses.FrozenInstanceError):
        limits.max_node_work = 1  # type: ignore[misc]
    with pytest.raises(TypeError, match="max_node_work"):
        pda.Limits(max_node_work=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="max_node_items"):
        pda.Limits(max_node_items=True)
    with pytest.raises(ValueError, match="max_lexer_states"):
        pda.Limits(max_lexer_states=0)
    with pytest.raises(ValueError, match="max_node_seconds"):
        pda.Limits(max_node_seconds=0)
    with pytest.raises(ValueError, match="warmup_seconds"):
        pda.Limits(warmup_seconds=float("nan"))
    assert pda.Limits(warmup_seconds=0, warmup_nodes=0).warmup_nodes == 0


def test_limits_are_part_of_the_compile_memo_key(vocab: pda.Vocabulary) -> None:
    grammar = pda.Grammar.from_lark('start: "a"+\n')
    default = pda.compile(grammar, vocab)
    assert pda.compile(grammar, vocab, limits=pda.Limits()) is default
    tight = pda.compile(grammar, vocab, limits=pda.Limits(max_node_work=1000))
    assert tight is not default and tight.limits.max_node_work == 1000
    assert pda.compile(grammar, vocab, limits=pda.Limits(max_node_work=1000)) is tight
    # Only parser and lexer budgets need a recogniser of their own.
    assert default.recognizer is grammar.recognizer
    assert pda.compile(grammar, vocab, limits=pda.Limits(max_forced_bytes=3)).recognizer is grammar.recognizer
    assert tight.recognizer is not grammar.recognizer and tight.recognizer.parser.limits.max_node_work == 1000


def test_ambiguous_grammar_hits_the_default_work_budget(vocab: pda.Vocabulary) -> None:
    """`e: e e` costs O(n^2) per token; the default budget stops it long before 0.29 s a token."""
    m = pda.Matcher(pda.compile(pda.Grammar.from_lark(AMBIGUOUS), vocab))
    bitmask = allocate_token_bitmask(1, len(TOKENS))
    worst = 0.0
    gc.disable()  # time the parser's work, not collections of whatever else the test process holds
    try:
        for n in range(2000):
            started = time.perf_counter()
            ok = m.accept_token(0)
            m.fill_bitmask(bitmask)
            worst = max(worst, time.perf_counter() - started)
            if not ok:
                break
    finally:
        gc.enable()
    assert isinstance(m.error, pda.LimitExceeded) and "max_node_work" in str(m.error)
    assert 100 < n < 1500
    assert worst < 1.0  # ~20 ms at the limit (docs/limits.md); generous for a loaded machine


def test_sticky_error_ends_the_text_cleanly(vocab: pda.Vocabulary) -> None:
    m = pda.Matcher(pda.compile(pda.Grammar.from_lark(AMBIGUOUS), vocab, limits=pda.Limits(max_node_work=2000)))
    accepted = run_until_error(m, 0, 500)
    assert isinstance(m.error, pda.LimitExceeded) and m.num_tokens == accepted
    bitmask = allocate_token_bitmask(1, len(TOKENS))
    m.fill_bitmask(bitmask)
    assert bitmask[0].tolist() == [1 << EOS]
    assert m.allowed_token_ids().tolist() == [EOS] and m.is_allowed(EOS) and not m.is_allowed(0)
    assert m.can_end() and m.forced_bytes() == b"" and not m.is_terminated()
    assert not m.accept_token(0) and not m.accept_bytes(b"a")
    assert m.accept_token(EOS) and m.is_terminated() and not m.can_end()
    assert m.forced_bytes() == b"" and m.allowed_token_ids().tolist() == [EOS]
    m.rollback(1)  # the EOS, then the error: back to the last good state
    assert m.error is None and not m.is_terminated() and m.num_tokens == accepted
    m.reset()
    assert m.error is None and m.accept_token(0)


def test_node_items_and_time_budgets(vocab: pda.Vocabulary) -> None:
    grammar = pda.Grammar.from_lark(AMBIGUOUS)
    items = pda.Matcher(pda.compile(grammar, vocab, limits=pda.Limits(max_node_items=50)))
    run_until_error(items, 0, 500)
    assert "max_node_items" in str(items.error)
    clock = pda.Matcher(pda.compile(grammar, vocab, limits=pda.Limits(max_node_seconds=1e-9)))
    run_until_error(clock, 0, 2000)
    assert "max_node_seconds" in str(clock.error)


def test_lexer_state_budget_is_checked_at_compile(vocab: pda.Vocabulary) -> None:
    grammar = pda.Grammar.from_lark("start: WORD\nWORD: /[a-z]{1,300}/\n")
    assert pda.compile(grammar, vocab).recognizer.lexer.max_states == pda.Limits().max_lexer_states
    limits = pda.Limits(max_lexer_states=100)
    with pytest.raises(pda.LimitExceeded, match="max_(lexer_)?states"):  # the basic mode builds terminals eagerly
        pda.compile(pda.Grammar.from_lark("// pda: lexer=basic\nstart: WORD\nWORD: /[a-z]{1,300}/\n"), vocab,
                    limits=limits)


def test_a_lazy_terminal_meets_the_lexer_state_budget_when_stepped(vocab: pda.Vocabulary) -> None:
    """A terminal whose eager DFA would pass `max_lexer_states` is built lazily (docs/lazy_dfa.md): the budget
    bounds the states it makes as the text is read, a sticky `LimitExceeded` in the matcher past it."""
    grammar = pda.Grammar.from_lark("start: WORD\nWORD: /[a-z]{1,300}/\n")
    compiled = pda.compile(grammar, vocab, limits=pda.Limits(max_lexer_states=100))
    matcher = pda.Matcher(compiled)
    assert matcher.accept_bytes(b"a" * 90) and matcher.error is None
    matcher.accept_bytes(b"a" * 20)
    assert isinstance(matcher.error, pda.LimitExceeded)


def test_forced_bytes_budget(vocab: pda.Vocabulary) -> None:
    grammar = pda.Grammar.from_lark('start: "abcdefghij" "k"\n')
    assert pda.Matcher(pda.compile(grammar, vocab)).forced_bytes() == b"abcdefghijk"
    assert pda.Matcher(pda.compile(grammar, vocab, limits=pda.Limits(max_forced_bytes=4))).forced_bytes() == b"abcd"


def test_warm_up_budgets(vocab: pda.Vocabulary) -> None:
    grammar = pda.Grammar.from_lark('start: ("a" | "b")+\n')
    compiled = pda.compile(grammar, vocab, limits=pda.Limits(warmup_nodes=1))
    assert compiled.warm_up() <= 1
    assert compiled.warm_up(max_nodes=3) <= 3
    lazy = pda.compile(grammar, vocab, limits=pda.Limits(warmup_seconds=0))
    assert pda.Matcher(lazy).allowed_token_ids().tolist() == [0, 1, 2]


def test_a_limit_during_warm_up_is_left_to_serve_time(vocab: pda.Vocabulary) -> None:
    """Compile does not raise for a budget only some states exceed; the matcher reaching them does."""
    compiled = pda.compile(pda.Grammar.from_lark(AMBIGUOUS), vocab, limits=pda.Limits(max_node_items=8))
    m = pda.Matcher(compiled)
    assert run_until_error(m, 0, 100) < 100 and isinstance(m.error, pda.LimitExceeded)
    assert np.array_equal(m.allowed_token_ids(), [EOS])


def test_masks_do_not_keep_the_nodes_they_probe_alive() -> None:
    """A long text keeps one parser node a token, not one more per boundary its masks probed (gc heap)."""
    from pda.parser.earley import RECENT_PROBES, Node

    tokens = pda.Vocabulary.from_tokens([b"[", b"]", b"1", b"1,", b"[1", b"]]", None], eos_ids=[6])
    m = pda.Matcher(pda.compile(pda.Grammar.load(str(GRAMMARS / "json.lark")), tokens))
    bitmask = allocate_token_bitmask(1, 7)
    for _ in range(RECENT_PROBES):  # until the parser's probe memo (bounded) is full
        assert m.accept_token(0)
        m.fill_bitmask(bitmask)
    gc.collect()
    before = sum(type(o) is Node for o in gc.get_objects())
    for _ in range(300):
        assert m.accept_token(0)
        m.fill_bitmask(bitmask)
    assert np.flatnonzero(unpack_bitmask(bitmask, 7)[0]).tolist() == [0, 1, 2, 3, 4, 5]
    gc.collect()
    assert sum(type(o) is Node for o in gc.get_objects()) - before <= 310  # was 2 a token
