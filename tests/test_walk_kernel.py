"""The trie-walk kernel (pda/kernels/_walk.c) against the per-token reference walk.

`pda.reference.reference_walk` feeds every token's bytes through the walk tables one
at a time, with no trie sharing and no cut. Here the kernel, with the plain-body cut
and without it, must give exactly its result: on every shipped grammar (json, lua;
sqlite, postgresql and python under the basic lexer mode, through `walk_states`)
with a byte-level BPE (Qwen2), a SentencePiece and a small synthetic vocabulary, at
the states of random constrained walks and after their boundaries; on random regex
terminals from every state of their DFA; on random tables and random roots
(unsorted, nested) straight through `pda.kernels.walk`. Corrupt input raises
ValueError, and walks from several threads at once give what one thread gives.
"""

from __future__ import annotations

import random
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import pda
from pda.compiler import vocabulary_trie
from pda.index import slices, token_index
from pda.kernels import _walk, walk as kernel
from pda.lexer import terminals as terminals_module
from pda.lexer.lexer import START
from pda.reference import random_walk_states, reference_classification, reference_walk
from tests.classifications import assert_same_classification, mask_ids
from tests.vocabularies import byte_pieces

SHIPPED = ("json", "lua", "sqlite", "postgresql", "python")
TEXTS = [
    '{"name": "Ada", "tags": ["a\\\\b", "\\u00e9t\\u00e9"], "n": -2.5e3, "ok": true, "x": null}',
    "SELECT a, b FROM t WHERE x = 'it''s' AND y IN (1, 2.5) ORDER BY a DESC LIMIT 3;",
    "def f(x, *args):\n    if x:\n        return [i ** 2 for i in args]  # squares\n    return None\n",
    'local t = {1, "two", [3] = 4}\nfor i, v in ipairs(t) do print(i .. v) end -- loop\n',
    "naïve café — 北京 😀 \t\r\n",
]


def synthetic_vocabulary(seed: int = 11) -> pda.Vocabulary:
    """Every byte, pieces of TEXTS cut at any byte (split characters among them), runs of spaces."""
    tokens = byte_pieces(TEXTS, seed=seed, pieces=2500, longest=9)
    for k in range(2, 40, 3):
        tokens.update((b" " * k, b" " * k + b'"', b"\n" + b" " * k))
    return pda.Vocabulary.from_tokens(sorted(tokens) + [None], eos_ids=[len(tokens)])


@pytest.fixture(scope="module")
def synthetic() -> pda.Vocabulary:
    return synthetic_vocabulary()


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An empty shared store and disk cache: every walk here is computed, not found."""
    monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(token_index, "_shared", weakref.WeakKeyDictionary())


def assert_same(got: token_index.Classification, want: token_index.Classification, where: str) -> None:
    """Equal masks (None alike) and equal groups, their nodes' bytes included: int64, ascending, unique."""
    assert (got.inside is None) == (want.inside is None), where
    if got.inside is not None:
        assert got.inside.dtype == np.int32 and np.array_equal(got.inside, want.inside), f"inside tokens differ {where}"
    for g in got.groups:
        assert g.nodes.dtype == np.int64 and g.key == g.nodes.tobytes(), where
    key = lambda c: sorted((g.terminals, g.nodes.tobytes()) for g in c.groups)  # noqa: E731
    assert key(got) == key(want), f"boundary groups differ {where}"


def assert_states_match(index: token_index.TokenIndex, roots: np.ndarray, q: int, where: str) -> None:
    """The basic mode's per-node walk (`walk_states`) against the reference under every terminal."""
    tables = index.walk_tables((1 << len(index.lexer.dfas)) - 1)
    inside_nodes, inside_states, ended_nodes, ended_states = index._walk_states(roots, q)
    inside, boundaries = reference_walk(index.trie, tables, roots, q)
    assert set(zip(inside_nodes.tolist(), inside_states.tolist())) == {(n, s) for _, n, s in inside}, where
    assert set(zip(ended_nodes.tolist(), ended_states.tolist())) == boundaries, where
    for nodes in (inside_nodes, ended_nodes):
        assert (np.diff(nodes) >= 0).all(), f"nodes are not sorted {where}"


