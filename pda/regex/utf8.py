"""Expand a DFA over atoms (classes of code points) into a DFA over UTF-8 bytes.

A state of the atom DFA becomes a byte state: an ASCII byte moves it like the
atom of that character does; a lead byte moves it into a state *inside* a
character, which waits for the remaining continuation bytes. Such an inner
state is hash-consed by (continuation bytes still due, target per next byte),
so every atom state, every lead byte and every target share one trie of
suffixes: the inner states are exactly the distinct "rest of a character"
automata, which keeps the result minimal when the atom DFA is.

Only well-formed UTF-8 is spelled: no overlong forms (C0, C1, E0 80-9F, F0
80-8F), no surrogates (ED A0-BF), nothing past U+10FFFF (F4 90-BF, F5-FF).
"""

from __future__ import annotations

import bisect
import functools

import numpy as np

from pda.regex.charset import Alphabet


def _lead_blocks() -> list[tuple[int, int, int, int, int]]:
    """(lead byte, continuation bytes k, first code point of the block, valid lo, valid hi)."""
    out = []
    for lead in range(0xC2, 0xE0):
        base = (lead & 0x1F) << 6
        out.append((lead, 1, base, base, base + 63))
    for lead in range(0xE0, 0xF0):
        base = (lead & 0x0F) << 12
        lo = max(base, 0x800)
        hi = 0xD7FF if lead == 0xED else base + 0xFFF
        out.append((lead, 2, base, lo, hi))
    for lead in range(0xF0, 0xF5):
        base = (lead & 0x07) << 18
        out.append((lead, 3, base, max(base, 0x10000), min(base + 0x3FFFF, 0x10FFFF)))
    return out


LEAD_BLOCKS = _lead_blocks()
_LEAD_LO = np.array([lo for _, _, _, lo, _ in LEAD_BLOCKS], dtype=np.int64)
_LEAD_HI = np.array([hi for _, _, _, _, hi in LEAD_BLOCKS], dtype=np.int64)
_CHILD = np.arange(64, dtype=np.int64)


@functools.lru_cache(maxsize=1024)
def _shape(k: int, base: int, lo: int, hi: int) -> tuple[tuple[bool, ...], tuple[tuple[int, int, int, int], ...]]:
    """How the 64 children of the block base..base+64**k-1 meet its valid code points lo..hi:
    whether each is valid throughout, and (index, first code point, valid lo, valid hi) of
    those valid in part. It depends on UTF-8 alone, so it is worked out once per block."""
    size = 64 ** (k - 1)
    whole, partial = [], []
    for i, a in enumerate(range(base, base + 64 * size, size)):
        b = a + size - 1
        whole.append(lo <= a and b <= hi)
        if not whole[-1] and b >= lo and a <= hi:
            partial.append((i, a, max(lo, a), min(hi, b)))
    return tuple(whole), tuple(partial)


class _Expander:
    """Builds the inner states; `rows[i]` is inner state i's targets on bytes 0x80..0xBF."""

    def __init__(self, alphabet: Alphabet, n_outer: int) -> None:
        self.alphabet = alphabet
        self.bounds = alphabet.bounds.tolist()
        self.interval_atom = alphabet.interval_atom.tolist()
        self.n_outer = n_outer
        self.index: dict[tuple[int, ...], int] = {}
        self.rows: list[tuple[int, ...]] = []
        self.chains: dict[tuple[int, int], int] = {}
        self.block_atoms: dict[tuple[int, int, int, int], np.ndarray] = {}
        self.memo: dict[tuple, int] = {}

    def intern(self, children: tuple[int, ...]) -> int:
        """Id of the inner state with these targets on the 64 continuation bytes (-1: dead)."""
        if max(children) < 0:
            return -1
        j = self.index.get(children)
        if j is None:
            j = self.n_outer + len(self.rows)
            self.index[children] = j
            self.rows.append(children)
        return j

    def chain(self, k: int, target: int) -> int:
        """k continuation bytes of any value, then `target`."""
        if k == 0 or target < 0:
            return target
        got = self.chains.get((k, target))
        if got is None:
            got = self.intern((self.chain(k - 1, target),) * 64)
            self.chains[(k, target)] = got
        return got

    def block(self, g: np.ndarray, k: int, base: int, lo: int, hi: int) -> int:
        """The state reading the k continuation bytes of code points base..base+64**k-1
        (only lo..hi are valid), then moving as g (atom -> state) says."""
        where = (k, base, lo, hi)
        atoms = self.block_atoms.get(where)
        if atoms is None:
            i0 = bisect.bisect_right(self.bounds, lo) - 1
            i1 = bisect.bisect_right(self.bounds, hi)
            atoms = self.block_atoms[where] = np.array(sorted(set(self.interval_atom[i0:i1])), dtype=np.int64)
        # the result depends on g only through the atoms inside the block
        moves = g[atoms]
        uniform = bool((moves == moves[0]).all())
        if uniform and (lo, hi) == (base, base + 64**k - 1):
            return self.chain(k, int(moves[0]))
        key = (where, moves.tobytes())
        got = self.memo.get(key)
        if got is None:
            got = self._valid(k, base, lo, hi, int(moves[0])) if uniform else self._block(g, k, base, lo, hi)
            self.memo[key] = got
        return got

    def _valid(self, k: int, base: int, lo: int, hi: int, target: int) -> int:
        """`_block` where every valid code point moves to `target`: the block's shape alone
        (a lead block cut by UTF-8's limits, E0 ED F0 F4, has just this shape). The chain is
        interned before the partial children, as `_block` does."""
        whole, partial = _shape(k, base, lo, hi)
        through = self.chain(k - 1, target) if any(whole) else -1
        children = [through if w else -1 for w in whole]
        for i, a, child_lo, child_hi in partial:
            children[i] = self._valid(k - 1, a, child_lo, child_hi, target)
        return self.intern(tuple(children))

    def _block(self, g: np.ndarray, k: int, base: int, lo: int, hi: int) -> int:
        size = 64 ** (k - 1)
        starts = base + _CHILD * size
        ends = starts + size - 1
        if k == 1:
            targets = g[self.alphabet.atom_of(starts)]
            targets[(starts < lo) | (starts > hi)] = -1
            return self.intern(tuple(targets.tolist()))
        bounds = self.alphabet.bounds
        top = len(bounds) - 2  # the last interval; past U+10FFFF nothing is valid anyway
        first = np.minimum(np.searchsorted(bounds, starts, side="right") - 1, top)
        last = np.minimum(np.searchsorted(bounds, ends, side="right") - 1, top)
        uniform = (first == last) & (starts >= lo) & (ends <= hi)
        partial = ~uniform & (ends >= lo) & (starts <= hi)
        uniform_target = np.where(uniform, g[self.alphabet.interval_atom[first]], -1)
        children = np.full(64, -1, dtype=np.int64)
        # each distinct target once, ascending (64 at most; `np.unique` imports `numpy.ma` on first use)
        for t in sorted(set(uniform_target.tolist()) - {-1}):
            children[uniform_target == t] = self.chain(k - 1, t)
        for i in np.flatnonzero(partial).tolist():
            a, b = int(starts[i]), int(ends[i])
            children[i] = self.block(g, k - 1, a, max(lo, a), min(hi, b))
        return self.intern(tuple(children.tolist()))


