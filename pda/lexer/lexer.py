"""The contextual, greedy lexer's tables: per candidate set, the product DFA of its terminals.

The candidates for a lexeme are the terminals the parser can accept next plus
the ignored ones. `Lexer.tables(candidates)` is the product DFA of exactly those
terminals (`LexerTables`, made lazily per candidate set and cached), and
`Lexer.best` picks the highest-priority terminals among those a lexeme matches. A
lazy terminal's DFA ends at its first match.

A candidate set's tables are always a view of one table per lexer, never a copy:

* of the all-terminal product DFA when it fits (`all_terminals_limit`): the
  same states for every set, seen through the set's candidates (`restrict`);
* otherwise of the lexer's `SharedProduct` (`SharedTables`), which grows as sets are
  met: every terminal's own states, numbered once, and the states where several
  terminals are live, interned by content, so a state reached from two sets is one
  row. A set's DFA is the rows reached from its own start row.

START (0) means "no lexeme in progress" in every set's DFA, and no transition leads
to it (a lexeme that returns to a DFA's start is in another state). A view of the
shared table reads its start row for START (`LexerTables.resolve`: the row of the
arrays a lexer state reads); every other state is its own row.

Under the basic lexer mode (`GrammarIR.lexer == "basic"`) the lexeme is cut and
typed by all of the grammar's terminals, not just the candidates: a byte that
some terminal can take extends it, and at its end its type is the top-priority
terminals among all that match it; the parser gets those that are candidates,
and the text is refused when there are none. A lexeme in progress stays live
only while it can still end typed as a candidate, so refusal comes as early as
it can. Both modes run the same loop over `LexerTables`; they differ only in
the tables' `accept`/`live` rows and `extends` (see `LexerTables.basic`).

This package knows nothing of the parser: `pda.scanner` runs these tables
against parser nodes (the byte loop, commits, the end of the text), and the
token index walks them over the vocabulary.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator, Sequence
from typing import NamedTuple

import numpy as np

from pda import cache
from pda.arrays import distinct
from pda.bits import iter_bits
from pda.errors import GrammarError, LimitExceeded
from pda.grammar.ir import BASIC, GrammarIR
from pda.lexer.terminals import terminal_dfa
from pda.lru import budget_cache, register_budget
from pda.regex import release_parses
from pda.kernels.product import UNFILLED
from pda.regex.dfa import DEFAULT_MAX_DFA_STATES, LexerDFA
from pda.regex.lazy import LazyDFA
from pda.regex.product import UNKNOWN, Product, SharedProduct, combine, packed_rows

START = 0  # the state of every candidate set's DFA where no lexeme is in progress
# Above this size the all-terminal DFA is not built; candidate sets are grown in the lexer's shared product.
ALL_TERMINALS_MAX_STATES = 20_000
# Nor above this size unless its terminals' own DFAs are as big (`all_terminals_limit`). An explore costs ~1-2.5 us
# a state (o72527's 14,918 in ~12 ms, o35155's first 20,000 in ~40 ms); a floor of 3,000 sent o21840 and o41081
# (~4,000 states from 2,700 of their own) to the shared product, steps 2.1 -> 4.8 ms each.
ALL_TERMINALS_MIN_LIMIT = 5_000
# An all-terminal product whose build took at least this much of its thread's CPU time is also written to the
# disk cache (reading one back costs ~0.1-0.6 ms; see `_all_terminal_dfa`).
DISK_MIN_SECONDS = 0.002
# Nor is a product of terminals with fewer own states than this looked up or timed: it builds in well under
# `DISK_MIN_SECONDS` (the JSON Schema sample's products below 1,000 own states: 8-250 us), and the lookup
# (the folder's listing, its environment variables) and the CPU clocks cost ~50 us of a small schema's compile
# in a bench-like process, several times the build.
DISK_MIN_OWN_STATES = 1_000
# Hex digits of the product's key that tag its disk entry (`cache.tags`: a miss decided from the folder's listing).
PRODUCT_TAG_CHARS = 16


def _word_mask(value: int, words: int) -> np.ndarray:
    """A bitmask over terminals as packed words (`Product.live_bits`' layout)."""
    return np.frombuffer(value.to_bytes(8 * words, "little"), dtype="<u8")


def _int_rows(bits: np.ndarray) -> tuple[int, ...]:
    """Each row of `_packed` words as the Python int bitmask it spells."""
    return tuple(int.from_bytes(row.tobytes(), "little") for row in bits)


class TerminalComponents(NamedTuple):
    """A candidate set's DFA as its terminals' own DFAs run in lockstep (`Lexer.components`).

    Per state q of the set's DFA, the terminals live at q are `terminals[ptr[q]:ptr[q + 1]]`
    (the grammar's ids, ascending), each in its own DFA's state `states[...]` (CSR, as
    `Product` keeps them: a state has a few live terminals, often one).
    """

    ptr: np.ndarray
    terminals: np.ndarray
    states: np.ndarray

    def column(self, j: int) -> np.ndarray:
        """Per state, terminal j's own state where j is live, -1 elsewhere."""
        column = np.full(len(self.ptr) - 1, -1, dtype=np.int32)
        entries = np.flatnonzero(self.terminals == j)
        column[np.searchsorted(self.ptr, entries, side="right") - 1] = self.states[entries]
        return column

    def alone(self, candidates: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The states where exactly one of `candidates` (a bitmask) is live: (states, that terminal, its own state)."""
        top = int(self.terminals.max(initial=-1)) + 1
        member = np.zeros(top, dtype=bool)
        member[list(iter_bits(candidates & ((1 << top) - 1)))] = True
        rows = np.repeat(np.arange(len(self.ptr) - 1), np.diff(self.ptr))
        chosen = member[self.terminals]
        one = chosen & (np.bincount(rows[chosen], minlength=len(self.ptr) - 1) == 1)[rows]
        return rows[one], self.terminals[one], self.states[one]


class LexerTables:
    """The DFA of one candidate set, in the forms the byte loop and the token index need.

    `row(q)[cls[byte]]` is the byte loop's transition: rows are tuples of Python ints (its
    fastest form; untracked by the garbage collector after one pass), each built when first
    read and kept in `rows` (shared by every view). A candidate set's own DFA has thousands
    of states and the byte loop meets a few: building every row up front cost more than
    the lexing (10 ms for 5,000 states of 20 classes), and numpy rows ~0.7 us a byte more.
    `accept[q]`/`live[q]` are bitmasks over the grammar's terminal indices;
    `live_flags[q]` is `live[q] != 0` (what the byte loop tests; `UNKNOWN` until `live_flag(q)`
    works it out, but in the basic mode's tables);
    `extends[q]` says whether a lexeme may grow into q at all: where it does
    but q is not `live`, the text is refused rather than the lexeme ended
    (only in the basic mode, where it is a tuple of bools; contextually `extends` is `live_flags`).
    `key(q)` names q's future independently of the candidate set (the states of
    the terminals still live at q, read off the product's components, `_components`),
    so index entries can be shared across sets. `start` is the row of the arrays
    START reads (`resolve`): 0 here and in restricted views, the set's start row in a
    view of a shared table (`SharedTables`).

    A view restricted to a candidate set (`restrict`) shares the arrays and the
    per-state bits, packed 64 terminals a word (`_live_bits`, `_accept_bits`), and
    builds its rows only when first read: its `live_flags` state by state,
    its `accept`/`live` bitmasks (a Python int per state) only if asked for. A JSON
    Schema meets hundreds of candidate sets, and most are only asked `key(q)` for
    a state or two (`live_at`).
    """

    __slots__ = (
        "candidates", "n_states", "trans", "byte_class", "rows", "cls", "_accept", "_live_rows", "_live_flags",
        "_extends", "_base", "_live_bits", "_accept_bits", "_accept_classes", "_components", "_keys", "_bits_at",
        "start",
    )

    def __init__(self, candidates: int, product: Product) -> None:
        """The tables of `product`, whose bits and components are over the grammar's terminal ids."""
        trans = np.asarray(product.trans, dtype=np.int32)
        accept_bits, live_bits = product.accept_bits, product.live_bits
        ptr, terms, states = product.comp_ptr, product.comp_term, product.comp_state
        # START must mean "no lexeme yet": if a lexeme can return to it, give it a copy. (START is the least state
        # id: a min reads the table once, where `(trans == START).any()` also wrote a bool per entry, ~4x slower.)
        if trans.size and int(trans.min()) == START:
            copy = trans.shape[0]
            trans = np.where(trans == START, copy, trans)  # the copy's own row too: it may return to itself
            trans = np.vstack([trans, trans[START : START + 1]])
            accept_bits = np.vstack([accept_bits, accept_bits[START : START + 1]])
            live_bits = np.vstack([live_bits, live_bits[START : START + 1]])
            lo, hi = ptr[START : START + 2].tolist()
            ptr = np.append(ptr, ptr[-1] + hi - lo)
            terms, states = np.concatenate([terms, terms[lo:hi]]), np.concatenate([states, states[lo:hi]])
        self.candidates = candidates
        self.start = START
        self.n_states = trans.shape[0]
        self.trans = trans
        self.byte_class = np.asarray(product.byte_class, dtype=np.int32)
        # The byte loop's rows, each a tuple of ints built when first read (`row`), shared by every view.
        self.rows: dict[int, tuple[int, ...]] = {}
        self.cls: tuple[int, ...] = tuple(self.byte_class.tolist())
        self._accept: tuple[int, ...] | None = None  # rows built on first read (`accept`, `live`)
        self._live_rows: tuple[int, ...] | None = None
        # Worked out state by state as read (`live_flags`): the all-terminal tables are read through views
        # (`restrict`), which keep their own; a pass over every state cost ~20 us of a small schema's compile.
        self._live_flags: Sequence[int] | None = None
        self._extends: tuple | None = None  # None: `extends` is `live_flags`
        self._base: LexerTables | None = None
        self._live_bits, self._accept_bits = live_bits, accept_bits
        self._accept_classes: tuple | None = None  # `_accept_rows`
        self._components: TerminalComponents | None = TerminalComponents(ptr, terms, states)
        self._keys: dict[int, tuple] = {}
        # `live_at`/`accept_at` per state read (the byte loop and the index's keys read a few states of the
        # all-terminal DFA through every view, ~1.5 us each; a view's, masked, are its own).
        self._bits_at: dict[int, int] = {}

    def resolve(self, q: int) -> int:
        """The row of the arrays (`trans`, the bits, the components) that lexer state q reads: q itself, but
        for START in a view of a shared table (`SharedTables`), which reads its start row."""
        return self.start if q == START else q

    def own_states(self) -> int:
        """The states of the candidate set's own minimal DFA (what it alone would build; `pda inspect` reports
        it): START, the live states reachable from it told apart by their candidates' own states (a view of
        the all-terminal DFA tells apart states that differ only in other terminals), and one dead state."""
        if not self.live_flag(START):  # nothing can be lexed: START is the dead state
            return 1
        seen, stack = {START}, [START]
        while stack:
            for r in set(self.row(stack.pop())):
                if r not in seen and self.live_flag(r):
                    seen.add(r)
                    stack.append(r)
        base, candidates = self._base, self.candidates
        if base is None or base._components is None:
            return len(seen) + 1
        return len({tuple((j, s) for j, s in base.key(q) if candidates >> j & 1) for q in seen - {START}}) + 2

    def live_of(self, states: np.ndarray) -> np.ndarray:
        """Whether some candidate is live at each of `states` (rows other than START), as a bool array."""
        return self._flags(self._live_bits[states])

    def row(self, q: int) -> tuple[int, ...]:
        """State q's transitions by byte class (built on first read, then kept in `rows`)."""
        found = self.rows.get(q)
        if found is None:
            found = self.rows[q] = tuple(self.trans[q].tolist())
        return found

    @property
    def accept(self) -> tuple[int, ...]:
        rows = self._accept
        if rows is None:  # read for the first time: from the packed bits, or the base's rows masked
            base, candidates = self._base, self.candidates
            rows = _int_rows(self._accept_bits) if base is None else tuple(a & candidates for a in base.accept)
            self._accept = rows
        return rows

    @property
    def live(self) -> tuple[int, ...]:
        rows = self._live_rows
        if rows is None:  # read for the first time: from the packed bits, or the base's rows masked
            base, candidates = self._base, self.candidates
            rows = _int_rows(self._live_bits) if base is None else tuple(x & candidates for x in base.live)
            self._live_rows = rows
        return rows

    @property
    def live_flags(self) -> Sequence[int]:
        """Per state, whether some candidate is live there; a restricted view's entries are `UNKNOWN` until
        `live_flag` works them out (the byte loop meets a few states of each view: a pass over
        every state of the all-terminal DFA per view was 13% of a JSON Schema replay)."""
        flags = self._live_flags
        if flags is None:  # read for the first time
            flags = self._live_flags = bytearray([UNKNOWN]) * self.n_states
        return flags

    def live_flag(self, q: int) -> int:
        """`live_flags[q]`, worked out (and kept) where it is still `UNKNOWN`."""
        flags = self.live_flags
        flag = flags[q]
        if flag == UNKNOWN:
            flag = flags[q] = 1 if self.live_at(q) else 0
        return flag

    def live_array(self) -> np.ndarray:
        """Every state's live flag as a bool array (one vectorised pass)."""
        return self._flags(self._live_bits)

    @property
    def extends(self) -> Sequence:
        return self.live_flags if self._extends is None else self._extends

    def _flags(self, bits: np.ndarray) -> np.ndarray:
        """Per state, whether any candidate has its bit set in the packed rows `bits`."""
        return (bits & _word_mask(self.candidates, bits.shape[1])).any(axis=1)

    def accept_at(self, q: int) -> int:
        """`accept[q]`, without building a restricted view's rows (memoised: every commit asks it)."""
        rows = self._accept
        if rows is not None:
            return rows[q]
        found = self._bits_at.get(~q)  # accept rows under ~q, live rows under q: one memo
        if found is None:
            if self._base is None:
                found = int.from_bytes(self._accept_bits[q].tobytes(), "little")
            else:
                found = self._base.accept_at(q) & self.candidates
            self._bits_at[~q] = found
        return found

    def live_at(self, q: int) -> int:
        """`live[q]`, without building a restricted view's rows."""
        rows = self._live_rows
        if rows is not None:
            return rows[q]
        if self._base is None:
            found = self._bits_at.get(q)
            if found is None:
                found = self._bits_at[q] = int.from_bytes(self._live_bits[q].tobytes(), "little")
            return found
        return self._base.live_at(q) & self.candidates

    def basic(self, priority: list[int]) -> "LexerTables":
        """These all-terminal tables under the basic mode: rows typed by all terminals.

        `accept[q]` keeps only the top-priority terminals matching at q, and
        `live[q]` holds the terminals that some continuation from q ends as, so
        a view restricted to candidates is live exactly while the lexeme can
        still end typed as a candidate. `extends` is plain liveness.
        """
        n, words = self.n_states, self._accept_bits.shape[1]
        # The accepting components, state by state: the live ones whose accept bit is set.
        ptr, terms, _ = self._components
        rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))
        accepts = (self._accept_bits[rows, terms >> 6] >> (terms & 63).astype(np.uint64)) & np.uint64(1) == 1
        rows, terms = rows[accepts], terms[accepts]
        ranks = np.asarray(priority, dtype=np.int64)[terms]
        top = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
        if len(rows):
            starts = np.flatnonzero(np.diff(rows, prepend=-1))
            top[rows[starts]] = np.maximum.reduceat(ranks, starts)
        typed = ranks == top[rows]
        typed_bits = packed_rows(rows[typed], terms[typed], n, words)
        # Ends reachable from each state, as bytes of packed words: propagated backwards over
        # the distinct edges, each round only from the states whose set grew in the last one.
        reach = typed_bits.copy().view(np.uint8)
        moves = self.trans[:, distinct(self.byte_class)].astype(np.int64)
        pairs = distinct(np.arange(n, dtype=np.int64)[:, None] * n + moves)
        src, dst = pairs // n, pairs % n
        src, dst = src[src != dst], dst[src != dst]
        grew = reach.any(axis=1)
        while grew.any():
            sel = grew[dst]
            s, d = src[sel], dst[sel]
            starts = np.flatnonzero(np.diff(s, prepend=-1))
            rows = s[starts]
            merged = reach[rows] | np.bitwise_or.reduceat(reach[d], starts, axis=0)
            changed = (merged != reach[rows]).any(axis=1)
            reach[rows] = merged
            grew = np.zeros(n, dtype=bool)
            grew[rows[changed]] = True
        view = self._view(self.candidates, None)
        view._live_bits = reach.view("<u8")
        view._accept_bits = typed_bits
        view._live_flags = tuple(reach.any(axis=1).tolist())
        view._extends = tuple(self.live_array().tolist())
        return view

    def restrict(self, candidates: int) -> "LexerTables":
        """This DFA (built for all terminals) seen through a smaller candidate set: shared arrays, rows on demand."""
        view = self._view(candidates, self)
        view._live_bits, view._accept_bits = self._live_bits, self._accept_bits
        view._extends = self._extends
        return view

    def _view(self, candidates: int, base: "LexerTables | None") -> "LexerTables":
        """A new table over these arrays for `candidates`, its rows unset (built on first read from `base`)."""
        view = LexerTables.__new__(LexerTables)
        view.candidates = candidates
        view.start = START
        view.n_states, view.trans, view.byte_class, view.rows, view.cls = (
            self.n_states, self.trans, self.byte_class, self.rows, self.cls
        )
        view._accept = view._live_rows = view._live_flags = view._accept_classes = None
        view._base = base
        view._components = None
        view._keys = {}
        view._bits_at = {}
        return view

    def state_flags(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int], np.ndarray]:
        """`live` and `extends` as bool arrays over the states, the states that accept, their distinct
        `accept` masks, and which of those each accepting state has (`accept[ends[i]] == masks[which[i]]`).

        Read off the packed bits in one pass (liveness) and off `accept_classes` (acceptance: a
        few distinct rows, masked here), so no per-state masks are built.
        """
        live = self.live_array()
        extends = live if self._extends is None else np.asarray(self._extends, dtype=bool)
        states, rows, row_of = self.accept_classes()
        candidates = self.candidates
        ids: dict[int, int] = {}
        per_row = np.array([ids.setdefault(r & candidates, len(ids)) if r & candidates else -1 for r in rows],
                           dtype=np.int64)
        which = per_row[row_of]
        kept = which >= 0
        return live, extends, states[kept], list(ids), which[kept]

    def accept_classes(self) -> tuple[np.ndarray, list[int], np.ndarray]:
        """The states that accept some terminal (of any candidate set), the distinct accept rows
        there (ints over every column) and which row each such state has. Computed once for the
        packed bits and shared by every view of them: a grammar meets hundreds of candidate sets.
        """
        return self._accept_rows()[:3]

    def _accept_rows(self) -> tuple[np.ndarray, list[int], np.ndarray, np.ndarray, np.ndarray]:
        """`accept_classes`, with each state's row (-1: none) and the distinct rows as packed words;
        memoised on the tables that own the bits (a view's base, when the view shares them)."""
        base = self._base
        if base is not None and base._accept_bits is self._accept_bits:
            return base._accept_rows()
        found = self._accept_classes
        if found is None:
            bits = self._accept_bits
            states = np.flatnonzero(bits.any(axis=1))
            words = bits.shape[1]
            masks, row_of = np.unique(np.ascontiguousarray(bits[states]).view(f"V{8 * words}").ravel(),
                                      return_inverse=True)
            rows = [int.from_bytes(row.tobytes(), "little") for row in masks]
            per_state = np.full(self.n_states, -1, dtype=np.int32)
            per_state[states] = row_of.ravel()
            row_bits = np.frombuffer(masks.tobytes(), dtype="<u8").reshape(len(rows), words)
            found = self._accept_classes = (states, rows, row_of.ravel(), per_state, row_bits)
        return found

    def packed_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[int]]:
        """What the walk kernel reads of these tables, without a pass over the states per candidate set.

        Returns the per-state live terminals as packed uint64 words (bit t % 64 of word
        t // 64 is terminal t), the candidates as such words, each state's accept row
        (int32, -1: accepts nothing), the distinct accept rows as such words and as ints
        over every column. All but the candidates' words are shared by every view of the
        same bits, never copied.
        """
        _, rows, _, per_state, row_bits = self._accept_rows()
        live_bits = self._live_bits
        return live_bits, _word_mask(self.candidates, live_bits.shape[1]), per_state, row_bits, rows

    def key(self, q: int) -> tuple:
        """The terminals live at q with their own DFA states (computed on demand).

        For a view of the all-terminal DFA, the state itself with its live terminals.
        """
        found = self._keys.get(q)
        if found is None and self._components is None:
            found = ("all", q, self.live_at(q))
            self._keys[q] = found
        elif found is None:
            ptr, terms, states = self._components
            lo, hi = ptr[q : q + 2].tolist()
            found = tuple(zip(terms[lo:hi].tolist(), states[lo:hi].tolist()))
            self._keys[q] = found
        return found


