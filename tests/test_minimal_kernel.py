"""`pda.kernels.partition.minimal_dfa`: one kernel call makes what `pda.regex.dfa._minimise` then `_finish` make.

Random partial DFAs over random byte-class maps (acyclic ones, which take the kernel's depth-first partition,
and cyclic ones, which take Hopcroft's; with states that reach no accepting state, equivalent states, no
accepting state at all) must give the same tables, byte for byte, as the Python steps; composed terminals
(`pda.regex.dfa._minimal`) the same DFA as before; and bad inputs a ValueError.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from pda.kernels.partition import minimal_dfa
from pda.regex import compose
from pda.regex import dfa as dfa_module


def python_steps(trans: np.ndarray, accept: np.ndarray, classes: np.ndarray) -> tuple[np.ndarray, ...]:
    """(byte_class, table, accepting) as `_minimise` then `_finish` make them."""
    small, acc = dfa_module._minimise(trans.astype(np.int64), accept[:, None])
    found = dfa_module._finish(small, acc, ("T",), trimmed=bool(acc.any()), classes=classes)
    return found.byte_class, found.trans, found.accept[:, 0]


def random_dfa(rng: random.Random, acyclic: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A partial DFA whose every state is reachable from state 0, and a byte -> column map using every column."""
    m, k = rng.randint(1, 40), rng.randint(1, 6)
    trans = np.full((m, k), -1, dtype=np.int64)
    for q in range(1, m):  # a spanning tree from the start: everything reachable
        trans[rng.randrange(q), rng.randrange(k)] = q if rng.random() < 0.9 else trans[rng.randrange(q), 0]
        if trans[:, :].max() < q:
            trans[rng.randrange(q), rng.randrange(k)] = q
    for q in range(m):
        for c in range(k):
            if trans[q, c] < 0 and rng.random() < 0.4:
                trans[q, c] = rng.randrange(q + 1, m) if acyclic and q + 1 < m else (-1 if acyclic else rng.randrange(m))
    reach = {0}
    stack = [0]
    while stack:
        q = stack.pop()
        for t in trans[q].tolist():
            if t >= 0 and t not in reach:
                reach.add(t)
                stack.append(t)
    keep = sorted(reach)
    renum = {q: i for i, q in enumerate(keep)}
    trans = np.array([[renum.get(t, -1) if t >= 0 else -1 for t in trans[q].tolist()] for q in keep], dtype=np.int64)
    accept = np.array([rng.random() < rng.choice([0.0, 0.2, 0.5]) for _ in keep], dtype=bool)
    classes = np.array([rng.randrange(k) for _ in range(256)], dtype=np.int64)
    classes[rng.sample(range(256), k)] = np.arange(k)  # every column read by some byte
    return trans, accept, classes


@pytest.mark.parametrize("acyclic", [True, False])
def test_random_dfas_are_the_python_steps_tables(acyclic: bool) -> None:
    rng = random.Random(7 + acyclic)
    for _ in range(300):
        trans, accept, classes = random_dfa(rng, acyclic)
        byte_class, table, accepting = minimal_dfa(trans, accept, classes)
        expected = python_steps(trans, accept, classes)
        assert np.array_equal(byte_class, expected[0])
        assert table.shape == expected[1].shape and np.array_equal(table, expected[1])
        assert np.array_equal(accepting, expected[2])


def test_equivalent_and_useless_states() -> None:
    # 0 -a-> 1 -b-> 3 (accepts), 0 -b-> 2 -b-> 3: 1 and 2 merge; 4 (reached on c) reaches no accepting state.
    # Column 0 is read by every other byte and leads nowhere.
    trans = np.array([[-1, 1, 2, 4], [-1, -1, 3, -1], [-1, -1, 3, -1], [-1, -1, -1, -1], [-1, 4, -1, -1]])
    accept = np.array([False, False, False, True, False])
    classes = np.zeros(256, dtype=np.int64)
    classes[ord("a")], classes[ord("b")], classes[ord("c")] = 1, 2, 3
    byte_class, table, accepting = minimal_dfa(trans, accept, classes)
    assert table.shape[0] == 4  # start, {1, 2}, 3, dead
    assert accepting.tolist() == [False, False, True, False]
    assert byte_class[ord("c")] == byte_class[0]  # c now leads nowhere: read as every other byte
    for got, want in zip((byte_class, table, accepting), python_steps(trans, accept, classes)):
        assert np.array_equal(got, want)


def test_the_empty_language_and_one_state() -> None:
    classes = np.zeros(256, dtype=np.int64)
    for accept in (False, True):
        trans = np.array([[-1]], dtype=np.int64)
        got = minimal_dfa(trans, np.array([accept]), classes)
        for a, b in zip(got, python_steps(trans, np.array([accept]), classes)):
            assert np.array_equal(a, b)
    trans = np.array([[1], [1]], dtype=np.int64)  # a loop that never accepts: the start alone remains
    byte_class, table, accepting = minimal_dfa(trans, np.array([False, False]), classes)
    assert table.tolist() == [[1], [1]] and accepting.tolist() == [False, False]


def test_composed_terminals_are_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    """`_minimal` (composition and unions) against the Python steps it replaced, on composed patterns."""
    from tests.test_compose import PATTERNS

    found: list[compose.Classed] = []
    minimal = dfa_module._minimal
    monkeypatch.setattr(dfa_module, "_minimal", lambda f, names, ms: found.append(f) or minimal(f, names, ms))
    for pattern in PATTERNS[:12]:
        dfa_module.compile_regex(pattern)
    assert found
    for f in found:
        new = minimal(f, ("T",), dfa_module.DEFAULT_MAX_DFA_STATES)
        byte_class, table, accepting = python_steps(f.trans, f.accept, f.classes)
        assert np.array_equal(new.byte_class, byte_class) and np.array_equal(new.trans, table)
        assert np.array_equal(new.accept[:, 0], accepting)


@pytest.mark.parametrize(("trans", "accept", "classes", "message"), [
    (np.array([[2]]), np.array([True]), np.zeros(256, dtype=np.int64), "not a state"),
    (np.array([[0]]), np.array([True, False]), np.zeros(256, dtype=np.int64), "one entry per state"),
    (np.array([[0]]), np.array([True]), np.ones(256, dtype=np.int64), "not a column"),
    (np.array([[0]]), np.array([True]), np.zeros(255, dtype=np.int64), "one entry per byte"),
])
def test_bad_inputs_are_refused(trans: np.ndarray, accept: np.ndarray, classes: np.ndarray, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        minimal_dfa(trans, accept, classes)