def check_grammar(compiled: pda.CompiledGrammar, seed: int, n_states: int, groups_per_state: int) -> int:
    """At the states of random walks: the index's answers and the kernel, cut on and off, equal the reference."""
    index, lexer = compiled.index, compiled.lexer
    basic = lexer.mode != "contextual"
    rng = random.Random(seed)
    checked = 0
    while checked < n_states:
        for node, q, _token in random_walk_states(compiled, rng, max_steps=8, eos_probability=0.05):
            live_set = node.allowed | lexer.ignore
            want = reference_classification(index, index.first_nodes, q, live_set)
            for cut in (True, False):
                assert_same(index._classify(index.first_nodes, q, live_set, cut=cut), want, f"at {q}, cut {cut}")
            sparse = index._classify(index.first_nodes, q, live_set, sparse=True)
            assert sparse.inside is None or sparse.tokens is None, f"at {q}"
            assert sparse.tokens is None or len(sparse.tokens) <= index.mask_words // token_index.ROOT_SPARSE_SHARE
            assert_same_classification(sparse, want, f"at {q}, inside tokens as ids")
            got = index.at_state(q, live_set)
            assert_same_classification(got, want, f"at state {q}")
            if basic:
                assert_states_match(index, index.first_nodes, q, f"at state {q}")
            for group in got.groups[:groups_per_state]:
                after = node.advance(group.terminals) if group.terminals & node.allowed else node
                if after is None:
                    continue
                nxt = after.allowed | lexer.ignore
                want_after = reference_classification(index, group.nodes, START, nxt)
                assert_same_classification(index.after_boundary(group, nxt), want_after, f"after a boundary at {q}")
                assert_same(index._classify(group.nodes, START, nxt), want_after, f"after a boundary at {q}")
                if basic:
                    assert_states_match(index, group.nodes, START, f"after a boundary at {q}")
            checked += 1
            if checked == n_states:
                break
    return checked


def compile_shipped(name: str, vocab: pda.Vocabulary) -> pda.CompiledGrammar:
    compiled = pda.CompiledGrammar(pda.Grammar.load(name), vocab, warmup_seconds=0, disk_cache=False)
    assert (compiled.lexer.mode == "basic") == (name in ("sqlite", "postgresql", "python"))
    return compiled


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_grammars_on_a_synthetic_vocabulary(name: str, synthetic: pda.Vocabulary) -> None:
    assert check_grammar(compile_shipped(name, synthetic), seed=1, n_states=40, groups_per_state=3) == 40


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_grammars_on_sentencepiece(name: str, sentencepiece: pda.Vocabulary) -> None:
    assert check_grammar(compile_shipped(name, sentencepiece), seed=2, n_states=20, groups_per_state=2) == 20


@pytest.mark.parametrize("name", [
    "json", "lua", "sqlite",
    pytest.param("postgresql", marks=pytest.mark.slow), pytest.param("python", marks=pytest.mark.slow),
])
def test_shipped_grammars_on_qwen2(name: str, qwen2: pda.Vocabulary) -> None:
    assert check_grammar(compile_shipped(name, qwen2), seed=3, n_states=6, groups_per_state=1) == 6


