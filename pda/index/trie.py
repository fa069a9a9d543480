"""The vocabulary as a byte trie in depth-first order, for level-by-level walks.

Tokens are sorted by their bytes, so the tokens below any trie node form one
contiguous run, and a node's subtree is the id range `[node, end[node])`.
Walking the trie instead of every token's bytes shares the work of common
prefixes: Qwen2's 151k tokens hold about 1M bytes but far fewer trie nodes.
"""

from __future__ import annotations

import numpy as np

from pda.cache import take
from pda.kernels.trie import string_trie
from pda.vocab import Vocabulary


class TokenTrie:
    """Trie nodes (root = 0) with parent, byte, depth, subtree end; tokens sorted by bytes."""

    def __init__(self, vocab: Vocabulary) -> None:
        tokens = vocab.tokens  # None or b"" for ids that spell nothing; C-level loops, as there are 151k
        ids = np.flatnonzero(np.fromiter(map(bool, tokens), dtype=bool, count=len(tokens)))
        trie = string_trie(list(filter(None, tokens)))
        self.n_nodes = len(trie.parent)
        self.parent = trie.parent
        self.byte = trie.byte
        self.depth = trie.depth
        self.token_ids = ids[trie.order]
        self.token_end = trie.end_node
        self.end = trie.end  # end[n]: one past the last node of n's subtree
        self.max_depth = int(self.depth.max(initial=0))
        # Children in CSR form: the children of p are child_ids[child_ptr[p]:child_ptr[p + 1]].
        self.child_ids, self.child_ptr = trie.child_ids, trie.child_ptr
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
