"""Exactness: the fast mask equals the reference path (docs/design.md, "Correctness oracle").

Small synthetic vocabularies are checked on every token of every sampled state;
real vocabularies (Qwen2, cl100k, SentencePiece) in tests/test_masks_real.py.
"""

from __future__ import annotations

import gc
import random
import weakref
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import pda
import pda.masks
from pda.compiler import CompiledGrammar
from pda.index import token_index
from pda.kernels.compose import ExtendedMask
from pda.rows import copy_row
from pda.reference import mask_mismatches, random_walk_states, reference_allowed
from tests.conftest import GRAMMARS
from tests.grammar_cases import ARITH, KEYWORDS, LAZY_COMMENTS

SAMPLE_TEXTS = [
    '{"name": "北京 €😀", "values": [1, -2.5e+10, true, false, null], "nested": {"a": [{}, []]}}',
    '[\n  {\n    "k\\"ey": "v\\u00e9\\/\\n"\n  },\n  3e10\n]',
    'let x = 1 + foo; print "hi\\"there" + x; if y then let z = (1+2); end # note\n',
    "abc, 12, key: /* a comment * / here */ word,-3",
    "sin(1+2)×3*éé(北京)−-4",
]


def synthetic_vocab(seed: int = 0, n_random: int = 400) -> pda.Vocabulary:
    """Single bytes, handy pieces, split UTF-8, and random substrings of sample texts."""
    rng = random.Random(seed)
    pieces = {bytes([b]) for b in range(256)}
    pieces |= {s.encode() for s in ['{"', '":', '",', '"}', "},", "],", "[{", "true", "tr", "ue", "null", "12", "3.",
                                    "e+", "\\u", '\\"', ' "', "  ", "\n  ", "let", "let ", "print", "pr", "int",
                                    "if", "then", " end", "/*", "*/", "#", "北", "京", "€", "😀", "1,", "]]", "éé"]}
    pieces |= {"北".encode()[:2], "北".encode()[2:], "😀".encode()[:3]}
    data = [t.encode() for t in SAMPLE_TEXTS]
    while len(pieces) < 256 + 40 + n_random:
        text = rng.choice(data)
        i = rng.randrange(len(text))
        pieces.add(text[i : i + rng.randint(2, 8)])
    tokens: list[bytes | None] = sorted(pieces)
    tokens.append(None)  # a special id: EOS
    return pda.Vocabulary.from_tokens(tokens, eos_ids=[len(tokens) - 1])


GRAMMAR_TEXTS = {
    "json": (GRAMMARS / "json.lark").read_text(),
    "keywords": KEYWORDS,
    "lazy_comments": LAZY_COMMENTS,
    "arith": ARITH,
}


@pytest.fixture(scope="module")
def vocab() -> pda.Vocabulary:
    return synthetic_vocab()


@pytest.mark.parametrize("name", sorted(GRAMMAR_TEXTS))
def test_fast_mask_equals_reference_on_random_walks(name: str, vocab: pda.Vocabulary) -> None:
    compiled = pda.compile(pda.Grammar.from_lark(GRAMMAR_TEXTS[name]), vocab)
    rng = random.Random(1234)
    states = 0
    while states < 500:
        for node, q, _ in random_walk_states(compiled, rng, max_steps=40):
            assert mask_mismatches(compiled, node, q) == [], (name, states)
            states += 1
    assert states >= 500