def test_json_string_and_counter_states_on_qwen2(qwen2: pda.Vocabulary, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the cut matters: inside an unbounded string and along a maxLength counter, on Qwen2 (eager tables,
    which the reference walk reads whole; tests/test_lazy_wiring.py compares lazy walks with these)."""
    monkeypatch.setattr(terminals_module, "LAZY_MIN_COUNT", 10**9)
    grammar = pda.Grammar.from_json_schema({"type": "object", "properties": {
        "s": {"type": "string"}, "c": {"type": "string", "maxLength": 200}}, "required": ["s", "c"]})
    compiled = pda.CompiledGrammar(grammar, qwen2, warmup_seconds=0, disk_cache=False)
    index = compiled.index
    for prefix in ('{"s":"', '{"s":"ab\\', '{"s":"x","c":"', '{"s":"x","c":"' + "a" * 150):
        node, q = compiled.scanner.feed(*compiled.initial_state(), prefix.encode())
        live_set = node.allowed | compiled.lexer.ignore
        assert_same(index._classify(index.first_nodes, q, live_set),
                    reference_classification(index, index.first_nodes, q, live_set), f"after {prefix!r}")


# Random regex terminals: atoms, sequences, alternations, repeats (bounded counters too).
ATOMS = ["a", "b", "z", "0", " ", "é", "北", "😀", r"\n", r"\"", "[a-c]", "[^a]", "[0-9]", r"\w", r"\s", ".", '"',
         r"\\", "[^\"\\\\]", "[ -~]"]


def random_regex(rng: random.Random, depth: int = 0) -> str:
    r = rng.random()
    if depth > 2 or r < 0.35:
        return rng.choice(ATOMS)
    if r < 0.55:
        return "".join(random_regex(rng, depth + 1) for _ in range(rng.randint(2, 3)))
    if r < 0.7:
        return "(?:" + "|".join(random_regex(rng, depth + 1) for _ in range(2)) + ")"
    return "(?:" + random_regex(rng, depth + 1) + ")" + rng.choice(["*", "+", "?", "{0,3}", "{2,5}", "{1,40}"])


def regex_grammar(rng: random.Random) -> str:
    """Two or three random terminals (each with a non-empty fixed part, so none matches the empty string)."""
    names = ["A", "B", "C"][: rng.randint(2, 3)]
    rules = [f'{n}: /{random_regex(rng)}{rng.choice(["x", ";", "q"])}/' for n in names]
    return f"start: ({' | '.join(names)})+\n" + "\n".join(rules) + '\n%ignore " "\n'


@pytest.mark.parametrize("seed", range(12))
def test_random_regex_terminals_from_every_state(seed: int, synthetic: pda.Vocabulary) -> None:
    rng = random.Random(seed)
    compiled = pda.CompiledGrammar(pda.Grammar.from_lark(regex_grammar(rng)), synthetic, warmup_seconds=0,
                                   disk_cache=False)
    index, lexer = compiled.index, compiled.lexer
    checked = 0
    for node, _q, _token in random_walk_states(compiled, rng, max_steps=6):
        live_set = node.allowed | lexer.ignore
        tables = index.walk_tables(live_set)
        for q in rng.sample(range(len(tables.live)), min(12, len(tables.live))):
            want = reference_classification(index, index.first_nodes, q, live_set)
            for cut in (True, False):
                assert_same(index._classify(index.first_nodes, q, live_set, cut=cut), want, f"at {q}, cut {cut}")
            checked += 1
    assert checked >= 12


def random_tables(rng: np.random.Generator, n_states: int, n_classes: int, n_sets: int) -> kernel.TableArrays:
    """Random walk tables: mostly live states, some of them looping on most classes (string-like bodies)."""
    trans = rng.integers(0, n_states, (n_states, n_classes)).astype(np.int32)
    loops = rng.random(n_states) < 0.3
    keep = rng.random((n_states, n_classes)) < 0.9
    trans[loops] = np.where(keep[loops], np.flatnonzero(loops)[:, None], trans[loops]).astype(np.int32)
    byte_class = rng.integers(0, n_classes, 256).astype(np.int32)
    live = rng.random(n_states) < rng.uniform(0.5, 0.95)
    stops = rng.random(n_states) < 0.7
    ends_as = rng.integers(-1, n_sets, n_states).astype(np.int32)
    return kernel.TableArrays(trans, byte_class, live, stops, ends_as)


def random_packed_tables(rng: np.random.Generator, n_states: int, n_classes: int,
                         n_sets: int) -> tuple[kernel.PackedTableArrays, kernel.TableArrays]:
    """Random packed tables over up to 130 terminals (three words) and the flag tables they spell."""
    flags = random_tables(rng, n_states, n_classes, n_sets)
    n_terms = int(rng.integers(1, 130))
    words = -(-n_terms // 64)
    bits = rng.random((n_states, words * 64)) < 0.2
    bits[:, n_terms:] = False
    candidates = rng.random(words * 64) < 0.5
    candidates[n_terms:] = False
    pack = lambda m: np.packbits(m, axis=-1, bitorder="little").view("<u8")  # noqa: E731
    accept_row = rng.integers(-1, n_sets, n_states).astype(np.int32)
    row_bits = rng.random((n_sets, words * 64)) < 0.1
    row_bits[:, n_terms:] = False
    packed = kernel.PackedTableArrays(flags.trans, flags.byte_class, np.ascontiguousarray(pack(bits)),
                                      np.ascontiguousarray(pack(candidates)), accept_row,
                                      np.ascontiguousarray(pack(row_bits)))
    live = (bits & candidates).any(axis=1)
    meets = (row_bits & candidates).any(axis=1)
    ends_as = np.where((accept_row >= 0) & meets[accept_row], accept_row, -1).astype(np.int32)
    return packed, kernel.TableArrays(flags.trans, flags.byte_class, live, ~live, ends_as)


def kernel_reference(trie, tables: kernel.TableArrays, roots: np.ndarray, q: int,
                     mask_words: int) -> tuple[np.ndarray | None, list[tuple[int, bytes]]]:
    """`kernel.walk`'s expected result by the reference walk: (mask or None, [(set index, nodes' int64 bytes)])."""
    inside, boundaries = reference_walk(trie, tables, roots, q)
    mask = None
    if inside:
        bits = np.zeros(mask_words * 32, dtype=bool)
        bits[[t for t, _, _ in inside]] = True
        mask = np.packbits(bits, bitorder="little").view(np.int32)
    nodes: dict[int, set[int]] = {}
    for node, state in boundaries:
        nodes.setdefault(int(tables.ends_as[state]), set()).add(node)
    return mask, [(k, np.array(sorted(nodes[k]), dtype=np.int64).tobytes()) for k in sorted(nodes)]


def test_random_tables_and_random_roots(synthetic: pda.Vocabulary) -> None:
    """Straight through `pda.kernels.walk`: random tables, roots sorted, unsorted and nested; proofs kept; inside
    tokens as a mask, and as ids up to a bound (`sparse_max`), above which the mask comes back; trie and tables
    as arrays and opened (`kernel.opened`) alike."""
    trie = vocabulary_trie(synthetic)
    plain = slices.plain_body(trie)
    arrays = kernel.TrieArrays.of(trie, (plain.below, plain.rest, plain.level))
    opened_trie = kernel.opened(arrays)
    # The synthetic trie's subtrees are small: searching under every one exercises the cut.
    cut = kernel.SliceArrays(slices.CUT_AUTOMATON, trie.max_depth, search_min_nodes=0)
    mask_words = (synthetic.size + 31) // 32 + 1
    rng = np.random.default_rng(5)
    cuts = 0
    for i in range(60):
        n_states, n_sets = int(rng.integers(2, 40)), int(rng.integers(1, 5))
        if i % 2:  # packed: walked from the packed form, checked against the flags it spells
            packed, tables = random_packed_tables(rng, n_states, int(rng.integers(1, 12)), n_sets)
        else:
            packed = tables = random_tables(rng, n_states, int(rng.integers(1, 12)), n_sets)
        proof = kernel.new_proof(n_states)
        opened_tables = kernel.opened(packed)
        first = trie.child_ids[trie.child_ptr[0] : trie.child_ptr[1]]
        for roots in (first, rng.choice(np.arange(1, trie.n_nodes), 40), np.sort(rng.choice(first, 10))):
            q = int(rng.integers(0, n_states))
            want_mask, want_groups = kernel_reference(trie, tables, roots, q, mask_words)
            for with_cut in (True, False):
                for trie_in, tables_in in ((arrays, packed), (opened_trie, opened_tables)):
                    got = kernel.walk(trie_in, tables_in, n_sets, roots, q, mask_words,
                                      *((cut, proof) if with_cut else ()))
                    assert (got.inside is None) == (want_mask is None)
                    if want_mask is not None:
                        assert np.array_equal(got.inside, want_mask)
                    assert [(k, nodes.tobytes()) for k, nodes in got.boundaries] == want_groups
                    cuts += got.cut
                want_ids = np.zeros(0, np.int64) if want_mask is None else mask_ids(want_mask)
                for sparse_max in (0, len(want_ids) - 1, len(want_ids), mask_words * 32):
                    if sparse_max < 0:
                        continue
                    sparse = kernel.walk(opened_trie, opened_tables, n_sets, roots, q, mask_words,
                                         *((cut, proof) if with_cut else (None, None)), sparse_max=sparse_max)
                    assert [(k, nodes.tobytes()) for k, nodes in sparse.boundaries] == want_groups
                    if want_mask is None:  # nothing inside: neither form
                        assert sparse.inside is None and sparse.tokens is None
                    elif len(want_ids) <= sparse_max:  # few enough: ids ascending, no mask
                        assert sparse.inside is None and sparse.tokens.dtype == np.int32
                        assert sparse.tokens.tolist() == want_ids.tolist()
                    else:  # too many: the mask, as the dense walk gives it
                        assert sparse.tokens is None and np.array_equal(sparse.inside, want_mask)
            inside_nodes, inside_states, ended_nodes, ended_states = kernel.walk_states(opened_trie, opened_tables,
                                                                                        roots, q)
            inside, boundaries = reference_walk(trie, tables, roots, q)
            assert set(zip(inside_nodes.tolist(), inside_states.tolist())) == {(n, s) for _, n, s in inside}
            assert list(zip(ended_nodes.tolist(), ended_states.tolist())) == sorted(boundaries)
    assert cuts > 200, "random string-like tables should let the walk cut"


def test_pack_marks_the_tokens_ending_at_nodes(synthetic: pda.Vocabulary) -> None:
    trie = vocabulary_trie(synthetic)
    arrays = kernel.TrieArrays.of(trie)
    assert arrays.nodes[:, 2].tolist()[:-1] == trie.byte.tolist()  # no cut bits without a plain body
    rng = np.random.default_rng(2)
    mask_words = (synthetic.size + 31) // 32
    for size in (0, 1, 50, trie.n_nodes):
        nodes = rng.choice(trie.n_nodes, size, replace=False).astype(np.int32)
        ids = [int(trie.token_ids[p]) for n in nodes.tolist() for p in range(trie.token_ptr[n], trie.token_ptr[n + 1])]
        got = kernel.pack(arrays, nodes, mask_words)
        few = len(set(ids))
        sparse = [kernel.pack_sparse(arrays, nodes, mask_words, limit) for limit in (few, max(few - 1, 0))]
        if not ids:
            assert got is None and sparse == [(None, None)] * 2
            continue
        bits = np.zeros(mask_words * 32, dtype=bool)
        bits[ids] = True
        assert np.array_equal(got, np.packbits(bits, bitorder="little").view(np.int32))
        # Up to the limit as ids, ascending and unique; past it the same mask.
        (mask, tokens), (over_mask, over_tokens) = sparse
        assert mask is None and tokens.dtype == np.int32 and tokens.tolist() == sorted(set(ids))
        assert over_tokens is None and np.array_equal(over_mask, got)


def test_a_walk_holding_most_tokens_builds_its_mask_from_the_others(synthetic: pda.Vocabulary) -> None:
    """A walk that holds most of the trie's tokens gives the reference's mask whether the opened trie builds it
    from every token's bit less the ones outside (`fill_mask`) or sets each bit (a tuple trie; an opened trie
    whose ids repeat), in the caller's mask ORed over its bits and as a sparse walk's dense result."""
    trie = vocabulary_trie(synthetic)
    arrays = kernel.TrieArrays.of(trie)
    n_classes = 3
    byte_class = np.zeros(256, np.int32)
    byte_class[ord('"')], byte_class[ord("\\")] = 1, 2
    # state 0 loops on every byte but the quote (a boundary of set 0) and the backslash (dead): most tokens inside
    trans = np.array([[0, 1, 1], [1, 1, 1]], np.int32)
    tables = kernel.TableArrays(trans, byte_class, np.array([True, False]), np.array([False, True]),
                                np.array([0, -1], np.int32))
    roots = trie.child_ids[trie.child_ptr[0] : trie.child_ptr[1]]
    mask_words = (synthetic.size + 31) // 32 + 1
    want_mask, want_groups = kernel_reference(trie, tables, roots, 0, mask_words)
    assert mask_ids(want_mask).size > trie.token_ids.size // 2
    repeated = arrays._replace(token_ids=np.concatenate([arrays.token_ids[:-1], arrays.token_ids[:1]]))
    want_repeated = np.zeros(mask_words * 32, bool)
    for p in range(len(trie.token_ids)):
        word = want_mask.view(np.uint32)[trie.token_ids[p] // 32] >> (trie.token_ids[p] % 32) & 1
        want_repeated[repeated.token_ids[p]] |= bool(word)
    want_repeated = np.packbits(want_repeated, bitorder="little").view(np.int32)
    for trie_in, want in ((arrays, want_mask), (kernel.opened(arrays), want_mask), (kernel.opened(repeated),
                                                                                     want_repeated)):
        got = kernel.walk(trie_in, tables, 1, roots, 0, mask_words)
        assert np.array_equal(got.inside, want)
        assert [(k, nodes.tobytes()) for k, nodes in got.boundaries] == want_groups
        assert np.array_equal(kernel.walk(trie_in, tables, 1, roots, 0, mask_words, sparse_max=3).inside, want)
        mask = np.zeros(mask_words, np.int32)
        mask[-1] = -1  # the walk ORs: the caller's bits stay
        _walk.walk(trie_in, tables, 1, np.asarray(roots, np.int64), 0, mask, None)
        assert np.array_equal(mask[:-1], want[:-1]) and mask[-1] == -1


def test_a_negative_sparse_bound_or_word_count_raises(synthetic: pda.Vocabulary) -> None:
    """`pack_sparse` checks its numbers in the kernel: a negative bound or word count is a ValueError."""
    arrays = kernel.TrieArrays.of(vocabulary_trie(synthetic))
    nodes = np.arange(3, dtype=np.int32)
    for words, bound in ((4, -1), (-1, 3)):
        with pytest.raises(ValueError):
            kernel.pack_sparse(arrays, nodes, words, bound)


# Corrupt input: each case breaks one array of a valid walk; the kernel raises ValueError.
@pytest.fixture(scope="module")
def valid(synthetic: pda.Vocabulary) -> dict:
    compiled = pda.CompiledGrammar(pda.Grammar.load("json"), synthetic, warmup_seconds=0, disk_cache=False)
    index = compiled.index
    live_set = compiled.root.allowed | compiled.lexer.ignore
    tables = index.walk_tables(live_set)
    body = int(tables.trans[START, tables.byte_class[ord('"')]])
    flags = kernel.TableArrays(tables.trans, tables.byte_class, tables.live, tables.stops, tables.ends_as)
    assert isinstance(tables.arrays, kernel.PackedTableArrays)  # a contextual candidate set: packed
    return {
        "trie": index._trie_arrays, "tables": flags, "packed": tables.arrays, "walk_tables": tables, "index": index,
        "n_sets": len(tables.sets),
        "roots": np.asarray(index.first_nodes, np.int64), "state": body, "mask_words": index.mask_words,
        "slices": index._slices, "proof": kernel.new_proof(len(tables.live)),
    }


def run_walk(v: dict) -> kernel.Walked:
    return kernel.walk(v["trie"], v["tables"], v["n_sets"], v["roots"], v["state"], v["mask_words"], v["slices"],
                       v["proof"])


def run_opened_walk(v: dict) -> kernel.Walked:
    """`run_walk` with the trie and tables opened first (`kernel.opened` checks them then)."""
    return run_walk({**v, "trie": kernel.opened(v["trie"]), "tables": kernel.opened(v["tables"])})


def trie_with(v: dict, **arrays: np.ndarray) -> kernel.TrieArrays:
    return v["trie"]._replace(**{k: a for k, a in arrays.items()})


def records_with(v: dict, column: int, value: int, rows: slice = slice(None)) -> kernel.TrieArrays:
    """The trie's node records with one column set to `value` (column 2 as the rest bits: value << 16)."""
    nodes = v["trie"].nodes.copy()
    nodes[rows, column] = value if column != 2 else (nodes[rows, 2] & 0xFFFF) | (value << 16)
    return v["trie"]._replace(nodes=nodes)


