"""The vocabulary as a byte trie in depth-first order, for level-by-level walks.

Tokens are sorted by their bytes, so the tokens below any trie node form one
contiguous run, and a node's subtree is the id range `[node, end[node])`.
Walking the trie instead of every token's bytes shares the work of common
prefixes: Qwen2's 151k tokens hold about 1M bytes but far fewer trie nodes.
"""

from __future__ import annotations

import numpy as np

from pda.vocab import Vocabulary


class TokenTrie:
    """Trie nodes (root = 0) with parent, byte, depth, subtree end; tokens sorted by bytes."""

    def __init__(self, vocab: Vocabulary) -> None:
        ids = [i for i, tok in enumerate(vocab.tokens) if tok]
        ids.sort(key=lambda i: vocab.tokens[i])
        parent = [0]
        byte = [0]
        depth = [0]
        end_node = []
        path = [0]  # path[d] = node at depth d on the current token's path
        prev = b""
        for i in ids:
            tok = vocab.tokens[i]
            common = 0
            limit = min(len(prev), len(tok))
            while common < limit and prev[common] == tok[common]:
                common += 1
            del path[common + 1 :]
            for d in range(common, len(tok)):
                path.append(len(parent))
                parent.append(path[d])
                byte.append(tok[d])
                depth.append(d + 1)
            end_node.append(path[len(tok)])
            prev = tok
        self.n_nodes = len(parent)
        self.parent = np.asarray(parent, dtype=np.int32)
        self.byte = np.asarray(byte, dtype=np.uint8)
        self.depth = np.asarray(depth, dtype=np.int32)
        self.token_ids = np.asarray(ids, dtype=np.int64)
        self.token_end = np.asarray(end_node, dtype=np.int32)
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

    def children(self, nodes: np.ndarray) -> np.ndarray:
        """The children of `nodes`, concatenated."""
        return concat_ranges(self.child_ids, self.child_ptr[nodes], self.child_ptr[nodes + 1])

    def tokens_at(self, nodes: np.ndarray) -> np.ndarray:
        """Token ids whose bytes end exactly at `nodes`."""
        pos = concat_ranges(self.token_positions, self.token_ptr[nodes], self.token_ptr[nodes + 1])
        return self.token_ids[pos]


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
