"""Combine per-terminal DFAs into the grammar's lexer DFA by a vectorised product.

Determinising one NFA for all terminals costs time in the size of every
terminal's NFA at once; instead each terminal is compiled (and minimised) on
its own (`pda.lexer.terminals`, cached in memory and on disk by its pattern), and
the minimal DFAs are run in lockstep: a product state is the vector of
per-terminal states.
Only states where two or more terminals are live are explored (breadth-first, by
hash, a layer of numpy gathers at a time); a state where one terminal alone is
live is that terminal's own minimal DFA from there, so its part of the product is
numbered directly. The result is minimised with Moore's partition refinement,
vectorised, over the explored states only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pda.errors import LimitExceeded
from pda.regex.dfa import DEFAULT_MAX_DFA_STATES, LexerDFA
from pda.regex.hashing import hash_weights


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
    local = np.stack([d.byte_class for d in dfas], axis=1) if n_terms else np.zeros((256, 1), np.int32)
    _, first, byte_class = np.unique(local, axis=0, return_index=True, return_inverse=True)
    byte_class = byte_class.reshape(-1).astype(np.int32)
    n_classes = len(first)
    rep = np.asarray(first)
    # All terminals' states in one table: global id = offset[j] + local state.
    offsets = np.concatenate(([0], np.cumsum([d.n_states for d in dfas]))).astype(np.int64)
    table = np.concatenate(
        [d.trans[:, d.byte_class[rep]].astype(np.int64) + offsets[j] for j, d in enumerate(dfas)]
    ) if n_terms else np.zeros((0, n_classes), np.int64)
    dead_ids = np.array([offsets[j] + d.dead for j, d in enumerate(dfas)], dtype=np.int64)
    acc_table = np.concatenate([d.accept[:, 0] for d in dfas]) if n_terms else np.zeros(0, bool)
    live_table = np.concatenate([d.live[:, 0] for d in dfas]) if n_terms else np.zeros(0, bool)

    start = offsets[:-1] + np.array([d.start for d in dfas], dtype=np.int64)
    # Product states are identified by two 64-bit random linear hashes of their vectors
    # (a collision needs both to agree: about 2**-128 per pair). hashed[h][g, c] is
    # weight_h(terminal of g) * table[g, c], so a successor's hash is a sum of gathers.
    owner = np.repeat(np.arange(n_terms), [d.n_states for d in dfas])
    dead_of = dead_ids[owner]  # per global id: its terminal's dead state
    weights = hash_weights(0x5EED, (2, max(n_terms, 1)))
    # A terminal in its dead state stays there and adds a constant to every hash, so a
    # successor's hash is that constant plus the live components' terms: work in the
    # number of live terminals, not all of them (hundreds of JSON Schema key terminals,
    # of which a few are alive past the opening quote).
    dead_term = (weights[:, owner] * dead_ids[owner].astype(np.uint64)) if n_terms else np.zeros((2, 0), np.uint64)
    delta = [w[owner][:, None] * table.astype(np.uint64) - d[:, None] for w, d in zip(weights, dead_term)]
    dead_total = [np.uint64(int((w * dead_ids.astype(np.uint64)).sum()) % 2**64) for w in weights]

    def vector_hash(v: np.ndarray) -> tuple[int, int]:
        return tuple(int((w * v.astype(np.uint64)).sum()) for w in weights)

    def successors(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every successor (row = state * n_classes + class): its hash pair, its number of live
        components, and the sum of their global ids (the one id itself where one is live)."""
        rows_of, cols = np.nonzero(vectors != dead_ids)
        ids = vectors[rows_of, cols]
        ends = np.cumsum(np.bincount(rows_of, minlength=len(vectors)))
        starts = np.concatenate(([0], ends[:-1]))

        nonempty = ends > starts

        def segment_sums(values: np.ndarray, dtype: type) -> np.ndarray:
            """Per state, the sum of its live components' rows (uint64 sums wrap, as hashes may)."""
            sums = np.zeros((len(vectors), n_classes), dtype=dtype)
            if len(ids):
                sums[nonempty] = np.add.reduceat(values, starts[nonempty], axis=0, dtype=dtype)
            return sums.reshape(-1)

        hashes = np.stack([segment_sums(delta[h][ids], np.uint64) + dead_total[h] for h in range(2)], axis=1)
        following = table[ids]
        alive = following != dead_of[ids][:, None]
        return hashes, segment_sums(alive, np.int64), segment_sums(np.where(alive, following, 0), np.int64)

    # Mixed states (two or more live components, and the dead and start states) are found
    # breadth-first, a layer at a time, by hash; only distinct successors reach the dictionary.
    # A successor with ONE live component j in state s is "single": from there the product
    # runs j's own DFA, so it is recorded as -(global id + 1) and not explored (enum tries and
    # counted strings: most states, which would otherwise cost a layer each).
    index: dict[tuple[int, int], int] = {vector_hash(dead_ids): 0, vector_hash(start): 1}
    vectors = [dead_ids, start]
    rows: list[np.ndarray] = []
    frontier = np.stack(vectors)
    while len(frontier):
        # Blocks of states with at most ~2M gathered entries each.
        alive_count = np.cumsum((frontier != dead_ids).sum(axis=1))
        cuts = [0]
        while cuts[-1] < len(frontier):
            done = int(alive_count[cuts[-1] - 1]) if cuts[-1] else 0
            cuts.append(max(cuts[-1] + 1, int(np.searchsorted(alive_count, done + 2_000_000 // n_classes, side="right"))))
        parts = [successors(frontier[a:b]) for a, b in zip(cuts, cuts[1:])]
        hashes, live_count, id_sum = (np.concatenate(x) for x in zip(*parts))
        successor_ids = -(id_sum + 1)  # right for the single successors; the others are set below
        mixed = np.flatnonzero(live_count != 1)
        keys, first_row, inverse = unique_rows(hashes[mixed])
        ids = np.empty(len(keys), dtype=np.int64)
        new_rows = []
        for u, key in enumerate(map(tuple, keys.tolist())):
            j = index.get(key)
            if j is None:
                j = len(vectors)
                if j > max_states:
                    raise LimitExceeded(
                        f"combined lexer DFA of {n_terms} terminals exceeds max_states={max_states}"
                    )
                index[key] = j
                state, c = divmod(int(mixed[first_row[u]]), n_classes)
                vector = table[frontier[state], c]
                vectors.append(vector)
                new_rows.append(vector)
            ids[u] = j
        successor_ids[mixed] = ids[inverse]
        rows.extend(successor_ids.reshape(len(frontier), n_classes))
        frontier = np.stack(new_rows) if new_rows else frontier[:0]
    mixed_states = np.stack(vectors)
    mixed_trans = np.stack(rows)
    singles = _reachable(table, dead_of, -mixed_trans[mixed_trans < 0] - 1)
    n_mixed = len(mixed_states)
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
    components = np.concatenate([mixed_states, np.broadcast_to(dead_ids, (len(singles), n_terms))])
    components[n_mixed + np.arange(len(singles)), own] = singles
    accept = acc_table[components]
    live = live_table[components]
    dfa, reps = _minimise(trans, accept, live, byte_class, tuple(names), n_open=n_mixed)
    return dfa, (components[reps] - offsets[:-1]).astype(component_dtype(dfas))


def component_dtype(dfas: Sequence[LexerDFA]) -> np.dtype:
    """The integer dtype of a product's components: the narrowest that holds every terminal's states.

    A product keeps one component per state and terminal (8,000 states x 279 terminals for
    a large JSON Schema: 18 MB as int64, 4.5 MB as int16).
    """
    return np.dtype(np.int16 if max((d.n_states for d in dfas), default=0) <= 2**15 else np.int32)


def _reachable(table: np.ndarray, dead_of: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    """The global ids reachable from `seeds` in the terminals' own DFAs, dead states left out; sorted."""
    reached = np.zeros(len(table), dtype=bool)
    frontier = np.unique(seeds)
    reached[frontier] = True
    while len(frontier):
        following = table[frontier].reshape(-1)
        following = np.unique(following[(following != dead_of[following]) & ~reached[following]])
        reached[following] = True
        frontier = following
    return np.flatnonzero(reached)


def _minimise(
    trans: np.ndarray, accept: np.ndarray, live: np.ndarray, byte_class: np.ndarray, names, *, n_open: int
) -> tuple[LexerDFA, np.ndarray]:
    """Moore's refinement from the accept rows; renumber so the start is 0 and dead is last.

    Only the first `n_open` states are refined: the others (a product's single states, each one
    terminal's minimal DFA in one state) are pairwise inequivalent and inequivalent to those,
    so each starts and stays a block of its own.
    """
    n = len(trans)
    _, _, open_block = unique_rows(np.packbits(accept[:n_open], axis=1))
    count = int(open_block.max()) + 1
    fixed = np.arange(n - n_open)
    block = np.concatenate([open_block, count + fixed])
    weights = hash_weights(0xB10C, (trans.shape[1] + 1, 2))
    open_trans = trans[:n_open]
    while True:
        signature = np.concatenate([block[:n_open, None], block[open_trans]], axis=1).astype(np.uint64) @ weights
        _, _, new_open = unique_rows(signature)
        new_count = int(new_open.max()) + 1
        block = np.concatenate([new_open, new_count + fixed])
        if new_count == count:
            break
        count = new_count
    count += n - n_open
    # Start (product state 1) first, dead (product state 0) last, others by first appearance.
    order = np.sort(np.unique(block, return_index=True)[1])
    middle = order[order > 1]
    firsts = np.concatenate(([1], middle) if block[0] == block[1] else ([1], middle, [0]))
    new_id = np.empty(count, dtype=np.int64)
    new_id[block[firsts]] = np.arange(len(firsts))
    dead = int(new_id[block[0]])
    reps = firsts
    out = new_id[block[trans[reps]]].astype(np.int32)
    dfa = LexerDFA(
        n_states=len(firsts),
        start=0,
        dead=dead,
        byte_class=byte_class,
        trans=out,
        accept=accept[reps],
        live=live[reps],
        names=names,
    )
    return dfa, reps


def unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`np.unique(rows, axis=0)` with first indices and inverse, fast for two-column hash rows.

    Two-column uint64 rows (hash pairs) are deduplicated on the first column and checked
    against the second; anything else, or a detected collision, takes numpy's row sort.
    """
    if rows.ndim == 2 and rows.shape[1] == 2 and rows.dtype == np.uint64:
        keys, first, inverse = np.unique(rows[:, 0], return_index=True, return_inverse=True)
        if (rows[first[inverse], 1] == rows[:, 1]).all():
            return rows[first], first, inverse.reshape(-1)
    keys, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    return keys, first, inverse.reshape(-1)
