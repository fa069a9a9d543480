"""Deterministic composition: the byte DFA of a sequence or counted repeat from its parts' DFAs.

A counted string such as `"C{3,255}"` (JSON Schema's `maxLength`) has thousands of
states; through the NFA it costs 255 copies of C's NFA, their subset construction
and a UTF-8 spelling per state. Yet concatenating two DFAs needs no subset
construction when no byte can be read two ways:

* `concat(A, B)`: when B's start is never re-entered and, at every accepting state
  of A, the bytes A reads there and the bytes B's start reads are disjoint, the
  accepting states of A take B's start edges as well (and accept where B's start
  does), and B's start itself goes. The result is a DFA for A·B.
* `repeat(X, lo, hi)`: X{lo,hi} is the chain X^lo · (X · (X · ...)?)? of copies of
  X, each copy's accepting states taking the next copy's start edges; X{lo,} loops
  the last copy's accepting states back onto its own start edges. It needs X's
  start to be neither re-entered nor accepting, and X's accepting states to read no
  byte that X's start reads (a JSON string character, a digit: prefix codes).

Wherever a condition fails the composition gives None and the caller builds the
pattern through the NFA as usual, so the language is always the pattern's own. Parts
without a counted repeat of at least `MIN_COMPOSED_REPEAT` are built the usual way
(`leaf`); a repeat whose chain would exceed four times `max_states` states, or a
sequence over `max_states`, gives None too (the usual path then reports the limit).

Automata here are partial byte DFAs: (trans int32 [n, 256] with -1 for dead,
accept bool [n]), start 0.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pda.regex.syntax import Node, Repeat, Seq

# A counted repeat this large (its lower or upper count) is worth composing.
MIN_COMPOSED_REPEAT = 16
# Sequences and repeats nested deeper than this are built the usual way (no recursion here).
MAX_COMPOSED_DEPTH = 40

Partial = tuple[np.ndarray, np.ndarray]


def worth_composing(node: Node) -> bool:
    """Whether `node` is a sequence or repeat holding a counted repeat of `MIN_COMPOSED_REPEAT` or more.

    Only through at most `MAX_COMPOSED_DEPTH` nested sequences and repeats (an explicit
    stack: patterns nest thousands deep), so that `composed` recurses no deeper.
    """
    stack = [(node, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_COMPOSED_DEPTH:
            return False
        if isinstance(item, Repeat):
            if max(item.lo, item.hi or 0) >= MIN_COMPOSED_REPEAT:
                return True
            stack.append((item.item, depth + 1))
        elif isinstance(item, Seq):
            stack.extend((x, depth + 1) for x in item.items)
    return False


def composed(node: Node, leaf: Callable[[Node], Partial], max_states: int) -> Partial | None:
    """The partial byte DFA of `node` by composition, or None where a part cannot be composed."""
    if isinstance(node, Seq) and worth_composing(node):
        out: Partial | None = None
        for item in node.items:
            part = composed(item, leaf, max_states)
            if part is None:
                return None
            out = part if out is None else concat(out, part)
            if out is None or len(out[0]) > max_states:
                return None
        return out
    if isinstance(node, Repeat) and worth_composing(node):
        item = composed(node.item, leaf, max_states)
        if item is None or len(item[0]) * max(node.lo, node.hi or 1) > 4 * max_states:
            return None
        return repeat(item, node.lo, node.hi)
    return leaf(node)


def concat(a: Partial, b: Partial) -> Partial | None:
    """A·B (see the module docstring), or None when a byte could be read two ways or B's start is re-entered."""
    ta, aa = a
    tb, ab = b
    if (tb == 0).any():
        return None
    finals = np.flatnonzero(aa)
    opens = tb[0] >= 0
    if (ta[finals][:, opens] >= 0).any():
        return None
    n = len(ta)
    moved = np.where(tb >= 1, tb - 1 + n, -1).astype(np.int32)  # B's state s >= 1 becomes n + s - 1
    trans = np.concatenate([ta, moved[1:]])
    trans[finals[:, None], np.flatnonzero(opens)[None, :]] = moved[0, opens][None, :]
    accept = np.concatenate([np.zeros(n, dtype=bool), ab[1:]])
    accept[finals] = ab[0]
    return trans, accept


def repeat(x: Partial, lo: int, hi: int | None) -> Partial | None:
    """X{lo,hi} (hi None: unbounded) as a chain of copies of X (see the module docstring), or None."""
    t, acc = x
    m = len(t)
    finals = np.flatnonzero(acc)
    opens = np.flatnonzero(t[0] >= 0)
    if acc[0] or (t == 0).any() or (t[finals][:, opens] >= 0).any():
        return None
    copies = hi if hi is not None else max(lo, 1)
    if copies == 0:  # X{0}: the empty string
        return np.full((1, 256), -1, dtype=np.int32), np.ones(1, dtype=bool)
    # Copy 0 keeps all m states; copy k >= 1 keeps states 1..m-1 (its start is merged away):
    # state s of copy k is s in copy 0, else base[k] + s - 1.
    base = [0] + [m + (k - 1) * (m - 1) for k in range(1, copies)]

    def ids(k: int, states: np.ndarray) -> np.ndarray:
        return np.where(states >= 0, states if k == 0 else base[k] + states - 1, -1)

    n = m + (copies - 1) * (m - 1)
    trans = np.full((n, 256), -1, dtype=np.int32)
    accept = np.zeros(n, dtype=bool)
    accept[0] = lo == 0
    opened = t[0, opens]
    for k in range(copies):
        rows = np.arange(m) if k == 0 else np.arange(1, m)
        trans[ids(k, rows)] = ids(k, t[rows])
        # Reading X once more from copy k's accepting states: copy k + 1's start edges, or the loop.
        if k + 1 < copies:
            follow = ids(k + 1, opened)
        elif hi is None:
            follow = ids(k, opened)
        else:
            follow = None
        ends = ids(k, finals)
        if follow is not None:
            trans[ends[:, None], opens[None, :]] = follow[None, :]
        accept[ends] = k + 1 >= lo
    return trans, accept
