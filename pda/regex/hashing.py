"""Fixed pseudo-random 64-bit weights for the linear hashes of automaton builders.

Product states, Moore blocks, trie signatures and character-set atoms are told
apart by random linear hashes. The weights only need to be fixed and well mixed,
so they come from splitmix64 here rather than from `numpy.random`, whose first
use imports ~18 ms of modules inside whichever compile happens to come first.
"""

from __future__ import annotations

import numpy as np


def mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a bijective scramble of uint64 values (a new array)."""
    x = np.asarray(x, dtype=np.uint64).copy()
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def hash_weights(seed: int, shape: int | tuple[int, ...]) -> np.ndarray:
    """Odd uint64 weights of the given shape, the same for the same seed."""
    n = int(np.prod(shape))
    counter = np.arange(1, n + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(seed % 2**64)
    return (mix(counter) | np.uint64(1)).reshape(shape)
