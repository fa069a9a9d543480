"""The breadth-first search of a product of terminal DFAs, one compiled call (`pda.kernels._product`, pda/kernels/_product.c).

`explore(table, dead, start, max_states)` runs the terminals' DFAs in lockstep from
their starts and returns every product state reached in which two or more terminals
are live, with its transitions:

* `table` int32 [g, k]: all terminals' DFAs in one table of global state ids (terminal
  j's states are one contiguous range), `table[s, c]` the successor on product class c;
* `dead` bool [g]: the global states that are their terminal's dead state;
* `start` int32 [n]: the start's live components, in terminal order.

A product state is the list of its live components, in terminal order. State 0 is the
empty list, state 1 the start, and the rest are numbered as the search meets them
(states in id order, classes in order). A successor with one live component s is not
explored: from there the product is that terminal's own DFA, and its entry is
-(s + 1). Returns `Explored(trans, ptr, ids)`: trans int64 [m, k], and state q's
components `ids[ptr[q]:ptr[q+1]]`; or None when a state id would exceed `max_states`.
The kernel checks every index it reads (ValueError; the start's up front, a table row when
a product state first holds its state), runs without the GIL, and costs
O(states x (classes + the live components' live successors)): each global state's successors
that are not dead are listed once, when first needed, so a key literal live on one class of
seventy costs one (the largest all-terminal product of the JSON Schema sample: 8,214 states,
19-29 -> 14 ms).
`pda.reference.reference_explore` is the plain-Python product the tests compare it to.

`reachable(table, dead, seeds)` is the other half of a product: the global states
reachable from `seeds` in the terminals' own DFAs (the seeds included, dead states left
out), ascending; one pass, O(states x classes), each row read checked. `pda.reference.reference_reachable`
is its plain-Python oracle.

`fill_rows(out, trans, classes, live, offset, dead)` writes one terminal's DFA into a
shared table's rows, its states renumbered and its classes spread to the table's.

`classes(byte_classes)` gives the classes of bytes that every DFA treats alike (numbered by their lowest
byte), in one compiled pass (numpy's grouping of byte columns was a third of a 248-terminal product's time);
its numpy form is the oracle in the tests.

`combine(dfas, ids, words, max_states)` is a whole product in one call (`pda.regex.product.combine` lays
out its result): the classes, every DFA's states numbered as one table of global ids over them (each row
read in place, translated as it is read: a table made up front, and the copies that grew the search's
arrays, cost as much fresh memory as the search took time: traefik-v2's 2,290-state product 4.2 -> 1.9 ms),
`explore`, the singles and what they reach, the numbering and the components' bit rows. A typical JSON
Schema's all-terminal product took ~50 numpy calls around the search, ~0.5-1 ms of a cold compile. The
transitions it reads are checked (ValueError), rows no product state reaches are not read.

`Grower` is `explore` kept across calls over one shared table
(`pda.regex.product.SharedProduct`): each `grow` interns a candidate set's start
among the mixed states found so far and explores only what is new, writing the new
states' rows into the table itself.

`describe` writes the rest of what a grow added (the new states' bit rows, accept row ids and components), so
a new candidate set costs a few compiled calls rather than ~50 numpy calls on a few rows (~90 us a set).

`LazyRows` fills a shared table's lazy singles: terminals whose DFA is a lazy one
(`pda.kernels.derive.Lazy`) get their states' rows from one range [lo, hi), in the order
first reached (a map per terminal, state -> row). A row is made (its entries `UNFILLED`,
its live and accept bits and accept row written) the first time a step reaches its
state, before its id is written anywhere, so a reader that finds the id finds its
flags; an entry stays `UNFILLED` until read, then the filler steps the Lazy by the
class's lowest byte and writes the successor's row (`dead` for the Lazy's dead state).
The Grower (given the filler) and the walk kernel (`pda.kernels.walk`, the filler in its
tables) fill as they read, without the GIL, through the C interface `_product._LAZY_API` (a capsule named
"pda.kernels._product._LAZY_API" pointing to three functions, in this order):
    void *rows(PyObject *capsule)      the filler of a `LazyRows.capsule` (NULL and an
                                       error if not one); needs the GIL
    int fill(void *rows, int32_t row, int32_t cls, int32_t *out)
                                       0 and the entry in *out (written to the table too),
                                       or a failure code; no GIL needed
    void raise(int code)               that failure as a Python exception; needs the GIL
Failures: `LimitExceeded` (the `lazy_dfa_states` budget, a Lazy's max_states, a term
nested too deep, a state past its terminal's rows) or MemoryError. Entries are written
with release order and rows are made under the filler's lock: threads may fill one
table at once (two filling one entry write the same value).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from pda.kernels import _product


class Explored(NamedTuple):
    """The explored product states (see the module docstring)."""

    trans: np.ndarray
    ptr: np.ndarray
    ids: np.ndarray


def explore(table: np.ndarray, dead: np.ndarray, start: np.ndarray, max_states: int) -> Explored | None:
    """The product states with two or more live components, reached from `start` (see the module docstring)."""
    table = np.ascontiguousarray(table, dtype=np.int32)
    if table.ndim != 2:
        raise ValueError("table must be 2-dimensional")
    found = _product.explore(
        table, np.ascontiguousarray(dead, dtype=bool), np.ascontiguousarray(start, dtype=np.int32), int(max_states)
    )
    if found is None:
        return None
    trans, ptr, ids = found
    return Explored(
        np.frombuffer(trans, dtype=np.int64).reshape(-1, table.shape[1]),
        np.frombuffer(ptr, dtype=np.int64),
        np.frombuffer(ids, dtype=np.int32),
    )


def classes(byte_classes: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(byte_class int32 [256], rep int32 [k]): bytes that every DFA's `byte_classes[j]` (int32 [256], as a
    `LexerDFA` holds it) maps alike are one class, numbered by their lowest byte, which is `rep[c]`."""
    byte_class, rep = _product.classes(byte_classes)
    return np.frombuffer(byte_class, dtype=np.int32), np.frombuffer(rep, dtype=np.int32)


