"""The basic lexer mode: lexemes cut and typed by all terminals, as a conventional tokenizer does.

Checked three ways: behaviour on texts where the two modes differ; agreement with
the sampler's independent reference recogniser (which implements the mode on
characters, with regexes); and fast masks equal to the reference path.
"""

from __future__ import annotations

import random

import pytest

import pda
from pda.errors import GrammarError
from pda.lexer.lexer import UNKNOWN
from pda.reference import mask_mismatches, random_walk_states
from pda.testing.sampler import GrammarSampler, RandomChoices
from tests.conftest import GRAMMARS
from tests.grammar_cases import ARITH, KEYWORDS, LAZY_COMMENTS
from tests.test_masks import synthetic_vocab

SQLISH = r"""
start: (stmt ";")+
stmt: "select"i item ("," item)* | "let" NAME "=" (NUMBER | NAME)
item: (NAME | NUMBER) NAME?
NAME: /[a-z_][a-z0-9_]*/i
NUMBER: /[0-9]+(\.[0-9]+)?/
// No rule uses it: a number glued to letters is one bad token, as in SQL scanners.
JUNK: /[0-9]+(\.[0-9]+)?[a-z_][a-z0-9_]*/i
%ignore /[ \t\n]+/
"""

PRIORITY = r"""
// Keywords above identifiers: `def if` is refused, as Python's tokenizer makes `if` a keyword.
start: ("def" NAME ";" | "if" NAME ";")+
NAME: /[a-z]+/
DEF.2: "def"
IF.2: "if"
%ignore " "
"""


def basic(text: str) -> pda.Grammar:
    return pda.Grammar.from_lark(text, lexer="basic")


@pytest.mark.parametrize(
    ("text", "contextual", "basic_mode"),
    [
        ("select a;", True, True),
        ("selecta;", True, False),  # one identifier, not `select a`
        ("SELECT a, b; let x = 12;", True, True),
        ("select 12a;", True, False),  # trailing junk after a number, not `12 AS a`
        ("select 1.5e, 2;", True, False),
        ("select 12 a;", True, True),
        ("letx = 1;", True, False),
        ("select select;", True, True),  # a keyword and NAME tie: the parser picks NAME
    ],
)
def test_modes_differ_where_a_tokenizer_would(text: str, contextual: bool, basic_mode: bool) -> None:
    assert pda.Grammar.from_lark(SQLISH).accepts(text) is contextual
    assert basic(SQLISH).accepts(text) is basic_mode


def test_refusal_comes_as_soon_as_the_lexeme_cannot_end_as_a_candidate() -> None:
    g = basic(SQLISH)
    assert g.accepts_prefix("sel")  # may still become `select`
    assert not g.accepts_prefix("selx")  # can only be a NAME, which cannot start a statement
    assert g.accepts_prefix("let x = 1")
    assert not g.accepts_prefix("let x = 1a")
    with pytest.raises(pda.ParseError) as err:
        g.check("let x = 12abc;")
    assert err.value.offset == 10
    assert "could then only be JUNK" in str(err.value)


def test_priorities_type_the_lexeme_over_all_terminals() -> None:
    g = basic(PRIORITY)
    assert g.accepts("def f; if g;")
    assert not g.accepts("def if;")
    assert pda.Grammar.from_lark(PRIORITY).accepts("def if;")  # contextually NAME is the only candidate


def test_mode_comes_from_the_directive_and_changes_the_hash() -> None:
    directive = "// pda: lexer=basic\n" + SQLISH
    assert pda.Grammar.from_lark(directive).ir.lexer == "basic"
    assert pda.Grammar.from_lark(directive, lexer="contextual").ir.lexer == "contextual"
    assert pda.Grammar.from_lark(SQLISH).ir.content_hash != basic(SQLISH).ir.content_hash
    # Unused terminals are kept only in the basic mode (they are its error tokens).
    assert "JUNK" in basic(SQLISH).ir.terminal_names
    assert "JUNK" not in pda.Grammar.from_lark(SQLISH).ir.terminal_names
    with pytest.raises(GrammarError, match="lexer="):
        pda.Grammar.from_lark("// pda: lexer=fancy\n" + SQLISH)
    with pytest.raises(GrammarError, match="unknown lexer mode"):
        pda.Grammar.from_lark(SQLISH, lexer="fancy")


CASES = {"sqlish": SQLISH, "priority": PRIORITY, "keywords": KEYWORDS, "lazy": LAZY_COMMENTS, "arith": ARITH}


@pytest.mark.parametrize("name", sorted(CASES))
def test_engine_agrees_with_the_independent_reference(name: str) -> None:
    g = basic(CASES[name])
    sampler = GrammarSampler(g)
    choices = RandomChoices(7)
    texts = [sampler.sample(choices) for _ in range(60)] + [sampler.near_miss(choices) for _ in range(120)]
    disagreements = [t for t in texts if g.accepts(t) != sampler.reference.accepts(t)]
    assert disagreements == []
    # The sampled sentences are sentences under the basic mode.
    assert all(g.accepts(t) for t in texts[:60])


