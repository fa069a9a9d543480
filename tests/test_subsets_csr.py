"""`pda.kernels.subsets.csr` (an NFA held as lists read into CSR arrays in C) against the same arrays built in Python."""

from __future__ import annotations

import random
from itertools import accumulate, chain

import numpy as np
import pytest

from pda.kernels import subsets


def python_csr(eps: list[list[int]], edges: list[list[tuple[tuple[int, ...], int]]]) -> list[list[int]]:
    flat = list(chain.from_iterable(edges))
    return [
        [0, *accumulate(map(len, eps))],
        list(chain.from_iterable(eps)),
        [0, *accumulate(map(len, edges))],
        [0, *accumulate(len(atoms) for atoms, _ in flat)],
        [a for atoms, _ in flat for a in atoms],
        [target for _, target in flat],
    ]


def test_random_nfas_read_as_python_reads_them() -> None:
    rng = random.Random(5)
    for _ in range(200):
        m = rng.randint(0, 12)
        eps = [[rng.randrange(m) for _ in range(rng.randint(0, 3))] for _ in range(m)]
        edges = [[(tuple(sorted(rng.sample(range(40), rng.randint(0, 4)))), rng.randrange(m))
                  for _ in range(rng.randint(0, 3))] for _ in range(m)]
        found = subsets.csr(eps, edges)
        assert all(a.dtype == np.int64 for a in found)
        assert [a.tolist() for a in found] == python_csr(eps, edges)


@pytest.mark.parametrize("eps, edges", [
    ([[0]], []),                      # one list per state in both
    ([(0,)], [[]]),                   # a state's successors must be a list
    ([[]], [[((0,), "x")]]),          # targets are ints
    ([[]], [[([0], 0)]]),             # atoms are a tuple
    ([[1.5]], [[]]),                  # successors are ints
    ([[]], [[((0,), 0, 1)]]),         # an edge is a pair
])
def test_anything_else_is_a_type_error(eps: list, edges: list) -> None:
    with pytest.raises(TypeError):
        subsets.csr(eps, edges)
