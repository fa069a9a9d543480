"""Vectorised helpers over sorted integer arrays, shared by the vocabulary trie, the finite-set DFA and the walks.

Each is a pure numpy function of its arguments and imports nothing from pda, so
every layer may use them (`pda.regex.finite_set` below the lexer, `pda.index`
and `pda.trie` above it).
"""

from __future__ import annotations

import numpy as np


def sorted_trie(strings: list[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The trie of sorted byte strings in preorder, built with numpy: (parent, byte, depth, end node).

    Node 0 is the root; string k creates the nodes for its bytes past the prefix it
    shares with string k - 1, so ids are preorder and subtrees are contiguous. A
    duplicate string ends at its twin's node.
    """
    n = len(strings)
    lengths = np.fromiter(map(len, strings), dtype=np.int64, count=n)
    width = int(lengths.max(initial=0))
    flat = np.frombuffer(b"".join(strings), dtype=np.uint8)
    starts = np.cumsum(lengths) - lengths
    # lcp[k]: bytes string k shares with string k - 1.
    lcp = np.zeros(n, dtype=np.int64)
    if n > 1 and width:
        # Zero padding may equal a byte; the clamp to both lengths below makes that harmless.
        matrix = np.frombuffer(b"".join(s.ljust(width, b"\0") for s in strings), dtype=np.uint8).reshape(n, width)
        differ = matrix[1:] != matrix[:-1]
        first = np.where(differ.any(axis=1), differ.argmax(axis=1), width)
        lcp[1:] = np.minimum(first, np.minimum(lengths[1:], lengths[:-1]))
    created = lengths - lcp
    total = int(created.sum())
    owner = np.repeat(np.arange(n), created)
    depth = np.arange(total) - np.repeat(np.cumsum(created) - created, created) + np.repeat(lcp, created) + 1
    node_ids = np.arange(1, total + 1)
    # A node's parent is the latest node created at depth - 1 before it (preorder), or the root.
    parent = np.zeros(total, dtype=np.int64)
    if total:
        order = stable_order(depth)
        bounds = np.searchsorted(depth[order], np.arange(1, width + 2))
        for d in range(2, width + 1):
            here = order[bounds[d - 1] : bounds[d]]
            above = node_ids[order[bounds[d - 2] : bounds[d - 1]]]
            parent[here] = above[np.searchsorted(above, node_ids[here]) - 1]
    end_node = np.maximum.accumulate(np.where(created > 0, np.cumsum(created), 0)) if n else lengths
    return (
        np.concatenate(([0], parent)),
        np.concatenate(([0], flat[starts[owner] + depth - 1])).astype(np.uint8),
        np.concatenate(([0], depth)),
        end_node,
    )


def stable_order(values: np.ndarray) -> np.ndarray:
    """`np.argsort(values, kind="stable")`, in linear time for small non-negative ints (depths, heights).

    numpy radix-sorts 16-bit integers; int64 takes a comparison sort (~0.1 s for the
    million nodes of a 100,000-value trie).
    """
    if len(values) and values.min() >= 0 and values.max() < 2**16:
        values = values.astype(np.uint16)
    return np.argsort(values, kind="stable")


def concat_ranges(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """`values[lo[0]:hi[0]] ++ values[lo[1]:hi[1]] ++ ...`, vectorised."""
    lengths = hi - lo
    total = int(lengths.sum())
    if total == 0:
        return values[:0]
    keep = lengths > 0
    lo, lengths = lo[keep], lengths[keep]
    offsets = np.repeat(lo - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
    return values[offsets + np.arange(total)]
