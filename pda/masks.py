"""Serve-time masks: a step's allowed-token mask, composed from the token index and memoised on the parser node.

Hot path: `row_source` runs on every row a step fills (`Matcher.fill_bitmask` copies it
into the row itself, `pda.fill_bitmasks` for each of its rows), `step_mask` on every
other mask read, and `_compute_mask` on every cache miss of a step. Compile-time
work (the index's walks, the warm-up, the disk snapshot) is in `pda.compiler`.

The mask at (node, q) is the token index's classification at lexer state q
(independent of the parser's stack, cached in the index) plus, for each boundary
group, the tokens of its suffixes after `node.probe(terminals)`: the only work
that depends on the stack. With EOS added where the text can end, that is the
step's mask.

Invariants:
* `StepMasks` is the one owner of the mask memos; nothing else reads or writes
  them. On a parser node, `node.cache` is one flat dict keyed by ints, a memo's
  base plus the lexer state q (q < 2**STATE_BITS): under the owner's `_steps`
  base the step masks; under its `_texts` base the text masks of the states where
  the text can end (elsewhere the text mask is the step mask, EOS not being
  allowed there); under base 0 whether the text can end, which depends on node
  and q only and so is shared by every vocabulary the grammar is compiled for.
  Its keys and values are ints, bools, arrays and `ExtendedMask`s, none of which the
  garbage collector tracks, so it does not track the dict either. Per parser node's
  allowed terminals: the finite-set lookup's plain rows (`plain_rows`).
* A memoised mask is a packed int32 array or an `ExtendedMask` (a shared array and a
  few token ids: what the boundary groups added to the state's own mask, most
  masks); `pda.rows.copy_row` writes either into a row, and `step_mask`/`text_mask`
  give either as an array (a new one for an `ExtendedMask`).
* A memoised mask is shared (between states, matchers and threads): callers copy
  it and never write to it. Equal dense masks are stored once (keyed by their
  `fingerprint`, confirmed word for word): a mask is composed in a spare buffer,
  which is kept as the mask when it is new and dense, and goes back to the spares
  otherwise.
* Threads: every method here runs under the interpreter lock, so each dict read or
  write and each `_spare` pop or append is atomic. A composition owns the spare it
  popped until it keeps it or appends it back, so two threads composing at once use
  two buffers; two threads missing on the same (node, q) both compute it and store
  equal masks, one replacing the other (callers holding either still hold a correct
  one); `_last_kept`/`_unweighed` may then be off by a mask, which only shifts when
  `_recent` drops a node. Rows are copied without the lock (`pda.rows`) only from
  memoised masks and plain rows, which nothing writes to, each held by the writer until
  its copy ends.
* Parser nodes are interned weakly, so a node's masks die with the last matcher
  holding it; the nodes of the most recently computed masks (of every grammar) are
  kept alive for the next request, up to the `recent_masks` budget (their masks'
  bytes, and `RECENT_NODE_BYTES` each for the node).
"""

from __future__ import annotations

import itertools
import weakref
from typing import Literal

import numpy as np

from pda.index.token_index import TokenIndex
from pda.kernels.compose import ExtendedMask, compose
from pda.lru import budget_ring, register_budget
from pda.parser.earley import Node
from pda.rows import RowSource, copy_row, same_words
from pda.scanner import Scanner
from pda.trie.lookup import FiniteSetLookup, PlainRows

# The parser nodes of the most recently computed masks (of every compiled grammar) are kept alive
# after their last matcher while those masks weigh at most this (`pda.set_memory_budget("recent_masks",
# n)`): 1,700 dense masks of Qwen2's 151,936 tokens, or ~25,000 nodes whose masks are mostly extended masks.
RECENT_MASKS_MAX_BYTES = 32 << 20
register_budget("recent_masks", RECENT_MASKS_MAX_BYTES)
# The nodes of the masks computed last, each weighing RECENT_NODE_BYTES and its masks' bytes (one entry per node
# that a mask was computed at, oldest dropped first; `StepMasks._compute_mask`).
_recent = budget_ring("recent_masks")
# What a kept parser node weighs besides its mask: the node, its items and its memo dict, about.
RECENT_NODE_BYTES = 1024
# A composed mask that adds at most mask_words // EXTENDED_MAX_SHARE tokens to its state's own mask is kept as those
# token ids (`ExtendedMask`) rather than a new dense mask. Writing one costs ~1.7 ns an id more than a dense copy
# (Qwen2: 1.1 us either way with 66 ids, the median, 1.25 us with 300, 2.3 us with 800), so at most 296 ids
# (a sixteenth of a dense mask's bytes): ~80% of a first document's composed masks.
EXTENDED_MAX_SHARE = 16