def expand(trans: np.ndarray, alphabet: Alphabet) -> np.ndarray:
    """Byte transitions [n + m, 256] (-1: dead) of the atom DFA `trans` [n, atoms].

    Rows 0..n-1 are the atom DFA's states (same numbering), rows n.. the inner states.
    The lead blocks are walked in Python over the alphabet's intervals: a terminal's DFA
    has a few states and atoms, where numpy's fixed cost per call would be most of the work.
    """
    n = trans.shape[0]
    outer = np.full((n, 256), -1, dtype=np.int64)
    outer[:, :128] = trans[:, alphabet.atom_of(np.arange(128))]
    if not (trans[:, wide_atoms(alphabet)] >= 0).any():  # ASCII-only patterns (keywords, numbers): done
        return outer
    interval_atom = alphabet.interval_atom.tolist()
    ex = _Expander(alphabet, n)
    first_interval = (np.searchsorted(alphabet.bounds, _LEAD_LO, side="right") - 1).tolist()
    end_interval = np.searchsorted(alphabet.bounds, _LEAD_HI, side="right").tolist()
    chained: dict[tuple[int, int], np.ndarray] = {}
    groups: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray] | None] = {}
    for (lead, k, base, lo, hi), i0, i1 in zip(LEAD_BLOCKS, first_interval, end_interval):
        atoms = sorted(set(interval_atom[i0:i1]))
        if len(atoms) == 1 and (lo, hi) == (base, base + 64**k - 1):
            # one atom over the whole block: each state reads any k continuation bytes
            if (k, atoms[0]) not in chained:
                distinct, inverse = np.unique(trans[:, atoms[0]], return_inverse=True)
                chains = np.array([ex.chain(k, t) for t in distinct.tolist()], dtype=np.int64)
                chained[(k, atoms[0])] = chains[inverse.reshape(-1)]
            outer[:, lead] = chained[(k, atoms[0])]
            continue
        key = tuple(atoms)
        if key not in groups:
            moves = trans[:, atoms]
            groups[key] = distinct_rows(moves) if (moves >= 0).any() else None
        if groups[key] is None:
            continue  # no state reads any character of this block
        first, inverse = groups[key]
        column = np.array([ex.block(trans[q], k, base, lo, hi) for q in first.tolist()], dtype=np.int64)
        outer[:, lead] = column[inverse]
    inner = np.full((len(ex.rows), 256), -1, dtype=np.int64)
    if ex.rows:
        inner[:, 0x80:0xC0] = np.array(ex.rows, dtype=np.int64)
    return np.vstack([outer, inner])


def wide_atoms(alphabet: Alphabet) -> list[int]:
    """The atoms holding a code point past ASCII, ascending: a DFA that reads none of them reads ASCII alone."""
    interval_atom = alphabet.interval_atom.tolist()
    return sorted(set(interval_atom[int(np.searchsorted(alphabet.bounds, 0x80, side="right")) - 1 :]))


def expand_bytes(trans: np.ndarray, alphabet: Alphabet) -> np.ndarray:
    """Byte transitions [n, 256] of a byte-mode atom DFA, whose code points 0..255 are bytes."""
    return trans[:, alphabet.atom_of(np.arange(256))]


def distinct_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index of one row per distinct row, distinct-row number of every row)."""
    packed = np.ascontiguousarray(rows).view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1])))
    _, first, inverse = np.unique(packed.reshape(-1), return_index=True, return_inverse=True)
    return first, inverse.reshape(-1)
