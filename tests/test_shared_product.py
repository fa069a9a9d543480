"""Candidate sets' DFAs as views of one growing product (`pda.regex.product.SharedProduct`).

When a lexer keeps no all-terminal DFA, every candidate set's DFA is a view of one
table shared by the lexer (`pda.lexer.lexer.SharedTables`): its terminals' own
states, mixed states interned by content, and the set's start row read for START.
Each view must be the same DFA as the set's own product (`combine`): walking both
along random bytes pairs their states one to one, with equal live and accept sets and
equal keys, and START is never reached again. Also: the per-set state limit, the
table's bound, and a JSON Schema whose all-terminal DFA is too big, whose masks equal
the reference and the masks of the same grammar through its all-terminal DFA.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

import pda
from pda.bits import iter_bits
from pda.errors import LimitExceeded
from pda.grammar.ir import TerminalDef
from pda.lexer import lexer as lexer_module, terminals as terminals_module
from pda.lexer.lexer import START, LexerTables, SharedTables
from pda.lexer.terminals import terminal_dfa
from pda.reference import mask_mismatches, random_walk_states
from pda.regex.product import SharedProduct, combine
from tests.lockstep import assert_same_masks_in_lockstep

# Terminals that overlap, some whose DFA returns to its start state ([ab]*c, a*b, (?:ab)*c...).
PATTERNS = [
    r"[ab]*c", r"a*b", r"(?:ab)*c", r"ab", r"abc", r"[a-c]+", r"a{2,5}", r"[^c]b", r"b[ac]{1,3}", r"c", r"(?:a|bc)+",
    r"\"[ab]*\"", r"\"a\"", r"[a-c]{3}", r"[^\x00-\U0010ffff]",  # the last matches nothing
]
ALPHABET = b'abc"x'
DFAS = [terminal_dfa(TerminalDef(name=f"T{i}", pattern=p)) for i, p in enumerate(PATTERNS)]


def own_tables(candidates: int) -> LexerTables:
    """The candidate set's DFA as its own product (what a lexer built per set before the shared table)."""
    columns = list(iter_bits(candidates))
    return LexerTables(candidates, combine([DFAS[j] for j in columns], terminals=columns))


def assert_same_dfa(view: SharedTables, own: LexerTables, texts: list[bytes]) -> None:
    """Walk both from START along `texts`: states paired one to one, equal live/accept sets and keys."""
    pairs: dict[int, int] = {START: START}
    back: dict[int, int] = {START: START}
    assert view.live_at(START) == own.live_at(START) and view.accept_at(START) == own.accept_at(START)
    assert view.key(START) == own.key(START)
    for text in texts:
        q, r = START, START
        for byte in text:
            q, r = view.row(q)[view.cls[byte]], own.row(r)[own.cls[byte]]
            assert q != START and r != START, "a lexeme returned to START"
            assert view.live_flag(q) == own.live_flag(r)
            if not own.live_flag(r):
                break
            assert pairs.setdefault(q, r) == r and back.setdefault(r, q) == q, f"states not one to one at {text!r}"
            assert view.live_at(q) == own.live_at(r) and view.accept_at(q) == own.accept_at(r), text
            assert view.key(q) == own.key(r), text


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, (1 << len(PATTERNS)) - 1), min_size=1, max_size=6),
       st.lists(st.binary(min_size=1, max_size=9).map(lambda b: bytes(ALPHABET[x % len(ALPHABET)] for x in b)),
                min_size=1, max_size=40))
