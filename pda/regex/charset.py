"""Sets of code points, with the meaning Python's `re` gives them, and their atoms.

A `CharSet` is a sorted tuple of disjoint, non-adjacent inclusive ranges
`(lo, hi)` of code points; surrogates (U+D800..U+DFFF) never belong to one,
because they have no UTF-8 encoding. Case-insensitive sets follow CPython's
`re/_compiler.py` and `_sre` exactly (simple lowercase mapping, the extra
equivalences of `re._casefix`, ASCII-only folding under the `a` flag); the
category sets (`\\d \\w \\s`) are read off `re` itself, so they are whatever
this Python's `re` says they are.
"""

from __future__ import annotations

import bisect
import re
from functools import lru_cache

import _sre
import numpy as np
from re import _constants as C
from re._casefix import _EXTRA_CASES

from pda.arrays import distinct
from pda.regex.hashing import hash_weights

CharSet = tuple[tuple[int, int], ...]

MAX_CP = 0x10FFFF
N_CP = MAX_CP + 1
SURROGATES = (0xD800, 0xDFFF)
EMPTY: CharSet = ()
ALL: CharSet = ((0, SURROGATES[0] - 1), (SURROGATES[1] + 1, MAX_CP))


def merge_ranges(ranges: list[tuple[int, int]] | tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    """Sort and merge overlapping or adjacent code-point ranges."""
    if len(ranges) > 64:  # Unicode-wide classes: hundreds of ranges, merged in numpy
        a = np.array(ranges, dtype=np.int64).reshape(-1, 2)
        a = a[np.lexsort((a[:, 1], a[:, 0]))]
        reach = np.maximum.accumulate(a[:, 1])
        first = np.flatnonzero(np.concatenate(([True], a[1:, 0] > reach[:-1] + 1)))
        return tuple(zip(a[first, 0].tolist(), np.maximum.reduceat(a[:, 1], first).tolist()))
    out: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return tuple((lo, hi) for lo, hi in out)


def normalise(ranges: list[tuple[int, int]] | tuple[tuple[int, int], ...]) -> CharSet:
    """Sort, merge overlapping/adjacent ranges and cut out the surrogates."""
    merged = merge_ranges(ranges)
    # merged ranges are sorted and disjoint: those touching the surrogates are consecutive
    i = bisect.bisect_left([hi for _, hi in merged], SURROGATES[0])
    j = i
    while j < len(merged) and merged[j][0] <= SURROGATES[1]:
        j += 1
    cut: list[tuple[int, int]] = []
    for lo, hi in merged[i:j]:
        if lo < SURROGATES[0]:
            cut.append((lo, SURROGATES[0] - 1))
        if hi > SURROGATES[1]:
            cut.append((SURROGATES[1] + 1, hi))
    return merged[:i] + tuple(cut) + merged[j:]


def gaps(ranges: tuple[tuple[int, int], ...]) -> list[tuple[int, int]]:
    """The code points 0..MAX_CP outside sorted, disjoint `ranges` (surrogates included)."""
    out: list[tuple[int, int]] = []
    nxt = 0
    for lo, hi in ranges:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= MAX_CP:
        out.append((nxt, MAX_CP))
    return out


def complement(cs: CharSet) -> CharSet:
    """Every scalar value not in `cs`."""
    return normalise(gaps(cs))


def union(*sets: CharSet) -> CharSet:
    return normalise([r for s in sets for r in s])


def intersect(a: CharSet, b: CharSet) -> CharSet:
    """The code points in both sets."""
    return complement(union(complement(a), complement(b)))


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
    """Every code point, surrogates included, as one string (decoded in one call, not joined char by char)."""
    return np.arange(N_CP, dtype=np.uint32).tobytes().decode("utf-32-le", "surrogatepass")


@lru_cache(maxsize=None)
def _category_runs(category: int, ascii_only: bool) -> tuple[tuple[int, int], ...]:
    """The runs of code points `re` puts in a category (\\d \\w \\s and negations), as (first, last).

    Asking `re` itself keeps the answer identical to the running Python's; matching runs
    (a few hundred) costs a fifth of deleting the other characters.
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
    return tuple((m.start(), m.end() - 1) for m in re.finditer(f"[{name}]+", _all_chars(), flags=flags))


@lru_cache(maxsize=None)
def _category_mask(category: int, ascii_only: bool) -> np.ndarray:
    """`_category_runs` as a boolean array over all code points."""
    mask = np.zeros(N_CP, dtype=bool)
    for lo, hi in _category_runs(category, ascii_only):
        mask[lo : hi + 1] = True
    return mask


@lru_cache(maxsize=None)
def category_set(category: int, ascii_only: bool) -> CharSet:
    return normalise(_category_runs(category, ascii_only))


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
        return () if SURROGATES[0] <= c <= SURROGATES[1] else ((c, c),)  # `normalise([(c, c)])`
    lo = _sre.ascii_tolower(c) if ascii_only else _sre.unicode_tolower(c)
    targets = {lo}
    if not ascii_only:
        targets.update(_EXTRA_CASES.get(lo, ()))
    return _lowers_to(targets, ascii_only)


def class_set(items: list, ignorecase: bool, ascii_only: bool) -> CharSet:
    """What `re` matches for a character class (IN opcode), following `_optimize_charset`.

    Memoised (`CLASS_SETS_KEPT` classes): a grammar repeats its classes (python.lark: 7,042
    classes read, 86 distinct, 0.18 s of its cold compile spent on the repeats).
    """
    key = tuple((op, tuple(av) if isinstance(av, list) else av) for op, av in items)
    return _class_set(key, ignorecase, ascii_only)


# Distinct character classes kept by `class_set` (each a short tuple of ranges).
CLASS_SETS_KEPT = 4096


@lru_cache(maxsize=CLASS_SETS_KEPT)
def _class_set(items: tuple, ignorecase: bool, ascii_only: bool) -> CharSet:
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
                for lo in distinct(lowered).tolist():
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


# ---------------------------------------------------------------- atoms


# Up to this many ranges over all of its sets, an `Alphabet` is built by the exact sweep in Python.
SMALL_ALPHABET_RANGES = 256


class Alphabet:
    """A partition of the code points into atoms: maximal sets of code points that every
    given CharSet either contains whole or misses whole.

    Automata are determinised over atoms (a few dozen even for Unicode-wide classes like
    `\\w`) and only then expanded to UTF-8 bytes, instead of determinising a byte-level
    NFA that spells every class as hundreds of byte-range paths.

    `bounds[i]..bounds[i+1]-1` is elementary interval i and `interval_atom[i]` its atom;
    atoms are numbered by their lowest code point.
    """

    def __init__(self, sets: list[CharSet] | tuple[CharSet, ...]) -> None:
        distinct = list(dict.fromkeys(sets))
        if sum(map(len, distinct)) <= SMALL_ALPHABET_RANGES:
            self._exact(distinct)
        else:
            self._hashed(distinct)

    def _exact(self, distinct: list[CharSet]) -> None:
        """The atoms by one sweep over the cuts in Python, each interval's exact set of containing sets a bit mask.

        A terminal's few classes give a few dozen cuts, where numpy's fixed cost per call
        (the hashed path makes ~50) is most of the work.
        """
        toggles = {0: 0, N_CP: 0}
        for j, s in enumerate(distinct):
            bit = 1 << j
            for lo, hi in s:  # a set's ranges are disjoint and never adjacent: each cut toggles it once
                toggles[lo] = toggles.get(lo, 0) ^ bit
                toggles[hi + 1] = toggles.get(hi + 1, 0) ^ bit
        cuts = sorted(toggles)
        atom_of_mask: dict[int, int] = {}
        interval_atom = []
        mask = 0
        for cut in cuts[:-1]:
            mask ^= toggles[cut]
            interval_atom.append(atom_of_mask.setdefault(mask, len(atom_of_mask)))
        self.bounds = np.array(cuts, dtype=np.int64)
        self.interval_atom = np.array(interval_atom, dtype=np.int64)
        self.n_atoms = len(atom_of_mask)
        members: list[list[int]] = [[] for _ in distinct]
        for atom, mask in enumerate(atom_of_mask):
            while mask:
                low = mask & -mask
                members[low.bit_length() - 1].append(atom)
                mask ^= low
        self._of = {s: tuple(atoms) for s, atoms in zip(distinct, members)}

    def _hashed(self, distinct: list[CharSet]) -> None:
        """The atoms by random linear hashes of each interval's containing sets, in numpy (checked exactly)."""
        cuts = {0, N_CP}
        for s in distinct:
            for lo, hi in s:
                cuts.add(lo)
                cuts.add(hi + 1)
        self.bounds = np.array(sorted(cuts), dtype=np.int64)
        n_int = len(self.bounds) - 1
        self._ranges = {
            s: (
                np.searchsorted(self.bounds, [lo for lo, _ in s]),
                np.searchsorted(self.bounds, [hi + 1 for _, hi in s]),
            )
            for s in distinct
        }
        for attempt in range(4):
            self.interval_atom = self._signature_atoms(distinct, n_int, seed=attempt)
            self.n_atoms = int(self.interval_atom.max()) + 1
            self._atom_size = np.bincount(self.interval_atom, minlength=self.n_atoms)
            try:
                self._of = {s: self._atoms_checked(s) for s in distinct}
                return
            except _HashCollision:
                continue
        raise AssertionError("atom signatures collided four times")  # pragma: no cover

    def _signature_atoms(self, distinct: list[CharSet], n_int: int, seed: int) -> np.ndarray:
        """Atom ids from two random linear hashes of each interval's set of containing sets."""
        weights = hash_weights(0xA70 + seed, (max(len(distinct), 1), 2))
        diff = np.zeros((n_int + 1, 2), dtype=np.uint64)
        for j, s in enumerate(distinct):
            i0, i1 = self._ranges[s]
            np.add.at(diff, i0, weights[j])
            np.subtract.at(diff, i1, weights[j])
        signature = np.cumsum(diff[:-1], axis=0, dtype=np.uint64)
        _, first, atom = np.unique(signature, axis=0, return_index=True, return_inverse=True)
        # number atoms by their lowest code point, so the numbering reads naturally
        order = np.argsort(np.argsort(first))
        return order[atom.reshape(-1)].astype(np.int64)

    def _atoms_checked(self, s: CharSet) -> tuple[int, ...]:
        i0, i1 = self._ranges[s]
        if not len(i0):
            return ()
        covered = np.concatenate([np.arange(a, b) for a, b in zip(i0.tolist(), i1.tolist())])
        # The distinct atoms, ascending (`np.unique` would import `numpy.ma` on its first call: ~9 ms).
        atoms = np.flatnonzero(np.bincount(self.interval_atom[covered]))
        if int(self._atom_size[atoms].sum()) != len(covered):
            raise _HashCollision
        return tuple(atoms.tolist())

    def atoms(self, s: CharSet) -> tuple[int, ...]:
        """The atoms whose union is `s` (a set given to the constructor)."""
        return self._of[s]

    def atom_of(self, cps: np.ndarray) -> np.ndarray:
        """The atom of each code point (code points past U+10FFFF count as U+10FFFF)."""
        cps = np.minimum(cps, MAX_CP)
        return self.interval_atom[np.searchsorted(self.bounds, cps, side="right") - 1]


class _HashCollision(Exception):
    """Two different membership signatures hashed alike (about 2**-126 per pair)."""
