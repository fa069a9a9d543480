"""The minimisation kernels (`pda.kernels.partition`) against Moore's rounds and a reachability fixpoint (`pda.reference`)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from pda.kernels.partition import coaccessible, coarsest_partition
from pda.reference import reference_coaccessible, reference_partition


def _canonical(blocks) -> list[int]:
    """Block ids renumbered by first appearance: equal partitions give equal lists."""
    ids: dict[int, int] = {}
    return [ids.setdefault(int(b), len(ids)) for b in blocks]


def _random_dfa(rng: random.Random) -> tuple[np.ndarray, np.ndarray]:
    m, k = rng.randint(1, 60), rng.randint(1, 6)
    dead = rng.random()
    trans = np.array([[rng.randrange(m) if rng.random() > dead else -1 for _ in range(k)] for _ in range(m)],
                     dtype=np.int64)
    if rng.random() < 0.3:  # chains and copies: many equivalent states, long refinement
        for q in range(m - 1):
            trans[q, 0] = q + 1
    initial = np.array([rng.randrange(rng.randint(1, 3)) for _ in range(m)], dtype=np.int64)
    return trans, initial


def test_the_kernel_gives_moores_partition_on_random_partial_dfas() -> None:
    rng = random.Random(19)
    for _ in range(2000):
        trans, initial = _random_dfa(rng)
        assert _canonical(coarsest_partition(trans, initial)) == reference_partition(trans, initial)


def _random_acyclic_dfa(rng: random.Random) -> tuple[np.ndarray, np.ndarray]:
    """Edges only to later states, states then shuffled: the kernel's one-pass (acyclic) path."""
    m, k = rng.randint(1, 80), rng.randint(1, 6)
    dead = rng.random()
    trans = np.full((m, k), -1, dtype=np.int64)
    for q in range(m - 1):
        for c in range(k):
            if rng.random() > dead:
                # near successors often: chains of copies, many equivalent states
                trans[q, c] = rng.randint(q + 1, min(m - 1, q + 3) if rng.random() < 0.7 else m - 1)
    order = np.array(rng.sample(range(m), m), dtype=np.int64)  # old state order[i] becomes i
    renumber = np.argsort(order)
    trans = np.where(trans >= 0, renumber[np.maximum(trans, 0)], -1)[order]
    initial = np.array([rng.randrange(rng.randint(1, 3)) for _ in range(m)], dtype=np.int64)
    return trans, initial


def test_the_kernel_gives_moores_partition_on_random_acyclic_dfas() -> None:
    rng = random.Random(23)
    for _ in range(2000):
        trans, initial = _random_acyclic_dfa(rng)
        assert _canonical(coarsest_partition(trans, initial)) == reference_partition(trans, initial)


def test_the_trim_kernel_gives_the_fixpoints_states_on_random_partial_dfas() -> None:
    rng = random.Random(29)
    for _ in range(2000):
        trans, initial = _random_dfa(rng)
        accepting = initial == 1
        assert coaccessible(trans, accepting).tolist() == reference_coaccessible(trans, accepting)


def test_the_trim_reaches_back_along_a_long_chain() -> None:
    """x{5000}y|z: every state of the chain reaches the end; a branch off it that dies does not."""
    m = 5003
    trans = np.full((m, 2), -1, dtype=np.int64)
    trans[np.arange(m - 3), 0] = np.arange(1, m - 2)
    trans[m - 3, 1] = m - 2
    trans[0, 1] = m - 1  # a branch to a state with no way out
    good = coaccessible(trans, np.arange(m) == m - 2)
    assert good[: m - 1].all() and not good[m - 1]


def test_a_counted_chain_keeps_every_state_apart() -> None:
    """x{5000}: every state is at another distance from the end (one of Moore's worst cases; acyclic)."""
    m = 5001
    trans = np.full((m, 2), -1, dtype=np.int64)
    trans[np.arange(m - 1), 0] = np.arange(1, m)
    initial = np.zeros(m, dtype=np.int64)
    initial[-1] = 1
    assert len(set(coarsest_partition(trans, initial).tolist())) == m


def test_initial_ids_may_be_any_ints() -> None:
    trans = np.array([[1], [2], [-1]], dtype=np.int64)
    assert _canonical(coarsest_partition(trans, np.array([7, 7, -3]))) == [0, 1, 2]


@pytest.mark.parametrize("trans, initial", [
    (np.array([[5]], dtype=np.int64), np.array([0])),  # a successor that is no state
    (np.array([[-2]], dtype=np.int64), np.array([0])),
    (np.zeros((2, 1), dtype=np.int64), np.array([0])),  # initial blocks of the wrong length
    (np.zeros(3, dtype=np.int64), np.array([0, 0, 0])),  # not 2-D
])
def test_bad_input_raises_value_error(trans: np.ndarray, initial: np.ndarray) -> None:
    with pytest.raises(ValueError):
        coarsest_partition(trans, initial)
    with pytest.raises(ValueError):
        coaccessible(trans, initial == 0)