def end_past_parent(v: dict) -> kernel.TrieArrays:
    """The trie with the first child of the first level's `a` ending past its parent's subtree (inside a string,
    where the walk reads it)."""
    nodes = v["trie"].nodes
    parent = next(n for n in v["roots"].tolist() if nodes[n, 2] & 0xFF == ord("a") and nodes[n, 0] > n + 1)
    return records_with(v, 0, int(nodes[parent, 0]) + 1, slice(parent + 1, parent + 2))


def broken(array: np.ndarray, index: int | slice, value: int) -> np.ndarray:
    out = array.copy()
    out[index] = value
    return out


CORRUPT = {
    "trans as int64": lambda v: {"tables": v["tables"]._replace(trans=v["tables"].trans.astype(np.int64))},
    "trans leads outside": lambda v: {"tables": v["tables"]._replace(trans=broken(v["tables"].trans, slice(None), 10**6))},
    "negative transition": lambda v: {"tables": v["tables"]._replace(trans=broken(v["tables"].trans, slice(None), -1))},
    "byte_class of 255": lambda v: {"tables": v["tables"]._replace(byte_class=v["tables"].byte_class[:255])},
    "byte class too big": lambda v: {"tables": v["tables"]._replace(byte_class=broken(v["tables"].byte_class, 65, 999))},
    "live too short": lambda v: {"tables": v["tables"]._replace(live=v["tables"].live[:-1])},
    "live as int8": lambda v: {"tables": v["tables"]._replace(live=v["tables"].live.astype(np.int8))},
    "ends_as past the sets": lambda v: {"tables": v["tables"]._replace(ends_as=np.full_like(v["tables"].ends_as, 50))},
    "non-contiguous trans": lambda v: {"tables": v["tables"]._replace(
        trans=np.repeat(v["tables"].trans, 2, axis=1)[:, ::2])},
    "tables tuple too short": lambda v: {"tables": tuple(v["tables"])[:4]},
    "records of 2 columns": lambda v: {"trie": trie_with(v, nodes=np.ascontiguousarray(v["trie"].nodes[:, :2]))},
    "records as int64": lambda v: {"trie": trie_with(v, nodes=v["trie"].nodes.astype(np.int64))},
    "no record past the last node": lambda v: {"trie": trie_with(v, nodes=v["trie"].nodes[:1].copy())},
    "token position outside": lambda v: {"trie": records_with(v, 1, 10**9, slice(1, None))},
    "token positions decreasing": lambda v: {"trie": trie_with(v, nodes=np.column_stack([
        v["trie"].nodes[:, 0], np.arange(len(v["trie"].nodes), dtype=np.int32)[::-1], v["trie"].nodes[:, 2:]]))},
    "token id outside the mask": lambda v: {"trie": trie_with(v, token_ids=broken(v["trie"].token_ids, slice(None), 10**9))},
    "negative token id": lambda v: {"trie": trie_with(v, token_ids=broken(v["trie"].token_ids, slice(None), -3))},
    "subtree end outside": lambda v: {"trie": records_with(v, 0, 10**8)},
    "subtree end before the node": lambda v: {"trie": records_with(v, 0, 0)},
    "subtree end at the node": lambda v: {"trie": trie_with(v, nodes=np.column_stack(
        [np.arange(len(v["trie"].nodes), dtype=np.int32), v["trie"].nodes[:, 1:]]))},
    "subtree end past the parent's": lambda v: {"trie": end_past_parent(v)},
    "depth two below the parent's": lambda v: {"trie": records_with(v, 3, 5, slice(2, None))},
    "depth at the root's parent's": lambda v: {"trie": records_with(v, 3, 0, slice(2, None))},
    "root 0": lambda v: {"roots": np.zeros(1, np.int64)},
    "root outside": lambda v: {"roots": np.array([10**9], np.int64)},
    "2-D roots": lambda v: {"roots": v["roots"].reshape(1, -1)},
    "root state outside": lambda v: {"state": 10**6},
    "negative root state": lambda v: {"state": -1},
    "negative mask words": lambda v: {"mask_words": -1},
    "rest negative": lambda v: {"trie": records_with(v, 2, -1)},
    "plain body outside": lambda v: {"slices": v["slices"]._replace(plain_body=np.full((8, 256), 9, np.int8))},
    "plain body of 7 rows": lambda v: {"slices": v["slices"]._replace(plain_body=np.zeros((7, 256), np.int8))},
    "depth too big": lambda v: {"slices": v["slices"]._replace(depth=10**6)},
    "negative search size": lambda v: {"slices": v["slices"]._replace(search_min_nodes=-1)},
    "proof of the wrong width": lambda v: {"proof": kernel.new_proof(3)},
    "proof read-only": lambda v: {"proof": np.frombuffer(v["proof"].tobytes(), np.int16).reshape(v["proof"].shape)},
    "proof as int32": lambda v: {"proof": v["proof"].astype(np.int32)},
}


