"""`pda.reasoning.ReasoningMatcher`: a token budget for a `<think>` segment, the end forced past it."""

from __future__ import annotations

import pickle
import random
import re

import numpy as np
import pytest

import pda
from pda.matcher import fill_bitmasks
from pda.reasoning import ReasoningMatcher

THINK = {"type": "sequence", "elements": [
    {"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>\n"},
    {"type": "or", "elements": [{"type": "const_string", "value": v} for v in ("yes", "no", "maybe")]}]}
TOKENS = ["<think>", "</think>", "</", "think>", "a", "b", " ", "yes", "no", "\n", "</think>\nyes", "<", ">", "th",
          "</th", "ink>\n", "may", "be", "e", None]
EOS = len(TOKENS) - 1
CLOSE = "</think>\n"  # the grammar's end of the segment


@pytest.fixture(scope="module")
def compiled() -> pda.CompiledGrammar:
    vocab = pda.Vocabulary.from_tokens(TOKENS, eos_ids=[EOS])
    return pda.compile(pda.Grammar.from_structural_tag(THINK), vocab)


def ids(*texts: str) -> list[int]:
    return [TOKENS.index(t) for t in texts]


def test_the_close_is_forced_once_the_budget_is_spent(compiled) -> None:
    m = ReasoningMatcher(compiled, max_tokens=3, close=CLOSE)
    plain = pda.Matcher(compiled)
    for token in ids("<think>", "a", "b", " "):
        assert m.accept_token(token) and plain.accept_token(token)
        if m.tokens_in_segment() is not None and m.tokens_in_segment() < 3:
            assert list(m.allowed_token_ids()) == list(plain.allowed_token_ids())
    assert m.tokens_in_segment() == 3
    # tokens that go on spelling "</think>\n" to its end ("<" does not: no token spells "/think>\n" on)
    assert sorted(m.allowed_token_ids()) == sorted(ids("</think>", "</", "</think>\nyes", "</th"))
    assert m.forced_bytes() == b"</think>\n"
    assert not m.accept_token(TOKENS.index("a")) and m.num_tokens == 4  # refused, nothing changed
    assert m.accept_token(TOKENS.index("</"))
    assert sorted(m.allowed_token_ids()) == sorted(ids("think>", "th"))
    assert m.accept_tokens(ids("think>", "\n"))
    assert m.tokens_in_segment() is None
    assert sorted(m.allowed_token_ids()) == sorted(ids("yes", "no", "may"))


def test_rollback_copy_reset_and_pickle_keep_the_count(compiled) -> None:
    m = ReasoningMatcher(compiled, max_tokens=2, close=CLOSE)
    assert m.accept_tokens(ids("<think>", "a", "b"))
    spent = sorted(m.allowed_token_ids())
    other = m.copy()
    m.rollback(1)
    assert m.tokens_in_segment() == 1 and TOKENS.index("a") in m.allowed_token_ids()
    assert other.tokens_in_segment() == 2 and sorted(other.allowed_token_ids()) == spent
    restored = pickle.loads(pickle.dumps(other))
    assert sorted(restored.allowed_token_ids()) == spent
    m.reset()
    assert m.tokens_in_segment() is None and list(m.allowed_token_ids()) == ids("<think>", "<")


def test_a_zero_budget_and_delimiters_the_grammar_refuses(compiled) -> None:
    m = ReasoningMatcher(compiled, max_tokens=0, close=CLOSE)
    assert m.accept_token(TOKENS.index("<think>"))
    assert TOKENS.index("a") not in m.allowed_token_ids()
    # a close no token can spell: nothing to force, the grammar's mask stays
    other = ReasoningMatcher(compiled, max_tokens=1, open="<think>", close="#nope#")
    plain = pda.Matcher(compiled)
    for token in ids("<think>", "a", "b"):
        assert other.accept_token(token) and plain.accept_token(token)
    assert list(other.allowed_token_ids()) == list(plain.allowed_token_ids())
    with pytest.raises(ValueError):
        ReasoningMatcher(compiled, max_tokens=-1)


def test_random_walks_stay_in_the_grammar_and_within_the_budget(compiled) -> None:
    rng = random.Random(5)
    for budget in (0, 1, 3, 8):
        for _ in range(60):
            m = ReasoningMatcher(compiled, max_tokens=budget, close=CLOSE)
            text, inside = b"", 0
            for _ in range(40):
                allowed = m.allowed_token_ids()
                assert len(allowed), text
                token = int(rng.choice(allowed))
                if token == EOS:
                    assert m.accept_token(token)
                    break
                inside += m.tokens_in_segment() is not None
                assert m.accept_token(token)
                text += compiled.vocab.tokens[token]
            if m.is_terminated():
                assert compiled.grammar.accepts(text), text
            else:
                assert compiled.grammar.accepts_prefix(text), text
            if b"</think>\n" in text:  # the segment closed: within the budget plus the close's own tokens
                assert inside <= budget + len("</think>"), (budget, text)


def test_batch_fills_honour_the_budget(compiled) -> None:
    matchers = [ReasoningMatcher(compiled, max_tokens=1, close=CLOSE), pda.Matcher(compiled)]
    for m in matchers:
        assert m.accept_tokens(ids("<think>", "a"))
    bitmask = np.zeros((2, compiled.mask_words), dtype=np.int32)
    fill_bitmasks(matchers, bitmask)
    for row, m in enumerate(matchers):
        single = np.zeros((1, compiled.mask_words), dtype=np.int32)
        m.fill_bitmask(single, 0)
        assert (bitmask[row] == single[0]).all()
    assert not (bitmask[0] == bitmask[1]).all()


def test_qwen2_think_then_answer_over_a_thousand_labels() -> None:
    from pda.demo.qwen import load_qwen2_tokenizer

    labels = [f"label_{i:04d}" for i in range(1000)]
    spec = {"type": "sequence", "elements": [
        {"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>\n"},
        {"type": "or", "elements": [{"type": "const_string", "value": v} for v in labels]}]}
    vocab = pda.Vocabulary.from_hf(load_qwen2_tokenizer())
    compiled = pda.compile(pda.Grammar.from_structural_tag(spec), vocab)
    rng = random.Random(1)
    eos = min(vocab.eos_ids)
    for _ in range(20):
        m = ReasoningMatcher(compiled, max_tokens=12, close=CLOSE)
        out = b""
        for _ in range(60):
            allowed = m.allowed_token_ids()
            token = eos if eos in allowed else int(allowed[rng.randrange(len(allowed))])
            assert m.accept_token(token)
            if token == eos:
                break
            out += vocab.tokens[token]
        text = out.decode("utf-8")
        found = re.fullmatch(r"<think>(.*)</think>\n(label_\d{4})", text, re.S)
        assert m.is_terminated() and found and found.group(2) in labels, text