class TerminalArrays(NamedTuple):
    """The arrays of a one-terminal DFA that `combine` reads (a `pda.regex.dfa.LexerDFA` has the same fields):
    `trans` int32 [n, k] over the byte classes `byte_class` (int32 [256]), `accept` and `live` bool [n, w]
    columns, the `start` state and the `dead` one."""

    trans: np.ndarray
    byte_class: np.ndarray
    accept: np.ndarray
    live: np.ndarray
    start: int
    dead: int


def combine(dfas: Sequence[Any], ids: np.ndarray, words: int, max_states: int) -> tuple | None:
    """The whole product of one-terminal DFAs (`pda.regex.dfa.LexerDFA`s; DFA j is terminal `ids[j]`, int32),
    as `pda.regex.product.combine` lays it out: (n_states, byte_class, trans, comp_ptr, comp_term, comp_state,
    accept_bits, live_bits) as arrays, or None when a state id would exceed `max_states` (see the module
    docstring)."""
    found = _product.combine([d.trans for d in dfas], [d.byte_class for d in dfas], [d.accept for d in dfas],
                             [d.live for d in dfas], [d.start for d in dfas], [d.dead for d in dfas],
                             np.ascontiguousarray(ids, dtype=np.int32), int(words), int(max_states))
    if found is None:
        return None
    n, byte_class, trans, ptr, term, state, accept_bits, live_bits = found
    k = len(trans) // (4 * n)
    return (n, np.frombuffer(byte_class, dtype=np.int32), np.frombuffer(trans, dtype=np.int32).reshape(n, k),
            np.frombuffer(ptr, dtype=np.int64), np.frombuffer(term, dtype=np.int32),
            np.frombuffer(state, dtype=np.int32), np.frombuffer(accept_bits, dtype="<u8").reshape(n, words),
            np.frombuffer(live_bits, dtype="<u8").reshape(n, words))