def packed_with(v: dict, **arrays: np.ndarray) -> dict:
    return {"tables": v["packed"]._replace(**arrays)}


CORRUPT_PACKED = {
    "live_bits too short": lambda v: packed_with(v, live_bits=v["packed"].live_bits[:-1]),
    "live_bits signed": lambda v: packed_with(v, live_bits=v["packed"].live_bits.astype(np.int64)),
    "candidates of another width": lambda v: packed_with(v, candidates=np.zeros(5, "<u8")),
    "accept_row too short": lambda v: packed_with(v, accept_row=v["packed"].accept_row[:-1]),
    "accept_row past the rows": lambda v: packed_with(v, accept_row=np.full_like(v["packed"].accept_row, 10**6)),
    "row_bits of another width": lambda v: packed_with(v, row_bits=np.zeros((len(v["packed"].row_bits), 7), "<u8")),
    "row_bits 1-D": lambda v: packed_with(v, row_bits=v["packed"].row_bits.ravel()),
}


def test_packed_tables_walk_as_their_flags(valid: dict) -> None:
    """The fixture's packed tables (what the index hands the kernel) give the walk its flags give: the same
    inside tokens, and the same nodes per terminal set once the index's kernel maps accept rows to sets."""
    packed = run_walk({**valid, "tables": valid["packed"], "n_sets": valid["walk_tables"].n_sets,
                       "proof": kernel.new_proof(len(valid["tables"].live))})
    flags = run_walk({**valid, "proof": kernel.new_proof(len(valid["tables"].live))})
    assert np.array_equal(packed.inside, flags.inside)
    slices = valid["slices"]
    classified = valid["index"]._walks.classify(
        valid["walk_tables"].kernel_view(valid["state"]), valid["roots"],
        (slices.plain_body, kernel.new_proof(len(valid["tables"].live)), slices.depth, slices.search_min_nodes))
    assert np.array_equal(classified.inside, flags.inside)
    got = sorted((g.terminals, g.nodes.tobytes()) for g in classified.groups)
    sets = valid["walk_tables"].sets
    assert got == sorted((sets[k], n.tobytes()) for k, n in flags.boundaries)
    assert got


