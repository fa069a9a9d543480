"""The trie of a list of byte strings in preorder, one compiled call (`pda.kernels._trie`, pda/kernels/_trie.c).

`string_trie(strings)` sorts the strings by their bytes and numbers the trie's nodes in
preorder, children by byte, root 0: the k-th sorted string creates the nodes for its
bytes past the prefix it shares with the one before, so every subtree is an id range
`[v, end[v])`. The vocabulary trie (`pda.index.trie`), the finite-set DFA
(`pda.regex.finite_set`) and composed key sets (`pda.regex.compose`) are all built on it.
The kernel runs without the GIL in time about linear in the total bytes and replaces a numpy
construction that took 0.2 s (plus 0.15 s of sorting in Python) for Qwen2's 151k tokens;
tests/test_token_index_trie.py checks it against a plain reading of the strings.

`literal_tables(data)` is the one-string case as a DFA's tables (`pda.regex.dfa.literal_dfa`, a JSON
Schema key's chain of states), checked against numpy-built tables in tests/test_compile_fastpaths.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from pda.kernels import _trie


class StringTrie(NamedTuple):
    """The trie of some byte strings (see the module docstring); node arrays have one entry per node."""

    order: np.ndarray  # int64 [n]: the strings' positions, sorted by bytes (ties by position)
    parent: np.ndarray  # int32; the root's is 0
    byte: np.ndarray  # uint8: the byte on the edge from the parent (0 at the root)
    depth: np.ndarray  # int32
    end: np.ndarray  # int32: one past the last node of the subtree
    end_node: np.ndarray  # int32 [n]: where the k-th sorted string ends (a duplicate at its twin's, b"" at 0)
    child_ptr: np.ndarray  # int64 [nodes + 1]: children of p at child_ids[child_ptr[p]:child_ptr[p + 1]]
    child_ids: np.ndarray  # int64 [nodes - 1], ascending per parent


def string_trie(strings: Sequence[bytes]) -> StringTrie:
    """The preorder trie of `strings` (any order, duplicates and b"" allowed)."""
    order, parent, byte, depth, end, end_node, child_ptr, child_ids = _trie.build(strings)
    return StringTrie(
        np.frombuffer(order, dtype=np.int64), np.frombuffer(parent, dtype=np.int32),
        np.frombuffer(byte, dtype=np.uint8), np.frombuffer(depth, dtype=np.int32),
        np.frombuffer(end, dtype=np.int32), np.frombuffer(end_node, dtype=np.int32),
        np.frombuffer(child_ptr, dtype=np.int64), np.frombuffer(child_ids, dtype=np.int64),
    )


def literal_tables(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """The chain DFA of one non-empty byte string of n bytes: (byte_class int32 [256], trans int32 [n + 2, k + 1]),
    read-only. The k distinct bytes of `data` are classes 0..k-1 in byte order, every other byte class k; state i
    reads data[i] to i + 1, everything else to the dead state n + 1 (which reads only itself)."""
    k, byte_class, trans = _trie.literal(data)
    return np.frombuffer(byte_class, dtype=np.int32), np.frombuffer(trans, dtype=np.int32).reshape(len(data) + 2, k + 1)
