"""The parser-table kernels (`pda.kernels.tables.fixpoint`, `layout`) against their definitions spelled out in
plain Python on random rules (cycles, empty rules, repeated symbols and unused symbols included)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from pda.kernels.tables import fixpoint, layout


def _random_rules(rng: random.Random, t: int, n_symbols: int) -> list[tuple[int, tuple[int, ...]]]:
    """Rules whose left-hand sides are nonterminals (t..n_symbols-1), some empty, some recursive."""
    return [(rng.randrange(t, n_symbols), tuple(rng.randrange(n_symbols) for _ in range(rng.choice((0, 1, 1, 2, 3)))))
            for _ in range(rng.randint(0, 3 * (n_symbols - t) + 1))]


def _arrays(rules: list[tuple[int, tuple[int, ...]]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lhs = np.array([a for a, _ in rules], dtype=np.int64)
    flat = np.array([s for _, rhs in rules for s in rhs], dtype=np.int64)
    return lhs, flat, np.array([len(rhs) for _, rhs in rules], dtype=np.int64)


def _closed(holds: set[int], rules: list[tuple[int, tuple[int, ...]]]) -> set[int]:
    """The least fixpoint by rounds: every rule whose symbols all hold adds its lhs."""
    holds = set(holds)
    while True:
        more = {a for a, rhs in rules if all(s in holds for s in rhs)} - holds
        if not more:
            return holds
        holds |= more


def test_fixpoint_is_the_least_fixpoint() -> None:
    rng = random.Random(5)
    for _ in range(1000):
        t = rng.randint(0, 4)
        n = t + rng.randint(1, 8)
        rules = _random_rules(rng, t, n)
        start = {s for s in range(n) if s < t or rng.random() < 0.1}
        holds, complete = fixpoint(*_arrays(rules), np.array([s in start for s in range(n)]))
        want = _closed(start, rules)
        assert holds.dtype == bool and np.flatnonzero(holds).tolist() == sorted(want)
        assert complete.tolist() == [all(s in want for s in rhs) for _, rhs in rules]


def test_layout_is_its_definition() -> None:
    """Every array of the layout, position by position, from the rules and their nullable symbols."""
    rng = random.Random(9)
    for _ in range(1000):
        t = rng.randint(0, 4)
        n = t + rng.randint(1, 8)
        rules = _random_rules(rng, t, n)
        got = layout(t, *_arrays(rules), n)
        nullable = _closed(set(), rules)
        rule_start, next_sym, lhs_of, is_end, penultimate, run_end = [], [], [], [], [], []
        for a, rhs in rules:
            rule_start.append(len(next_sym))
            for d in range(len(rhs) + 1):
                e = d
                while e < len(rhs) and rhs[e] in nullable:
                    e += 1
                next_sym.append(rhs[d] if d < len(rhs) else -1)
                lhs_of.append(a)
                is_end.append(d == len(rhs))
                penultimate.append(d == len(rhs) - 1)
                run_end.append(len(next_sym) - 1 + e - d)
        steps = [list(range(p + 1, run_end[p + 1] + 1)) if not is_end[p] else [] for p in range(len(next_sym))]
        starts = [[p for r, (b, _) in enumerate(rules) if b == a for p in range(rule_start[r], run_end[rule_start[r]] + 1)]
                  for a in range(t, n)]
        direct = {a: {next_sym[p] for p in starts[a - t] if next_sym[p] >= t} for a in range(t, n)}
        closure = []
        for a in range(t, n):
            reached = {a}
            while more := set().union(*(direct[b] for b in reached)) - reached:
                reached |= more
            closure.append(sorted(reached))
        assert got.rule_start.tolist() == rule_start + [len(next_sym)]
        assert got.next_sym.tolist() == next_sym and got.lhs_of.tolist() == lhs_of
        assert got.is_end.tolist() == is_end and got.penultimate.tolist() == penultimate
        assert got.run_end.tolist() == run_end
        assert _rows(got.step_ptr, got.step_to) == steps
        assert _rows(got.starts_ptr, got.starts) == starts
        assert _rows(got.closure_ptr, got.closure) == closure
        assert [a.dtype for a in got] == [np.int64, np.int64] + [np.int32] * 2 + [bool] * 2 + [np.int32] * 6


def _rows(ptr: np.ndarray, entries: np.ndarray) -> list[list[int]]:
    p, e = ptr.tolist(), entries.tolist()
    return [e[a:b] for a, b in zip(p, p[1:])]


@pytest.mark.parametrize("lhs, flat, lens", [
    ([3], [0], [1]),  # lhs not a symbol
    ([1], [3], [1]),  # flat not a symbol
    ([1], [-1], [1]),
    ([1], [0], [2]),  # lens sum past flat
    ([1], [0, 0], [1]),  # lens sum short of flat
    ([1, 1], [0], [2, -1]),  # a negative length
    ([1], [0], [1, 0]),  # one length per rule
])
def test_fixpoint_bad_input_raises_value_error(lhs: list, flat: list, lens: list) -> None:
    with pytest.raises(ValueError):
        fixpoint(np.array(lhs), np.array(flat), np.array(lens), np.zeros(3, dtype=bool))


def test_layout_bad_input_raises_value_error() -> None:
    lhs, flat, lens = np.array([0]), np.array([1]), np.array([1])
    with pytest.raises(ValueError):  # a terminal on the left
        layout(1, lhs, flat, lens, 3)
    with pytest.raises(ValueError):  # fewer symbols than terminals
        layout(2, np.array([1]), flat, lens, 1)