@pytest.mark.parametrize("case", sorted(CORRUPT_PACKED))
def test_corrupt_packed_input_raises_value_error(case: str, valid: dict) -> None:
    v = {**valid, "proof": kernel.new_proof(len(valid["tables"].live)), **CORRUPT_PACKED[case](valid)}
    with pytest.raises(ValueError):
        run_walk(v)
    with pytest.raises(ValueError):
        run_opened_walk(v)


@pytest.mark.parametrize("case", sorted(CORRUPT))
def test_corrupt_input_raises_value_error(case: str, valid: dict) -> None:
    assert run_walk(valid).inside is not None  # the valid walk works
    v = {**valid, "proof": kernel.new_proof(len(valid["tables"].live)), **CORRUPT[case](valid)}
    with pytest.raises(ValueError):
        run_walk(v)
    with pytest.raises(ValueError):
        run_opened_walk(v)
    if case.startswith(("root", "2-D", "negative root", "trans", "byte", "child", "token_ptr", "subtree", "live")):
        with pytest.raises(ValueError):
            kernel.walk_states(v["trie"], v["tables"], v["roots"], v["state"])


def test_corrupt_pack_input_raises_value_error(valid: dict) -> None:
    trie = valid["trie"]
    n_nodes = len(trie.nodes) - 1
    for nodes in (np.array([-1], np.int32), np.array([n_nodes], np.int32), np.zeros(3, np.int64)):
        with pytest.raises(ValueError):
            kernel.pack(trie, nodes, valid["mask_words"])
    with pytest.raises(ValueError):
        kernel.pack(trie._replace(token_ids=broken(trie.token_ids, slice(None), 10**9)),
                    np.arange(n_nodes, dtype=np.int32), valid["mask_words"])


