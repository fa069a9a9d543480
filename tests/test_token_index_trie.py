"""The sorted-strings trie builder (`pda.index.trie`) against a plain reading of the strings.

`sorted_trie` builds the vocabulary trie and the finite-set literal trie from
longest-common-prefix lengths; the strings here are short and drawn from an
alphabet with NUL (the padding byte of its prefix matrix), prefixes of each other
and duplicates, so every shortcut of the builder is exercised.
"""

from __future__ import annotations

import random

import numpy as np

from pda.arrays import sorted_trie, stable_order


def spell(parent: np.ndarray, byte: np.ndarray, node: int) -> bytes:
    out = []
    while node:
        out.append(int(byte[node]))
        node = int(parent[node])
    return bytes(reversed(out))


def test_sorted_trie_spells_every_string_once() -> None:
    rng = random.Random(7)
    for _ in range(400):
        strings = sorted({bytes(rng.choice(b"ab\x00c") for _ in range(rng.randint(1, 6))) for _ in range(rng.randint(1, 30))})
        if rng.random() < 0.3:
            strings = sorted(strings + [strings[0]])  # a duplicate ends at its twin's node
        parent, byte, depth, end = sorted_trie(strings)
        for k, s in enumerate(strings):
            assert spell(parent, byte, int(end[k])) == s
        paths = [spell(parent, byte, v) for v in range(1, len(parent))]
        assert len(set(paths)) == len(paths), "two nodes spell the same path"
        assert set(paths) == {s[:i] for s in strings for i in range(1, len(s) + 1)}, "a prefix has no node"
        assert all(depth[v] == len(p) for v, p in enumerate(paths, start=1))
        assert all(paths[v - 1] > paths[v - 2] for v in range(2, len(parent))), "ids are not preorder"


def test_stable_order_is_a_stable_argsort() -> None:
    rng = np.random.default_rng(3)
    for values in (rng.integers(0, 40, 10_000), rng.integers(0, 2**20, 1000), np.array([], dtype=np.int64),
                   rng.integers(-5, 5, 100)):
        assert np.array_equal(stable_order(values), np.argsort(values, kind="stable"))