class LazyRow:
    """The byte loop's row of a lazy terminal's single (`SharedTables.row`): `row[c]` fills entry c on its
    first read (`SharedProduct.fill`), not the whole row: filling a row makes a state per class (a UTF-8
    lead byte's partial character among them), and a text of `.{50000}` made ~4 states a character so."""

    __slots__ = ("shared", "q", "values")

    def __init__(self, shared: SharedProduct, q: int, values: list[int]) -> None:
        self.shared, self.q, self.values = shared, q, values

    def __getitem__(self, c: int) -> int:
        found = self.values[c]
        if found == UNFILLED:
            found = self.values[c] = self.shared.fill(self.q, c)
        return found

    def __iter__(self) -> Iterator[int]:
        return (self[c] for c in range(len(self.values)))


class SharedTables(LexerTables):
    """A candidate set's DFA as a view of the lexer's `SharedProduct` (when no all-terminal DFA is kept).

    The view is the shared arrays (prefixes up to the rows that existed when it was made,
    which hold every state reachable from its start), its candidates' bit mask, and its
    start row `start`: lexer state START stands for that row. No transition leads to
    START (the shared table's row `START_ROW` is no state's successor), so reading
    `start` for START (`resolve`, `row`, `live_at`, `key`, the per-state arrays built
    here) gives exactly the set's own DFA; every other state is a row of the shared
    table, the same for every set that reaches it, so its byte-loop row, bits and key
    are built once for all sets. A mixed row's components are the candidates live there,
    so its bits need no masking; `packed_rows` hands the walk kernel the shared rows as
    they are, and the walk starts at `resolve(START)`.
    """

    __slots__ = ("shared", "_start_flag")

    def __init__(self, candidates: int, shared: SharedProduct, start: int) -> None:
        n = shared.n_states
        self.candidates, self.shared, self.start, self.n_states = candidates, shared, start, n
        self.trans = shared.trans[:n]
        self.byte_class, self.cls, self.rows = shared.byte_class, shared.cls, shared.rows
        self._accept = self._live_rows = self._extends = self._base = self._accept_classes = None
        self._live_bits, self._accept_bits = shared.live_bits[:n], shared.accept_bits[:n]
        self._components = TerminalComponents(*shared.components(n))
        self._keys = {}
        self._bits_at = shared.bits_at
        # The shared rows' flags, shared by every view (a row's live bits need no masking); START's is the view's
        # own, which `live_flag` answers (no transition reads `live_flags[START]`: no transition leads to START).
        self._live_flags = shared.live_flags
        self._start_flag = 1 if self.live_at(start) else 0

    def live_flag(self, q: int) -> int:
        """`live_flags[q]` (START: the start row's), worked out and kept in the shared flags where `UNKNOWN`."""
        return self._start_flag if q == START else LexerTables.live_flag(self, q)

    def row(self, q: int) -> tuple[int, ...] | LazyRow:
        """State q's transitions by byte class (START: the start row's), built on first read and kept in the
        shared `rows`, which never holds START's (a lazy single's as a `LazyRow`)."""
        if q == START:
            q = self.start
        found = self.rows.get(q)
        if found is None:
            found = tuple(self.trans[q].tolist())
            if UNFILLED in found:  # a lazy terminal's single: each entry filled when read, not the whole row
                found = LazyRow(self.shared, q, list(found))
            self.rows[q] = found
        return found

    def accept_at(self, q: int) -> int:
        return LexerTables.accept_at(self, self.start if q == START else q)

    def live_at(self, q: int) -> int:
        return LexerTables.live_at(self, self.start if q == START else q)

    def key(self, q: int) -> tuple:
        """The terminals live at q with their own DFA states (the shared table's memo)."""
        return self.shared.key(self.start if q == START else q)

    @property
    def accept(self) -> tuple[int, ...]:
        if self._accept is None:
            self._accept = self._with_start(_int_rows(self._accept_bits))
        return self._accept

    @property
    def live(self) -> tuple[int, ...]:
        if self._live_rows is None:
            self._live_rows = self._with_start(_int_rows(self._live_bits))
        return self._live_rows

    def _with_start(self, rows: Sequence) -> tuple:
        """Per-state values with START's taken from the start row."""
        return (rows[self.start], *rows[1:])

    def live_array(self) -> np.ndarray:
        live = self._flags(self._live_bits)
        live[START] = live[self.start]
        return live

    def _accept_rows(self) -> tuple[np.ndarray, list[int], np.ndarray, np.ndarray, np.ndarray]:
        """`LexerTables._accept_rows` read off the shared accept rows, START's from the start row (memoised)."""
        found = self._accept_classes
        if found is None:
            shared = self.shared
            per_state = shared.accept_row[: self.n_states].copy()
            per_state[START] = per_state[self.start]
            states = np.flatnonzero(per_state >= 0)
            found = self._accept_classes = (states, list(shared.accept_rows), per_state[states], per_state,
                                            shared.row_bits())
        return found

    def packed_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[int]]:
        """`LexerTables.packed_rows` of the shared rows as they are (row START_ROW is no state: a walk from START
        starts at `resolve(START)`); nothing is copied."""
        shared = self.shared
        return (self._live_bits, _word_mask(self.candidates, self._live_bits.shape[1]),
                shared.accept_row[: self.n_states], shared.row_bits(), list(shared.accept_rows))


