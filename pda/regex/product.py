"""Combine per-terminal DFAs into the grammar's lexer DFA by a vectorised product.

Determinising one NFA for all terminals costs time in the size of every
terminal's NFA at once; instead each terminal is compiled (and minimised) on
its own (`pda.lexer.terminals`, cached in memory and on disk by its pattern), and
the minimal DFAs are run in lockstep: a product state is the vector of
per-terminal states.
Only states where two or more terminals are live are explored (breadth-first,
in one compiled call, `pda.kernels.product.combine`, interning states by content); a
state where one terminal alone is live is that terminal's own minimal DFA from
there, so its part of the product is numbered directly. The result needs no
minimisation: a product of minimal DFAs with one accept column per terminal is
minimal (see `combine`).

`SharedProduct` is the same product grown one candidate set at a time over one
table per lexer (when the all-terminal product is too big to build): the terminals'
own states numbered once, the mixed states interned by content across sets by the
compiled `pda.kernels.product.Grower`, so no set copies a terminal's states.

The result (`Product`) keeps each state's live components only, as CSR, and its
accept/live sets as packed bit rows built from them. A dense vector per state
(states x terminals) is what a product state stands for but not what it holds:
the explored states have a few live terminals and every other state exactly one.
Dense (an int16 component and two bools per state and terminal), a JSON Schema's
all-terminal product of 8,203 states x 269 terminals held 8.8 MB beside 2.2 MB of
transitions, now 1.3 MB; Snowplow sp_372's full product (38,870 x 72) 11.2 MB beside
12.9, now 3.4 MB.
"""

from __future__ import annotations

import mmap
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pda.arrays import distinct
from pda.cache import Invalid, take
from pda.errors import LimitExceeded
from pda.kernels import product as product_kernel
from pda.kernels.product import Grower, Grown, LazyRows, classes, describe, fill_rows, reachable
from pda.regex.dfa import DEFAULT_MAX_DFA_STATES, LexerDFA
from pda.regex.lazy import LazyDFA


@dataclass(frozen=True, eq=False)
class Product:
    """A product DFA of terminal DFAs, its states' live components as CSR and its accept/live rows as bits.

    Invariants: `start` is 0 and `dead` (no live component) is the last state, but for a
    one-terminal product, which is that terminal's DFA as it is. State q's live terminals
    are `comp_term[comp_ptr[q]:comp_ptr[q + 1]]` (terminal ids, ascending), each in its own
    DFA's state `comp_state[...]`, which is live there. `accept_bits`/`live_bits` are uint64
    [n_states, words] over terminal ids: bit t % 64 of word t // 64 is terminal t
    (little-endian, so a row's bytes read as one int are its bitmask).
    """

    n_states: int
    start: int
    dead: int
    byte_class: np.ndarray  # int32 [256]
    trans: np.ndarray  # int32 [n_states, n_classes]
    comp_ptr: np.ndarray  # int64 [n_states + 1]
    comp_term: np.ndarray  # int32
    comp_state: np.ndarray  # int32
    accept_bits: np.ndarray  # <u8 [n_states, words]
    live_bits: np.ndarray  # <u8 [n_states, words]

    @property
    def nbytes(self) -> int:
        """Bytes of the product's arrays (what the memo of all-terminal products holds)."""
        return sum(a.nbytes for a in (self.byte_class, self.trans, self.comp_ptr, self.comp_term, self.comp_state,
                                      self.accept_bits, self.live_bits))

    def to_arrays(self) -> tuple[dict, dict[str, np.ndarray]]:
        """(meta, arrays) for the disk cache; the bit rows are left out (`from_arrays` rebuilds them)."""
        meta = {"n_states": self.n_states, "start": self.start, "dead": self.dead}
        return meta, {"byte_class": self.byte_class, "trans": self.trans, "comp_ptr": self.comp_ptr,
                      "comp_term": self.comp_term, "comp_state": self.comp_state}

    @classmethod
    def from_arrays(cls, meta: dict, arrays: Mapping[str, np.ndarray], dfas: Sequence[LexerDFA]) -> "Product":
        """The product of `dfas` (terminal j is `dfas[j]`) that `to_arrays` wrote, checked; raises `Invalid`.

        Every transition stays in the table, and every component is a live state of its
        terminal's DFA, listed in ascending terminal order.
        """
        n, start, dead = meta["n_states"], meta["start"], meta["dead"]
        if not all(isinstance(x, int) for x in (n, start, dead)) or not (0 <= start < n and 0 <= dead < n):
            raise Invalid("bad state counts")
        trans = take(arrays, "trans", np.int32, (n, None), (0, n))
        byte_class = take(arrays, "byte_class", np.int32, (256,), (0, trans.shape[1]))
        ptr = take(arrays, "comp_ptr", np.int64, (n + 1,))
        term = take(arrays, "comp_term", np.int32, (None,), (0, len(dfas)))
        state = take(arrays, "comp_state", np.int32, term.shape, (0, 1 << 31))
        if ptr[0] != 0 or ptr[-1] != len(term) or (np.diff(ptr) < 0).any():
            raise Invalid("comp_ptr is not a CSR index of the components")
        rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))
        if ((np.diff(term) <= 0) & (np.diff(rows) == 0)).any():
            raise Invalid("a state's components are not in ascending terminal order")
        tables = _Tables(dfas)
        if (state >= tables.n_states[term]).any():
            raise Invalid("a component is not a state of its terminal's DFA")
        flat = tables.offsets[term] + state
        if not tables.live[flat].all():
            raise Invalid("a component is not live")
        words = _words(len(dfas) - 1)
        return cls(n, start, dead, byte_class, trans, ptr, term, state,
                   _bits(rows, term, tables.accept[flat], n, words), _bits(rows, term, tables.live[flat], n, words))


