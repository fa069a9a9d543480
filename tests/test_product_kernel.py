"""The product kernels (`pda.kernels.product.explore`, `reachable`, `fill_rows`, `classes`, `stack`) against their
plain-Python oracles (`pda.reference.reference_explore`, `reference_reachable`, numpy gathers and groupings)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from pda.kernels.product import classes, explore, fill_rows, reachable, stack
from pda.reference import reference_explore, reference_reachable
from pda.regex.utf8 import distinct_rows


def _random_terminals(rng: random.Random) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Up to 6 random DFAs over k classes in one global table, each with a dead state (its last)."""
    k = rng.randint(1, 5)
    rows, dead, start = [], [], []
    for _ in range(rng.randint(2, 6)):
        n, base = rng.randint(2, 12), len(rows)
        sparsity = rng.random()
        for q in range(n):
            if q == n - 1:  # the dead state stays dead
                rows.append([base + n - 1] * k)
            else:
                rows.append([base + (rng.randrange(n) if rng.random() > sparsity else n - 1) for _ in range(k)])
        dead += [False] * (n - 1) + [True]
        start.append(base)
    return np.array(rows, dtype=np.int32), np.array(dead), np.array(start, dtype=np.int32)


def test_the_kernel_numbers_states_as_the_reference_does() -> None:
    rng = random.Random(7)
    for _ in range(1500):
        table, dead, start = _random_terminals(rng)
        got = explore(table, dead, start, 10_000)
        trans, states = reference_explore(table, dead, start, 10_000)
        assert got.trans.tolist() == trans
        assert [tuple(got.ids[a:b].tolist()) for a, b in zip(got.ptr[:-1], got.ptr[1:])] == states


def test_over_the_limit_is_none_and_at_it_is_not() -> None:
    rng = random.Random(3)
    for _ in range(300):
        table, dead, start = _random_terminals(rng)
        full = explore(table, dead, start, 10_000)
        m = len(full.trans)
        assert explore(table, dead, start, m - 1) is not None  # ids run 0..m-1
        if m > 2:
            assert explore(table, dead, start, m - 2) is None
            assert reference_explore(table, dead, start, m - 2) is None


def test_a_start_equal_to_a_later_state_is_still_state_one() -> None:
    """Two copies of one 2-state loop: the start's successor has the start's components, and maps to 1."""
    table = np.array([[1], [0], [3], [2]], dtype=np.int32)  # a<->b, c<->d; no dead state reached
    dead = np.zeros(4, dtype=bool)
    got = explore(table, dead, np.array([0, 2], dtype=np.int32), 100)
    assert got.trans.tolist() == [[0], [2], [1]]
    assert got.trans.tolist() == reference_explore(table, dead, np.array([0, 2]), 100)[0]


@pytest.mark.parametrize("table, dead, start", [
    (np.array([[5]], dtype=np.int32), np.array([False]), np.array([0], dtype=np.int32)),  # no such state
    (np.array([[-1]], dtype=np.int32), np.array([False]), np.array([0], dtype=np.int32)),
    (np.array([[0]], dtype=np.int32), np.array([True]), np.array([0], dtype=np.int32)),  # a dead start
    (np.array([[0]], dtype=np.int32), np.array([False, False]), np.array([0], dtype=np.int32)),  # wrong length
    (np.zeros(3, dtype=np.int32), np.zeros(3, dtype=bool), np.array([0], dtype=np.int32)),  # not 2-D
])
def test_bad_input_raises_value_error(table: np.ndarray, dead: np.ndarray, start: np.ndarray) -> None:
    with pytest.raises(ValueError):
        explore(table, dead, start, 100)


def test_reachable_states_are_the_reference_ones() -> None:
    """From random seeds, the explored product's single successors among them, as `combine` asks."""
    rng = random.Random(11)
    for _ in range(1500):
        table, dead, start = _random_terminals(rng)
        seeds = np.array([rng.randrange(len(table)) for _ in range(rng.randint(0, 6))], dtype=np.int64)
        got = reachable(table, dead, seeds)
        assert got.dtype == np.int64
        assert got.tolist() == reference_reachable(table, dead, seeds)


@pytest.mark.parametrize("table, dead, seeds", [
    (np.array([[5]], dtype=np.int32), np.array([False]), np.array([0])),  # no such state in the table
    (np.array([[0]], dtype=np.int32), np.array([False]), np.array([3])),  # no such seed
    (np.array([[0]], dtype=np.int32), np.array([False]), np.array([-1])),
    (np.array([[0]], dtype=np.int32), np.array([False, False]), np.array([0])),  # dead of the wrong length
    (np.zeros(3, dtype=np.int32), np.zeros(3, dtype=bool), np.array([0])),  # not 2-D
])
def test_reachable_bad_input_raises_value_error(table: np.ndarray, dead: np.ndarray, seeds: np.ndarray) -> None:
    with pytest.raises(ValueError):
        reachable(table, dead, seeds)


def test_fill_rows_is_the_numpy_gather() -> None:
    """One DFA's rows renumbered from `offset` over spread classes, dead where the successor is not live."""
    rng = random.Random(13)
    for _ in range(300):
        n, lk, k = rng.randint(1, 9), rng.randint(1, 4), rng.randint(1, 6)
        trans = np.array([[rng.randrange(n) for _ in range(lk)] for _ in range(n)], dtype=np.int32)
        classes = np.array([rng.randrange(lk) for _ in range(k)], dtype=np.int32)
        live = np.array([rng.random() < 0.7 for _ in range(n)])
        offset, dead = rng.randint(2, 50), 1
        table = np.zeros((offset + n + 3, k), dtype=np.int32)
        fill_rows(table[offset : offset + n], trans, classes, live, offset, dead)
        row_of = np.where(live, offset + np.arange(n), dead)
        assert np.array_equal(table[offset : offset + n], row_of[trans][:, classes])
        assert not table[:offset].any() and not table[offset + n :].any()