# `node.cache` keys: a memo's base (its number << STATE_BITS) plus a lexer state. Memo 0 is whether the
# text can end (shared by every owner); each `StepMasks` numbers its two from 1 on.
STATE_BITS = 48
_memos = itertools.count(1)


class StepMasks:
    """The masks one compiled grammar serves: composed on a miss, memoised on parser nodes, written into rows."""

    def __init__(self, scanner: Scanner, index: TokenIndex, finite_sets: FiniteSetLookup, eos_mask: np.ndarray,
                 eos_ids: np.ndarray) -> None:
        """`eos_ids` are the ids set in `eos_mask`, int32 ascending (`pda.compiler.eos_rows` makes both once per
        vocabulary: unpacking the row again cost ~13 us warm a compile)."""
        self.scanner = scanner
        self.lexer = scanner.lexer
        self.index = index
        self.finite_sets = finite_sets
        self.eos_mask = eos_mask
        self._empty = np.zeros(index.mask_words, dtype=np.int32)
        self._sparse_max = index.mask_words // EXTENDED_MAX_SHARE
        # The EOS ids, added where the text can end (`_step`).
        self._eos_ids = eos_ids
        self._after_boundary = index.after_boundary  # bound once: `compose` calls it on a group's miss
        # Bound once, read on every miss (`_compute_mask`); a lexer's ignore set is fixed when it is built.
        self._at_state = index.at_state
        self._ignore = self.lexer.ignore
        # Equal dense masks are stored once, under their fingerprint; each is freed with the last state that uses it.
        self._masks: weakref.WeakValueDictionary[int, np.ndarray] = weakref.WeakValueDictionary()
        # Buffers a composition that found its mask in `_masks` left: at most one per thread composing at once.
        self._spare: list[np.ndarray] = []
        # Per parser node's allowed terminals: the finite-set lookup's plain rows, or False (`plain_rows`);
        # None when the grammar has no finite-set terminal (then every state is served from `step_mask`).
        self._plain: dict[int, PlainRows | Literal[False]] | None = {} if finite_sets.terminals else None
        # The node last put in `_recent`, and the bytes of the masks computed since (`_compute_mask`).
        self._last_kept: Node | None = None
        self._unweighed = 0
        # Parser nodes are shared by every vocabulary a grammar is compiled for: the memos are keyed by their owner.
        self._steps = next(_memos) << STATE_BITS
        self._texts = next(_memos) << STATE_BITS

    def row_source(self, node: Node, q: int) -> RowSource:
        """The step mask at (node, q) as `pda.rows` copies it into a row (hot path: every row a step fills).

        A plain finite-set state's row is its `plain_rows` words, scattered into a zero
        row (nothing computed, allocated or memoised per state); any other state's is
        its memoised mask, computed on a miss.
        """
        plain = self._plain
        if plain is not None:
            rows = plain.get(node.allowed)
            if rows is None:
                rows = self.plain_rows(node.allowed)
            if rows:
                lo = rows.lo[q]
                if lo >= 0:
                    return rows.words, rows.bits, lo, rows.hi[q]
        mask = node.cache.get(self._steps + q)  # `_step`'s memo, read here to save a call
        return mask if mask is not None else self._missed(node, q)

    def write_text_row(self, bitmask: np.ndarray, row: int, node: Node, q: int) -> None:
        """Write the text mask at (node, q) into row `row` of `bitmask` (a matcher with its own stop ids)."""
        copy_row(bitmask, row, self._text(node, q))

    def step_mask(self, node: Node, q: int) -> np.ndarray:
        """`text_mask` with EOS added where the text can end: what a matcher serves. Memoised (as `_step`)."""
        return self._dense(self._step(node, q))

    def cached_step_mask(self, node: Node, q: int) -> np.ndarray | None:
        """The memoised step mask at (node, q), or None when it has not been computed (computes nothing)."""
        mask = node.cache.get(self._steps + q)
        return None if mask is None else self._dense(mask)

    def text_mask(self, node: Node, q: int) -> np.ndarray:
        """Packed mask of the text tokens allowed at (node, q); EOS not included. Memoised (as `_text`)."""
        return self._dense(self._text(node, q))

    def _step(self, node: Node, q: int) -> np.ndarray | ExtendedMask:
        """The step mask at (node, q) as memoised."""
        mask = node.cache.get(self._steps + q)
        return mask if mask is not None else self._missed(node, q)

    def _missed(self, node: Node, q: int) -> np.ndarray | ExtendedMask:
        """The step mask at (node, q) on its memo's miss, computed and memoised (hot path on a miss: `can_end`'s
        and `_text`'s memos are read here, two calls fewer a miss, and the step memo not read again)."""
        memo = node.cache
        end = memo.get(q)
        if end is None:
            end = memo[q] = self.scanner.can_end(node, q)
        if end:  # the text mask with EOS added
            text = memo.get(self._texts + q)
            if text is None:
                text = memo[self._texts + q] = self._compute_mask(node, q)
            mask = memo[self._steps + q] = ExtendedMask(text, self._eos_ids)
        else:
            mask = memo[self._steps + q] = self._compute_mask(node, q)
        return mask

    def _text(self, node: Node, q: int) -> np.ndarray | ExtendedMask:
        """The text mask at (node, q) as memoised."""
        if not self.can_end(node, q):
            return self._step(node, q)  # the same mask: EOS is not allowed here
        memo = node.cache
        mask = memo.get(self._texts + q)
        if mask is None:
            mask = memo[self._texts + q] = self._compute_mask(node, q)
        return mask

    def _dense(self, mask: np.ndarray | ExtendedMask) -> np.ndarray:
        """A memoised mask as a packed array: itself, or a new one written as `Matcher.fill_bitmask` writes it."""
        if type(mask) is not ExtendedMask:
            return mask
        out = np.empty((1, len(self._empty)), dtype=np.int32)
        copy_row(out, 0, mask)
        return out[0]

    def can_end(self, node: Node, q: int) -> bool:
        """Whether the text may end at (node, q) (`Scanner.can_end`). Memoised on the node (memo 0)."""
        memo = node.cache
        end = memo.get(q)
        if end is None:
            end = memo[q] = self.scanner.can_end(node, q)
        return end

    def plain_rows(self, allowed: int) -> PlainRows | Literal[False]:
        """The finite-set lookup's plain rows for parser nodes allowing `allowed` (False: none); memoised.

        `Matcher.fill_bitmask` writes a plain state's row from them (zero, then scatter): nothing is
        computed, allocated or memoised per state, so a first visit costs what a repeat
        does, and no 19 KB mask per enum state is allocated or kept.
        """
        plain = self._plain
        if plain is None:
            return False
        rows = plain.get(allowed)
        if rows is None:
            rows = plain[allowed] = self.finite_sets.plain_rows(allowed | self.lexer.ignore) or False
        return rows

    def _compute_mask(self, node: Node, q: int) -> np.ndarray | ExtendedMask:
        """The text mask at (node, q) on a memo miss (hot path on a miss): the index's classification at q, its
        boundary groups composed from the node (and its inside tokens, where the walk gave them as ids: an
        `ExtendedMask` of them, or a dense mask past `_sparse_max`); its node is kept for the next request.

        Half a first document's misses are at the node of the one before (a lexeme read token by
        token misses at each of its states): the node is put in `_recent` when it changes, weighing
        its masks and those computed since the last put, so the ring's bytes still add up."""
        ignore = self._ignore
        root = self._at_state(q, node.allowed | ignore)  # from the trie's root: `inside` or a few `tokens`
        tokens = root.tokens
        if not root.groups and tokens is None:  # nothing depends on the stack: the index's own mask, shared
            mask = root.inside if root.inside is not None else self._empty
        elif not root.groups and len(tokens) <= self._sparse_max:  # nor here: its few ids, as compose would give
            mask = ExtendedMask(None, tokens)
        else:
            try:
                acc = self._spare.pop()
            except IndexError:
                acc = np.empty_like(self._empty)
            mask = compose(acc, root, node, ignore, self._after_boundary, self._sparse_max)
            if type(mask) is not int:  # the root's own mask, or it with a few ids: `acc` is spare again
                self._spare.append(acc)
                if mask is None:
                    mask = self._empty
            else:  # a dense mask, kept once per content
                shared = self._masks.get(mask)
                if shared is not None and same_words(shared, acc):
                    self._spare.append(acc)
                    mask = shared
                else:
                    self._masks[mask] = acc
                    mask = acc
        self._unweighed += mask.nbytes
        if node is not self._last_kept:
            _recent.put(node, self._unweighed + RECENT_NODE_BYTES)
            self._last_kept, self._unweighed = node, 0
        return mask
