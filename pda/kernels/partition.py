"""DFA minimisation's partition refinement, one compiled call (`pda.kernels._partition`, pda/kernels/_partition.c).

`coarsest_partition(trans, initial)` is the coarsest partition of
a partial DFA's states that refines the initial blocks (for minimisation: states with
equal accept rows) and is stable, so that two states of one block have, per class,
successors in one block or both no successor. That is the minimal DFA's state set.

Inputs: `trans` int64 [m, k] with -1 for "no transition" (a dead state left implicit),
`initial` the initial block of each state, any ints (equal ints: one block). Output:
int64 [m] block ids, dense but in no set order, so callers number the minimal DFA's
states by something else (`pda.regex.dfa._minimise`: each block's first state). The
kernel checks every index up front (ValueError) and runs without the GIL. An acyclic
DFA (a counted string: most of what `pda.regex.dfa` minimises) takes one depth-first
pass that hashes each state's successors' blocks, O(m k); at the first cycle it falls
back to Hopcroft's algorithm, O(m k log m) time and O(m k) memory. The Python reference
both are tested against is `pda.reference.reference_partition`.

`coaccessible(trans, accepting)` is minimisation's trim: the states from which an
accepting state is reachable, by one backward search over the incoming edges, O(m k),
without the GIL (`pda.reference.reference_coaccessible` is its oracle).

`minimal_dfa(trans, accept, classes)` is one terminal's partial DFA over byte classes made minimal and
complete in one call, exactly as `pda.regex.dfa._minimise` and then `_finish` make it (the trim, the
partition, the blocks numbered by their first state, the byte classes numbered by their lowest byte, the
dead state last): a composed terminal's table (a counted string: thousands of states) took a dozen numpy
passes and four kernel calls, each converting it again. With `settled=True` the caller vouches that the
DFA is trimmed and minimal already (`pda.regex.compose.Classed.minimal_acyclic`, a composition of
minimal acyclic parts): only the tables are finished, the trim and the partition (~90% of a counted
string's time here) skipped; tests/test_counted_repeat.py checks both give the same tables.

`row_groups(table, rows)` finds a byte DFA's byte classes from its transposed table:
the distinct rows among `table[rows[i]]`, numbered by first appearance, by one hashing
pass over the table (equal hashes are compared in full), without the GIL;
`column_groups(table, columns)` is `row_groups(table.T, columns)` read in place (a
large DFA's transposed copy cost as much as the rest of its finishing).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pda.kernels import _partition


def coarsest_partition(trans: np.ndarray, initial: np.ndarray) -> np.ndarray:
    """Per state, its block in the coarsest stable partition refining `initial` (see the module docstring)."""
    trans = np.ascontiguousarray(trans, dtype=np.int64)
    if trans.ndim != 2:
        raise ValueError("trans must be 2-dimensional")
    blocks = np.ascontiguousarray(initial, dtype=np.int64).reshape(-1)
    if len(blocks) != trans.shape[0]:
        raise ValueError("initial must have one entry per state")
    if len(blocks) and (blocks.min() < 0 or blocks.max() >= len(blocks)):  # the kernel takes ids below m
        blocks = np.unique(blocks, return_inverse=True)[1].reshape(-1).astype(np.int64)
    out = np.empty(trans.shape[0], dtype=np.int64)
    _partition.refine(trans, blocks, out)
    return out


def coaccessible(trans: np.ndarray, accepting: np.ndarray) -> np.ndarray:
    """Per state of a partial DFA (int64 [m, k], -1: none), whether an `accepting` state is reachable from it."""
    trans = np.ascontiguousarray(trans, dtype=np.int64)
    if trans.ndim != 2:
        raise ValueError("trans must be 2-dimensional")
    good = np.array(accepting, dtype=bool).reshape(-1)
    if len(good) != trans.shape[0]:
        raise ValueError("accepting must have one entry per state")
    _partition.coaccessible(trans, good.view(np.uint8))
    return good


def minimal_dfa(trans: np.ndarray, accept: np.ndarray, classes: np.ndarray,
                settled: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(byte_class int32 [256], table int32 [n + 1, classes], accepting bool [n + 1]) of the minimal complete DFA
    of a one-terminal partial DFA (`trans` [m, k], -1: none; state 0 the start, every state reachable from it;
    `accept` [m]; `classes` [256]: each byte's column), its dead state n last (see the module docstring).
    `settled`: known trimmed and minimal already, so only finished. An int32 `trans` (composition's) is read
    where it is, not widened: a counted string's table is hundreds of KiB, and fresh memory costs a page fault
    per 4 KiB on first touch."""
    trans = np.ascontiguousarray(trans, dtype=np.int32 if trans.dtype == np.int32 else np.int64)
    accept = np.ascontiguousarray(accept, dtype=bool).reshape(-1)
    n, k, byte_class, table, accepting = _partition.minimal(trans, accept.view(np.uint8),
                                                            np.ascontiguousarray(classes, dtype=np.int64), settled)
    return (np.frombuffer(byte_class, dtype=np.int32), np.frombuffer(table, dtype=np.int32).reshape(n + 1, k),
            np.frombuffer(accepting, dtype=bool))


def row_groups(table: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(group of each `rows[i]`, one row of `table` per group): equal rows of `table` picked
    by `rows` share a group, groups numbered by first appearance."""
    return _groups(_partition.row_groups, table, rows)


def column_groups(table: np.ndarray, columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`row_groups(table.T, columns)`, without transposing: (group of each `columns[i]`, one
    column of `table` per group), equal columns sharing a group, numbered by first appearance."""
    return _groups(_partition.column_groups, table, columns)


def _groups(kernel: Callable, table: np.ndarray, picked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`kernel` (the rows' or the columns' grouping) over `table` and the `picked` rows or columns."""
    table = np.ascontiguousarray(table, dtype=np.int64)
    if table.ndim != 2:
        raise ValueError("table must be 2-dimensional")
    picked = np.ascontiguousarray(picked, dtype=np.int64).reshape(-1)
    group = np.empty(len(picked), dtype=np.int64)
    first = np.empty(len(picked), dtype=np.int64)
    n = kernel(table, picked, group, first)
    return group, first[:n]