def test_the_mask_is_the_callers_writable_int32_words(valid: dict) -> None:
    """The kernel sets inside bits in the caller's array and clears none; an array it cannot write into
    as int32 words raises ValueError before anything is walked."""
    want = run_walk(valid).inside
    cut = (valid["slices"].plain_body, kernel.new_proof(len(valid["tables"].live)), valid["slices"].depth,
           valid["slices"].search_min_nodes)
    args = (valid["trie"], valid["tables"], valid["n_sets"], valid["roots"], valid["state"])
    mask = np.zeros(valid["mask_words"], np.int32)
    mask[-1] = -1  # words the walk leaves alone keep their bits
    groups, any_inside, _ = _walk.walk(*args, mask, cut)
    assert any_inside is True
    assert np.array_equal(mask[:-1], want[:-1]) and mask[-1] == -1
    read_only = np.zeros(valid["mask_words"], np.int32)
    read_only.flags.writeable = False
    for bad in (read_only, np.zeros(valid["mask_words"], np.int64), np.zeros((2, valid["mask_words"]), np.int32),
                np.zeros(valid["mask_words"], np.uint8)):
        with pytest.raises(ValueError, match="mask"):
            _walk.walk(*args, bad, cut)


def test_threads_walking_at_once_agree_with_one_thread(qwen2: pda.Vocabulary) -> None:
    """Walks from many states on four threads at once, sharing each table's proof buffer (written concurrently,
    without the GIL) and the index's opened trie and tables, give the results one thread gives with fresh buffers."""
    grammar = pda.Grammar.from_json_schema({"type": "object", "properties": {
        "s": {"type": "string"}, "c": {"type": "string", "maxLength": 60}, "n": {"type": "integer"}}})
    compiled = pda.CompiledGrammar(grammar, qwen2, warmup_seconds=0, disk_cache=False)
    index = compiled.index
    jobs = []
    rng = random.Random(4)
    for _ in range(6):
        for node, q, _token in random_walk_states(compiled, rng, max_steps=25):
            jobs.append((index.walk_tables(node.allowed | compiled.lexer.ignore), q))
    assert len(jobs) > 40

    def walk(tables: token_index._WalkTables, q: int, proof: np.ndarray) -> tuple:
        got = kernel.walk(index._kernel_trie, tables.kernel_tables, tables.n_sets, index.first_nodes, q,
                          index.mask_words, index._slices, proof)
        return (None if got.inside is None else got.inside.tobytes()), [(k, n.tobytes()) for k, n in got.boundaries]

    alone = [walk(tables, q, kernel.new_proof(len(tables.live))) for tables, q in jobs]
    shared = {id(tables): kernel.new_proof(len(tables.live)) for tables, _ in jobs}
    start = threading.Barrier(4)

    def worker(k: int) -> dict[int, tuple]:
        """Every job, in this thread's own order, against the buffers all threads share."""
        order = list(range(len(jobs)))
        random.Random(k).shuffle(order)
        start.wait()
        return {i: walk(jobs[i][0], jobs[i][1], shared[id(jobs[i][0])]) for i in order}

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(worker, range(4)))
    for k, got in enumerate(results):
        assert [got[i] for i in range(len(jobs))] == alone, f"thread {k} differs from one thread alone"