def combine(
    dfas: Sequence[LexerDFA], *, terminals: Sequence[int] | None = None, max_states: int = DEFAULT_MAX_DFA_STATES
) -> Product:
    """The product of one-terminal DFAs: `dfas[j]` is terminal `terminals[j]` (default j), ids ascending.

    No two product states are equivalent, so it needs no minimisation: every terminal's
    DFA is minimal and trimmed (each state but a dead one, and an empty language's start,
    reaches an accepting one), so two product states that differ in some terminal's
    component accept different continuations of it (or it is live in one and not in the
    other). A partition refinement merged none over 51 products of JSON Schemas and every
    shipped grammar, at ~0.4 ms a product.
    """
    if terminals is None:  # the lexer's all-terminal product: ids 0..m-1, nothing to check
        ids = np.arange(len(dfas), dtype=np.int32)
    else:
        ids = np.asarray(terminals, dtype=np.int32)
        if len(ids) != len(dfas) or (ids[1:] <= ids[:-1]).any() or (len(ids) and ids[0] < 0):
            raise ValueError("terminals must be one ascending id per DFA")
    words = _words(int(ids[-1]) if terminals is not None and len(ids) else len(ids) - 1)
    if len(dfas) == 1:  # one terminal's DFA is already minimal
        return _one(dfas[0], int(ids[0]), words)
    # One compiled call (`pda.kernels.product.combine`): the global byte classes, all terminals' states in one
    # table over them, the states where two or more terminals are live explored breadth first, and the
    # "single" states reached from them, where one terminal j alone is live: from there the product runs j's
    # own DFA, so they are not explored (enum tries and counted strings: most states). Numbered: the explored
    # states (the start first), then the single ones in global-id order, dead last.
    found = product_kernel.combine(dfas, ids, words, max_states)
    if found is None:
        raise LimitExceeded(f"combined lexer DFA of {len(dfas)} terminals exceeds max_states={max_states}")
    n, byte_class, trans, ptr, term, state, accept_bits, live_bits = found
    return Product(n, 0, n - 1, byte_class, trans, ptr, term, state, accept_bits, live_bits)


class _Tables:
    """The terminals' DFAs' states in one numbering (global id = offsets[j] + local state), with their flags."""

    def __init__(self, dfas: Sequence[LexerDFA]) -> None:
        self.n_states = np.array([d.n_states for d in dfas], dtype=np.int64)
        self.offsets = np.concatenate(([0], np.cumsum(self.n_states))).astype(np.int64)
        self.owner = np.repeat(np.arange(len(dfas), dtype=np.int64), self.n_states)
        # One-terminal DFAs: their one column, taken once from all of them stacked.
        self.accept = np.concatenate([d.accept for d in dfas])[:, 0] if dfas else np.zeros(0, bool)
        self.live = np.concatenate([d.live for d in dfas])[:, 0] if dfas else np.zeros(0, bool)