@pytest.mark.parametrize("name", ["sqlish", "keywords", "lazy", "json"])
def test_fast_masks_equal_the_reference_path(name: str) -> None:
    text = (GRAMMARS / "json.lark").read_text() if name == "json" else CASES[name]
    compiled = pda.compile(basic(text), synthetic_vocab())
    rng = random.Random(99)
    states = 0
    while states < 400:
        for node, q, _ in random_walk_states(compiled, rng, max_steps=40):
            assert mask_mismatches(compiled, node, q) == [], (name, states)
            states += 1


@pytest.mark.parametrize("budget", ["default", "evict every walk"])
def test_classifications_filtered_from_one_walk_equal_the_walk_per_candidate_set(
        budget: str, request: pytest.FixtureRequest) -> None:
    """Basic mode: a candidate set's classification is filtered from one walk under every terminal
    (`TokenIndex._basic_classify`); it equals the level walk under that set, at lexer states and
    after boundaries, also when the kept walks are evicted at once."""
    from pda.lexer.lexer import START
    from tests.test_token_index_slices import assert_same

    if budget != "default":
        default = pda.memory_budgets()["basic_walks"]["max_bytes"]
        request.addfinalizer(lambda: pda.set_memory_budget("basic_walks", default))
        pda.set_memory_budget("basic_walks", 0)
    compiled = pda.CompiledGrammar(basic(SQLISH), synthetic_vocab(), warmup_seconds=0, disk_cache=False)
    index, lexer = compiled.index, compiled.lexer
    rng = random.Random(5)
    sets, states = set(), 0
    for _ in range(40):
        for node, q, _token in random_walk_states(compiled, rng, max_steps=30):
            live_set = node.allowed | lexer.ignore
            got = index._basic_classify(index.first_nodes, b"", q, live_set)
            assert_same(got, index._classify(index.first_nodes, q, live_set), f"at state {q}")
            for group in got.groups:
                after = node.advance(group.terminals) if group.terminals & node.allowed else node
                if after is not None:
                    nxt = after.allowed | lexer.ignore
                    assert_same(index._basic_classify(group.nodes, group.key, START, nxt),
                                index._classify(group.nodes, START, nxt), f"after a boundary at {q}")
                    sets.add(nxt)
            states += 1
    assert states > 300 and len(sets) >= 3
    assert (len(index._basic_walks) <= 1) == (budget != "default")


@pytest.mark.parametrize("name", ["sqlish", "sqlite", "postgresql", "python"])
def test_under_every_terminal_a_lexeme_stops_live_where_it_cannot_grow(name: str) -> None:
    """What `TokenIndex._basic_classify` relies on: with every terminal a candidate, a state is live (some
    continuation ends typed as a terminal) exactly where the lexeme can grow, so the one walk under every
    terminal records every place a lexeme can end, whatever the candidate set."""
    import numpy as np

    grammar = basic(SQLISH) if name == "sqlish" else pda.Grammar.load(name)
    compiled = pda.CompiledGrammar(grammar, synthetic_vocab(), warmup_seconds=0, disk_cache=False)
    tables = compiled.index.walk_tables((1 << len(compiled.lexer.dfas)) - 1)
    assert np.array_equal(tables.live, ~tables.stops)


@pytest.mark.parametrize("name", ["json", "sqlite", "lua"])
def test_restricted_views_read_their_rows_and_flags_as_the_base_masked(name: str) -> None:
    """A candidate set's view of the all-terminal DFA builds its rows on demand; rows, per-state
    reads (`live_at`, `accept_at`), `live_flags` (worked out state by state) and `state_flags` equal the base's
    rows masked by the set."""
    lexer = pda.Grammar.load(name).recognizer.lexer
    rng = random.Random(name)
    n = len(lexer.dfas)
    everything = lexer.tables((1 << n) - 1)
    for _ in range(20):
        candidates = sum(1 << j for j in range(n) if rng.random() < 0.3) | lexer.ignore
        fresh = lexer.tables(candidates)
        for q in rng.sample(range(fresh.n_states), min(30, fresh.n_states)):
            assert fresh.live_at(q) == everything.live_at(q) & candidates
            assert fresh.accept_at(q) == everything.accept_at(q) & candidates
        assert all(fresh.accept_at(q) == fresh.accept[q] for q in range(fresh.n_states))
        assert all(fresh.live_at(q) == fresh.live[q] for q in range(fresh.n_states))
        assert all(flag in (0, 1, UNKNOWN) for flag in fresh.live_flags)
        assert [fresh.live_flag(q) for q in range(fresh.n_states)] == [int(bool(x)) for x in fresh.live]
        assert list(fresh.live_flags) == [int(bool(x)) for x in fresh.live], "live_flag keeps what it works out"
        assert fresh.live_array().tolist() == [bool(x) for x in fresh.live]
        live, extends, ends, masks, which = fresh.state_flags()
        assert live.tolist() == [bool(x) for x in fresh.live]
        assert extends.tolist() == [bool(x) for x in fresh.extends]
        assert ends.tolist() == [q for q in range(fresh.n_states) if fresh.accept[q]]
        assert [masks[i] for i in which.tolist()] == [fresh.accept[q] for q in ends.tolist()]
        assert len(set(masks)) == len(masks)
