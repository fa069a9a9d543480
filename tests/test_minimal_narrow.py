"""`minimal_dfa` over an int32 table (composition's, read where it is; a settled one never widened) gives the
same tables, byte for byte, as over the same table in int64, settled or not; and checks the int32 entries as it
checks int64 ones."""

from __future__ import annotations

import random

import numpy as np
import pytest

from pda.kernels.partition import minimal_dfa
from tests.test_minimal_kernel import python_steps, random_dfa


@pytest.mark.parametrize("acyclic", [True, False])
@pytest.mark.parametrize("settled", [True, False])
def test_int32_tables_give_the_int64_result(acyclic: bool, settled: bool) -> None:
    rng = random.Random(11 + 2 * acyclic + settled)
    for _ in range(300):
        trans, accept, classes = random_dfa(rng, acyclic)
        wide = minimal_dfa(trans, accept, classes, settled)
        narrow = minimal_dfa(trans.astype(np.int32), accept, classes, settled)
        for a, b in zip(wide, narrow):
            assert a.dtype == b.dtype and np.array_equal(a, b)
        if not settled:
            for a, b in zip(python_steps(trans, accept, classes), narrow):
                assert np.array_equal(a, b)


def test_settled_int32_table_keeps_its_states_and_merges_equal_columns() -> None:
    # a chain a -> b -> c over three columns where columns 1 and 2 agree everywhere: two classes, three states + dead
    trans = np.array([[1, -1, -1], [2, 2, 2], [-1, -1, -1]], dtype=np.int32)
    accept = np.array([False, False, True])
    classes = np.zeros(256, dtype=np.int64)
    classes[ord("b")] = 1
    classes[ord("c")] = 2
    byte_class, table, accepting = minimal_dfa(trans, accept, classes, True)
    assert table.shape == (4, 2)
    assert table.tolist() == [[1, 3], [2, 2], [3, 3], [3, 3]]
    assert accepting.tolist() == [False, False, True, False]
    assert byte_class[ord("b")] == byte_class[ord("c")] == 1 and byte_class[0] == 0


def test_bad_int32_entries_are_refused() -> None:
    classes = np.zeros(256, dtype=np.int64)
    for bad in (2, -2):
        with pytest.raises(ValueError):
            minimal_dfa(np.array([[bad], [0]], dtype=np.int32), np.array([False, True]), classes, True)
