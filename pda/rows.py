"""Writing token-mask rows into a caller's packed int32 bitmask: the last stage of every step.

A step's mask, its row source (`RowSource`), is either a memoised packed row (a
shared mask, or one extended by a few token ids, `pda.kernels.compose.ExtendedMask`)
or, for a finite-set state, a zero row with a few precomputed words set (a
`(words, bits, lo, hi)` tuple: word `words[i]` set to `bits[i]` for lo <= i < hi). `copy_row` writes one
source into one row; `write_rows` a batch's sources into their rows in one call,
optionally from several threads (then without the interpreter lock). The
compiled helper `pda._rows` (pda/_rows.c, built at install where a C compiler is
present) does either in one call, about 0.2 µs a row on the Qwen2 width; the numpy
versions here have the same semantics and serve when it was not built (`NATIVE`
says which; they write from the calling thread, under the lock).

Semantics: the destination is row `row` of a C-contiguous 2-D int32 array; words
past the row's width are dropped, words past the source are zero. Any other
layout raises `BitmaskLayoutError` (a `TypeError`), after which the caller takes
its general path. `write_rows` checks every row (inside the bitmask, none twice) and
every source before it writes any row.

`same_words(a, b)` says whether two int32 masks are equal word for word: the step
masks' dedupe confirms every candidate so, and comparing two 19 KB rows through
`tobytes` copied both (~1.2 us hot, two fresh allocations cold; memcmp ~0.3 us).
"""

from __future__ import annotations

from typing import Any, Callable, Union

import numpy as np

from pda.kernels.compose import ExtendedMask

_INT32 = np.dtype(np.int32)


class NumpyBitmaskLayoutError(TypeError):
    """The bitmask is not a C-contiguous 2-D int32 array (numpy row writers)."""


def _check_layout(bitmask: Any) -> None:
    if (type(bitmask) is not np.ndarray or bitmask.dtype != _INT32 or bitmask.ndim != 2
            or not bitmask.flags.c_contiguous or not bitmask.flags.writeable):
        raise NumpyBitmaskLayoutError("bitmask must be a writable C-contiguous 2-D int32 array")


def _row(bitmask: Any, row: int) -> np.ndarray:
    _check_layout(bitmask)
    if not 0 <= row < len(bitmask):
        raise IndexError(f"row {row} is outside a bitmask of {len(bitmask)} rows")
    return bitmask[row]


# What a row is written from: a packed mask, an extended one, or a plain finite-set state's (words, bits, lo, hi).
RowSource = Union[np.ndarray, ExtendedMask, tuple[np.ndarray, np.ndarray, int, int]]


def numpy_copy_row(bitmask: Any, row: int, mask: RowSource) -> None:
    """Copy `mask` into row `row`: truncated to the row's width, zero past its end (an `ExtendedMask`: its base
    so, then its ids' bits; a tuple: as `numpy_scatter_row`)."""
    if type(mask) is tuple:
        numpy_scatter_row(bitmask, row, *mask)
        return
    out = _row(bitmask, row)
    words = mask.base if type(mask) is ExtendedMask else mask
    n = 0 if words is None else min(len(out), len(words))
    if n:
        out[:n] = words[:n]
    out[n:] = 0
    if type(mask) is ExtendedMask:
        ids = np.frombuffer(mask.ids, dtype=np.int32)
        ids = ids[ids >> 5 < len(out)]
        np.bitwise_or.at(out.view(np.uint32), ids >> 5, np.left_shift(np.uint32(1), (ids & 31).astype(np.uint32)))


def numpy_scatter_row(bitmask: Any, row: int, words: np.ndarray, bits: np.ndarray, lo: int, hi: int) -> None:
    """Zero row `row`, then set word `words[i]` to `bits[i]` for `lo <= i < hi` (words past the width dropped)."""
    out = _row(bitmask, row)
    if not 0 <= lo <= hi <= min(len(words), len(bits)):
        raise IndexError(f"range {lo}:{hi} is outside the {len(words)} packed words")
    where, values = words[lo:hi], bits[lo:hi]
    keep = where < len(out)
    out[...] = 0
    out[where[keep]] = values[keep]


def check_distinct(rows: list[int]) -> None:
    """ValueError naming the first row that appears twice in one batch (its rows are written at once)."""
    seen: set[int] = set()
    for row in rows:
        if row in seen:
            raise ValueError(f"row {row} appears twice in one batch")
        seen.add(row)


def numpy_write_rows(bitmask: Any, rows: list[int], sources: list[RowSource | None], threads: int) -> None:
    """`numpy_copy_row(bitmask, rows[i], sources[i])` for every source not None (from this thread, whatever
    `threads` says), every row and source checked before any row is written."""
    if not 1 <= threads <= MAX_ROW_THREADS:
        raise ValueError(f"threads must be 1 to {MAX_ROW_THREADS}, got {threads}")
    _check_layout(bitmask)
    for row in rows:
        if not 0 <= row < len(bitmask):
            raise IndexError(f"row {row} is outside a bitmask of {len(bitmask)} rows")
    check_distinct(rows)
    written = [(row, source) for row, source in zip(rows, sources) if source is not None]
    staged = np.empty((len(written), bitmask.shape[1]), dtype=np.int32)
    for k, (_, source) in enumerate(written):
        numpy_copy_row(staged, k, source)
    bitmask[[row for row, _ in written]] = staged


def numpy_same_words(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two int32 masks hold the same words."""
    return a.tobytes() == b.tobytes()


copy_row: Callable[[Any, int, RowSource], None]
write_rows: Callable[[Any, list[int], list[RowSource | None], int], None]
same_words: Callable[[np.ndarray, np.ndarray], bool]
try:
    from pda._rows import MAX_ROW_THREADS, BitmaskLayoutError, copy_row, same_words, write_rows
    NATIVE = True
except ImportError:  # built without a C compiler: the numpy versions, same results
    BitmaskLayoutError = NumpyBitmaskLayoutError
    MAX_ROW_THREADS = 64
    copy_row, same_words, write_rows = numpy_copy_row, numpy_same_words, numpy_write_rows
    NATIVE = False
