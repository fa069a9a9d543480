"""Sets of code points, with the meaning Python's `re` gives them, and their UTF-8 form.

A `CharSet` is a sorted tuple of disjoint, non-adjacent inclusive ranges
`(lo, hi)` of code points; surrogates (U+D800..U+DFFF) never belong to one,
because they have no UTF-8 encoding. Case-insensitive sets follow CPython's
`re/_compiler.py` and `_sre` exactly (simple lowercase mapping, the extra
equivalences of `re._casefix`, ASCII-only folding under the `a` flag); the
category sets (`\\d \\w \\s`) are read off `re` itself, so they are whatever
this Python's `re` says they are.
"""

from __future__ import annotations

import re
from functools import lru_cache

import _sre
import numpy as np
from re import _constants as C
from re._casefix import _EXTRA_CASES

CharSet = tuple[tuple[int, int], ...]

MAX_CP = 0x10FFFF
N_CP = MAX_CP + 1
SURROGATES = (0xD800, 0xDFFF)
EMPTY: CharSet = ()
ALL: CharSet = ((0, SURROGATES[0] - 1), (SURROGATES[1] + 1, MAX_CP))


def merge_ranges(ranges: list[tuple[int, int]] | tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    """Sort and merge overlapping or adjacent code-point ranges."""
    out: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return tuple((lo, hi) for lo, hi in out)


def normalise(ranges: list[tuple[int, int]] | tuple[tuple[int, int], ...]) -> CharSet:
    """Sort, merge overlapping/adjacent ranges and cut out the surrogates."""
    cut: list[tuple[int, int]] = []
    for lo, hi in merge_ranges(ranges):
        if hi < SURROGATES[0] or lo > SURROGATES[1]:
            cut.append((lo, hi))
            continue
        if lo < SURROGATES[0]:
            cut.append((lo, SURROGATES[0] - 1))
        if hi > SURROGATES[1]:
            cut.append((SURROGATES[1] + 1, hi))
    return tuple(cut)


def complement(cs: CharSet) -> CharSet:
    """Every scalar value not in `cs`."""
    out: list[tuple[int, int]] = []
    nxt = 0
    for lo, hi in cs:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= MAX_CP:
        out.append((nxt, MAX_CP))
    return normalise(out)


def union(*sets: CharSet) -> CharSet:
    return normalise([r for s in sets for r in s])


def from_mask(mask: np.ndarray) -> CharSet:
    """Ranges of the True entries of a boolean array over all code points."""
    m = np.concatenate(([False], mask.astype(bool), [False]))
    d = np.flatnonzero(m[1:] != m[:-1])
    return normalise([(int(a), int(b) - 1) for a, b in zip(d[0::2], d[1::2])])


def to_mask(cs: CharSet) -> np.ndarray:
    mask = np.zeros(N_CP, dtype=bool)
    for lo, hi in cs:
        mask[lo : hi + 1] = True
    return mask


# ---------------------------------------------------------------- tables (lazy, cached)


@lru_cache(maxsize=1)
def _all_chars() -> str:
    return "".join(map(chr, range(N_CP)))


@lru_cache(maxsize=None)
def _category_mask(category: int, ascii_only: bool) -> np.ndarray:
    """Which code points `re` puts in a category (\\d \\w \\s and negations).

    Asking `re` itself keeps the answer identical to the running Python's.
    """
    name = {
        C.CATEGORY_DIGIT: r"\d",
        C.CATEGORY_NOT_DIGIT: r"\D",
        C.CATEGORY_SPACE: r"\s",
        C.CATEGORY_NOT_SPACE: r"\S",
        C.CATEGORY_WORD: r"\w",
        C.CATEGORY_NOT_WORD: r"\W",
    }[category]
    flags = re.ASCII if ascii_only else 0
    kept = re.sub(f"[^{name}]", "", _all_chars(), flags=flags)
    cps = np.frombuffer(kept.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    mask = np.zeros(N_CP, dtype=bool)
    mask[cps] = True
    return mask


@lru_cache(maxsize=None)
def category_set(category: int, ascii_only: bool) -> CharSet:
    return from_mask(_category_mask(category, ascii_only))


@lru_cache(maxsize=2)
def _lower_table(ascii_only: bool) -> np.ndarray:
    """`_sre`'s own lowercase mapping for every code point (what `re.I` compares)."""
    if ascii_only:
        table = np.arange(N_CP, dtype=np.uint32)
        table[ord("A") : ord("Z") + 1] += 32
        return table
    return np.fromiter(map(_sre.unicode_tolower, range(N_CP)), dtype=np.uint32, count=N_CP)


@lru_cache(maxsize=1)
def _upper_table() -> np.ndarray:
    """Simple uppercase mapping (used by `_sre` for non-BMP ranges under re.I)."""
    def up(c: int) -> int:
        u = chr(c).upper() if not SURROGATES[0] <= c <= SURROGATES[1] else chr(c)
        return ord(u) if len(u) == 1 else c

    return np.fromiter(map(up, range(N_CP)), dtype=np.uint32, count=N_CP)


@lru_cache(maxsize=2)
def _lower_preimages(ascii_only: bool) -> dict[int, tuple[int, ...]]:
    """lowered code point -> the other code points that lower to it."""
    table = _lower_table(ascii_only)
    moved = np.flatnonzero(table != np.arange(N_CP, dtype=np.uint32))
    pre: dict[int, list[int]] = {}
    for x in moved.tolist():
        pre.setdefault(int(table[x]), []).append(x)
    return {k: tuple(v) for k, v in pre.items()}


def _lowers_to(targets: set[int], ascii_only: bool) -> CharSet:
    """All x whose lowercase is in `targets`."""
    table = _lower_table(ascii_only)
    pre = _lower_preimages(ascii_only)
    out = [(y, y) for y in targets if table[y] == y]
    out += [(x, x) for y in targets for x in pre.get(y, ())]
    return normalise(out)


def _iscased(c: int, ascii_only: bool) -> bool:
    return bool(_sre.ascii_iscased(c) if ascii_only else _sre.unicode_iscased(c))


@lru_cache(maxsize=4096)
def literal_set(c: int, ignorecase: bool, ascii_only: bool) -> CharSet:
    """What `re` matches for one literal character (LITERAL opcode)."""
    if not ignorecase or not _iscased(c, ascii_only):
        return normalise([(c, c)])
    lo = _sre.ascii_tolower(c) if ascii_only else _sre.unicode_tolower(c)
    targets = {lo}
    if not ascii_only:
        targets.update(_EXTRA_CASES.get(lo, ()))
    return _lowers_to(targets, ascii_only)


def class_set(items: list, ignorecase: bool, ascii_only: bool) -> CharSet:
    """What `re` matches for a character class (IN opcode), following `_optimize_charset`."""
    negate = any(op is C.NEGATE for op, _ in items)
    members = [(op, av) for op, av in items if op is not C.NEGATE]
    hascased = False
    if ignorecase:
        for op, av in members:
            if op is C.LITERAL:
                hascased = hascased or av > 0xFFFF or _iscased(av, ascii_only)
            elif op is C.RANGE:
                hascased = hascased or av[1] > 0xFFFF or any(
                    _iscased(c, ascii_only) for c in range(av[0], av[1] + 1)
                )
    if not hascased:
        parts: list[CharSet] = []
        for op, av in members:
            if op is C.LITERAL:
                parts.append(((av, av),))
            elif op is C.RANGE:
                parts.append(((av[0], av[1]),))
            elif op is C.CATEGORY:
                parts.append(category_set(av, ascii_only))
        cs = union(*parts)
        return complement(cs) if negate else cs
    # IN_IGNORE / IN_UNI_IGNORE: x matches iff the charset contains lower(x).
    lower = _lower_table(ascii_only)
    fixes = {} if ascii_only else _EXTRA_CASES
    charset = np.zeros(N_CP, dtype=bool)
    wide_ranges: list[tuple[int, int]] = []
    for op, av in members:
        if op is C.LITERAL:
            lo = int(lower[av])
            if lo > 0xFFFF:
                charset[av] = True  # _sre keeps non-BMP literals as written
            else:
                charset[lo] = True
                charset[list(fixes.get(lo, ()))] = True
        elif op is C.RANGE:
            a, b = av
            bmp_hi = min(b, 0xFFFF)
            if a <= bmp_hi:
                lowered = lower[a : bmp_hi + 1]
                charset[lowered] = True
                for lo in np.unique(lowered).tolist():
                    if lo in fixes:
                        charset[list(fixes[lo])] = True
            if b > 0xFFFF:
                wide_ranges.append((a, b))
        elif op is C.CATEGORY:
            charset |= _category_mask(av, ascii_only)
    ok = charset[lower]
    if wide_ranges:
        upper_of_lower = _upper_table()[lower]
        for a, b in wide_ranges:
            ok |= ((lower >= a) & (lower <= b)) | ((upper_of_lower >= a) & (upper_of_lower <= b))
    if negate:
        ok = ~ok
    return from_mask(ok)


def any_set(dotall: bool) -> CharSet:
    return ALL if dotall else complement(((0x0A, 0x0A),))


# ---------------------------------------------------------------- UTF-8

_UTF8_BOUNDS = ((0, 0x7F), (0x80, 0x7FF), (0x800, 0xFFFF), (0x10000, MAX_CP))


def _encode(c: int) -> bytes:
    return chr(c).encode("utf-8", "surrogatepass")


def _split_same_length(lo: int, hi: int, out: list[tuple[tuple[int, int], ...]]) -> None:
    """Split [lo, hi] (same UTF-8 length) into products of byte ranges (the classic way)."""
    if lo <= 0x7F:
        out.append(((lo, hi),))
        return
    n = len(_encode(lo))
    for i in range(1, n):
        m = (1 << (6 * i)) - 1  # low bits covered by the last i continuation bytes
        if lo & ~m != hi & ~m:
            if lo & m != 0:
                _split_same_length(lo, lo | m, out)
                _split_same_length((lo | m) + 1, hi, out)
                return
            if hi & m != m:
                _split_same_length(lo, (hi & ~m) - 1, out)
                _split_same_length(hi & ~m, hi, out)
                return
    a, b = _encode(lo), _encode(hi)
    out.append(tuple((a[i], b[i]) for i in range(n)))


@lru_cache(maxsize=8192)
def utf8_sequences(cs: CharSet) -> tuple[tuple[tuple[int, int], ...], ...]:
    """The byte-range sequences whose union is exactly the UTF-8 encodings of `cs`."""
    out: list[tuple[tuple[int, int], ...]] = []
    for lo, hi in cs:
        for blo, bhi in _UTF8_BOUNDS:
            a, b = max(lo, blo), min(hi, bhi)
            if a <= b:
                _split_same_length(a, b, out)
    return tuple(out)
