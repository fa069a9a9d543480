"""Code-point sets as sorted ranges, and the ECMA-262 classes the rest of this package names.

A `Ranges` is a tuple of inclusive (lo, hi) code-point pairs, sorted and merged
(`normalize`); surrogates are kept (a pattern may name them; they are never
accepted as text). `complement`, `subtract` and `intersect` keep that form.
"""

from __future__ import annotations

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

# ECMA ranges keep the surrogates (patterns may name them); merging is the regex layer's.
normalize = merge_ranges


def complement(ranges: Ranges) -> Ranges:
    """All code points not in `ranges` (surrogates included)."""
    return tuple(gaps(normalize(ranges)))


def subtract(a: Ranges, b: Ranges) -> Ranges:
    """Code points in `a` but not in `b`."""
    return intersect(a, complement(b))


def intersect(a: Ranges, b: Ranges) -> Ranges:
    """Code points in both `a` and `b`."""
    a, b = normalize(a), normalize(b)
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
    return normalize(out)