@pytest.mark.parametrize("share", [1, 10**9])
@pytest.mark.parametrize("name", sorted(GRAMMAR_TEXTS))
def test_fast_mask_equals_reference_with_every_or_no_mask_extended(
    name: str, share: int, vocab: pda.Vocabulary, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The threshold of extended masks (`EXTENDED_MAX_SHARE`) at its extremes: every composed mask an
    `ExtendedMask` (up to a dense mask's bits in ids) or none; each state's mask, and the row `Matcher.fill_bitmask` copies
    from the memo, equal the reference."""
    monkeypatch.setattr(pda.masks, "EXTENDED_MAX_SHARE", share)
    compiled = CompiledGrammar(pda.Grammar.from_lark(GRAMMAR_TEXTS[name]), vocab)  # not the compile memo's
    assert compiled.masks._sparse_max == (compiled.mask_words if share == 1 else 0)
    rng = random.Random(77)
    kinds: Counter[str] = Counter()
    row = np.full((1, compiled.mask_words), -1, dtype=np.int32)
    states = 0
    while states < 200:
        for node, q, _ in random_walk_states(compiled, rng, max_steps=40):
            assert mask_mismatches(compiled, node, q) == [], (name, states)
            copy_row(row, 0, compiled.masks.row_source(node, q))
            assert np.array_equal(row[0], compiled.step_mask(node, q)), (name, states)
            kinds[type(compiled.masks._text(node, q)).__name__] += 1  # (EOS is added as ids either way)
            states += 1
    assert (kinds["ExtendedMask"] > 0) == (share == 1), kinds


@pytest.mark.parametrize("share", [1, 10**9])
@pytest.mark.parametrize("name", sorted(GRAMMAR_TEXTS))
def test_fast_mask_equals_reference_with_root_walks_as_ids_or_masks(
    name: str, share: int, vocab: pda.Vocabulary, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Root walks' inside tokens as ids at their threshold's extremes (`ROOT_SPARSE_SHARE`: up to a whole mask's
    words of ids, or never), with nothing found in the shared or disk store: each state's mask, and the row
    `Matcher.fill_bitmask` copies from the memo, equal the reference."""
    monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(token_index, "_shared", weakref.WeakKeyDictionary())
    monkeypatch.setattr(token_index, "ROOT_SPARSE_SHARE", share)
    compiled = CompiledGrammar(pda.Grammar.from_lark(GRAMMAR_TEXTS[name]), vocab)
    rng = random.Random(78)
    row = np.full((1, compiled.mask_words), -1, dtype=np.int32)
    as_ids = states = 0
    while states < 200:
        for node, q, _ in random_walk_states(compiled, rng, max_steps=40):
            assert mask_mismatches(compiled, node, q) == [], (name, states)
            copy_row(row, 0, compiled.masks.row_source(node, q))
            assert np.array_equal(row[0], compiled.step_mask(node, q)), (name, states)
            as_ids += compiled.index.at_state(q, node.allowed | compiled.lexer.ignore).tokens is not None
            states += 1
    assert (as_ids > 0) == (share == 1), as_ids


def test_fast_mask_equals_reference_while_replaying_documents(vocab: pda.Vocabulary) -> None:
    compiled = pda.compile(pda.Grammar.from_lark(GRAMMAR_TEXTS["json"]), vocab)
    by_bytes = {t: i for i, t in enumerate(vocab.tokens) if t}
    for text in SAMPLE_TEXTS[:2]:
        m = pda.Matcher(compiled)
        data = text.encode()
        pos = 0
        while pos < len(data):
            # greedy longest-token segmentation, like a tokenizer would
            for n in range(min(8, len(data) - pos), 0, -1):
                if data[pos : pos + n] in by_bytes:
                    break
            tid = by_bytes[data[pos : pos + n]]
            node, q = m._history[-1]
            assert mask_mismatches(compiled, node, q) == []
            assert m.is_allowed(tid)
            assert m.accept_token(tid)
            pos += n
        assert m.can_end()


def test_composed_masks_share_what_they_can(vocab: pda.Vocabulary) -> None:
    """A composed mask is its state's own mask when its groups add no token, an `ExtendedMask` over that mask when
    they add at most `_sparse_max`, and a dense mask otherwise, stored once per content."""
    compiled = pda.compile(pda.Grammar.from_lark(GRAMMAR_TEXTS["json"]), vocab)
    masks, rng = compiled.masks, random.Random(99)
    by_content: dict[bytes, np.ndarray] = {}
    kinds: Counter[str] = Counter()
    for _ in range(40):
        for node, q, _ in random_walk_states(compiled, rng, max_steps=30):
            root = masks.index.at_state(q, node.allowed | masks.lexer.ignore)
            if not root.groups:
                continue  # not composed: the index's own mask
            mask, own = masks._text(node, q), root.inside if root.inside is not None else masks._empty
            dense = compiled.text_mask(node, q)
            if mask is own:
                kinds["own"] += 1
            elif type(mask) is ExtendedMask:
                ids = np.frombuffer(mask.ids, dtype=np.int32)
                assert mask.base is root.inside and 0 < len(ids) <= masks._sparse_max
                bits = np.unpackbits(own.view(np.uint8), bitorder="little")
                assert not bits[ids].any() and (np.unpackbits(dense.view(np.uint8), bitorder="little")[ids] == 1).all()
                assert np.array_equal(dense | own, dense)  # the state's own mask, and the ids: nothing else
                assert np.unpackbits((dense ^ own).view(np.uint8)).sum() == len(ids)
                kinds["extended"] += 1
            else:
                assert by_content.setdefault(mask.tobytes(), mask) is mask  # one array per content
                kinds["dense"] += 1
    assert kinds["own"] > 0 and kinds["extended"] > 0 and kinds["dense"] > 2 * len(by_content) > 10, kinds


def test_mask_memos_leave_nothing_for_the_collector(vocab: pda.Vocabulary) -> None:
    # A mask computed for a parser node adds no object the garbage collector tracks:
    # `node.cache` holds ints, bools, arrays and extended masks only.
    compiled = pda.compile(pda.Grammar.from_lark(GRAMMAR_TEXTS["json"]), vocab)
    rng = random.Random(5)
    seen = ends = 0
    while seen < 100:
        for node, q, _ in random_walk_states(compiled, rng, max_steps=40):
            compiled.step_mask(node, q)
            ends += compiled.can_end(node, q)
            assert not gc.is_tracked(node.cache)
            seen += 1
    assert ends > 0


def test_allowed_token_ids_equal_reference_ids(vocab: pda.Vocabulary) -> None:
    compiled = pda.compile(pda.Grammar.from_lark(KEYWORDS), vocab)
    m = pda.Matcher(compiled)
    for piece in [b"let", b" x", b" =", b" 1", b";"]:
        node, q = m._history[-1]
        assert np.array_equal(m.allowed_token_ids(), reference_allowed(compiled, node, q))
        assert m.accept_bytes(piece)
    assert m.can_end()
    assert int(vocab.size - 1) in m.allowed_token_ids()
