"""The byte-string trie kernel (`pda.kernels.trie`) against a plain reading of the strings.

`string_trie` builds the vocabulary trie, the finite-set literal trie and composed key
sets. The strings here are short and drawn from an alphabet with NUL, in any order,
prefixes of each other, duplicates and the empty string, so every case of the pass is
exercised; every output array is checked against what the strings spell.
"""

from __future__ import annotations

import random

import numpy as np

from pda.arrays import packed_ids, stable_order
from pda.kernels.trie import string_trie


def spell(parent: np.ndarray, byte: np.ndarray, node: int) -> bytes:
    out = []
    while node:
        out.append(int(byte[node]))
        node = int(parent[node])
    return bytes(reversed(out))


def check_trie(strings: list[bytes]) -> None:
    t = string_trie(strings)
    assert sorted(range(len(strings)), key=lambda i: (strings[i], i)) == t.order.tolist()
    for k, i in enumerate(t.order.tolist()):
        assert spell(t.parent, t.byte, int(t.end_node[k])) == strings[i]
    paths = [spell(t.parent, t.byte, v) for v in range(len(t.parent))]
    assert len(set(paths)) == len(paths), "two nodes spell the same path"
    assert set(paths) == {s[:i] for s in strings for i in range(len(s) + 1)} | {b""}, "a prefix has no node"
    assert all(t.depth[v] == len(p) for v, p in enumerate(paths))
    assert all(paths[v] > paths[v - 1] for v in range(1, len(paths))), "ids are not preorder"
    kids: dict[int, list[int]] = {}
    for w in range(1, len(paths)):
        kids.setdefault(int(t.parent[w]), []).append(w)
    for v, p in enumerate(paths):
        # ids are preorder, so the subtree is [v, end) iff the path at end - 1 is below v and the one at end is not
        end = int(t.end[v])
        assert v < end <= len(paths) and paths[end - 1].startswith(p), "a subtree is not the id range [v, end[v])"
        assert end == len(paths) or not paths[end].startswith(p), "a subtree is not the id range [v, end[v])"
        assert t.child_ids[t.child_ptr[v] : t.child_ptr[v + 1]].tolist() == kids.get(v, [])
    assert t.child_ptr[-1] == len(paths) - 1


def test_string_trie_spells_every_string_once() -> None:
    rng = random.Random(7)
    for _ in range(400):
        strings = [bytes(rng.choice(b"ab\x00c") for _ in range(rng.randint(0, 6))) for _ in range(rng.randint(0, 30))]
        if strings and rng.random() < 0.3:
            strings.append(rng.choice(strings))  # a duplicate ends at its twin's node
        if rng.random() < 0.5:
            strings.sort()  # sorted input skips the sort
        check_trie(strings)


def test_string_trie_of_many_strings() -> None:
    """Thousands of strings over three bytes, with long shared prefixes: the radix sort's every bucket and depth."""
    rng = random.Random(5)
    for _ in range(5):
        strings = [bytes(rng.choice(b"ab\x00") for _ in range(rng.randint(0, 12))) for _ in range(2000)]
        strings += [b"a" * k for k in range(0, 200, 7)] + [b"ab" * 40 + bytes([k % 3]) for k in range(100)]
        rng.shuffle(strings)
        check_trie(strings)


def test_string_trie_of_high_bytes_and_long_strings() -> None:
    rng = random.Random(11)
    strings = [bytes(rng.randrange(256) for _ in range(rng.randint(1, 300))) for _ in range(50)]
    check_trie(strings + [s[: len(s) // 2] for s in strings[:10]])


def test_string_trie_refuses_what_is_not_bytes() -> None:
    import pytest

    with pytest.raises(TypeError, match=r"strings\[1\] is str"):
        string_trie([b"a", "b"])


def test_stable_order_is_a_stable_argsort() -> None:
    rng = np.random.default_rng(3)
    for values in (rng.integers(0, 40, 10_000), rng.integers(0, 2**20, 1000), np.array([], dtype=np.int64),
                   rng.integers(-5, 5, 100)):
        assert np.array_equal(stable_order(values), np.argsort(values, kind="stable"))


def test_packed_ids_are_the_set_bits_of_a_packed_mask() -> None:
    rng = np.random.default_rng(5)
    for n_words, density in ((4748, 0.0), (4748, 1e-4), (300, 0.3), (1, 1.0), (0, 0.0), (64, 1.0)):
        bits = rng.random(32 * n_words) < density
        words = np.packbits(bits, bitorder="little").view(np.int32)
        found = packed_ids(words)
        assert found.dtype == np.int32
        assert found.tolist() == np.flatnonzero(bits).tolist()
