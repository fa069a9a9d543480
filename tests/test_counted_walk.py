"""Walks inside counted strings (maxLength / minLength): the cut's proofs count characters, and stay exact.

The walk kernel takes a subtree of plain string body whole where its pair is proven live as deep as
the subtree goes (`pda.index.slices`, pda/kernels/_walk.c). Proofs and a node's depth below are
counted in characters: a counted string counts characters, and a subtree of multi-byte characters
within the count left is taken even where its bytes exceed it. Checked here: each node's `rest`
against its tokens' characters; the walk with the cut against the walk without (and, on a small
vocabulary, the per-token reference walk) at every state of counted-string terminals of random
bounds, eager (every state of the terminal's own DFA) and lazy (every state a string of mixed
1-4 byte characters and escapes passes through), on a synthetic multi-byte vocabulary, a
SentencePiece one and Qwen2's byte-level BPE; and that a subtree of multi-byte characters is cut
where a proof in bytes could not cut it.
"""

from __future__ import annotations

import itertools
import json
import random
import weakref
from pathlib import Path

import numpy as np
import pytest

import pda
from pda.compiler import vocabulary_trie
from pda.index import slices, token_index
from pda.kernels import walk as kernel
from pda.lexer import terminals as terminals_module
from pda.regex.lazy import LazyDFA
from pda.reference import reference_classification
from tests.classifications import assert_same_classification
from tests.vocabularies import byte_pieces

