"""Pattern sets as automaton terminals (`ecma_regex.pattern_set_automaton`) in the JSON Schema lowering.

A string terminal given as an automaton is still a string terminal where the lowering asks
(`strings.competing_heads`: a chunked long string beside it is undone), keys built from
patterns minus names are automata, and the schema whose regex was too long to write
(JSONSchemaBench Github_hard o79409's `trace_id`) compiles and is exact.
"""

from __future__ import annotations

import json
import random

import pytest

import pda
from pda.grammar import ecma_regex as er
from pda.grammar.ecma_regex import automata
from pda.grammar.ir import TerminalAutomaton
from pda.grammar.json_schema import strings


def test_an_automaton_string_competes_with_a_chunked_head(monkeypatch) -> None:
    """"a"*399 + "b" is long (first branch) but not the pattern set (second): with the automaton
    taken for a string terminal, chunking is undone and the lexeme is not lost after a chunk head."""
    schema = {"anyOf": [{"type": "string", "minLength": 300},
                        {"type": "string", "pattern": "^a", "not": {"pattern": "b"}}]}
    g = pda.Grammar.from_json_schema(schema)
    assert any(t.automaton is not None for t in g.ir.terminals)
    for text, want in [("a" * 399 + "b", True), ("a" * 400, True), ("a", True), ("c" * 400, True),
                       ("c", False), ("a" * 10 + "b", False)]:
        assert g.accepts(json.dumps(text)) == want, text
    # Were automata not string terminals, the head would win and the long text be refused.
    monkeypatch.setattr(strings, "_is_string", lambda ctx, name, regex: regex.startswith('"'))
    assert not pda.Grammar.from_json_schema(schema).accepts(json.dumps("a" * 399 + "b"))


def test_automaton_width_is_its_longest_path() -> None:
    short = er.pattern_set_automaton(["^[\u00e9b]{2,3}$"], ["^bb$"])  # é is 1 character raw, 6 as \u00e9
    assert isinstance(short, TerminalAutomaton) and strings._automaton_width(short) == 3 * 6 + 2
    unbounded = er.pattern_set_automaton(["^a"], ["b"])
    assert isinstance(unbounded, TerminalAutomaton) and strings._automaton_width(unbounded) > 10**6


def test_keys_from_patterns_minus_names_are_automata() -> None:
    schema = {"type": "object", "properties": {"x-a": {"type": "string"}, "name": {"type": "string"}},
              "patternProperties": {"^x-": {"type": "string", "maxLength": 1}},
              "additionalProperties": {"type": "boolean"}}
    g = pda.Grammar.from_json_schema(schema, exact=True)
    assert sum(t.automaton is not None for t in g.ir.terminals) == 2  # x-* minus x-a; neither x-* nor a name
    for doc, want in [({"x-b": "s"}, True), ({"x-b": "st"}, False), ({"x-a": "s"}, True), ({"x-a": "st"}, False),
                      ({"name": "st"}, True), ({"y": True}, True), ({"y": 1}, False), ({"name": True}, False),
                      ({"x-a": "s", "x-c": "t", "z": False}, True)]:
        assert g.accepts(json.dumps(doc)) == want, doc


def test_github_hard_o79409_trace_id_compiles_exactly() -> None:
    """35+ code points matching `\\d+-[A-Fa-f0-9]*-[A-Fa-f0-9]{24}` somewhere: 845 states, where the
    regex passed 400,000 characters and the schema did not compile."""
    schema = {"type": "string", "pattern": "\\d+-[A-Fa-f0-9]*-[A-Fa-f0-9]{24}", "minLength": 35}
    g = pda.Grammar.from_json_schema(schema, exact=True, on_unsupported="raise")
    good = ["1-abc-" + "0" * 24 + "tails", "x" * 10 + "12-" + "f" * 24 + "-" + "e" * 24, "é" * 20 + "9--" + "A" * 24]
    bad = ["1-abc-" + "0" * 24, "1-abc-" + "0" * 23 + "g" * 10, "-" * 40]
    assert [t for t in good if not g.accepts(json.dumps(t))] == []
    assert [t for t in bad if g.accepts(json.dumps(t))] == []


