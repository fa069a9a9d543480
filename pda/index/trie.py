"""The vocabulary as a byte trie in depth-first order, for level-by-level walks.

Tokens are sorted by their bytes, so the tokens below any trie node form one
contiguous run, and a node's subtree is the id range `[node, end[node])`.
Walking the trie instead of every token's bytes shares the work of common
prefixes: Qwen2's 151k tokens hold about 1M bytes but far fewer trie nodes.
"""

from __future__ import annotations

import numpy as np

from pda.cache import take
from pda.vocab import Vocabulary


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


class TokenTrie:
    """Trie nodes (root = 0) with parent, byte, depth, subtree end; tokens sorted by bytes."""

    def __init__(self, vocab: Vocabulary) -> None:
        ids = [i for i, tok in enumerate(vocab.tokens) if tok]
        ids.sort(key=vocab.tokens.__getitem__)
        toks = [vocab.tokens[i] for i in ids]
        parent, byte, depth, end_node = sorted_trie(toks)
        self.n_nodes = len(parent)
        self.parent = parent.astype(np.int32)
        self.byte = byte
        self.depth = depth.astype(np.int32)
        self.token_ids = np.asarray(ids, dtype=np.int64)
        self.token_end = end_node.astype(np.int32)
        # end[n]: one past the last node of n's subtree (preorder ids are contiguous per subtree).
        end = np.arange(1, self.n_nodes + 1, dtype=np.int32)
        for d in range(int(self.depth.max(initial=0)), 0, -1):
            nodes = np.flatnonzero(self.depth == d)
            np.maximum.at(end, self.parent[nodes], end[nodes])
        self.end = end
        self.max_depth = int(self.depth.max(initial=0))
        # Children in CSR form: the children of p are child_ids[child_ptr[p]:child_ptr[p + 1]].
        self.child_ids = np.argsort(self.parent[1:], kind="stable").astype(np.int64) + 1
        counts = np.bincount(self.parent[1:], minlength=self.n_nodes)
        self.child_ptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        # Tokens ending exactly at node n: sorted positions token_ptr[n]:token_ptr[n + 1].
        ends_here = np.bincount(self.token_end, minlength=self.n_nodes)
        self.token_ptr = np.concatenate(([0], np.cumsum(ends_here))).astype(np.int64)
        self.token_positions = np.arange(len(self.token_end), dtype=np.int64)

    _ARRAYS = ("parent", "byte", "depth", "token_ids", "token_end", "end", "child_ids", "child_ptr", "token_ptr")

    def to_arrays(self) -> tuple[dict, dict[str, np.ndarray]]:
        """(meta, arrays) for the disk cache (`from_arrays` reads them back)."""
        return {}, {name: getattr(self, name) for name in self._ARRAYS}

    @classmethod
    def from_arrays(cls, meta: dict, arrays: dict[str, np.ndarray], vocab_size: int) -> "TokenTrie":
        """The trie `to_arrays` wrote, checked so that no walk indexes out of bounds; raises `cache.Invalid`."""
        self = cls.__new__(cls)
        n = len(take(arrays, "parent", np.int32, (None,)))
        self.n_nodes = n
        self.parent = take(arrays, "parent", np.int32, (n,), (0, n))
        self.byte = take(arrays, "byte", np.uint8, (n,))
        self.depth = take(arrays, "depth", np.int32, (n,), (0, n))
        self.token_ids = take(arrays, "token_ids", np.int64, (None,), (0, vocab_size))
        self.token_end = take(arrays, "token_end", np.int32, (len(self.token_ids),), (0, n))
        self.end = take(arrays, "end", np.int32, (n,), (1, n + 1))
        self.child_ids = take(arrays, "child_ids", np.int64, (max(n - 1, 0),), (1, n))
        self.child_ptr = take(arrays, "child_ptr", np.int64, (n + 1,), (0, n))
        self.token_ptr = take(arrays, "token_ptr", np.int64, (n + 1,), (0, len(self.token_ids) + 1))
        self.max_depth = int(self.depth.max(initial=0))
        self.token_positions = np.arange(len(self.token_end), dtype=np.int64)
        return self

    def children(self, nodes: np.ndarray) -> np.ndarray:
        """The children of `nodes`, concatenated."""
        return concat_ranges(self.child_ids, self.child_ptr[nodes], self.child_ptr[nodes + 1])


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


class TokenPaths:
    """Every token's bytes, concatenated in sorted order, and each node's ancestors: for walking few tokens.

    A walk left with a handful of deep subtrees (runs of spaces, `////`) steps their
    tokens column by column instead of paying a trie level per byte.
    """

    def __init__(self, trie: TokenTrie) -> None:
        ends = trie.token_end.astype(np.int64)
        self.length = trie.depth[ends].astype(np.int64)
        self.start = np.cumsum(self.length) - self.length
        self.data = np.empty(int(self.length.sum()), dtype=np.uint8)
        node, at = ends, self.start + self.length - 1
        while len(node):
            self.data[at] = trie.byte[node]
            node, at = trie.parent[node].astype(np.int64), at - 1
            keep = node > 0
            node, at = node[keep], at[keep]
        self.ends = ends
        self.by_depth = stable_order(trie.depth)  # ids ascending within each depth
        self.depth_start = np.searchsorted(trie.depth[self.by_depth], np.arange(trie.max_depth + 2))

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The arrays for the disk cache that the trie does not give at once (`from_arrays` reads them back)."""
        return {"data": self.data, "by_depth": self.by_depth, "depth_start": self.depth_start}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], trie: TokenTrie) -> "TokenPaths":
        """The paths `to_arrays` wrote for `trie`, checked against its sizes; raises `cache.Invalid`."""
        self = cls.__new__(cls)
        n = trie.n_nodes
        self.ends = trie.token_end.astype(np.int64)
        self.length = trie.depth[self.ends].astype(np.int64)
        self.start = np.cumsum(self.length) - self.length
        self.data = take(arrays, "data", np.uint8, (int(self.length.sum()),))
        self.by_depth = take(arrays, "by_depth", np.int64, (n,), (0, n))
        self.depth_start = take(arrays, "depth_start", np.int64, (trie.max_depth + 2,), (0, n + 1))
        return self

    def ancestors(self, nodes: np.ndarray, depths: np.ndarray) -> np.ndarray:
        """The ancestor of each node at the given depth (at most its own).

        In preorder it is the last node of that depth whose id is not above the node's.
        """
        if len(depths) and depths.min() == depths.max():  # the usual case: one depth
            level = self.by_depth[self.depth_start[depths[0]] : self.depth_start[depths[0] + 1]]
            return level[np.searchsorted(level, nodes, side="right") - 1]
        out = np.empty(len(nodes), dtype=np.int64)
        for d in np.unique(depths).tolist():
            at = depths == d
            level = self.by_depth[self.depth_start[d] : self.depth_start[d + 1]]
            out[at] = level[np.searchsorted(level, nodes[at], side="right") - 1]
        return out