# All-terminal products by their terminals' DFAs (values: the `Product`, or "too big"); bounded,
# as a server sees ever new grammars.
ALL_TERMINAL_DFAS_MAX_BYTES = 32 << 20
register_budget("all_terminal_dfas", ALL_TERMINAL_DFAS_MAX_BYTES)
_combined = budget_cache("all_terminal_dfas")


def _dfas_digest(dfas: list[LexerDFA | LazyDFA]) -> str:
    """A hash of the terminals' DFAs, which fixes every product state numbering: of their own `digest`s
    (`LexerDFA.digest`, its content hashed once per DFA object, which the terminal cache shares between
    grammars and the token index reads again; a `LazyDFA`'s is process-unique, its numbering being the order
    states were first reached: never on disk)."""
    return hashlib.sha256("".join(d.digest for d in dfas).encode()).hexdigest()


def all_terminals_limit(dfas: Sequence[LexerDFA], max_states: int) -> int:
    """The contextual mode's limit on the all-terminal DFA's states: a product larger than its terminals' own
    DFAs together is overlap blow-up (o35155's 42 terminals of 1,191 states: over 20,000), which the shared
    product grows only where candidate sets meet; the explore that finds so stops at this limit, not at
    `ALL_TERMINALS_MAX_STATES` (o35155 ~59 ms of its compile). Terminals whose own DFAs together exceed
    `ALL_TERMINALS_MAX_STATES` get 0, no explore: every product measured was at least 60% of its parts
    (315 JSONSchemaBench schemas, sqlite.lark, postgresql.lark), so such a product would end near the cap at
    best, and the one such schema of that sample (Snowplow---sp_372, 26,303) explored 20,000 states in ~40 ms
    before it was refused."""
    own = sum(d.n_states for d in dfas)
    if own > ALL_TERMINALS_MAX_STATES:
        return 0
    return min(max_states, ALL_TERMINALS_MAX_STATES, max(ALL_TERMINALS_MIN_LIMIT, own))


