"""The token index's content-keyed classifications, against fresh walks.

A walk's result is kept by what it depends on (the live terminals' DFAs,
priorities and states) and reused by any grammar with the same terminals, whatever
their ids (`pda.index.token_index.SharedClassifications`). Every check here
compiles one grammar to fill the shared store, then a second grammar whose
terminals have other ids, and compares what the second one's index answers
(shared hits, single-terminal walks on the terminal's own DFA, disk entries)
with the reference walk `pda.reference.reference_classification` (the candidate
set's DFA, no cache, every token fed byte by byte) and the masks with the slow
reference path.
"""

from __future__ import annotations

import random
import weakref
from pathlib import Path

import numpy as np
import pytest

import pda
from pda import cache
from pda.compiler import vocabulary_trie
from pda.index import token_index
from pda.lexer import lexer as lexer_module
from pda.lexer.lexer import START
from pda.reference import mask_mismatches, random_walk_states, reference_classification
from tests.classifications import assert_same_classification

# One object frame, two string-ish terminals and a number; B renames nothing but
# declares other terminals first and adds a list and ignored white space, so ids differ.
GRAMMAR_A = r"""
start: "{" "\"name\": " STRING ", \"age\": " NUMBER "}"
STRING: /"[a-z ]*"/
NUMBER: /-?[0-9]+(\.[0-9]+)?/
"""
GRAMMAR_B = r"""
start: "[" item ("," item)* "]"
item: NUMBER | STRING | TRUE | NULL | obj
obj: "{" "\"name\": " STRING ", \"age\": " NUMBER "}"
TRUE: "true"
NULL: "null"
NUMBER: /-?[0-9]+(\.[0-9]+)?/
STRING: /"[a-z ]*"/
%ignore " "
"""
# Ties and priorities: a keyword and a name match the same lexeme (a tie in C, the keyword wins in D).
GRAMMAR_C = r"""
start: (KW | NAME | ALSO)+
KW: "if"
NAME: /[a-z]+/
ALSO: /i[a-z]/
%ignore " "
"""
GRAMMAR_D = r"""
start: (ALSO | NAME | KW | NUM)+
NUM: /[0-9]+/
ALSO: /i[a-z]/
NAME: /[a-z]+/
KW.2: "if"
%ignore " "
"""


def vocabulary(seed: int = 3) -> pda.Vocabulary:
    """Single bytes, JSON pieces and random pieces of sample texts (boundary tokens among them)."""
    rng = random.Random(seed)
    texts = ['{"name": "ada lovelace", "age": 36}', '[1, "x", true, null, {"name": "b", "age": -2.5}]',
             "if iffy name if9 ix", '["ab c", 12, 3.25]']
    tokens = {chr(c) for c in range(32, 127)} | {'{"', '": ', '", "', '"}', ', "', "[1", "],", " \"", "if", "ify", "é"}
    for _ in range(800):
        t = rng.choice(texts)
        i = rng.randrange(len(t))
        tokens.add(t[i : rng.randint(i + 1, min(len(t), i + 8))])
    return pda.Vocabulary.from_tokens(sorted(tokens) + [None], eos_ids=[len(tokens)])


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """An empty shared store and disk cache, so the test sees only what it fills."""
    monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(token_index, "_shared", weakref.WeakKeyDictionary())
    return tmp_path / "cache"


def compile_lark(text: str, vocab: pda.Vocabulary) -> pda.CompiledGrammar:
    return pda.CompiledGrammar(pda.Grammar.from_lark(text), vocab, warmup_seconds=0, disk_cache=False)


def check_walks(compiled: pda.CompiledGrammar, n_walks: int, seed: int) -> int:
    """Along random walks: every classification and suffix classification equals the fresh walk; masks equal the reference."""
    index, lexer = compiled.index, compiled.lexer
    rng = random.Random(seed)
    checked = 0
    for _ in range(n_walks):
        for node, q, _token in random_walk_states(compiled, rng, max_steps=12):
            live_set = node.allowed | lexer.ignore
            got = index.at_state(q, live_set)
            want = reference_classification(index, index.first_nodes, q, live_set)
            assert_same_classification(got, want, f"at lexer state {q}, live set {live_set:b}")
            for group in got.groups:
                after = node.advance(group.terminals) if group.terminals & node.allowed else node
                if after is None:
                    continue
                nxt = after.allowed | lexer.ignore
                assert_same_classification(index.after_boundary(group, nxt),
                                           reference_classification(index, group.nodes, START, nxt),
                                           f"after the boundary {group.terminals:b} at state {q}")
            assert mask_mismatches(compiled, node, q) == [], f"mask differs from the reference at state {q}"
            checked += 1
    return checked