def test_views_are_the_sets_own_products(sets: list[int], texts: list[bytes]) -> None:
    """Several candidate sets on one shared table (later sets meet earlier sets' states) equal their own products."""
    shared = SharedProduct(DFAS, 10_000)
    views = [SharedTables(c, shared, shared.start(list(iter_bits(c)))) for c in sets]
    for candidates, view in zip(sets, views):
        own = own_tables(candidates)
        assert_same_dfa(view, own, texts)
        assert view.own_states() == own.own_states() == own.n_states  # what `pda inspect` reports


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, (1 << len(PATTERNS)) - 1), min_size=1, max_size=8))
def test_accept_rows_number_each_rows_accept_mask_once(sets: list[int]) -> None:
    """After any sequence of sets grown, every row's `accept_row` names its own accept mask (-1: none) in
    `accept_rows`, where each mask is listed once, numbered in order of the first row that accepts it."""
    shared = SharedProduct(DFAS, 10_000)
    for candidates in sets:
        shared.start(list(iter_bits(candidates)))
    masks = [int.from_bytes(shared.accept_bits[q].tobytes(), "little") for q in range(shared.n_states)]
    assert [shared.accept_rows[r] if r >= 0 else 0 for r in shared.accept_row[: shared.n_states].tolist()] == masks
    assert len(set(shared.accept_rows)) == len(shared.accept_rows) and 0 not in shared.accept_rows
    firsts = [masks.index(mask) for mask in shared.accept_rows]
    assert firsts == sorted(firsts)


def test_state_flags_read_start_row_for_start() -> None:
    """The per-state arrays of a view (what the reference walk reads) hold the start row's values at START."""
    candidates = 0b111
    shared = SharedProduct(DFAS, 10_000)
    view = SharedTables(candidates, shared, shared.start([0, 1, 2]))
    live, extends, ends, masks, which = view.state_flags()
    assert live[START] == bool(view.live_at(START)) and extends[START] == live[START]
    accepting = dict(zip(ends.tolist(), (masks[k] for k in which.tolist())))
    assert all(accepting.get(q, 0) == view.accept_at(q) for q in (START, view.start))
    assert view.accept[START] == view.accept_at(START) and view.live[START] == view.live_at(START)


def test_a_set_over_max_states_raises_as_its_own_product_does() -> None:
    """The per-set bound: `start` raises exactly where `combine` would."""
    rng = random.Random(4)
    for _ in range(40):
        limit = rng.randint(2, 30)
        shared = SharedProduct(DFAS[:-1], limit)  # the empty-language terminal is counted apart by `combine`
        candidates = rng.randint(1, (1 << (len(DFAS) - 1)) - 1)
        columns = list(iter_bits(candidates))
        try:
            combine([DFAS[j] for j in columns], terminals=columns, max_states=limit)
            expected = False
        except LimitExceeded:
            expected = True
        try:
            shared.start(columns)
            raised = False
        except LimitExceeded:
            raised = True
        assert raised == expected, (limit, columns)


def test_a_full_table_refuses_new_sets_and_keeps_the_old_ones() -> None:
    """Past its mixed rows (sets each under the limit, together over it) the table raises for every new set;
    views made before stay as they were."""
    rng = random.Random(5)
    shared = SharedProduct(DFAS, 30)
    made: list[SharedTables] = []
    full = None
    while full is None:
        candidates = sum(1 << j for j in rng.sample(range(len(PATTERNS)), rng.randint(2, 3)))
        try:
            made.append(SharedTables(candidates, shared, shared.start(list(iter_bits(candidates)))))
        except LimitExceeded as e:
            if "mixed states" in str(e):
                full = candidates
    assert made, "no set fitted before the table was full"
    with pytest.raises(LimitExceeded, match="mixed states"):  # even a set with nothing new to explore
        shared.start(list(iter_bits(made[0].candidates | full)))
    for view in made:
        assert_same_dfa(view, own_tables(view.candidates), [b"aab", b"abc", b"ababc", b"bc", b'"ab"', b"aaaa"])


# Long counted strings (two of them overlapping where "title" is either) and an enum.
SCHEMA = {
    "type": "object",
    "properties": {
        "title": {"anyOf": [{"type": "string", "maxLength": 1500}, {"type": "string", "minLength": 3, "maxLength": 900}]},
        "body": {"type": "string", "minLength": 2, "maxLength": 1200},
        "kind": {"enum": ["alpha", "beta", "gamma"]},
        "size": {"type": "integer"},
    },
    "required": ["title", "body"],
}


