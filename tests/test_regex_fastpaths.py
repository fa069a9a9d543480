"""The fast paths for small terminals against the general constructions they stand in for."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pda.kernels.partition import column_groups, row_groups
from pda.regex import charset as cs
from pda.regex import utf8

# Cuts near the places UTF-8 and the surrogates split the code points, and anywhere.
_POINTS = st.one_of(
    st.integers(0, 300),
    st.sampled_from([0x7F, 0x80, 0x7FF, 0x800, 0xFFF, 0x1000, 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x3FFFF,
                     0x40000, 0x10FFFF]),
    st.integers(0, cs.MAX_CP),
)
_SETS = st.lists(st.lists(st.tuples(_POINTS, _POINTS), max_size=6), max_size=7).map(
    lambda sets: [cs.normalise([(min(a, b), max(a, b)) for a, b in s]) for s in sets]
)


def _alphabet(sets: list[cs.CharSet], exact: bool) -> cs.Alphabet:
    alphabet = cs.Alphabet.__new__(cs.Alphabet)
    distinct = list(dict.fromkeys(sets))
    if exact:
        alphabet._exact(distinct)
    else:
        alphabet._hashed(distinct)
    return alphabet


@settings(max_examples=400, deadline=None)
@given(_SETS)
def test_exact_alphabet_equals_the_hashed_one(sets: list[cs.CharSet]) -> None:
    exact, hashed = _alphabet(sets, True), _alphabet(sets, False)
    assert exact.bounds.tolist() == hashed.bounds.tolist()
    assert exact.interval_atom.tolist() == hashed.interval_atom.tolist()
    assert exact.n_atoms == hashed.n_atoms
    for s in sets:
        assert exact.atoms(s) == hashed.atoms(s)


def test_alphabet_takes_the_hashed_path_past_the_small_limit() -> None:
    many = [tuple((2 * i, 2 * i) for i in range(j, j + 40)) for j in range(0, 400, 30)]
    assert sum(map(len, many)) > cs.SMALL_ALPHABET_RANGES
    built = cs.Alphabet(many)
    exact = _alphabet(many, True)
    assert built.interval_atom.tolist() == exact.interval_atom.tolist()
    assert [built.atoms(s) for s in many] == [exact.atoms(s) for s in many]


def _walk_atoms(trans: np.ndarray, alphabet: cs.Alphabet, text: list[int]) -> int:
    s = 0
    for cp in text:
        s = int(trans[s, alphabet.atom_of(np.array([cp]))[0]])
        if s < 0:
            return -1
    return s


def _walk_bytes(byte_trans: np.ndarray, data: bytes) -> int:
    s = 0
    for b in data:
        s = int(byte_trans[s, b])
        if s < 0:
            return -1
    return s


@settings(max_examples=150, deadline=None)
@given(_SETS, st.data())
def test_utf8_expansion_reads_each_character_as_its_atom(sets: list[cs.CharSet], data: st.DataObject) -> None:
    """Every valid character moves the byte DFA as its atom moves the atom DFA; an outer state
    is left for an inner one only inside a character, and invalid UTF-8 dies."""
    alphabet = cs.Alphabet(sets)
    n = data.draw(st.integers(1, 4))
    trans = np.array(data.draw(st.lists(st.lists(st.integers(-1, n - 1), min_size=alphabet.n_atoms,
                                                 max_size=alphabet.n_atoms), min_size=n, max_size=n)),
                     dtype=np.int64).reshape(n, alphabet.n_atoms)
    byte_trans = utf8.expand(trans, alphabet)
    assert byte_trans.shape[1] == 256
    code_points = st.one_of(_POINTS, st.sampled_from([lo for s in sets for lo, _ in s] or [0]))
    for _ in range(20):
        text = [cp for cp in data.draw(st.lists(code_points, max_size=4)) if not 0xD800 <= cp <= 0xDFFF]
        assert _walk_bytes(byte_trans, "".join(map(chr, text)).encode()) == _walk_atoms(trans, alphabet, text)
    for bad in (b"\xc0\x80", b"\xe0\x80\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xf5", b"\x80"):
        assert _walk_bytes(byte_trans, bad) == -1


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_row_groups_number_equal_rows_by_first_appearance(data: st.DataObject) -> None:
    k, m = data.draw(st.integers(1, 12)), data.draw(st.integers(0, 6))
    table = np.array(data.draw(st.lists(st.lists(st.integers(-1, 2), min_size=m, max_size=m), min_size=k,
                                        max_size=k)), dtype=np.int64).reshape(k, m)
    rows = np.array(data.draw(st.lists(st.integers(0, k - 1), max_size=40)), dtype=np.int64)
    group, first = row_groups(table, rows)
    ids: dict[tuple[int, ...], int] = {}
    expected = [ids.setdefault(tuple(table[r].tolist()), len(ids)) for r in rows.tolist()]
    assert group.tolist() == expected
    assert [tuple(table[r].tolist()) for r in first.tolist()] == list(ids)


def test_row_groups_check_their_indices() -> None:
    with pytest.raises(ValueError):
        row_groups(np.zeros((3, 2), dtype=np.int64), np.array([0, 3]))


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_column_groups_are_row_groups_of_the_transposed_table(data: st.DataObject) -> None:
    m, k = data.draw(st.integers(0, 6)), data.draw(st.integers(1, 12))
    table = np.array(data.draw(st.lists(st.lists(st.integers(-1, 2), min_size=k, max_size=k), min_size=m,
                                        max_size=m)), dtype=np.int64).reshape(m, k)
    columns = np.array(data.draw(st.lists(st.integers(0, k - 1), max_size=40)), dtype=np.int64)
    group, first = column_groups(table, columns)
    expected_group, expected_first = row_groups(np.ascontiguousarray(table.T), columns)
    assert group.tolist() == expected_group.tolist() and first.tolist() == expected_first.tolist()


def _hash_step(h: int, x: int) -> int:
    """The kernel's hash step (`hash_step` in pda/kernels/_partition.c), over uint64."""
    h = (h ^ (x & (2**64 - 1))) * 0xBF58476D1CE4E5B9 % 2**64
    return h ^ (h >> 29)


def test_columns_whose_hashes_collide_are_told_apart() -> None:
    """Columns are grouped by hash and then checked: two different columns with one hash stay apart."""
    seed = 0x9E3779B97F4A7C15
    a1, b1, a2 = 1, 2, 3
    # the step xors x in before a bijection: equal hashes once h1 ^ b1 == h2 ^ b2
    b2 = _hash_step(seed, a1) ^ b1 ^ _hash_step(seed, a2)
    b2 = b2 - 2**64 if b2 >= 2**63 else b2
    table = np.array([[a1, a2, a1], [b1, b2, b1]], dtype=np.int64)
    assert _hash_step(_hash_step(seed, a1), b1) == _hash_step(_hash_step(seed, a2), b2)
    group, first = column_groups(table, np.array([0, 1, 2, 1], dtype=np.int64))
    assert group.tolist() == [0, 1, 0, 1] and first.tolist() == [0, 1]


def test_column_groups_check_their_indices() -> None:
    with pytest.raises(ValueError):
        column_groups(np.zeros((3, 2), dtype=np.int64), np.array([0, 2]))