TEXTS = ['"naïve café — 北京欢迎你 😀 Straße \\"q\\" \\u00e9\\n"', '{"k": "Ωμέγα кот 𝄞𝄞 ab"}', "plain ascii words here"]
# What a string is driven through, a character (or an escape) at a time: 1, 2, 3 and 4 bytes, escapes.
CHARACTERS = ["a", "é", "北", "😀", " ", "\\n", "\\u00e9", "Ω", "z"]
# The kernel's own threshold for searching a proof (the synthetic vocabularies' walks search under every subtree).
SEARCH_MIN_NODES = kernel.SEARCH_MIN_NODES


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An empty shared store and disk cache, and searches under every subtree (small vocabularies' subtrees are
    under `SEARCH_MIN_NODES`)."""
    monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(token_index, "_shared", weakref.WeakKeyDictionary())
    monkeypatch.setattr(kernel, "SEARCH_MIN_NODES", 0)


@pytest.fixture(scope="module")
def synthetic() -> pda.Vocabulary:
    tokens = byte_pieces(TEXTS, seed=11, pieces=2500, longest=14)
    for k in range(1, 6):
        tokens.add(("北京欢迎" * 2)[:k].encode())
        tokens.add(("😀" * k).encode())
        tokens.add(("é" * k).encode() + b'"')
    return pda.Vocabulary.from_tokens(sorted(tokens) + [None], eos_ids=[len(tokens)])


def measure(data: bytes) -> int:
    """The characters `data` touches past a trie node: its bytes that are not UTF-8 continuation bytes, and one more
    where it starts with one (a character the node left open)."""
    if not data:
        return 0
    return sum(1 for b in data if not 0x80 <= b < 0xC0) + (0x80 <= data[0] < 0xC0)


def test_rest_is_the_most_characters_a_token_below_touches(synthetic: pda.Vocabulary) -> None:
    trie = vocabulary_trie(synthetic)
    tokens = sorted(t for t in synthetic.tokens if t)
    rest = slices.chars_below(trie)
    wider = 0
    for node in range(trie.n_nodes):
        d = int(trie.depth[node])
        below = tokens[int(trie.token_ptr[node]) : int(trie.token_ptr[trie.end[node]])]
        assert rest[node] == max(measure(t[d:]) for t in below), f"node {node}"
        wider += max(len(t) - d for t in below) > rest[node]
    assert wider > 100, "the vocabulary should have subtrees whose bytes outnumber their characters"


def compiled_string(vocab: pda.Vocabulary, low: int, high: int, lazy: bool,
                    monkeypatch: pytest.MonkeyPatch) -> pda.CompiledGrammar:
    """A JSON Schema string of `minLength` low and `maxLength` high (past 64 the front end splits it into
    HEAD/CHUNK/TAIL terminals), every counted terminal lazy or none."""
    monkeypatch.setattr(terminals_module, "LAZY_MIN_COUNT", 0 if lazy else 10**9)
    grammar = pda.Grammar.from_json_schema(json.dumps({"type": "string", "minLength": low, "maxLength": high}))
    compiled = pda.CompiledGrammar(grammar, vocab, warmup_seconds=0, disk_cache=False)
    assert any(isinstance(d, LazyDFA) for d in compiled.lexer.dfas) == lazy
    return compiled


def check_driven(compiled: pda.CompiledGrammar, rng: random.Random, reference: bool) -> int:
    """From the start, through a quote and then random characters until the string may not go on: at every lexer
    state, the walk with the cut equals the walk without (and with `reference`, the per-token reference walk, which
    reads the tables whole: eager ones only). Returns the states checked."""
    index, lexer, scanner = compiled.index, compiled.lexer, compiled.scanner
    node, q = compiled.initial_state()
    checked = 0
    for text in ['"'] + [rng.choice(CHARACTERS) for _ in range(400)]:
        live_set = node.allowed | lexer.ignore
        got = index._classify(index.first_nodes, q, live_set)
        want = index._classify(index.first_nodes, q, live_set, cut=False)
        assert_same_classification(got, want, f"after {checked} characters")
        if reference:
            assert_same_classification(got, reference_classification(index, index.first_nodes, q, live_set),
                                       f"after {checked} characters, against the reference")
        checked += 1
        found = scanner.feed(node, q, text.encode())
        if found is None:
            break
        node, q = found
    return checked


def check_own_states(compiled: pda.CompiledGrammar) -> int:
    """At every live state of every eager counted terminal's own DFA: the walk with the cut equals the walk without.
    Returns the states checked."""
    index = compiled.index
    checked = 0
    for j, dfa in enumerate(compiled.lexer.dfas):
        if isinstance(dfa, LazyDFA) or not any(n in compiled.lexer.names[j] for n in ("STR", "HEAD", "CHUNK", "TAIL")):
            continue
        tables = index._terminal_tables(j)
        for s in np.flatnonzero(tables.live).tolist():
            got = index._walk(tables, index.first_nodes, s)
            want = index._walk(tables, index.first_nodes, s, cut=False)
            assert_same_classification(got, want, f"terminal {compiled.lexer.names[j]}, state {s}")
            checked += 1
    return checked


def random_bounds(rng: random.Random, n: int, most: int) -> list[tuple[int, int]]:
    out = []
    for _ in range(n):
        high = rng.randint(1, most)
        out.append((rng.randint(0, high) if rng.random() < 0.5 else 0, high))
    return out


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
@pytest.mark.parametrize(("vocabulary", "seed", "most", "extra"), [
    ("synthetic", 1, 90, [(0, 3), (2, 7)]),
    ("synthetic", 2, 90, [(0, 3), (2, 7)]),
    ("sentencepiece", 3, 80, []),
])
def test_counted_walks_equal_full_walks(vocabulary: str, seed: int, most: int, extra: list[tuple[int, int]],
                                        lazy: bool, request: pytest.FixtureRequest,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    vocab = request.getfixturevalue(vocabulary)
    rng = random.Random(seed)
    for low, high in random_bounds(rng, 3, most) + extra:
        compiled = compiled_string(vocab, low, high, lazy, monkeypatch)
        assert check_driven(compiled, rng, reference=not lazy) >= min(high, 30)
        if not lazy:
            assert check_own_states(compiled) > high


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
def test_counted_walks_equal_full_walks_qwen2(lazy: bool, qwen2: pda.Vocabulary,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Qwen2's byte-level BPE: tokens of split characters, long runs, CJK words of 2-4 characters in 6-12 bytes."""
    monkeypatch.setattr(kernel, "SEARCH_MIN_NODES", SEARCH_MIN_NODES)
    rng = random.Random(4)
    for low, high in [(0, 20), (3, 9)] + random_bounds(rng, 1, 140):
        compiled = compiled_string(qwen2, low, high, lazy, monkeypatch)
        assert check_driven(compiled, rng, reference=False) >= min(high, 30)
        if not lazy and high <= 20:
            assert check_own_states(compiled) > high