def reachable(table: np.ndarray, dead: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    """The live global states reachable from `seeds` (included) along `table`, int64 ascending."""
    table = np.ascontiguousarray(table, dtype=np.int32)
    if table.ndim != 2:
        raise ValueError("table must be 2-dimensional")
    found = _product.reach(table, np.ascontiguousarray(dead, dtype=bool), np.ascontiguousarray(seeds, dtype=np.int64))
    return np.frombuffer(found, dtype=np.int64)


def fill_rows(out: np.ndarray, trans: np.ndarray, classes: np.ndarray, live: np.ndarray, offset: int,
              dead: int) -> None:
    """Write one terminal's DFA into `out` (int32 [n, k], a writable row range of a shared table): out[s, c] is
    `offset` + trans[s, classes[c]] where that state is `live`, else `dead` (one compiled pass)."""
    _product.fill_rows(out, np.ascontiguousarray(trans, dtype=np.int32), np.ascontiguousarray(classes, dtype=np.int32),
                       np.ascontiguousarray(live, dtype=bool), int(offset), int(dead))


def describe(live_bits: np.ndarray, accept_bits: np.ndarray, accept_row: np.ndarray, first: int, ptr: np.ndarray,
             ids: np.ndarray, lo: int, term: np.ndarray, state: np.ndarray, lazy: LazyRows | None,
             row_ids: dict[bytes, int], accept_rows: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The rest of what a grow added, written where a shared product keeps it (one compiled pass; see the module
    docstring): new state i (row first + i, its singles `ids[ptr[i]:ptr[i + 1]]`) gets its live and accept bit
    rows (the ORs of its singles', which must be zero before) and its accept row id, the id of its accept bits'
    bytes in `row_ids`, a new mask appended to `accept_rows` (an int) with the next id, -1 where it accepts nothing.
    Returns the components (terminal, own state) int32 per single of `ids`: an eager single's from `term`/`state`
    (indexed by row - lo), a made lazy single's from `lazy`."""
    terms, states = _product.describe(live_bits, accept_bits, accept_row, int(first), ptr, ids, int(lo), term, state,
                                      None if lazy is None else lazy.capsule, row_ids, accept_rows)
    return np.frombuffer(terms, dtype=np.int32), np.frombuffer(states, dtype=np.int32)


class Grown(NamedTuple):
    """What one `grow` added (see `Grower.grow`)."""

    start: int
    first: int
    ptr: np.ndarray
    ids: np.ndarray


UNFILLED = -1  # a lazy single's entry not computed yet (no row id is negative)


class LazyRows:
    """The filler of a shared table's lazy singles (see the module docstring).

    Rows [lo, hi) of `trans` are theirs. `terms` are (lazy, terminal id, accept row id,
    max_states) per lazy terminal: its Lazy core, its bit in `live_bits`/`accept_bits`,
    the id `accept_row` names for its accepting rows, and the most states its Lazy makes.
    The filler keeps the arrays (never resized after) and the Lazy objects alive.
    """

    def __init__(self, trans: np.ndarray, rep: np.ndarray, live_bits: np.ndarray, accept_bits: np.ndarray,
                 accept_row: np.ndarray, dead: int, lo: int, hi: int,
                 terms: Sequence[tuple[object, int, int, int]]) -> None:
        self.capsule = _product.lazy_rows(trans, np.ascontiguousarray(rep, dtype=np.int32), live_bits, accept_bits,
                                          accept_row, int(dead), int(lo), int(hi), [tuple(t) for t in terms])

    def owner(self, row: int) -> tuple[int, int]:
        """(terminal id, lazy state) of a made row."""
        return _product.lazy_owner(self.capsule, row)

    def start(self, i: int) -> int:
        """Lazy terminal i's start row, made (`dead` when its language is empty)."""
        return _product.lazy_start(self.capsule, i)

    def fill(self, row: int, cls: int) -> int:
        """Entry (row, cls) of a made row, filled if `UNFILLED`."""
        return _product.lazy_fill_entry(self.capsule, row, cls)


class Grower:
    """A product grown across calls over one shared table (`pda.regex.product.SharedProduct`).

    The table `trans` (int32 [cap, k]) holds every terminal's DFA as the rows [lo, hi)
    of global ids ("singles"), whose successors are singles or `dead`; mixed states (two
    or more singles live) are interned by content across calls, each new one's row written
    at `mixed_base` + its number, so a mixed state met from two candidate sets is one row.
    """

    def __init__(self, trans: np.ndarray, lo: int, hi: int, dead: int, mixed_base: int) -> None:
        if trans.dtype != np.int32 or trans.ndim != 2 or not trans.flags.c_contiguous:
            raise ValueError("trans must be a C-contiguous 2-dimensional int32 array")
        self.trans, self.lo, self.hi, self.dead, self.mixed_base = trans, lo, hi, dead, mixed_base
        self._grower = _product.grower()

    def grow(self, start: np.ndarray, lazy: LazyRows | None = None) -> Grown | None:
        """Intern the state whose live components are `start` (ascending singles, two or more) and explore
        from it: its row, the first row added, and the added states' components (CSR, `ptr` from 0).

        None when a new state's row would be past the table: the grower is then spent, and
        every later call answers None. `lazy` fills the lazy singles' entries as they are read (its
        failure raises and spends the grower).
        """
        found = _product.grow(self._grower, self.trans, self.lo, self.hi, self.dead, self.mixed_base,
                              np.ascontiguousarray(start, dtype=np.int32), None if lazy is None else lazy.capsule)
        if found is None:
            return None
        start_row, first, ptr, ids = found
        ptr = np.frombuffer(ptr, dtype=np.int64)
        return Grown(start_row, first, ptr - ptr[0], np.frombuffer(ids, dtype=np.int32))