def test_counting_by_levels_is_the_product_with_a_counter(monkeypatch: pytest.MonkeyPatch) -> None:
    """`automata._counted` (a count at a time) against `_product` with one DFA (the search over tuples): the same
    states in the same numbering, the same rows and acceptance, and the same refusal past the state limit."""
    rng = random.Random(4)
    for _ in range(1500):
        n, k = rng.randint(1, 12), rng.randint(1, 5)
        dfa = automata._DFA([((c, c),) for c in range(k)], [[rng.randrange(n) for _ in range(k)] for _ in range(n)],
                            [rng.random() < 0.4 for _ in range(n)])
        lo = rng.randint(0, 30)
        hi = rng.choice([None, lo + rng.randint(0, 40)])
        if (lo, hi) == (0, None):
            continue
        monkeypatch.setattr(automata, "MAX_PATTERN_DFA_STATES", rng.choice([10_000, 50, 200]))
        found = []
        for build in (lambda: automata._product([dfa], [True], lo, hi), lambda: automata._counted(dfa, lo, hi)):
            try:
                built = build()
                found.append((built.trans, built.accept))
            except automata.AutomatonTooLarge:
                found.append(None)
        assert found[0] == found[1]


def _reference_determinise(nfa: "automata._NFA", start: int, end: int) -> "automata._DFA":
    """The subset construction over whole epsilon-closures, breadth first (the empty set a state like any)."""
    classes, edges = automata._classes(nfa)

    def closure(states: set[int]) -> frozenset[int]:
        seen, stack = set(states), list(states)
        while stack:
            for t in nfa.eps[stack.pop()]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        return frozenset(seen)

    def successors(cur: frozenset[int]) -> list[frozenset[int]]:
        return [closure({dst for s in cur for cs, dst in edges[s] if c in cs}) for c in range(len(classes))]

    order, trans = automata.explore_rows(closure({start}), successors)
    return automata._DFA(classes, trans, [end in st for st in order])


def test_the_compiled_subset_construction_gives_the_reference_minimal_dfa(monkeypatch: pytest.MonkeyPatch) -> None:
    """`automata._determinise` (the lexer's subset kernel, states named by their important NFA states) against a
    search over whole closures: other states maybe, the same minimal DFA, numbering included."""
    rng = random.Random(7)
    atoms = ["a", "b", "[a-c]", "[^a]", ".", "\\d", "x"]
    monkeypatch.setattr(automata, "MAX_PATTERN_DFA_STATES", 1_000)  # the reference's search is slow past it
    checked = 0
    for _ in range(200):
        def piece(depth: int = 0) -> str:
            r = rng.random()
            if depth < 2 and r < 0.25:
                return "(?:" + "|".join(piece(depth + 1) for _ in range(rng.randint(2, 3))) + ")"
            item = rng.choice(atoms) if depth >= 2 or r < 0.7 else "(?:" + piece(depth + 1) + ")"
            return item + rng.choice(["", "", "*", "+", "?", "{2,4}", "{0,3}"])
        patterns = ["".join(piece() for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(1, 3))]
        patterns = [rng.choice(["", "^"]) + p + rng.choice(["", "$"]) for p in patterns]
        nfa = automata._NFA()
        ends = [automata._pattern_nfa(nfa, p) for p in patterns]
        for s, e in ends:
            try:
                want = _reference_determinise(nfa, s, e)
            except automata.AutomatonTooLarge:
                continue  # the kernel's states are never more: it may build what the reference refuses
            built = automata._determinise(nfa, [(s, e)])[0]
            assert built.classes == want.classes
            got = automata._minimise(automata._product([built], [True], 0, None))
            ref = automata._minimise(automata._product([want], [True], 0, None))
            assert (got.trans, got.accept) == (ref.trans, ref.accept), patterns
            checked += 1
    assert checked > 200


def test_edge_labels_group_each_row_by_target() -> None:
    """`automata._edge_labels` (one numpy grouping) against grouping each row in a dict: the same pairs, labels
    and order, with one word of classes and with more than 64 (the bytes path), and pairs without a unit left out."""
    rng = random.Random(5)

    def unit(ranges: tuple) -> str | None:
        return None if len(ranges) == 2 else "|".join(f"{lo}-{hi}" for lo, hi in ranges)

    for _ in range(400):
        n, k = rng.randint(1, 30), rng.choice([1, 2, 5, 63, 64, 65, 130])
        classes = [((2 * c, 2 * c),) for c in range(k)]
        targets = rng.sample(range(n), min(n, rng.randint(1, 4)))
        trans = [[rng.choice(targets) for _ in range(k)] for _ in range(n)]
        want: dict[tuple[int, int], str] = {}
        for q, row in enumerate(trans):
            by_target: dict[int, list[int]] = {}
            for c, t in enumerate(row):
                by_target.setdefault(t, []).append(c)
            for t, cs in by_target.items():
                label = unit(tuple(r for c in cs for r in classes[c]))
                if label is not None:
                    want[(q, t)] = label
        got = automata._edge_labels(automata._DFA(classes, trans, [False] * n), unit)
        assert list(got.items()) == list(want.items())
