"""The index's walks in C (`pda.kernels.walk.IndexWalks`: the token index's `after_boundary`) against the reference.

A boundary group's suffix classification is walked, grouped and recorded in C (the
walks from a lexer state, `classify`, are checked against the reference by
tests/test_walk_kernel.py through `TokenIndex._classify`; here their bad input and
leaks). Here,
on random regex grammars over a synthetic vocabulary (contextual lexer, through the
all-terminal DFA and through the shared product; the basic mode keeps its Python
classification) and on JSON Schema states over Qwen2: every answer equals
`pda.reference.reference_classification` (every token fed byte by byte), for the groups
of root walks and for the groups the kernel made itself (second boundaries); it is
recorded where the index records it (`group.after`, `_suffixes`, `nbytes`), and its
objects are built as the constructors build them. Several threads missing on the same
groups get the reference's answers. Bad input raises naming it, and 10^5 calls leak
neither references nor memory.
"""

from __future__ import annotations

import random
import sys
import threading
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import pda
from pda.index import token_index
from pda.index.token_index import BoundaryGroup, Classification
from pda.kernels import walk as kernel
from pda.lexer import lexer as lexer_module
from pda.lexer.lexer import START
from pda.reference import random_walk_states, reference_classification
from tests.classifications import assert_same_classification
from tests.test_walk_kernel import regex_grammar, synthetic_vocabulary


@pytest.fixture(scope="module")
def synthetic() -> pda.Vocabulary:
    return synthetic_vocabulary()


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An empty disk cache and shared store: every walk here is made, none read back."""
    monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(token_index, "_shared", __import__("weakref").WeakKeyDictionary())


def compile_text(text: str, vocab: pda.Vocabulary, **kw: object) -> pda.CompiledGrammar:
    return pda.CompiledGrammar(pda.Grammar.from_lark(text, **kw), vocab, warmup_seconds=0, disk_cache=False)


def boundary_pairs(compiled: pda.CompiledGrammar, rng: random.Random, walks: int) -> list[tuple[BoundaryGroup, int]]:
    """(group, next live set) of root walks' groups at the states of random walks (nothing asked after them)."""
    index, lexer = compiled.index, compiled.lexer
    pairs = []
    for _ in range(walks):
        for node, q, _token in random_walk_states(compiled, rng, max_steps=8, eos_probability=0.05):
            for group in index.at_state(q, node.allowed | lexer.ignore).groups:
                after = node.advance(group.terminals) if group.terminals & node.allowed else node
                if after is not None:
                    pairs.append((group, after.allowed | lexer.ignore))
    return pairs


def assert_made_as_constructed(found: Classification, words: int, sparse_max: int, where: str) -> None:
    """What the kernel made is what `Classification` and `BoundaryGroup` would hold: every slot set, groups a
    tuple of fresh groups (int64 read-only nodes, ascending and unique, their bytes the key, an empty memo
    unless asked since), few inside tokens as int32 ids ascending, more as an int32 mask of `words` words."""
    assert type(found) is Classification and isinstance(found.groups, tuple), where
    assert found.inside is None or found.tokens is None, where
    if found.tokens is not None:
        assert found.tokens.dtype == np.int32 and 0 < len(found.tokens) <= sparse_max, where
        assert (np.diff(found.tokens) > 0).all(), where
    if found.inside is not None:
        assert found.inside.dtype == np.int32 and found.inside.shape == (words,), where
        assert np.unpackbits(found.inside.view(np.uint8)).sum() > sparse_max, where
    seen = set()
    for g in found.groups:
        assert type(g) is BoundaryGroup and isinstance(g.terminals, int) and g.terminals > 0, where
        assert g.nodes.dtype == np.int64 and not g.nodes.flags.writeable and len(g.nodes), where
        assert (np.diff(g.nodes) > 0).all() and g.key == g.nodes.tobytes(), where
        assert isinstance(g.after, dict), where
        assert g.terminals not in seen, f"two groups of one terminal set {where}"
        seen.add(g.terminals)


def check_pairs(compiled: pda.CompiledGrammar, pairs: list[tuple[BoundaryGroup, int]], depth: int) -> int:
    """Each pair's answer equals the reference and is recorded; then the groups it made, `depth` levels down."""
    index = compiled.index
    sparse_max = index.mask_words // token_index.SPARSE_INSIDE_SHARE
    checked = 0
    for group, live in pairs:
        where = f"after {group.terminals:b} under {live:b}"
        recorded = (group.key, live) in index._suffixes
        before = index.nbytes()
        got = index.after_boundary(group, live)
        assert_same_classification(got, reference_classification(index, group.nodes, START, live), where)
        assert group.after[live] is got and index._suffixes[(group.key, live)] is got, where
        assert index.nbytes() == before + (0 if recorded else got.nbytes()), f"bytes not counted {where}"
        assert index.after_boundary(group, live) is got, where
        if compiled.lexer.mode == "contextual":
            assert_made_as_constructed(got, index.mask_words, sparse_max, where)
        checked += 1
        if depth and got.groups:
            checked += check_pairs(compiled, [(g, live) for g in got.groups], depth - 1)
    return checked