def vocabulary() -> pda.Vocabulary:
    """Single bytes and JSON pieces (boundary tokens among them)."""
    tokens = {chr(c) for c in range(32, 127)} | {'{"', '": "', '", "', '"}', '":', ', "', "title", "body", "kind",
                                                 "alpha", '"beta"', "gam", "ab", "é", '\\"', "\\n", "12"}
    return pda.Vocabulary.from_tokens(sorted(tokens) + [None], eos_ids=[len(tokens)])


def test_json_schema_through_the_shared_table_masks_equal_the_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fallback end to end (no all-terminal DFA kept): masks equal the reference, and the masks through
    the all-terminal DFA along the same texts."""
    monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path / "cache"))
    vocab = vocabulary()
    grammar = pda.Grammar.from_json_schema(SCHEMA)
    lazy_min_count = terminals_module.LAZY_MIN_COUNT
    monkeypatch.setattr(terminals_module, "LAZY_MIN_COUNT", 10**9)  # every terminal eager: the all-terminal DFA
    through_all = pda.CompiledGrammar(grammar, vocab, warmup_seconds=0, disk_cache=False)
    assert through_all.lexer._all is not None
    monkeypatch.setattr(terminals_module, "LAZY_MIN_COUNT", lazy_min_count)
    monkeypatch.setattr(lexer_module, "ALL_TERMINALS_MAX_STATES", 0)
    # Other limits: another recognizer (the memo keeps the first one's lexer), with the fallback.
    limits = pda.Limits(max_lexer_states=pda.Limits().max_lexer_states - 1)
    compiled = pda.CompiledGrammar(grammar, vocab, warmup_seconds=0, disk_cache=False, limits=limits)
    assert compiled.lexer._all is None
    rng = random.Random(7)
    checked = 0
    for _ in range(12):
        for node, q, _token in random_walk_states(compiled, rng, max_steps=25):
            assert mask_mismatches(compiled, node, q) == [], f"mask differs from the reference at state {q}"
            checked += 1
    assert checked > 100 and compiled.lexer._shared is not None
    # The same texts through the all-terminal DFA: equal masks at every step.
    for _ in range(8):
        assert_same_masks_in_lockstep(compiled, through_all, vocab, rng, 25)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, (1 << len(PATTERNS)) - 1), min_size=1, max_size=6))
def test_restricted_views_count_their_own_states(sets: list[int]) -> None:
    """A view of the all-terminal DFA holds all of its states; `own_states` counts the set's own DFA's."""
    every = own_tables((1 << len(PATTERNS)) - 1)
    for candidates in sets:
        assert every.restrict(candidates).own_states() == own_tables(candidates).n_states


def test_views_share_the_rows_flags_and_keep_their_own_start() -> None:
    """Every view of one shared table reads one `live_flags` (a row's flag does not depend on the set), worked out
    as read; START's flag is each view's own: a set that can lex nothing is dead at START beside a live one."""
    shared = SharedProduct(DFAS, 10_000)
    nothing = 1 << (len(PATTERNS) - 1)  # [^\x00-\U0010ffff]: matches nothing
    live_set, dead_set = 0b1011, nothing
    live_view = SharedTables(live_set, shared, shared.start(list(iter_bits(live_set))))
    dead_view = SharedTables(dead_set, shared, shared.start(list(iter_bits(dead_set))))
    assert live_view.live_flags is dead_view.live_flags is shared.live_flags
    assert live_view.live_flag(START) == 1 and dead_view.live_flag(START) == 0
    assert dead_view.own_states() == own_tables(dead_set).own_states() == 1
    q = live_view.row(START)[live_view.cls[ord("a")]]
    assert live_view.live_flag(q) == (1 if live_view.live_at(q) else 0) == own_tables(live_set).live_flag(
        own_tables(live_set).row(START)[own_tables(live_set).cls[ord("a")]])
    assert shared.live_flags[q] == live_view.live_flag(q)  # kept where every view reads it
    later = SharedTables(0b110, shared, shared.start([1, 2]))  # a set grown after: the flags cover its rows
    assert len(shared.live_flags) == shared.n_states == later.n_states
