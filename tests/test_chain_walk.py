"""Chain walks (`pda.kernels.walk.chain_walk`, `TokenIndex._chain_walk`) against the full walk and the reference.

From a state of a terminal's own DFA where the lexeme can go on one way only (a key
literal's or a keyword's rest), a root walk follows that path down the trie instead of
reading every child of every node on it. Its answer must be the full kernel walk's
(sparse, from the trie's first level, its one set named by the terminal) wherever it
answers: checked at every state of every terminal of the shipped contextual grammars
and of JSON Schemas with key literals, enums and patterns, on a synthetic vocabulary (also
against the per-token reference walk) and on Qwen2. It must answer at the literal states
(else the test could pass with the path never taken) and decline elsewhere; corrupt input
raises.
"""

from __future__ import annotations

import json
import weakref
from pathlib import Path

import numpy as np
import pytest

import pda
from pda.index import token_index
from pda.kernels import walk as kernel
from pda.reference import reference_walk
from tests.classifications import assert_same_classification
from tests.vocabularies import byte_pieces

SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string"}, "nickname": {"type": "string"},
                                      "age": {"type": "integer"}, "active": {"type": "boolean"}},
     "required": ["name"]},
    {"type": "object", "properties": {"kind": {"enum": ["alpha", "beta", "alphabet", 3, None]},
                                      "code": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]+$"},
                                      "tags": {"type": "array", "items": {"const": "x\"y\\z"}}}},
]


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An empty shared store and disk cache: every walk here is computed, not found."""
    monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(token_index, "_shared", weakref.WeakKeyDictionary())


TEXTS = [json.dumps(SCHEMAS) + json.dumps({"name": "Ada", "nickname": "x\"y\\z", "age": 3, "active": True,
                                            "kind": "alphabet", "code": "AB-12", "tags": ["x\"y\\z"]}, indent=2),
         'local t = {1, "two", [3] = 4}\nfor i, v in ipairs(t) do print(i .. v) end -- loop\nwhile true do break end\n']


@pytest.fixture(scope="module")
def synthetic() -> pda.Vocabulary:
    """Every byte and pieces of the schemas, a document of theirs and Lua cut at any byte (keys, literals and
    keywords among them, whole and in parts)."""
    tokens = sorted(byte_pieces(TEXTS, seed=5, pieces=3000, longest=12))
    return pda.Vocabulary.from_tokens(tokens + [None], eos_ids=[len(tokens)])


def grammars() -> list[tuple[str, pda.Grammar]]:
    found = [(name, pda.Grammar.load(name)) for name in ("json", "lua")]
    found += [(f"schema {i}", pda.Grammar.from_json_schema(json.dumps(s))) for i, s in enumerate(SCHEMAS)]
    return found


def full_walk(index: token_index.TokenIndex, tables, state: int, j: int) -> token_index.Classification:
    """The kernel's sparse walk from the trie's first level, its set named as terminal j (what `_fresh_walk` does)."""
    walked = index._walk(tables, index.first_nodes, state, sparse=True)
    for group in walked.groups:
        group.terminals = 1 << j
    return walked


def reference(index: token_index.TokenIndex, tables, state: int, j: int) -> token_index.Classification:
    """The per-token reference walk at `state` of terminal j's own tables, as a classification."""
    inside, boundaries = reference_walk(index.trie, tables, index.first_nodes, state)
    ids = np.array(sorted(token for token, _, _ in inside), dtype=np.int32)
    nodes = np.array(sorted(node for node, _ in boundaries), dtype=np.int64)
    assert all(tables.ends_as[s] == 0 for _, s in boundaries)
    groups = [token_index.BoundaryGroup(1 << j, nodes)] if len(nodes) else []
    return token_index.Classification(None, groups, ids if len(ids) else None)


def check(compiled: pda.CompiledGrammar, *, with_reference: bool, where: str) -> tuple[int, int]:
    """Every state of every eager terminal's own DFA: the chain walk, where it answers, is the full walk (and the
    reference). Returns (states answered, states declined)."""
    index, lexer = compiled.index, compiled.lexer
    answered = declined = 0
    for j, dfa in enumerate(lexer.dfas):
        if index._lazy >> j & 1:
            continue
        tables = index._terminal_tables(j)
        for state in range(dfa.n_states):
            got = index._chain_walk(tables, state, 1 << j)
            if got is None:
                declined += 1
                continue
            answered += 1
            at = f"{where}, terminal {lexer.names[j]} state {state}"
            assert got.inside is None, at
            assert got.tokens is None or (got.tokens.dtype == np.int32 and (np.diff(got.tokens) > 0).all()), at
            for group in got.groups:
                assert group.terminals == 1 << j and group.nodes.dtype == np.int64, at
                assert group.key == group.nodes.tobytes() and (np.diff(group.nodes) > 0).all(), at
            assert_same_classification(got, full_walk(index, tables, state, j), at)
            if with_reference:
                assert_same_classification(got, reference(index, tables, state, j), f"{at} (reference)")
    return answered, declined


@pytest.mark.parametrize("name, grammar", grammars(), ids=[name for name, _ in grammars()])
def test_chain_walks_are_the_walk_on_a_synthetic_vocabulary(name: str, grammar: pda.Grammar,
                                                            synthetic: pda.Vocabulary) -> None:
    compiled = pda.CompiledGrammar(grammar, synthetic, warmup_seconds=0, disk_cache=False)
    answered, declined = check(compiled, with_reference=True, where=name)
    assert answered > 0 and declined > 0, (answered, declined)