@pytest.mark.parametrize("trans, classes, live", [
    (np.array([[3]], dtype=np.int32), np.array([0], dtype=np.int32), np.array([True])),  # no such state
    (np.array([[-1]], dtype=np.int32), np.array([0], dtype=np.int32), np.array([True])),
    (np.array([[0]], dtype=np.int32), np.array([1], dtype=np.int32), np.array([True])),  # no such class
    (np.array([[0]], dtype=np.int32), np.array([0], dtype=np.int32), np.array([True, True])),  # wrong length
    (np.array([[0]], dtype=np.int32), np.array([0, 0], dtype=np.int32), np.array([True])),  # k differs from out's
])
def test_fill_rows_bad_input_raises_value_error(trans: np.ndarray, classes: np.ndarray, live: np.ndarray) -> None:
    with pytest.raises(ValueError):
        fill_rows(np.zeros((1, 1), dtype=np.int32), trans, classes, live, 2, 1)


def _random_dfas(rng: random.Random) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Up to 6 random DFAs (trans, byte_class), each byte_class using few classes so that bytes group; some
    tables Fortran-ordered or unaligned and some byte classes strided views, as arrays may come."""
    trans, byte_classes = [], []
    for _ in range(rng.randint(0, 6)):
        n, lk = rng.randint(1, 9), rng.randint(1, 4)
        table = np.array([[rng.randrange(n) for _ in range(lk)] for _ in range(n)], dtype=np.int32)
        trans.append(rng.choice((table, table, np.asfortranarray(table), _unaligned(table))))
        cuts = sorted(rng.sample(range(1, 256), lk - 1))
        byte_class = np.searchsorted(cuts, np.arange(256), side="right").astype(np.int32)[
            np.array(rng.sample(range(256), 256)) if rng.random() < 0.3 else slice(None)]
        byte_classes.append(np.repeat(byte_class, 2)[::2] if rng.random() < 0.3 else byte_class)
    return trans, byte_classes


def _unaligned(a: np.ndarray) -> np.ndarray:
    """A copy of `a` one byte past an aligned address (as arrays read back from a file may be)."""
    copy = np.zeros(a.nbytes + 1, dtype=np.uint8)[1:].view(a.dtype).reshape(a.shape)
    copy[...] = a
    return copy


def _numpy_classes(byte_classes: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The byte classes by numpy: distinct columns of the stacked byte classes, numbered by their lowest byte."""
    local = np.stack(byte_classes, axis=1) if byte_classes else np.zeros((256, 1), np.int32)
    first, inverse = distinct_rows(local.astype(np.int32))
    return np.argsort(np.argsort(first)).astype(np.int32)[inverse], np.sort(first)


def test_classes_are_the_numpy_grouping() -> None:
    rng = random.Random(17)
    for _ in range(500):
        _, byte_classes = _random_dfas(rng)
        byte_class, rep = classes(byte_classes)
        want_class, want_rep = _numpy_classes(byte_classes)
        assert byte_class.tolist() == want_class.tolist()
        assert rep.tolist() == want_rep.tolist()


def test_stack_is_the_numpy_gather() -> None:
    """Each DFA's rows over the shared classes, renumbered from its offset, one after another."""
    rng = random.Random(19)
    for _ in range(500):
        trans, byte_classes = _random_dfas(rng)
        _, rep = classes(byte_classes)
        offsets = np.cumsum([0] + [len(t) for t in trans])
        want = [t[:, b[rep]] + offsets[j] for j, (t, b) in enumerate(zip(trans, byte_classes))]
        got = stack(trans, byte_classes, rep)
        assert got.dtype == np.int32 and got.shape == (offsets[-1], len(rep))
        assert np.array_equal(got, np.concatenate(want) if want else np.zeros((0, len(rep)), np.int32))


@pytest.mark.parametrize("trans, byte_classes, rep", [
    ([np.array([[1]], dtype=np.int32)], [np.zeros(256, np.int32)], np.array([0])),  # no such state
    ([np.array([[-1]], dtype=np.int32)], [np.zeros(256, np.int32)], np.array([0])),
    ([np.array([[0]], dtype=np.int32)], [np.ones(256, np.int32)], np.array([0])),  # no such class
    ([np.array([[0]], dtype=np.int32)], [np.zeros(255, np.int32)], np.array([0])),  # not one class per byte
    ([np.array([[0]], dtype=np.int32)], [np.zeros(256, np.int32)], np.array([256])),  # no such byte
    ([np.array([[0]], dtype=np.int32)], [], np.array([0])),  # one byte_class per trans
    ([np.array([0], dtype=np.int32)], [np.zeros(256, np.int32)], np.array([0])),  # not 2-D
    ([np.array([[0]], dtype=np.int64)], [np.zeros(256, np.int32)], np.array([0])),  # not int32
    ([np.array([[0]], dtype=np.int32)], [np.zeros(256, np.int64)], np.array([0])),
])
def test_stack_bad_input_raises_value_error(trans: list, byte_classes: list, rep: np.ndarray) -> None:
    with pytest.raises(ValueError):
        stack(trans, byte_classes, rep)


def test_classes_bad_input_raises_value_error() -> None:
    with pytest.raises(ValueError):
        classes([np.zeros(255, np.int32)])
    with pytest.raises(ValueError):
        classes([np.full(256, -1, np.int32)])