def test_opened_tables_keep_the_automaton_of_their_first_search(valid: dict) -> None:
    """Opened tables keep their search's moves, made for the plain-body automaton of their first search: a walk
    under another automaton is refused (the proofs it would read are not its), the same tables opened again take
    it, and what each gives equals a walk of the tables passed as arrays (moves made per call)."""
    slices = valid["slices"]
    other = slices._replace(plain_body=np.where(np.arange(256) == ord("e"), -1, slices.plain_body).astype(np.int8))
    tables = kernel.opened(valid["tables"])
    fresh = lambda: kernel.new_proof(len(valid["tables"].live))  # noqa: E731
    first = run_walk({**valid, "tables": tables, "proof": fresh()})
    assert first.searched > 0
    assert_walked_equal(first, run_walk({**valid, "proof": fresh()}))
    with pytest.raises(ValueError, match="another plain-body automaton"):
        run_walk({**valid, "tables": tables, "proof": fresh(), "slices": other})
    again = run_walk({**valid, "tables": kernel.opened(valid["tables"]), "proof": fresh(), "slices": other})
    assert again.searched > 0
    assert_walked_equal(again, run_walk({**valid, "proof": fresh(), "slices": other}))
    assert_walked_equal(again, first)  # the cut changes what is visited, never what is found


def assert_walked_equal(a: kernel.Walked, b: kernel.Walked) -> None:
    assert (a.inside is None) == (b.inside is None) and (a.inside is None or np.array_equal(a.inside, b.inside))
    assert [(k, n.tolist()) for k, n in a.boundaries] == [(k, n.tolist()) for k, n in b.boundaries]


def _python_content_tag(content: tuple, order: list[int]) -> str:
    """The content tag's formula in plain Python (big ints masked to 64 bits): the kernel's oracle."""
    prime, mix, bits = 0x100000001B3, 0x9E3779B97F4A7C15, (1 << 64) - 1
    h = 0
    for (digest, priority, state), _ in zip(content, order):
        number = int(digest[:16], 16) ^ (priority * prime & bits)
        h = ((h ^ number ^ (state * mix & bits)) * prime) & bits
    return format(h, "016x")


def test_content_tag_is_the_formula_and_memoises_each_terminals_number() -> None:
    """`content_tag` equals the formula on random contents (priorities negative and past 64 bits, states past 32
    bits, uppercase digests), reads a terminal's number from `numbers` once stored there, and refuses bad input."""
    rng = random.Random(7)
    for _ in range(300):
        n = rng.randrange(0, 8)
        order = rng.sample(range(40), n)
        content = tuple((("%064x" % rng.getrandbits(256)).upper() if rng.random() < 0.2 else "%064x" % rng.getrandbits(256),
                         rng.choice([0, 1, -1, -7, 3, 1 << 70, -(1 << 65)]), rng.choice([0, 1, 2, 977, (1 << 40) + 3]))
                        for _ in range(n))
        numbers: dict[int, int] = {}
        assert kernel.content_tag(content, order, numbers) == _python_content_tag(content, order)
        assert set(numbers) == set(order)
        assert kernel.content_tag(content, order, numbers) == _python_content_tag(content, order)
    # A stored number is read, not the digest: a changed one changes the tag.
    content, order = (("ab" * 32, 1, 5),), [3]
    assert kernel.content_tag(content, order, {3: 0}) == _python_content_tag((("0" * 16, 0, 5),), order)
    with pytest.raises(ValueError):
        kernel.content_tag((("xyz" * 8, 1, 5),), [0], {})
    with pytest.raises(ValueError):
        kernel.content_tag((("ab" * 32, 1, 5),), [0, 1], {})
    with pytest.raises(ValueError):
        kernel.content_tag((("ab" * 4, 1, 5),), [0], {})
    with pytest.raises(TypeError):
        kernel.content_tag([("ab" * 32, 1, 5)], [0], {})