def product_key(dfas_digest: str, names: Sequence[str], limit: int) -> str:
    """The all-terminal product's key in memory and on disk (`_all_terminal_dfa`): a digest of the terminals' DFAs,
    names and limit. On disk the names are not spelled out: a key listing hundreds of them cost ~20 us to encode
    and hash again on every miss, and a new grammar's product always misses."""
    return hashlib.sha256(repr((dfas_digest, list(names), limit)).encode()).hexdigest()[:32]


def _all_terminal_dfa(dfas: list[LexerDFA], names: list[str], limit: int, dfas_digest: str) -> Product | None:
    """The product DFA of all terminals, or None above `limit` states.

    Cached in memory by the terminals' DFAs (`dfas_digest`): grammars are loaded many
    times (tests, several start symbols). On disk only when its terminals have at least
    `DISK_MIN_OWN_STATES` states and building it took at least
    `DISK_MIN_SECONDS` (a product of hundreds of terminals, PostgreSQL's, takes seconds):
    25 of the 30 products of the JSON Schema benchmark's sample take 0.3-1.6 ms, about
    what reading one back costs, and writing them woke the cache's writer thread in every
    compile, which then held the interpreter for ~0.45 ms of a 1.4 ms trivial schema's.
    The build is timed in thread CPU time, not wall time: on a loaded machine a 60 us
    product's build could span 2 ms of wall time, be written, and then be read back by
    every later process at ~0.6 ms, ten times its cost.
    """
    key = product_key(dfas_digest, names, limit)
    found = _combined.get(key)
    if found is not None:
        return None if found == "too big" else found
    # On disk under its key's first hex digits as the entry's tag: a new grammar's product is never there, and
    # the folder's listing says so without hashing the key (~25 us a compile). Only products of at least
    # `DISK_MIN_OWN_STATES` own states are looked up or written.
    on_disk = sum(d.n_states for d in dfas) >= DISK_MIN_OWN_STATES
    disk_key, tag = {"all_terminals": key}, key[:PRODUCT_TAG_CHARS]
    found = (cache.load("lexer", disk_key, lambda meta, arrays: _combined_from_arrays(meta, arrays, dfas), tag)
             if on_disk and tag in cache.tags("lexer") else None)
    if found is None:
        start = time.thread_time() if on_disk else 0.0
        try:
            if max((d.n_states for d in dfas), default=0) > limit:
                raise LimitExceeded(f"a terminal's DFA alone has more than {limit} states")
            found = combine(dfas, max_states=limit)
        except LimitExceeded:
            found = "too big"
        if on_disk and time.thread_time() - start >= DISK_MIN_SECONDS:
            cache.store("lexer", disk_key, *_combined_to_arrays(found), tag=tag)
    _combined.put(key, found, 0 if found == "too big" else found.nbytes)
    return None if found == "too big" else found