@pytest.mark.parametrize("all_terminal_dfa", [True, False], ids=["all-terminal-dfa", "shared-product"])
@pytest.mark.parametrize("seed", range(8))
def test_random_grammars_suffix_walks_equal_the_reference(seed: int, all_terminal_dfa: bool,
                                                          synthetic: pda.Vocabulary,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    if not all_terminal_dfa:
        monkeypatch.setattr(lexer_module, "ALL_TERMINALS_MAX_STATES", 0)
    rng = random.Random(seed)
    compiled = compile_text(regex_grammar(rng), synthetic)
    assert (compiled.lexer._all is not None) == all_terminal_dfa
    pairs = boundary_pairs(compiled, rng, walks=4)
    assert check_pairs(compiled, pairs, depth=2) >= len(pairs)


def test_json_grammar_suffix_walks_equal_the_reference(synthetic: pda.Vocabulary) -> None:
    """The shipped JSON grammar: ties, single live terminals (own DFAs), nothing live, several rows merged."""
    compiled = pda.CompiledGrammar(pda.Grammar.load("json"), synthetic, warmup_seconds=0, disk_cache=False)
    pairs = boundary_pairs(compiled, random.Random(4), walks=6)
    assert len(pairs) > 20 and check_pairs(compiled, pairs, depth=2) > len(pairs)


def test_basic_mode_records_its_python_classification(synthetic: pda.Vocabulary) -> None:
    """Under the basic lexer mode the miss is `_basic_suffix`'s, recorded by the kernel as a walk's would be."""
    compiled = pda.CompiledGrammar(pda.Grammar.load("sqlite"), synthetic, warmup_seconds=0, disk_cache=False)
    assert compiled.lexer.mode == "basic"
    pairs = boundary_pairs(compiled, random.Random(5), walks=3)
    assert pairs and check_pairs(compiled, pairs, depth=1) >= len(pairs)


def test_threads_missing_on_the_same_groups_get_the_reference(synthetic: pda.Vocabulary) -> None:
    """Four threads ask the same fresh groups in different orders (the walks run without the GIL): every
    answer equals the reference, and each group ends with one answer recorded."""
    rng = random.Random(9)
    compiled = compile_text(regex_grammar(random.Random(3)), synthetic)
    index = compiled.index
    pairs = boundary_pairs(compiled, rng, walks=6)
    assert len(pairs) > 10
    answers: list[list] = [[] for _ in range(4)]
    errors = []
    start = threading.Barrier(4)

    def ask(k: int) -> None:
        order = list(range(len(pairs)))
        random.Random(k).shuffle(order)
        try:
            start.wait()
            for _ in range(3):
                answers[k].extend((i, index.after_boundary(*pairs[i])) for i in order)
        except Exception as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=ask, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k in range(4):
        for i, got in answers[k]:
            group, live = pairs[i]
            assert_same_classification(got, reference_classification(index, group.nodes, START, live), f"thread {k}")
    for group, live in pairs:
        assert index._suffixes[(group.key, live)] is not None and live in group.after


def suffix_walks(index: token_index.TokenIndex, suffixes: dict, tables_of=None, best=None) -> kernel.IndexWalks:
    """A `IndexWalks` on an index's trie and tables, recording into `suffixes`."""
    return kernel.IndexWalks(index._kernel_trie, index.mask_words, index.mask_words // token_index.SPARSE_INSIDE_SHARE,
                              suffixes, tables_of or index._suffix_tables, best or index.lexer.best, None,
                              (Classification, BoundaryGroup))


def a_pair(compiled: pda.CompiledGrammar) -> tuple[BoundaryGroup, int]:
    """A group whose suffix walk under its live set finds boundaries (so rows are handed)."""
    index = compiled.index
    for group, live in boundary_pairs(compiled, random.Random(2), walks=6):
        if live & (live - 1) & index._live_at_start and index.after_boundary(group, live).groups:
            return group, live
    raise AssertionError("no group with second boundaries")


def test_bad_input_raises_naming_it(synthetic: pda.Vocabulary) -> None:
    compiled = pda.CompiledGrammar(pda.Grammar.load("json"), synthetic, warmup_seconds=0, disk_cache=False)
    index = compiled.index
    group, live = a_pair(compiled)
    fresh = lambda: BoundaryGroup(group.terminals, group.nodes)  # noqa: E731
    walks = suffix_walks(index, {})
    with pytest.raises(TypeError, match="2 positional"):
        walks(fresh())
    with pytest.raises(TypeError, match="live_set must be an int"):
        walks(fresh(), "1")
    with pytest.raises(AttributeError):
        walks(object(), live)
    odd = fresh()
    odd.after = []
    with pytest.raises(TypeError, match="`after` is not a dict"):
        walks(odd, live)
    with pytest.raises(TypeError, match="tables_of must return"):
        suffix_walks(index, {}, tables_of=lambda s: (1, 2))(fresh(), live)
    rows_cut = lambda s: (*index._suffix_tables(s)[:3], [], index._suffix_tables(s)[4], {})  # noqa: E731
    with pytest.raises(ValueError, match="accept row .* outside"):
        suffix_walks(index, {}, tables_of=rows_cut)(fresh(), live)
    with pytest.raises(ValueError, match="root state"):
        suffix_walks(index, {}, tables_of=lambda s: (*index._suffix_tables(s)[:2], 10**6,
                                                     *index._suffix_tables(s)[3:]))(fresh(), live)
    outside = BoundaryGroup(group.terminals, np.array([index.trie.n_nodes + 5], dtype=np.int64))
    with pytest.raises(ValueError, match="not a node of the trie"):
        walks(outside, live)
    with pytest.raises(ValueError, match="roots must be"):
        walks(BoundaryGroup(group.terminals, np.array([1.0])), live)
    with pytest.raises(TypeError, match="opened trie"):
        kernel.IndexWalks(index._trie_arrays, 1, 1, {}, len, len, None, (Classification, BoundaryGroup))
    with pytest.raises(ValueError, match="non-negative"):
        kernel.IndexWalks(index._kernel_trie, -1, 1, {}, len, len, None, (Classification, BoundaryGroup))
    with pytest.raises(TypeError, match="types must be"):
        kernel.IndexWalks(index._kernel_trie, 1, 1, {}, len, len, None, (Classification,))
    with pytest.raises(TypeError, match="suffixes must be a dict"):
        kernel.IndexWalks(index._kernel_trie, 1, 1, [], len, len, None, (Classification, BoundaryGroup))
    view = index.walk_tables(live).kernel_view(START)
    with pytest.raises(TypeError, match="tables must be"):
        walks.classify(view[:5], index.first_nodes, None)
    with pytest.raises(TypeError, match="tables must be"):
        walks.classify((*view[:3], None, 1, {}), index.first_nodes, None)
    with pytest.raises(ValueError, match="slices must be a tuple of 4"):
        walks.classify(view, index.first_nodes, (1, 2))
    with pytest.raises(ValueError, match="set [0-9]+ is outside the tables' 0 sets"):
        walks.classify((*view[:3], None, [], None), group.nodes, None)
    with pytest.raises(TypeError, match="3 or 4 arguments"):
        walks.classify(view, index.first_nodes)
    with pytest.raises(ValueError, match="sparse_max must be None or a count"):
        walks.classify(view, index.first_nodes, None, -1)
    # After all of that, a good call still answers as the reference does.
    assert_same_classification(walks(fresh(), live), reference_classification(index, group.nodes, START, live), "")


def test_int32_nodes_are_walked_as_int64(synthetic: pda.Vocabulary) -> None:
    """A group restored with int32 nodes (`entries_from_arrays`) is walked as its int64 nodes are."""
    compiled = pda.CompiledGrammar(pda.Grammar.load("json"), synthetic, warmup_seconds=0, disk_cache=False)
    index = compiled.index
    group, live = a_pair(compiled)
    narrow = BoundaryGroup(group.terminals, group.nodes.astype(np.int32))
    got = suffix_walks(index, {})(narrow, live)
    assert_same_classification(got, reference_classification(index, group.nodes, START, live), "int32 nodes")


def test_calls_leak_neither_references_nor_memory(synthetic: pda.Vocabulary) -> None:
    """10^5 misses (each walks, hands rows, makes groups, records), 10^4 failing calls and 10^4 walks from the
    trie's root (`classify`, with the cut): the reference counts of what is passed in (small ints aside, which
    everything shares) stay put, and the memory traced after a warm-up does not grow."""
    compiled = pda.CompiledGrammar(pda.Grammar.load("json"), synthetic, warmup_seconds=0, disk_cache=False)
    index = compiled.index
    group, live = a_pair(compiled)
    nodes, terminals = group.nodes, group.terminals
    tables = index._suffix_tables(live)
    proof = kernel.new_proof(index.walk_tables(live).arrays.trans.shape[0])
    counted = [nodes, group.key, tables[0], index.first_nodes, proof] + [x for x in (live, terminals) if x > 256]
    bad = lambda s: (1, 2)  # noqa: E731

    view = index.walk_tables(live).kernel_view(START)
    cut = index._slices

    def loop(n: int) -> None:
        suffixes: dict = {}
        walks = suffix_walks(index, suffixes)
        failing = suffix_walks(index, {}, tables_of=bad)
        for i in range(n):
            g = BoundaryGroup(terminals, nodes, group.key)
            walks(g, live)
            suffixes.clear()
            if i % 10 == 0:
                try:
                    failing(g, live)
                except TypeError:
                    pass
                walks.classify(view, index.first_nodes, (cut.plain_body, proof, cut.depth, cut.search_min_nodes))

    loop(1000)
    counts = [sys.getrefcount(x) for x in counted]
    tracemalloc.start()
    try:
        loop(1000)
        first, _ = tracemalloc.get_traced_memory()
        loop(100_000)
        last, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [sys.getrefcount(x) for x in counted] == counts
    assert last - first < 64 * 1024, f"traced memory grew by {last - first} bytes over 10^5 calls"