def test_a_subtree_of_multibyte_characters_within_the_count_is_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    """Four CJK characters, every string of 1-4 of them a token (3-12 bytes): inside a string of at most 4
    characters every first-level subtree of them is taken whole (a proof in bytes, 4 deep, could take none:
    each goes 11 bytes below its first byte), and the walk equals the reference."""
    words = ["".join(p) for k in range(1, 5) for p in itertools.product("北京欢迎", repeat=k)]
    tokens = sorted({bytes([b]) for b in range(256)} | {w.encode() for w in words})
    vocab = pda.Vocabulary.from_tokens(tokens + [None], eos_ids=[len(tokens)])
    compiled = compiled_string(vocab, 0, 4, False, monkeypatch)
    index = compiled.index
    node, q = compiled.initial_state()
    node, q = compiled.scanner.feed(node, q, b'"')
    live_set = node.allowed | compiled.lexer.ignore
    before = index._walks.counts
    got = index._classify(index.first_nodes, q, live_set)
    after = index._walks.counts
    visited, cut = after[1] - before[1], after[2] - before[2]
    assert cut >= 4 and visited <= 256, (visited, cut)
    want = reference_classification(index, index.first_nodes, q, live_set)
    assert_same_classification(got, want, "inside the string")
    assert got.inside is not None and sum(bin(x & 0xFFFFFFFF).count("1") for x in got.inside.tolist()) >= len(words)


def test_exact_proofs_kill_every_sampled_path_one_character_deeper(synthetic: pda.Vocabulary,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Soundness of exactness: from a pair proven exactly d deep, a sampled path of the cut's automaton keeps the
    lexeme live while it touches at most d characters, and its first byte touching one more kills it from a state
    that ends no lexeme (so the walk may take the tokens of a subtree by their characters alone)."""
    compiled = compiled_string(synthetic, 2, 9, False, monkeypatch)
    index = compiled.index
    j = next(j for j, name in enumerate(compiled.lexer.names) if "STR" in name)
    tables = index._terminal_tables(j)
    for s in np.flatnonzero(tables.live).tolist():
        index._walk(tables, index.first_nodes, s)
    proof = tables.proof(index.trie.max_depth)
    depths, exact = kernel.proven_depths(proof), kernel.exact_proofs(proof)
    pairs = list(zip(*np.nonzero(exact)))
    assert len(pairs) > 20, "the counted string's walks should leave exact proofs"
    automaton, rng = slices.CUT_AUTOMATON, random.Random(6)
    for u, s in pairs:
        d = int(depths[u, s])
        assert d >= 0
        for _ in range(30):
            v, q, touched = int(u), int(s), 0
            while True:
                b = rng.choice(np.flatnonzero(automaton[v] >= 0).tolist())
                v2 = int(automaton[v, b])
                q2 = int(tables.trans[q, tables.byte_class[b]])
                # the path with this byte touches one character more than the ended ones before it
                if touched + 1 > d:
                    assert not tables.live[q2] and tables.ends_as[q] < 0, f"pair {(u, s)}, exact {d}"
                    break
                assert tables.live[q2], f"pair {(u, s)} is proven {d} deep but a path of {touched + 1} kills it"
                v, q = v2, q2
                touched += not 0 < v2 < len(slices.PLAIN_BODY)


def test_a_short_count_visits_few_nodes_at_every_count(qwen2: pda.Vocabulary, monkeypatch: pytest.MonkeyPatch) -> None:
    """maxLength 20 on Qwen2: with few characters left a walk used to visit every node on the way to a longer
    token (up to 159k of the trie's 333k nodes, 129k with proofs in characters); exact proofs take such subtrees by
    their tokens' characters: a few thousand nodes at every count, as inside an unbounded string."""
    monkeypatch.setattr(kernel, "SEARCH_MIN_NODES", SEARCH_MIN_NODES)
    compiled = compiled_string(qwen2, 0, 20, False, monkeypatch)
    index, scanner = compiled.index, compiled.scanner
    node, q = scanner.feed(*compiled.initial_state(), b'"')
    for count in range(21):
        live_set = node.allowed | compiled.lexer.ignore
        before = index._walks.counts
        index._classify(index.first_nodes, q, live_set)
        visited = index._walks.counts[1] - before[1]
        assert visited < 12_000, f"{visited} nodes visited with {20 - count} characters left"
        if count < 20:
            node, q = scanner.feed(node, q, "é".encode() if count % 2 else b"a")