def _combined_to_arrays(found: Product | str) -> tuple[dict, dict[str, np.ndarray]]:
    """`_all_terminal_dfa`'s result for the disk cache: the product (its components as CSR), or "too big"."""
    if isinstance(found, str):
        return {"too_big": True}, {}
    meta, arrays = found.to_arrays()
    return {"too_big": False, "product": meta}, arrays


def _combined_from_arrays(meta: dict, arrays: dict[str, np.ndarray], dfas: list[LexerDFA]) -> Product | str:
    """The inverse of `_combined_to_arrays`, checked (`Product.from_arrays`: each component a live state of its
    terminal's DFA)."""
    if meta["too_big"] is True:
        return "too big"
    return Product.from_arrays(meta["product"], arrays, dfas)


class Lexer:
    """The grammar's terminals, their DFAs, priorities and ignore set; candidate-set tables on demand.

    Bitmasks over terminal ids: `ignore`, `lazy` (terminals whose DFA is a `LazyDFA`) and
    `live_at_start` (those whose DFA is live at its start).
    """

    def __init__(self, ir: GrammarIR, *, max_states: int = DEFAULT_MAX_DFA_STATES) -> None:
        """`max_states` (`Limits.max_lexer_states`) bounds every DFA.

        That is each terminal's, each candidate set's product and the basic mode's all-terminal DFA.
        """
        self.names = [t.name for t in ir.terminals]
        self.priority = [t.priority for t in ir.terminals]
        self.max_states = max_states
        # Lazy terminal DFAs are served by the shared product; the basic mode needs every state up front.
        self.dfas = [terminal_dfa(t, max_states=max_states, lazy=ir.lexer != BASIC) for t in ir.terminals]
        release_parses()  # the terminals' regex parses served lowering and these DFAs; nothing reads them again
        # One pass over the terminals' DFAs (one column each): which are lazy, which are live at their start (an
        # indenter-only terminal is not), which match the empty string; a DFA cached under a larger limit is
        # refused (a lazy DFA's states are made as they are reached: its Lazy core stops at max_states itself).
        self.lazy = self.live_at_start = 0
        empty = []
        for j, (t, d) in enumerate(zip(ir.terminals, self.dfas)):
            if isinstance(d, LazyDFA):
                self.lazy |= 1 << j
                accepts, live = d.accept(d.start), d.live(d.start)
            elif d.n_states > max_states:
                raise LimitExceeded(
                    f"the DFA of terminal {t.name} has {d.n_states} states, over Limits.max_lexer_states={max_states}"
                )
            else:
                accepts, live = d.accept[d.start, 0], d.live[d.start, 0]
            if accepts:
                empty.append(t.name)
            if live:
                self.live_at_start |= 1 << j
        self.has_lazy = self.lazy != 0
        self.ignore = 0
        if ir.ignore:
            index = {t.name: i for i, t in enumerate(ir.terminals)}
            for name in ir.ignore:
                if name not in index:
                    raise GrammarError(f"%ignore names an unknown terminal {name!r}")
                self.ignore |= 1 << index[name]
        if empty:
            raise GrammarError(
                "terminals that match the empty string cannot be lexed: " + ", ".join(empty), terminal=empty[0]
            )
        dfas_digest = _dfas_digest(self.dfas)
        # Identifies every state numbering: caches keyed by lexer states must include it.
        self.content_hash = hashlib.sha256(repr((dfas_digest, self.priority, self.ignore, ir.lexer)).encode()).hexdigest()
        self._tables: dict[int, LexerTables] = {}
        self._best: dict[int, int] = {}
        # One DFA for all terminals, viewed through each candidate set, when it is small;
        # otherwise (many overlapping terminals, e.g. JSON Schema strings) one table grown per set met.
        # The basic mode needs the all-terminal DFA, whatever its size.
        self.mode = ir.lexer
        self._all: LexerTables | None = None
        self._shared: SharedProduct | None = None  # made when the first candidate set needs it
        # Threads computing masks at once: two made their own shared products (a state of one then read in the
        # other: lazy rows not made there) and views of one set.
        self._shared_lock = threading.Lock()
        everything = (1 << len(self.dfas)) - 1
        limit = max_states if self.mode == BASIC else all_terminals_limit(self.dfas, max_states)
        # A lazy terminal's states are not all known: its candidate sets grow in the shared product.
        combined = None if self.has_lazy else _all_terminal_dfa(self.dfas, self.names, limit, dfas_digest)
        if combined is None and self.mode == BASIC:
            raise LimitExceeded(
                f"the basic lexer mode needs one DFA of all {len(self.dfas)} terminals, which exceeds {limit} states"
            )
        if combined is not None:
            self._all = LexerTables(everything, combined)
            if self.mode == BASIC:
                self._all = self._all.basic(self.priority)

    def tables(self, candidates: int) -> LexerTables:
        """The DFA of a candidate set (built once per set): a view of the all-terminal DFA when there is one,
        else of the lexer's shared product, grown by the set's start on its first call."""
        found = self._tables.get(candidates)
        if found is None and self._all is not None:
            found = self._all.restrict(candidates)
            self._tables[candidates] = found
        elif found is None:
            with self._shared_lock:  # one shared product, one view per set, whichever thread asks first
                found = self._tables.get(candidates)
                if found is None:
                    if self._shared is None:
                        self._shared = SharedProduct(self.dfas, self.max_states)
                    found = SharedTables(candidates, self._shared, self._shared.start(list(iter_bits(candidates))))
                    self._tables[candidates] = found
        return found

    def components(self, candidates: int) -> TerminalComponents:
        """The candidate set's DFA as its terminals' own DFAs (contextual mode: the basic tables keep none).

        A set seen through the all-terminal DFA gets that DFA's components, every live
        terminal of the grammar, candidate or not (shared arrays, not copied); a set with
        its own DFA gets its candidates'.
        """
        tables = self.tables(candidates)
        found = tables._components if tables._base is None else self._all._components
        if found is None:
            raise ValueError("the basic lexer mode keeps no per-terminal components")
        return found

    def could_end_as(self, q: int) -> int:
        """Basic mode: the terminals a lexeme in state q can still end typed as, candidates or not."""
        return self._all.live[q] if self._all is not None else 0

    def best(self, matched: int) -> int:
        """The highest-priority terminals among `matched` (a bitmask)."""
        best = self._best.get(matched)
        if best is None:
            top = max(self.priority[j] for j in iter_bits(matched))
            best = 0
            for j in iter_bits(matched):
                if self.priority[j] == top:
                    best |= 1 << j
            self._best[matched] = best
        return best