@pytest.mark.parametrize("all_terminal_dfa", [True, False], ids=["all-terminal-dfa", "per-set-product"])
@pytest.mark.parametrize("first, second", [(GRAMMAR_A, GRAMMAR_B), (GRAMMAR_C, GRAMMAR_D)], ids=["json-frame", "ties"])
def test_a_second_grammar_reuses_walks_with_its_own_terminal_ids(
    first: str, second: str, all_terminal_dfa: bool, fresh: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not all_terminal_dfa:
        monkeypatch.setattr(lexer_module, "ALL_TERMINALS_MAX_STATES", 0)
    vocab = vocabulary()
    a = compile_lark(first, vocab)
    assert check_walks(a, 30, seed=1) > 100
    b = compile_lark(second, vocab)
    assert (b.lexer._all is not None) == all_terminal_dfa
    assert a.lexer.names != b.lexer.names  # other terminal ids: the entries are translated, not copied
    shared = b.index.shared
    assert shared is a.index.shared
    hits = shared.walks.hits
    assert check_walks(b, 30, seed=2) > 100
    assert shared.walks.hits > hits, "the second grammar found none of the first one's walks"


def test_disk_entries_equal_fresh_walks(fresh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Walks written to disk (here every walk) are read back by a new process's store and equal fresh ones."""
    monkeypatch.setattr(token_index, "DISK_MIN_SECONDS", 0.0)
    monkeypatch.setattr(token_index, "DISK_MIN_TOKENS", 0)
    vocab = vocabulary()
    a = compile_lark(GRAMMAR_A, vocab)
    check_walks(a, 10, seed=3)
    cache.flush()
    files = list((fresh / "classes").glob("*.pdac"))
    assert files, "no classification was written to disk"
    # A new process: an empty memory store, the same disk cache.
    monkeypatch.setattr(token_index, "_shared", weakref.WeakKeyDictionary())
    b = compile_lark(GRAMMAR_B, vocab)
    loaded = []
    real_load = token_index.cache.load
    monkeypatch.setattr(token_index.cache, "load", lambda kind, key, decode, tag=None: loaded.append(token_index.cache.entry_path(kind, key, tag)) or real_load(kind, key, decode, tag))
    check_walks(b, 20, seed=4)
    assert set(loaded) & set(files), "no walk was read back from disk"
    assert set(loaded) <= set(files), "a walk whose tag the folder does not list was looked up"


def test_a_root_walk_miss_builds_no_disk_key_unless_its_tag_is_listed(fresh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A root walk's miss hashes its disk key only when the folder lists its content's tag: never with nothing
    stored; walks stored carry their tag in their file name; a new process reads them back by it."""
    monkeypatch.setattr(token_index, "DISK_MIN_TOKENS", 0)
    monkeypatch.setattr(token_index, "DISK_MIN_SECONDS", 1e9)  # nothing stored, however slow a walk (a loaded machine)
    tags, keyed = {}, []
    real_tag, real_key = token_index.TokenIndex._content_tag, token_index.TokenIndex._disk_key
    monkeypatch.setattr(token_index.TokenIndex, "_content_tag",
                        lambda self, content, order: tags.setdefault(content, real_tag(self, content, order)))
    monkeypatch.setattr(token_index.TokenIndex, "_disk_key",
                        lambda self, content: keyed.append(content) or real_key(self, content))
    vocab = vocabulary()
    check_walks(compile_lark(GRAMMAR_A, vocab), 10, seed=3)
    assert tags and keyed == [], "a walk built a disk key with nothing stored"
    # Every walk stored (B's), under its tag.
    monkeypatch.setattr(token_index, "DISK_MIN_SECONDS", 0.0)
    monkeypatch.setattr(token_index, "_shared", weakref.WeakKeyDictionary())
    check_walks(compile_lark(GRAMMAR_B, vocab), 10, seed=4)
    cache.flush()
    names = {p.name for p in (fresh / "classes").glob("*.pdac")}
    assert names and {name.partition("-")[0] for name in names} == set(cache.tags("classes"))
    assert {tags[content] for content in keyed} == set(cache.tags("classes"))
    # A new process (empty memory store; nothing more stored): B's walks are read back, C's and D's
    # build a key only for a tag the folder lists.
    monkeypatch.setattr(token_index, "DISK_MIN_SECONDS", 1e9)
    monkeypatch.setattr(token_index, "_shared", weakref.WeakKeyDictionary())
    found = []
    real_load = token_index.cache.load

    def load(kind: str, key: dict, decode: object, tag: str | None = None) -> object:
        entry = real_load(kind, key, decode, tag)
        found.append(entry is not None)
        return entry

    monkeypatch.setattr(token_index.cache, "load", load)
    tags.clear()
    keyed.clear()
    for grammar, seed in ((GRAMMAR_B, 6), (GRAMMAR_C, 7), (GRAMMAR_D, 8)):
        check_walks(compile_lark(grammar, vocab), 10, seed=seed)
    assert any(found), "no walk was read back by its tag"
    assert {tags[content] for content in keyed} <= set(cache.tags("classes"))
    assert len(keyed) < len(tags), "every walk's miss built a disk key"



def test_single_terminal_walk_runs_on_the_terminal_dfa(fresh: Path) -> None:
    """A state where one terminal is live is walked on that terminal's own DFA, whose tables every grammar shares."""
    vocab = vocabulary()
    b = compile_lark(GRAMMAR_B, vocab)
    lexer, index = b.lexer, b.index
    string = lexer.names.index("STRING")
    live_set = 1 << string
    assert index.at_state(START, live_set) is not None
    assert index._digest(string) in index.shared.terminal_tables
    tables = lexer.tables(live_set)
    for q in range(1, tables.n_states):
        if tables.live[q]:
            want = reference_classification(index, index.first_nodes, q, live_set)
            assert_same_classification(index.at_state(q, live_set), want, f"at state {q}")


def test_basic_lexer_mode_is_not_shared(fresh: Path) -> None:
    """Under the basic mode all terminals cut a lexeme, so walks stay per grammar (no signature)."""
    vocab = vocabulary()
    compiled = compile_lark("// pda: lexer=basic\n" + GRAMMAR_C, vocab)
    assert compiled.lexer.mode == "basic"
    live_set = compiled.root.allowed | compiled.lexer.ignore
    assert compiled.index._signature(START, live_set) is None
    assert check_walks(compiled, 10, seed=5) > 20
    assert compiled.index.shared.walks.hits == 0 and not len(compiled.index.shared.walks)


def test_store_is_bounded_by_bytes() -> None:
    """The shared walks hold at most their budget ("token_walks"), least recently used evicted,
    and a smaller budget set later shrinks a live store at once."""
    default = pda.memory_budgets()["token_walks"]["max_bytes"]
    store = token_index.SharedClassifications()
    mask = np.zeros(1000, np.int32)  # 4,000 bytes each
    try:
        for k in range(5):
            store.put(("k", k), (mask, (), None))
        assert len(store.walks) == 5
        pda.set_memory_budget("token_walks", 10_000)
        assert store.walks.nbytes <= 10_000 and len(store.walks) == 2
        assert store.get(("k", 0)) is None and store.get(("k", 4)) is not None
        fresh = token_index.SharedClassifications()
        for k in range(5):
            fresh.put(("k", k), (mask, (), None))
        assert len(fresh.walks) == 2
        # Entries of a few ids weigh their overhead too: the budget bounds how many it holds.
        few = token_index.SharedClassifications()
        for k in range(100):
            few.put(("k", k), (None, (), np.arange(4, dtype=np.int32)))
        assert len(few.walks) == 10_000 // (token_index.SHARED_ENTRY_BYTES + 16)
    finally:
        pda.set_memory_budget("token_walks", default)


def test_signatures_from_few_live_terminals_equal_those_picked_from_the_ranked_state(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A state of the all-terminal DFA where a few terminals are live gets its signature from theirs alone
    (`FEW_LIVE_MAX`); it must be the one picked from the state's every component ranked, for any subset."""
    keywords = [f"k{i}" for i in range(24)]
    text = "start: (" + " | ".join(f'"{k}"' for k in keywords) + " | NAME | NUMBER)+\n" + \
        "NAME: /[a-z][a-z0-9]*/\nNUMBER: /[0-9]+/\n%ignore \" \"\n"
    compiled = compile_lark(text, vocabulary())
    index, lexer = compiled.index, compiled.lexer
    every = (1 << len(lexer.dfas)) - 1
    ptr, terminals, _ = lexer.components(every)
    rng = random.Random(11)
    checked = 0
    for q in range(len(ptr) - 1):
        names = terminals[ptr[q] : ptr[q + 1]].tolist()
        for _ in range(6):
            kept = sum(1 << j for j in rng.sample(names, rng.randint(0, len(names))))
            key = ("all", q, kept)
            monkeypatch.setattr(token_index, "FEW_LIVE_MAX", -1)
            ranked = index._signature(q, every, key)
            monkeypatch.setattr(token_index, "FEW_LIVE_MAX", len(lexer.dfas))
            assert index._signature(q, every, key) == ranked, f"state {q}, live {kept:b}"
            checked += len(names) > 1
    assert checked > 20


def test_equal_inside_masks_are_kept_once_and_dead_ones_are_swept() -> None:
    """`same_inside` hands back the mask an earlier walk made when the words are equal (not one that merely
    shares its fingerprint's slot), lets a mask no walk holds die, and forgets dead masks, so what it keeps
    stays within twice the live masks (or the sweep's floor)."""
    store = token_index.SharedClassifications()
    first = np.arange(64, dtype=np.int32)
    assert store.same_inside(first) is first
    again = first.copy()
    assert store.same_inside(again) is first
    other = first[::-1].copy()
    assert store.same_inside(other) is other
    held = [store.same_inside(np.full(64, k, dtype=np.int32)) for k in range(3 * token_index.INSIDES_SWEEP_MIN)]
    del held
    dead = weakref.ref(other)
    del other
    assert dead() is None
    for k in range(3 * token_index.INSIDES_SWEEP_MIN):
        store.same_inside(np.full(64, -k - 1, dtype=np.int32))  # each dies at once
    assert len(store._insides) <= token_index.INSIDES_SWEEP_MIN + 1
    assert store.same_inside(first.copy()) is first


def test_only_root_walks_over_a_large_vocabulary_touch_the_disk(fresh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Walks from the trie's root over a vocabulary of `DISK_MIN_TOKENS` tokens or more are written to disk
    (and looked up there once another process wrote some); boundary groups' suffix walks never are, nor any
    walk over a smaller vocabulary. A suffix walk is the kernel's (`after_boundary`), which runs Python only
    for a live set's first tables (`_suffix_tables`) and an accept row's terminals: neither looks at the disk."""
    monkeypatch.setattr(token_index, "DISK_MIN_SECONDS", 0.0)
    looked_up = []  # (the key of a walk looked up or written, whether a suffix walk's tables were being made)
    in_suffix = [0]
    tables_made = [0]
    real_load, real_store = token_index.cache.load, token_index.cache.store
    real_tables = token_index.TokenIndex._suffix_tables

    def suffix_tables(self: token_index.TokenIndex, *args: object) -> object:
        in_suffix[0] += 1
        tables_made[0] += 1
        try:
            return real_tables(self, *args)
        finally:
            in_suffix[0] -= 1

    monkeypatch.setattr(token_index.TokenIndex, "_suffix_tables", suffix_tables)
    monkeypatch.setattr(token_index.cache, "load",
                        lambda kind, key, decode, tag=None: looked_up.append((key, in_suffix[0])) or real_load(kind, key, decode, tag))
    monkeypatch.setattr(token_index.cache, "store",
                        lambda kind, key, *entry: looked_up.append((key, in_suffix[0])) or real_store(kind, key, *entry))
    vocab = vocabulary()
    everything = len(vocabulary_trie(vocab).token_ids)
    monkeypatch.setattr(token_index, "DISK_MIN_TOKENS", everything + 1)  # a larger vocabulary than this one
    check_walks(compile_lark(GRAMMAR_A, vocab), 10, seed=6)
    assert not [k for k, _ in looked_up if "content" in k], "a walk over a small vocabulary was looked up on disk"
    cache.flush()
    assert not (fresh / "classes").exists() or not list((fresh / "classes").glob("*.pdac"))
    monkeypatch.setattr(token_index, "_shared", weakref.WeakKeyDictionary())
    monkeypatch.setattr(token_index, "DISK_MIN_TOKENS", everything)
    compiled = compile_lark(GRAMMAR_B, vocab)
    assert check_walks(compiled, 10, seed=6) > 0
    assert compiled.index._suffixes and tables_made[0], "no suffix walk ran"
    walks = [(k, during) for k, during in looked_up if "content" in k]
    assert walks and not any(during for _, during in walks), "a suffix walk was looked up on disk or written"
    cache.flush()
    assert list((fresh / "classes").glob("*.pdac"))