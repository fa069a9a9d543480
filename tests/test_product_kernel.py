"""The product kernels (`pda.kernels.product.explore`, `reachable`, `fill_rows`, `classes`) against their
plain-Python oracles (`pda.reference.reference_explore`, `reference_reachable`, numpy gathers and groupings), and
`combine`'s reading of its inputs (its products against the dense reference: tests/test_product_components.py)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from pda.kernels import product as product_kernel
from pda.kernels.product import TerminalArrays, classes, explore, fill_rows, reachable
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


def _random_lexer_dfas(rng: random.Random) -> list[TerminalArrays]:
    """Up to 6 random one-terminal DFAs (`_random_dfas`' tables and classes), each with random accept and live
    columns and its last state dead, some flag columns strided."""
    out = []
    for table, byte_class in zip(*_random_dfas(rng)):
        n = len(table)
        accepting = [rng.random() < 0.4 for _ in range(n - 1)] + [False]
        flags = np.array([[a, a or (q < n - 1 and rng.random() < 0.5)] for q, a in enumerate(accepting)])
        accept, live = flags[:, :1], flags[:, 1:]  # views two bytes apart: strided
        out.append(TerminalArrays(table, byte_class, accept, live, rng.randrange(n), n - 1))
    return out


def test_combine_reads_any_layout_as_its_contiguous_copy() -> None:
    """Fortran-ordered or unaligned tables, strided classes and flag columns: the product of C-contiguous copies."""
    rng = random.Random(19)
    for _ in range(500):
        dfas = _random_lexer_dfas(rng)
        ids = np.array(sorted(rng.sample(range(130), len(dfas))), dtype=np.int32)
        copies = [TerminalArrays(*(np.ascontiguousarray(a) for a in d[:4]), d.start, d.dead) for d in dfas]
        got, want = (product_kernel.combine(x, ids, 3, 10_000) for x in (dfas, copies))
        assert (got is None) == (want is None)
        if got is not None:
            assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(got[1:], want[1:]))
            assert got[0] == want[0] == len(got[2])


def _one_state(**changed: object) -> list[TerminalArrays]:
    """Two one-state DFAs over one class, with `changed` fields in the first."""
    plain = TerminalArrays(np.zeros((1, 1), np.int32), np.zeros(256, np.int32), np.zeros((1, 1), bool), np.ones((1, 1), bool), 0, 0)
    return [plain._replace(**changed), plain]


def _live_start(*rows: list[int]) -> list[TerminalArrays]:
    """`_one_state` with a first DFA over one class whose live states have `rows` and whose dead state comes last,
    its start 0 (so the product reads the rows its start reaches: rows it never reads are not checked)."""
    dead = len(rows)
    live = np.array([[True]] * dead + [[False]])
    trans = np.array([*rows, [dead]], dtype=np.int32)
    return _one_state(trans=trans, accept=np.zeros((dead + 1, 1), bool), live=live, dead=dead)


@pytest.mark.parametrize("dfas", [
    _live_start([2]),  # no such state, read by the search of the mixed states
    _live_start([-1]),
    _live_start([1], [3]),  # no such state, read where the single states are reached
    _one_state(trans=np.zeros((1, 1), np.int64)),  # not int32
    _one_state(trans=np.zeros(1, np.int32)),  # not 2-D
    _one_state(byte_class=np.ones(256, np.int32)),  # no such class
    _one_state(byte_class=np.zeros(255, np.int32)),  # not one class per byte
    _one_state(accept=np.zeros((2, 1), bool)),  # not a row per state
    _one_state(live=np.zeros((1, 1), np.int32)),  # not bool
    _one_state(start=1),  # no such state
    _one_state(dead=-1),
])
def test_combine_bad_input_raises_value_error(dfas: list[TerminalArrays]) -> None:
    with pytest.raises(ValueError):
        product_kernel.combine(dfas, np.array([0, 1], dtype=np.int32), 1, 100)


def test_combine_ids_must_fit_the_words() -> None:
    with pytest.raises(ValueError):
        product_kernel.combine(_one_state(), np.array([0, 64], dtype=np.int32), 1, 100)
    with pytest.raises(ValueError):
        product_kernel.combine(_one_state(), np.array([0], dtype=np.int32), 1, 100)


def test_classes_bad_input_raises_value_error() -> None:
    with pytest.raises(ValueError):
        classes([np.zeros(255, np.int32)])
    with pytest.raises(ValueError):
        classes([np.full(256, -1, np.int32)])


def describe_reference(live_bits: np.ndarray, accept_bits: np.ndarray, first: int, ptr: np.ndarray, ids: np.ndarray,
                       lo: int, term: np.ndarray, state: np.ndarray, masks: list[int]) -> tuple[list, list, list]:
    """What `describe` writes, in plain Python: per new row its live and accept masks (ORs of its singles') and
    accept row id (masks numbered in row order after `masks`), and each single's (terminal, own state)."""
    as_int = lambda row: int.from_bytes(row.tobytes(), "little")  # noqa: E731
    masks, rows = list(masks), []
    for i in range(len(ptr) - 1):
        singles = ids[ptr[i] : ptr[i + 1]].tolist()
        live = accept = 0
        for s in singles:
            live, accept = live | as_int(live_bits[s]), accept | as_int(accept_bits[s])
        if accept and accept not in masks:
            masks.append(accept)
        rows.append((live, accept, masks.index(accept) if accept else -1))
    return rows, masks, [(int(term[s - lo]), int(state[s - lo])) for s in ids.tolist()]


@pytest.mark.parametrize("seed", range(20))
def test_describe_is_the_plain_python_or_of_its_singles(seed: int) -> None:
    """A grow's new rows described by the kernel: bit rows, accept row ids (new masks interned in row order, known
    ones found) and components equal the plain-Python reading, over two words of terminals."""
    rng = random.Random(seed)
    lo, n_singles, words, m = 2, 40, 2, rng.randint(0, 12)
    cap = lo + n_singles + m + 3
    live_bits = np.zeros((cap, words), dtype="<u8")
    accept_bits = np.zeros((cap, words), dtype="<u8")
    term = np.array([rng.randrange(64 * words) for _ in range(n_singles)], dtype=np.int32)
    state = np.array([rng.randrange(1000) for _ in range(n_singles)], dtype=np.int32)
    for s in range(n_singles):
        t = int(term[s])
        live_bits[lo + s, t >> 6] = np.uint64(1 << (t & 63))
        if rng.random() < 0.4:
            accept_bits[lo + s, t >> 6] = np.uint64(1 << (t & 63))
    counts = [rng.randint(2, 5) for _ in range(m)]
    ptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    ids = np.array([s for c in counts for s in sorted(rng.sample(range(lo, lo + n_singles), c))], dtype=np.int32)
    first = lo + n_singles + 1
    known = {(1 << 100).to_bytes(8 * words, "little"): 0}  # a mask interned before: ids go on from 1
    accept_rows = [1 << 100]
    expected, masks, comps = describe_reference(live_bits, accept_bits, first, ptr, ids, lo, term, state,
                                                accept_rows)
    accept_row = np.full(cap, -1, dtype=np.int32)
    got_term, got_state = product_kernel.describe(live_bits, accept_bits, accept_row, first, ptr, ids, lo, term,
                                                  state, None, known, accept_rows)
    as_int = lambda row: int.from_bytes(row.tobytes(), "little")  # noqa: E731
    got = [(as_int(live_bits[first + i]), as_int(accept_bits[first + i]), int(accept_row[first + i]))
           for i in range(m)]
    assert got == expected and accept_rows == masks
    assert list(zip(got_term.tolist(), got_state.tolist())) == comps
    assert all(known[mask.to_bytes(8 * words, "little")] == i for i, mask in enumerate(accept_rows))


@pytest.mark.parametrize("ids, ptr", [
    ([2, 99], [0, 2]),  # 99 is no single's row
    ([2, 3], [0, 3]),  # ptr past the ids
    ([2, 3], [0, 2, 1]),  # ptr not ascending
    ([1, 3], [0, 2]),  # below the singles
])
def test_describe_bad_input_raises_value_error(ids: list[int], ptr: list[int]) -> None:
    words, cap = 1, 16
    live_bits, accept_bits = np.zeros((cap, words), dtype="<u8"), np.zeros((cap, words), dtype="<u8")
    term, state = np.arange(4, dtype=np.int32), np.zeros(4, dtype=np.int32)
    with pytest.raises(ValueError):
        product_kernel.describe(live_bits, accept_bits, np.full(cap, -1, dtype=np.int32), 10,
                                np.array(ptr, dtype=np.int64), np.array(ids, dtype=np.int32), 2, term, state, None, {},
                                [])
