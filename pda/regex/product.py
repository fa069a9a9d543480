"""Combine per-terminal DFAs into the grammar's lexer DFA by a vectorised product.

Determinising one NFA for all terminals costs time in the size of every
terminal's NFA at once; instead each terminal is compiled (and minimised) on
its own (`pda.lexer.terminals`, cached in memory and on disk by its pattern), and
the minimal DFAs are run in lockstep: a product state is the vector of
per-terminal states.
Only states where two or more terminals are live are explored (breadth-first,
by the compiled `pda.kernels.product.explore`, interning states by content); a
state where one terminal alone is live is that terminal's own minimal DFA from
there, so its part of the product is numbered directly. The result needs no
minimisation: a product of minimal DFAs with one accept column per terminal is
minimal (`_renumber`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pda.errors import LimitExceeded
from pda.kernels.product import explore, reachable
from pda.regex.dfa import DEFAULT_MAX_DFA_STATES, LexerDFA
from pda.regex.utf8 import distinct_rows


def combine(
    dfas: Sequence[LexerDFA], names: Sequence[str], *, max_states: int = DEFAULT_MAX_DFA_STATES
) -> tuple[LexerDFA, np.ndarray]:
    """The product of one-terminal DFAs: column j of accept/live is `dfas[j]`'s terminal.

    Also returns, per product state, one vector of the terminals' own states that it
    stands for (`components[s, j]`, a state of `dfas[j]`).
    """
    n_terms = len(dfas)
    if n_terms == 1:  # one terminal's DFA is already minimal
        return dfas[0], np.arange(dfas[0].n_states, dtype=component_dtype(dfas))[:, None]
    # Global byte classes: bytes that every terminal's DFA treats alike.
    # Grouped through a void view of each byte's row (np.unique(axis=0) sorts field by field, ~3 ms a
    # product), then numbered by their lowest byte.
    local = np.stack([d.byte_class for d in dfas], axis=1) if n_terms else np.zeros((256, 1), np.int32)
    first, inverse = distinct_rows(local.astype(np.int32))
    byte_class = np.argsort(np.argsort(first)).astype(np.int32)[inverse]  # as `dfa._finish` numbers classes
    n_classes = len(first)
    rep = np.sort(first)
    # All terminals' states in one table: global id = offset[j] + local state.
    offsets = np.concatenate(([0], np.cumsum([d.n_states for d in dfas]))).astype(np.int64)
    table = np.concatenate(
        [d.trans[:, d.byte_class[rep]].astype(np.int32) + np.int32(offsets[j]) for j, d in enumerate(dfas)]
    ) if n_terms else np.zeros((0, n_classes), np.int32)
    dead_ids = np.array([offsets[j] + d.dead for j, d in enumerate(dfas)], dtype=np.int64)
    acc_table = np.concatenate([d.accept[:, 0] for d in dfas]) if n_terms else np.zeros(0, bool)
    live_table = np.concatenate([d.live[:, 0] for d in dfas]) if n_terms else np.zeros(0, bool)

    start = offsets[:-1] + np.array([d.start for d in dfas], dtype=np.int64)
    owner = np.repeat(np.arange(n_terms), [d.n_states for d in dfas])
    dead_of = dead_ids[owner]  # per global id: its terminal's dead state
    # The states where two or more terminals are live ("mixed"), found by the compiled
    # breadth-first search; a successor where one terminal j alone is live in state s is
    # "single", -(global id + 1): from there the product runs j's own DFA, so it is not
    # explored (enum tries and counted strings: most states).
    is_dead = np.zeros(len(table), dtype=bool)
    is_dead[dead_ids] = True
    explored = explore(table, is_dead, start[~is_dead[start]], max_states)
    if explored is None:
        raise LimitExceeded(f"combined lexer DFA of {n_terms} terminals exceeds max_states={max_states}")
    mixed_trans = explored.trans.copy()
    n_mixed = len(mixed_trans)
    # Components as int32 global ids (the table's own dtype): states x terminals, the product's largest arrays.
    mixed_states = np.tile(dead_ids.astype(np.int32), (n_mixed, 1))
    ids = explored.ids
    mixed_states[np.repeat(np.arange(n_mixed), np.diff(explored.ptr)), owner[ids]] = ids
    singles = reachable(table, is_dead, -mixed_trans[mixed_trans < 0] - 1)
    if n_mixed + len(singles) > max_states + 1:
        raise LimitExceeded(f"combined lexer DFA of {n_terms} terminals exceeds max_states={max_states}")
    # Final numbering: the mixed states, then the single ones in global-id order.
    number = np.zeros(len(table), dtype=np.int64)  # dead components map to product state 0
    number[singles] = n_mixed + np.arange(len(singles))
    to_single = mixed_trans < 0
    mixed_trans[to_single] = number[-mixed_trans[to_single] - 1]
    single_next = table[singles]
    trans = np.concatenate([mixed_trans, np.where(single_next != dead_of[single_next], number[single_next], 0)])
    own = owner[singles]
    components = np.concatenate([mixed_states, np.broadcast_to(dead_ids.astype(np.int32), (len(singles), n_terms))])
    components[n_mixed + np.arange(len(singles)), own] = singles
    accept = acc_table[components]
    live = live_table[components]
    dfa, reps = _renumber(trans, accept, live, byte_class, tuple(names))
    kept = components[reps]
    kept -= offsets[:-1].astype(np.int32)
    return dfa, kept.astype(component_dtype(dfas), copy=False)


def component_dtype(dfas: Sequence[LexerDFA]) -> np.dtype:
    """The integer dtype of a product's components: the narrowest that holds every terminal's states.

    A product keeps one component per state and terminal (8,000 states x 279 terminals for
    a large JSON Schema: 18 MB as int64, 4.5 MB as int16).
    """
    return np.dtype(np.int16 if max((d.n_states for d in dfas), default=0) <= 2**15 else np.int32)


def _renumber(
    trans: np.ndarray, accept: np.ndarray, live: np.ndarray, byte_class: np.ndarray, names
) -> tuple[LexerDFA, np.ndarray]:
    """The product renumbered so the start is 0 and the dead state last; already minimal.

    Every terminal's DFA is minimal and trimmed (each state but a dead one reaches an
    accepting one), and a product state's accept row has one column per terminal. Two
    product states differ in some terminal's component, whose two states then accept
    different continuations (or one is dead and the other is not), so the product states
    accept different continuations too: no two are equivalent, and a partition refinement
    would merge none (it merged none over 51 products of JSON Schemas and every shipped
    grammar, at ~0.4 ms a product). The one exception is an empty language, where the
    start is the dead state.
    """
    n = len(trans)
    if n < 2 or not (live[1].any() or accept[1].any()):  # nothing is live at the start: one dead state
        dfa = LexerDFA(n_states=1, start=0, dead=0, byte_class=byte_class, trans=np.zeros((1, trans.shape[1]), np.int32),
                       accept=accept[:1], live=live[:1], names=names)
        return dfa, np.zeros(1, dtype=np.int64)
    # Start (product state 1) first, then the others in order, dead (product state 0) last.
    reps = np.concatenate(([1], np.arange(2, n), [0])).astype(np.int64)
    new_id = np.empty(n, dtype=np.int64)
    new_id[reps] = np.arange(n)
    dfa = LexerDFA(
        n_states=n,
        start=0,
        dead=n - 1,
        byte_class=byte_class,
        trans=new_id[trans[reps]].astype(np.int32),
        accept=accept[reps],
        live=live[reps],
        names=names,
    )
    return dfa, reps
