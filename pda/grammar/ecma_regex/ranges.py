"""Code-point sets as sorted ranges, and the ECMA-262 classes the rest of this package names.

A `Ranges` is a tuple of inclusive (lo, hi) code-point pairs, sorted and merged
(`normalize`); surrogates are kept (a pattern may name them; they are never
accepted as text). `complement`, `subtract` and `intersect` keep that form, and
take a `Ranges` already in it as it is (checked, not sorted again).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from operator import itemgetter

from pda.regex.charset import MAX_CP, gaps, merge_ranges

Ranges = tuple[tuple[int, int], ...]

# ECMA-262 WhiteSpace and LineTerminator code points (the meaning of \s).
ECMA_SPACE: Ranges = (
    (0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
    (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF),
)
ECMA_LINE_TERMINATORS: Ranges = ((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029))
ASCII_DIGIT: Ranges = ((0x30, 0x39),)
ASCII_WORD: Ranges = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
SURROGATES = (0xD800, 0xDFFF)
ANY: Ranges = ((0, MAX_CP),)

_LO, _HI = itemgetter(0), itemgetter(1)


def normalize(ranges: list[tuple[int, int]] | tuple[tuple[int, int], ...]) -> Ranges:
    """Sort and merge overlapping or adjacent ranges (the regex layer's `merge_ranges`: ECMA ranges
    keep the surrogates); a tuple of pairs already sorted, disjoint and apart is returned as it is."""
    if type(ranges) is tuple and _is_normal(ranges):
        return ranges
    return merge_ranges(ranges)


def _is_normal(ranges: tuple) -> bool:
    """Whether `ranges` is a tuple of (lo, hi) tuples, each lo <= hi, each range ending at least two
    code points before the next begins (what `merge_ranges` returns)."""
    prev = -2
    for pair in ranges:
        if type(pair) is not tuple:
            return False
        lo, hi = pair
        if lo <= prev + 1 or hi < lo:
            return False
        prev = hi
    return True


def complement(ranges: Ranges) -> Ranges:
    """All code points not in `ranges` (surrogates included)."""
    return tuple(gaps(normalize(ranges)))


def subtract(a: Ranges, b: Ranges) -> Ranges:
    """Code points in `a` but not in `b`."""
    return intersect(a, complement(b))


def intersect(a: Ranges, b: Ranges) -> Ranges:
    """Code points in both `a` and `b`. Normal inputs give a normal output without merging (two
    pieces next to each other would mean two adjacent ranges in `a` or in `b`)."""
    a, b = normalize(a), normalize(b)
    if len(b) == 1:
        return clip(a, *b[0])
    if len(a) == 1:
        return clip(b, *a[0])
    out = []
    i = j = 0
    while i < len(a) and j < len(b):  # both sorted and disjoint: one merge pass
        (lo1, hi1), (lo2, hi2) = a[i], b[j]
        lo, hi = max(lo1, lo2), min(hi1, hi2)
        if lo <= hi:
            out.append((lo, hi))
        if hi1 < hi2:
            i += 1
        else:
            j += 1
    return tuple(out)



def clip(ranges: Ranges, lo: int, hi: int) -> Ranges:
    """The code points lo..hi of normal `ranges` (not checked), cut by bisection: a Unicode class
    of hundreds of ranges is cut to each hex-digit block, recursively, to spell its escapes."""
    i, j = bisect_left(ranges, lo, key=_HI), bisect_right(ranges, hi, key=_LO)
    if i >= j:
        return ()
    window = ranges[i:j]
    first, last = window[0], window[-1]
    if first[0] >= lo and last[1] <= hi:
        return window
    if j - i == 1:
        return ((max(first[0], lo), min(first[1], hi)),)
    return ((max(first[0], lo), first[1]), *window[1:-1], (last[0], min(last[1], hi)))
