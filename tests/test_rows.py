"""The row writers and the mask comparison (`pda.rows`): the compiled `pda._rows` and the numpy fallback agree with
a plain reference.

Both are checked on random rows, widths narrower and wider than the source, and every
layout they must refuse, so that a matcher gives the same masks with or without a C
compiler at install.
"""

from __future__ import annotations

import shutil
from types import SimpleNamespace

import numpy as np
import pytest

from pda import rows
from pda.kernels.compose import ExtendedMask

WRITERS = [pytest.param(SimpleNamespace(copy_row=rows.numpy_copy_row,
                                        same_words=rows.numpy_same_words, error=rows.NumpyBitmaskLayoutError),
                        id="numpy")]
try:
    from pda import _rows

    WRITERS.append(pytest.param(SimpleNamespace(copy_row=_rows.copy_row,
                                                same_words=_rows.same_words, error=_rows.BitmaskLayoutError),
                                id="native"))
except ImportError:
    WRITERS.append(pytest.param(None, id="native", marks=pytest.mark.skip(
        reason="pda._rows is not built here (no C compiler at install): the numpy writers serve")))


def reference_scatter(width: int, words: np.ndarray, bits: np.ndarray, lo: int, hi: int) -> np.ndarray:
    out = np.zeros(width, dtype=np.int32)
    for w, b in zip(words[lo:hi].tolist(), bits[lo:hi].tolist()):
        if w < width:
            out[w] = b
    return out


@pytest.mark.parametrize("writer", WRITERS)
def test_copy_row_truncates_and_zero_pads(writer: SimpleNamespace) -> None:
    rng = np.random.default_rng(0)
    mask = rng.integers(-2**31, 2**31, size=50, dtype=np.int64).astype(np.int32)
    for width in (1, 49, 50, 51, 200):
        bitmask = np.full((3, width), -1, dtype=np.int32)
        writer.copy_row(bitmask, 1, mask)
        expected = np.zeros(width, dtype=np.int32)
        n = min(width, len(mask))
        expected[:n] = mask[:n]
        assert np.array_equal(bitmask[1], expected)
        assert (bitmask[0] == -1).all() and (bitmask[2] == -1).all()


@pytest.mark.parametrize("writer", WRITERS)
def test_copy_row_writes_an_extended_mask_as_its_base_with_its_ids(writer: SimpleNamespace) -> None:
    """An `ExtendedMask` is written as its base would be (truncated, zero past it; None: zeros), with its ids' bits
    set where the row holds them."""
    rng = np.random.default_rng(3)
    for trial in range(200):
        base = None if trial % 5 == 0 else rng.integers(-2**31, 2**31, size=int(rng.integers(1, 60)),
                                                        dtype=np.int64).astype(np.int32)
        ids = rng.integers(0, 64 * 32, size=int(rng.integers(0, 30))).astype(np.int32)
        width = int(rng.integers(1, 80))
        expected = np.zeros(width, dtype=np.int32)
        if base is not None:
            n = min(width, len(base))
            expected[:n] = base[:n]
        for t in ids.tolist():
            if t >> 5 < width:
                expected.view(np.uint32)[t >> 5] |= np.uint32(1 << (t & 31))
        bitmask = np.full((2, width), -1, dtype=np.int32)
        writer.copy_row(bitmask, trial % 2, ExtendedMask(base, ids))
        assert np.array_equal(bitmask[trial % 2], expected) and (bitmask[1 - trial % 2] == -1).all()


@pytest.mark.parametrize("writer", WRITERS)
def test_scattered_rows_equal_reference(writer: SimpleNamespace) -> None:
    rng = np.random.default_rng(1)
    for trial in range(200):
        n = int(rng.integers(0, 40))
        words = np.sort(rng.choice(120, size=n, replace=False)).astype(np.intp)
        bits = rng.integers(-2**31, 2**31, size=n, dtype=np.int64).astype(np.int32)
        lo = int(rng.integers(0, n + 1))
        hi = int(rng.integers(lo, n + 1))
        width = int(rng.integers(1, 130))
        bitmask = np.full((2, width), -1, dtype=np.int32)
        writer.copy_row(bitmask, trial % 2, (words, bits, lo, hi))
        assert np.array_equal(bitmask[trial % 2], reference_scatter(width, words, bits, lo, hi))
        assert (bitmask[1 - trial % 2] == -1).all()


@pytest.mark.parametrize("writer", WRITERS)
def test_layouts_the_writers_refuse(writer: SimpleNamespace) -> None:
    """Anything but a writable C-contiguous 2-D int32 array is refused with the layout error (a TypeError)."""
    mask = np.arange(8, dtype=np.int32)
    words, bits = np.arange(4, dtype=np.intp), np.ones(4, dtype=np.int32)
    read_only = np.zeros((1, 8), dtype=np.int32)
    read_only.flags.writeable = False
    for bad in (np.zeros(8, dtype=np.int32), np.zeros((1, 8), dtype=np.int64), np.zeros((1, 8), dtype=np.uint32),
                np.zeros((1, 16), dtype=np.int32)[:, ::2], np.zeros((2, 8), dtype=np.int32).T,
                read_only, np.zeros((1, 1, 8), dtype=np.int32), [[0] * 8]):
        with pytest.raises(writer.error):
            writer.copy_row(bad, 0, mask)
        with pytest.raises(writer.error):
            writer.copy_row(bad, 0, (words, bits, 0, 4))
    assert issubclass(writer.error, TypeError)
    good = np.zeros((2, 8), dtype=np.int32)
    for row in (-1, 2):
        with pytest.raises(IndexError, match="outside a bitmask of 2 rows"):
            writer.copy_row(good, row, mask)
    for lo, hi in ((-1, 2), (3, 2), (0, 5)):
        with pytest.raises(IndexError, match="outside the 4 packed words"):
            writer.copy_row(good, 0, (words, bits, lo, hi))
    assert not good.any()


def test_the_compiled_writer_is_built_where_a_compiler_is() -> None:
    """`pip install` builds pda._rows when a C compiler is present; the fast path must not vanish silently."""
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler here: the numpy writers serve")
    assert rows.NATIVE, "pda._rows is missing: reinstall with `pip install -e .` to build it"


@pytest.mark.parametrize("writer", WRITERS)
def test_same_words_is_word_for_word_equality(writer: SimpleNamespace) -> None:
    """Equal masks compare equal; one flipped bit anywhere, or another length, does not."""
    rng = np.random.default_rng(2)
    for trial in range(100):
        n = int(rng.integers(0, 300))
        a = rng.integers(-2**31, 2**31, size=n, dtype=np.int64).astype(np.int32)
        assert writer.same_words(a, a.copy())
        if n:
            b = a.copy()
            at = int(rng.integers(0, n))
            b[at] ^= np.int32(1 << int(rng.integers(0, 31)))
            assert not writer.same_words(a, b)
        assert not writer.same_words(a, np.append(a, np.int32(0)))