def _one(dfa: LexerDFA, terminal: int, words: int) -> Product:
    """One terminal's DFA as a product: each live state is its own component."""
    live = dfa.live[:, 0]
    rows = np.flatnonzero(live)
    term = np.full(len(rows), terminal, dtype=np.int32)
    ptr = np.concatenate(([0], np.cumsum(live))).astype(np.int64)
    n = dfa.n_states
    return Product(n, dfa.start, dfa.dead, dfa.byte_class, dfa.trans, ptr, term, rows.astype(np.int32),
                   _bits(rows, term, dfa.accept[rows, 0], n, words), packed_rows(rows, term, n, words))


def _words(top: int) -> int:
    """uint64 words per bit row over terminal ids 0..top."""
    return -(-(top + 1) // 64)


def _bits(rows: np.ndarray, terms: np.ndarray, flags: np.ndarray, n_states: int, words: int) -> np.ndarray:
    """Bit rows over terminal ids: row rows[i] has bit terms[i] where flags[i] (sorted as `packed_rows` needs)."""
    return packed_rows(rows[flags], terms[flags], n_states, words)


def packed_rows(rows: np.ndarray, terms: np.ndarray, n_states: int, words: int) -> np.ndarray:
    """uint64 [n_states, words] with bit terms[i] of row rows[i] set (pairs sorted by row, then term; none twice).

    The layout of `Product.accept_bits`; built in one pass over the pairs, no bool matrix.
    """
    out = np.zeros((n_states, words), dtype="<u8")
    if len(rows):
        terms = np.asarray(terms, dtype=np.int64)
        keys = np.asarray(rows, dtype=np.int64) * words + (terms >> 6)
        first = np.empty(len(keys), dtype=bool)  # where a run of one key (a row's word) starts
        first[0] = True
        np.not_equal(keys[1:], keys[:-1], out=first[1:])
        starts = np.flatnonzero(first)
        values = np.left_shift(np.uint64(1), (terms & 63).astype(np.uint64))
        out.reshape(-1)[keys[starts]] = np.bitwise_or.reduceat(values, starts)
    return out


# The rows a `SharedProduct` keeps for its lazy terminals' states (at most max_states), given in the order states
# are first reached. Every row counts in a walk's per-state memo (a byte a row, zeroed per walk), made or not:
# 262,144 rows a lazy terminal took sp_372's mean step from ~170 to ~290-650 us.
LAZY_SINGLE_ROWS = 1 << 16
# The rows of a `SharedProduct` below its terminals' own states.
START_ROW = 0  # no state: a candidate set's START is read from its own start row (`SharedProduct.start`)
DEAD = 1  # nothing live; every transition from it (and from START_ROW) leads back to it
FIRST_SINGLE = 2

UNKNOWN = 2  # a `live_flags` entry not worked out yet (0: nothing live, 1: something live)


def _reserved(shape: tuple[int, ...], dtype: np.dtype | type) -> np.ndarray:
    """Zeros on an anonymous memory map: its 4 KiB pages are mapped (zeroed by the system) where first written.
    `numpy.zeros` of a large array asks for transparent huge pages (madvise), and a shared product's first write
    into each 2 MiB of its reserve then zeroed all of it: 40% of the CPU of a new lexer for sp_73 with its strings
    lazy (its compile and first document; docs/profile.md, "Thirty-seventh profile")."""
    count = int(np.prod(shape))
    private = {"flags": mmap.MAP_PRIVATE} if hasattr(mmap, "MAP_PRIVATE") else {}  # Unix (Windows has no flags)
    memory = mmap.mmap(-1, max(count * np.dtype(dtype).itemsize, 1), **private)
    if hasattr(mmap, "MADV_NOHUGEPAGE"):  # nor under the system's "always"
        memory.madvise(mmap.MADV_NOHUGEPAGE)
    return np.frombuffer(memory, dtype=dtype, count=count).reshape(shape)


class _NoStates:
    """A lazy terminal in `_Tables`: no eager states (its singles are rows of its own, see `SharedProduct`)."""

    n_states = 0
    accept = live = np.zeros((0, 1), dtype=bool)


class SharedProduct:
    """One lexer's product table, grown as candidate sets are met and shared by all of them.

    Rows (state ids), over the lexer-wide byte classes:

    * `START_ROW` and `DEAD` (both lead only to `DEAD`);
    * the singles: terminal j's own DFA state s is row FIRST_SINGLE + offsets[j] + s (one
      terminal live: from there the product runs j's own DFA), its transitions filled
      the first time a candidate set holds j, a successor where j is no longer live sent
      to `DEAD`;
    * the lazy terminals' singles (their DFAs `LazyDFA`s): rows [`lazy_lo`, `mixed_base`),
      `LAZY_SINGLE_ROWS` of them, given to their states in the order first reached, each
      made by the filler (`LazyRows`) when a step first reaches its state, its entries
      `UNFILLED` until read (the Grower, the walk kernel and `fill` fill them); such a row
      has no components in the CSR (`components`): `key` asks the filler for its terminal
      and state;
    * the mixed states (two or more terminals live), from `mixed_base` on, interned by
      content (their live singles) by the compiled `Grower`: a mixed state's successors
      depend on its components only, so one met from two candidate sets is one row.

    A candidate set's DFA is the states reachable from its start row (`start`: its
    candidates' live start states, as one state). Rows are only ever appended, never
    changed, so the tables of a set made earlier stay valid as the table grows.

    Bound: the arrays are reserved up front for the singles and `max_states` mixed states
    ((singles + max_states) x classes x 4 bytes of transitions, and two bit rows per state),
    zeroed lazily by the system, so only rows written take memory; a candidate set whose
    exploration would need a mixed state past them raises `LimitExceeded`, and so does every
    later new set. `start` also raises `LimitExceeded` for a candidate set whose own DFA
    exceeds `max_states`, as `combine` does.
    """

    def __init__(self, dfas: Sequence[LexerDFA | LazyDFA], max_states: int) -> None:
        self.max_states = max_states
        self._dfas = dfas
        self.byte_class, self._rep = classes([d.byte_class for d in dfas])  # as `combine` numbers them
        self.cls: tuple[int, ...] = tuple(self.byte_class.tolist())  # as the byte loop reads them
        self.lazy_terms = [j for j, d in enumerate(dfas) if isinstance(d, LazyDFA)]
        self._tables = tables = _Tables([_NoStates if isinstance(d, LazyDFA) else d for d in dfas])
        # The lazy terminals' rows (reserved, written only when made); a state past them raises LimitExceeded.
        self.lazy_lo = FIRST_SINGLE + int(tables.offsets[-1])
        self.hi = self.mixed_base = self.lazy_lo + (min(max_states, LAZY_SINGLE_ROWS) if self.lazy_terms else 0)
        capacity = self.mixed_base + max_states
        self.trans = _reserved((capacity, len(self._rep)), np.int32)
        self.trans[[START_ROW, DEAD]] = DEAD
        self.words = _words(len(dfas) - 1)
        self.live_bits = _reserved((capacity, self.words), np.dtype("<u8"))
        self.accept_bits = _reserved((capacity, self.words), np.dtype("<u8"))
        singles = np.flatnonzero(tables.live)
        term = tables.owner[singles].astype(np.int32)
        rows = FIRST_SINGLE + singles
        # A live single's rows hold its one terminal's bit: written in place, no [hi, words] temporary.
        bit = np.left_shift(np.uint64(1), (term & 63).astype(np.uint64))
        self.live_bits[rows, term >> 6] = bit
        accepts = tables.accept[singles]
        self.accept_bits[rows[accepts], term[accepts] >> 6] = bit[accepts]
        # Components (CSR over rows, with room to append): a live single is its own one.
        self._ptr = _reserved((capacity + 1,), np.int64)
        self._ptr[FIRST_SINGLE + 1 : self.lazy_lo + 1] = np.cumsum(tables.live)
        self._ptr[self.lazy_lo + 1 : self.hi + 1] = self._ptr[self.lazy_lo]  # lazy singles: none in the CSR
        self._term, self._state = term, (singles - tables.offsets[term]).astype(np.int32)
        self._n_comps = len(term)
        # Every eager single's terminal and own state, by row - FIRST_SINGLE (what `describe` reads).
        self._single_term = tables.owner.astype(np.int32)
        self._single_state = (np.arange(len(tables.owner)) - tables.offsets[tables.owner]).astype(np.int32)
        # Per terminal, as Python values (`start` reads a set's terminals one by one): its start's row, or None
        # where it is not live (lazy terminals: their own start, `LazyRows.start`), and its states.
        self._start_rows = [None if isinstance(d, LazyDFA) or not tables.live[int(tables.offsets[j]) + d.start]
                            else FIRST_SINGLE + int(tables.offsets[j]) + d.start for j, d in enumerate(dfas)]
        self._own_states = tables.n_states.tolist()
        self._filled = [False] * len(dfas)
        # Each state's accept row (an index into `accept_rows`, the distinct accept masks), -1: none; `_row_ids`
        # numbers the masks by their bytes (little-endian words, as a row of `accept_bits` holds them). Written
        # below `hi` here (a lazy single's when made), a mixed row's when it is added (`describe`).
        self.accept_row = _reserved((capacity,), np.int32)
        self.accept_row[: self.hi] = -1
        self.accept_rows: list[int] = []
        self._row_ids: dict[bytes, int] = {}
        accepting = singles[tables.accept[singles]]
        for j in [*distinct(tables.owner[accepting]).tolist(), *self.lazy_terms]:
            self._mask_id(1 << j)
        self.accept_row[FIRST_SINGLE + accepting] = [self._mask_id(1 << j) for j in tables.owner[accepting].tolist()]
        self._lazy = None if not self.lazy_terms else LazyRows(
            self.trans, self._rep, self.live_bits, self.accept_bits, self.accept_row, DEAD, self.lazy_lo,
            self.mixed_base, [(dfas[j].core, j, self._mask_id(1 << j), dfas[j].max_states) for j in self.lazy_terms])
        self._lazy_index = {j: i for i, j in enumerate(self.lazy_terms)}  # position in the filler's `terms`
        self._row_bits = np.zeros((0, self.words), dtype="<u8")
        self.n_states = self.hi
        self.rows: dict[int, tuple[int, ...]] = {}  # the byte loop's rows (`LexerTables.row`), never START_ROW's
        self._keys: dict[int, tuple] = {}
        self.bits_at: dict[int, int] = {}  # `LexerTables.live_at`/`accept_at`'s memo, shared by every set's view
        # Per row, whether something is live there (`UNKNOWN` until a view's `live_flag` works it out), shared by
        # every set's view: one byte a row here, not one a row per view (o79409: 183 views of 80k rows).
        self.live_flags = bytearray([UNKNOWN]) * self.n_states
        # The token index's plain-body proofs over every row (reserved, pages written where proven), per trie
        # depth: a row's liveness is its own, the same in every set's view, so the views share them
        # (`pda.index.token_index._WalkTables.proof`; sp_372's first document searched 37,717 pairs, 24,604 so).
        # One per depth walked under: a vocabulary's trie each.
        self.walk_proofs: dict[int, np.ndarray] = {}
        self._grower = Grower(self.trans, FIRST_SINGLE, self.hi, DEAD, self.mixed_base)
        self._lock = threading.Lock()

    def start(self, terminals: Sequence[int]) -> int:
        """The start row of the candidate set `terminals` (ascending), explored; its DFA is the rows reached from it.

        Raises `LimitExceeded` when that DFA has more than `max_states` states, or the table is full.
        """
        filled, start_rows, lazy_index = self._filled, self._start_rows, self._lazy_index
        with self._lock:
            starts = []
            for j in terminals:
                i = lazy_index.get(j)
                if i is not None:
                    s = self._lazy.start(i)
                    if s != DEAD:
                        starts.append(s)
                    continue
                if not filled[j]:
                    self._fill(j)
                s = start_rows[j]
                if s is not None:
                    starts.append(s)
            if len(starts) < 2:
                return starts[0] if starts else DEAD
            starts.sort()  # lazy singles' rows follow the eager ones'
            grown = self._grower.grow(np.array(starts, dtype=np.int32), self._lazy)
            if grown is None:
                raise LimitExceeded(f"the lexer's shared product DFA exceeds max_states={self.max_states} mixed states")
            self._append(grown)
            # With a lazy terminal the set's DFA is not known whole: each lazy DFA bounds its own states.
            own = self._own_states
            bound = sum(own[j] for j in terminals) + self.n_states - self.mixed_base
            if (bound > self.max_states and not any(j in self._lazy_index for j in terminals)
                    and len(self._reachable(grown.start)) > self.max_states):
                raise LimitExceeded(f"combined lexer DFA of {len(terminals)} terminals exceeds "
                                    f"max_states={self.max_states}")
            return grown.start

    def _fill(self, j: int) -> None:
        """Terminal j's single rows: its own DFA over the lexer-wide classes, in row ids (not live: `DEAD`)."""
        dfa, offset = self._dfas[j], FIRST_SINGLE + int(self._tables.offsets[j])
        fill_rows(self.trans[offset : offset + dfa.n_states], dfa.trans, dfa.byte_class[self._rep], dfa.live[:, 0],
                  offset, DEAD)
        self._filled[j] = True

    def _append(self, grown: Grown) -> None:
        """The bits, components and accept rows of the states `grown` added (their transitions are written)."""
        first, m = grown.first, len(grown.ptr) - 1
        if m == 0:
            return
        term, state = describe(self.live_bits, self.accept_bits, self.accept_row, first, grown.ptr, grown.ids,
                               FIRST_SINGLE, self._single_term, self._single_state, self._lazy, self._row_ids,
                               self.accept_rows)
        end = first + m
        self._ptr[first + 1 : end + 1] = self._ptr[first] + grown.ptr[1:]
        need = self._n_comps + len(term)
        if need > len(self._term):  # room for the new components, doubling
            size = max(need, 2 * len(self._term))
            self._term = np.resize(self._term, size)
            self._state = np.resize(self._state, size)
        self._term[self._n_comps : need] = term
        self._state[self._n_comps : need] = state
        self._n_comps = need
        self.live_flags.extend(bytes([UNKNOWN]) * m)
        self.n_states = end

    def _mask_id(self, mask: int) -> int:
        """The id of an accept mask in `accept_rows`, appended if new (`describe` interns a grow's the same way)."""
        key = mask.to_bytes(8 * self.words, "little")
        found = self._row_ids.get(key)
        if found is None:
            found = self._row_ids[key] = len(self.accept_rows)
            self.accept_rows.append(mask)
        return found

    def is_lazy(self, q: int) -> bool:
        """Whether row q is a lazy terminal's single (whose entries may be `UNFILLED`)."""
        return self.lazy_lo <= q < self.mixed_base

    def fill(self, q: int, cls: int) -> int:
        """Entry (q, cls) of lazy single row q, filled if `UNFILLED` (the byte loop's read)."""
        return self._lazy.fill(q, cls)

    def lazy_filler(self) -> LazyRows | None:
        """The filler of the lazy singles (what the walk kernel is handed), or None without a lazy terminal."""
        return self._lazy

    def _reachable(self, start: int) -> np.ndarray:
        """The live states reachable from row `start` (the set's DFA but its dead state)."""
        dead = np.zeros(self.n_states, dtype=bool)
        dead[[START_ROW, DEAD]] = True
        return reachable(self.trans[: self.n_states], dead, np.array([start], dtype=np.int64))

    def row_bits(self) -> np.ndarray:
        """The distinct accept rows as packed words (`accept_rows`' layout), rebuilt when rows were added."""
        if len(self._row_bits) != len(self.accept_rows):
            self._row_bits = np.frombuffer(b"".join(r.to_bytes(8 * self.words, "little") for r in self.accept_rows),
                                           dtype="<u8").reshape(len(self.accept_rows), self.words)
        return self._row_bits

    def components(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The live components of rows below n as CSR (ptr, terminal ids, own states): views, never copied."""
        end = int(self._ptr[n])
        return self._ptr[: n + 1], self._term[:end], self._state[:end]

    def key(self, q: int) -> tuple:
        """Row q's live terminals with their own DFA states (memoised)."""
        found = self._keys.get(q)
        if found is None and self.is_lazy(q):
            found = self._keys[q] = (self._lazy.owner(q),)
        elif found is None:
            lo, hi = self._ptr[q : q + 2].tolist()
            found = self._keys[q] = tuple(zip(self._term[lo:hi].tolist(), self._state[lo:hi].tolist()))
        return found