@pytest.mark.parametrize("name, grammar", grammars(), ids=[name for name, _ in grammars()])
def test_chain_walks_are_the_walk_on_qwen2(name: str, grammar: pda.Grammar, qwen2: pda.Vocabulary) -> None:
    compiled = pda.CompiledGrammar(grammar, qwen2, warmup_seconds=0, disk_cache=False)
    answered, declined = check(compiled, with_reference=False, where=name)
    assert answered > 0 and declined > 0, (answered, declined)


def test_a_key_literal_answers_at_each_state_and_a_string_body_does_not(qwen2: pda.Vocabulary) -> None:
    """Every state of a key literal's DFA but its dead one is a chain (its rest, then its end, where every token
    going on crosses into the next lexeme); a free string's body is not."""
    compiled = pda.CompiledGrammar(pda.Grammar.from_json_schema(json.dumps(SCHEMAS[0])), qwen2, warmup_seconds=0,
                                   disk_cache=False)
    index, lexer = compiled.index, compiled.lexer
    keys = [j for j, dfa in enumerate(lexer.dfas) if dfa.n_states > 3 and all(
        index._chain_walk(index._terminal_tables(j), s, 1 << j) is not None
        for s in range(dfa.n_states) if dfa.live[s].any())]
    assert len(keys) >= 4, [lexer.names[j] for j in keys]
    ends = 0
    for j in keys:
        dfa, tables = lexer.dfas[j], index._terminal_tables(j)
        for s in range(dfa.n_states):
            if dfa.live[s].any() and dfa.accept[s].any():
                got = index._chain_walk(tables, s, 1 << j)
                assert got.tokens is None and len(got.groups) == 1, lexer.names[j]
                assert np.array_equal(got.groups[0].nodes, index.first_nodes), "at a literal's end every token crosses"
                ends += 1
    assert ends == len(keys)
    strings = [j for j, dfa in enumerate(lexer.dfas) if lexer.names[j].startswith("STR")]
    assert strings
    for j in strings:
        body = lexer.dfas[j].trans[lexer.dfas[j].start][lexer.dfas[j].byte_class[ord('"')]]
        assert index._chain_walk(index._terminal_tables(j), int(body), 1 << j) is None


def test_a_root_walk_at_a_chain_state_takes_no_full_walk(qwen2: pda.Vocabulary,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """`_root_walk` at a lexer state where one key literal is live alone answers by the chain walk: neither the
    full walk nor the signature (the shared store's key) is asked, and the answer is the full walk's."""
    compiled = pda.CompiledGrammar(pda.Grammar.from_json_schema(json.dumps(SCHEMAS[0])), qwen2, warmup_seconds=0,
                                   disk_cache=False)
    index, lexer = compiled.index, compiled.lexer
    j = next(j for j, name in enumerate(lexer.names) if lexer.dfas[j].n_states > 6 and not name.startswith("STR"))
    tables = lexer.tables(1 << j)
    q = tables.start
    for _ in range(2):  # two bytes into the literal: every live byte class of the state leads on
        q = next(int(tables.trans[q][c]) for c in range(tables.trans.shape[1]) if tables.live_at(int(tables.trans[q][c])))
    own = index._own_state(tables.key(q), 1 << j)
    assert own is not None and own[0] == j
    s = own[1]
    want = full_walk(index, index._terminal_tables(j), s, j)
    monkeypatch.setattr(index, "_walk", lambda *args, **kwargs: pytest.fail("the full walk was asked"))
    monkeypatch.setattr(index, "_signature", lambda *args, **kwargs: pytest.fail("the signature was asked"))
    got = index._root_walk(q, 1 << j)
    assert_same_classification(got, want, lexer.names[j])


def test_bad_input_raises(synthetic: pda.Vocabulary) -> None:
    compiled = pda.CompiledGrammar(pda.Grammar.from_json_schema(json.dumps(SCHEMAS[0])), synthetic,
                                   warmup_seconds=0, disk_cache=False)
    index = compiled.index
    tables = index._terminal_tables(0)
    child_ptr, child_ids = index._children
    trie = index._kernel_trie
    with pytest.raises(ValueError, match="child_ptr"):
        kernel.chain_walk(trie, tables.kernel_tables, child_ptr[:-1], child_ids, 0, 10)
    with pytest.raises(ValueError, match="child_ptr"):
        kernel.chain_walk(trie, tables.kernel_tables, child_ptr.astype(np.int32), child_ids, 0, 10)
    with pytest.raises(ValueError, match="root state"):
        kernel.chain_walk(trie, tables.kernel_tables, child_ptr, child_ids, 10**6, 10)
    with pytest.raises(ValueError, match="sparse_max"):
        kernel.chain_walk(trie, tables.kernel_tables, child_ptr, child_ids, 0, -1)
    with pytest.raises(TypeError, match="opened"):
        kernel.chain_walk(trie, tables.arrays, child_ptr, child_ids, 0, 10)
    with pytest.raises(TypeError, match="opened"):
        kernel.chain_walk(trie, index.walk_tables(compiled.lexer.live_at_start).kernel_tables, child_ptr,
                          child_ids, 0, 10)
    bad = child_ids.copy()
    bad[:] = 0  # every child the root itself
    key = next(j for j, name in enumerate(compiled.lexer.names) if name.startswith("KEY") or "name" in name)
    for state in range(compiled.lexer.dfas[key].n_states):
        try:
            kernel.chain_walk(trie, index._terminal_tables(key).kernel_tables, child_ptr, bad, state, 10)
        except ValueError as error:
            assert "outside its subtree" in str(error)
            break
    else:
        pytest.fail("a corrupt child list was read without error")
