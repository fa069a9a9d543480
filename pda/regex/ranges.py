"""Numeric range terminals built digit by digit: the DFA of the plain decimals whose value lies in an interval.

A JSON Schema `minimum`/`maximum` becomes a terminal whose pattern is a decimal-range alternation
(`pda.grammar.json_schema.numbers`); through regex, NFA and subset construction one costs 0.4-1 ms.
The front end hands the same language over as a `DecimalRange` (`remember`: by the pattern it wrote),
and `range_dfa` builds it directly: each side of zero is compared with its magnitude bounds digit by
digit (the integer part by length and first difference, the fraction digit by digit against the bound's
fraction), states numbered breadth first by byte from the start and minimised and finished by the kernel
the regex path's ASCII DFAs go through (`classed_dfa`): the regex path's automaton, numbered as a fresh process's
regex path most often numbers it (that numbering depends on what was built before; `tests/test_range_terminals.py`
compares the automata state by state). Invariant: a pattern is remembered only with the range whose language it
spells (the front end writes both from one description).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from decimal import Decimal

import numpy as np

from pda.lru import budget_cache, register_budget
from pda.regex import compose
from pda.regex.dfa import DEFAULT_MAX_DFA_STATES, LexerDFA, classed_dfa

# Patterns remembered with their ranges, under a byte budget (a server sees ever new schemas; docs/limits.md): one
# forgotten only takes the regex path again, to the same language. An entry weighs its pattern's characters and
# `RANGE_ENTRY_BYTES` for the range and the memo's own record.
REMEMBERED_MAX_BYTES = 1 << 20
RANGE_ENTRY_BYTES = 400
register_budget("numeric_ranges", REMEMBERED_MAX_BYTES)
_remembered = budget_cache("numeric_ranges")

_MINUS, _DOT, _ZERO = 0, 1, 2  # columns: '-', '.', the digits '0'..'9' (2..11); any other byte reads 12
_CLASSES = np.full(256, 12, dtype=np.int32)
_CLASSES[ord("-")], _CLASSES[ord(".")] = _MINUS, _DOT
_CLASSES[ord("0"):ord("9") + 1] = np.arange(_ZERO, _ZERO + 10)


@dataclass(frozen=True)
class DecimalRange:
    """Plain decimals `-?I(.F)?` (I without leading zeros, F at least one digit) whose value lies between `lo`
    and `hi` (None: unbounded; strict where `*_exclusive`). `integer`: only integer values, F all zeros and
    only where `zero_fraction`, and `negative_zero`: "-0" is a spelling of zero (a number's always is)."""

    lo: Decimal | None
    lo_exclusive: bool
    hi: Decimal | None
    hi_exclusive: bool
    integer: bool = False
    zero_fraction: bool = True
    negative_zero: bool = True


def remember(pattern: str, described: DecimalRange) -> None:
    """Note that `pattern` spells `described`'s language (its terminal's DFA is then built by `range_dfa`)."""
    _remembered.put(pattern, described, len(pattern) + RANGE_ENTRY_BYTES)


def remembered(pattern: str) -> DecimalRange | None:
    """The range `pattern` was remembered with, if it still is."""
    return _remembered.get(pattern)


@dataclass(frozen=True)
class _Bound:
    """A magnitude bound: integer digits, fraction digits (no trailing zeros), strict; `free`: a value whose
    integer part equals `whole` is within the bound whatever its fraction."""

    whole: str
    frac: str
    strict: bool
    free: bool = False


def _bound(d: Decimal, strict: bool) -> _Bound:
    i = int(d)
    f = format(d - i, "f")
    return _Bound(str(i), f.split(".", 1)[1].rstrip("0") if "." in f else "", strict)


def _before(a: _Bound, b: _Bound | None) -> bool:
    """Whether some value lies between the bounds."""
    if b is None:
        return True
    va, vb = Decimal(f"{a.whole}.{a.frac or 0}"), Decimal(f"{b.whole}.{b.frac or 0}")
    return va < vb or (va == vb and not a.strict and not b.strict)


def _sides(r: DecimalRange) -> list[tuple[_Bound, _Bound | None] | None]:
    """The magnitude bounds of the non-negative side and of the negative side (None: empty)."""
    zero = Decimal(0)
    pos_lo = _bound(zero, False) if r.lo is None or r.lo < 0 else _bound(r.lo, r.lo_exclusive)
    pos = None if r.hi is not None and r.hi < 0 else (pos_lo, None if r.hi is None else _bound(r.hi, r.hi_exclusive))
    neg_lo = _bound(zero, False) if r.hi is None or r.hi > 0 else _bound(-r.hi, r.hi_exclusive)
    if r.integer and not r.negative_zero and neg_lo.whole == "0":
        neg_lo = _Bound("1", "", False)
    neg = None if r.lo is not None and r.lo > 0 else (neg_lo, None if r.lo is None else _bound(-r.lo, r.lo_exclusive))
    return [None if side is None or not _before(*side) else _loosened(r, *side) for side in (pos, neg)]


def _loosened(r: DecimalRange, lo: _Bound, hi: _Bound | None) -> tuple[_Bound, _Bound | None]:
    """The side's bounds with `free` set where it holds: a lower bound without fraction that is not strict, an
    upper one of an integer range, and a strict upper integer b, taken as b - 1 (value < b: integer part <= b - 1).
    Equivalent states then have one key (fewer states to make before minimising)."""
    lo = _Bound(lo.whole, lo.frac, lo.strict, not lo.frac and not lo.strict)
    if hi is not None and r.integer:
        hi = _Bound(hi.whole, hi.frac, hi.strict, True)
    elif hi is not None and hi.strict and not hi.frac:
        hi = _Bound(str(int(hi.whole) - 1), "", False, True)  # not "0": a magnitude below 0 is an empty side
    return lo, hi


def _cmp(a: str, b: str) -> int:
    return (a > b) - (a < b)


def range_dfa(r: DecimalRange, *, name: str = "<regex>", max_states: int = DEFAULT_MAX_DFA_STATES) -> LexerDFA:
    """The minimal DFA of `r`'s spellings (states numbered breadth first by byte)."""
    sides = _sides(r)
    # zero_tail[side][k]: the lower bound's integer digits from k on are all zeros; nine_tail: the upper's nines
    zero_tail = [None if b is None else [set(b[0].whole[k:]) <= {"0"} for k in range(len(b[0].whole) + 1)]
                 for b in sides]
    nine_tail = [None if b is None or b[1] is None else [set(b[1].whole[k:]) <= {"9"}
                                                         for k in range(len(b[1].whole) + 1)] for b in sides]
    digits = [str(d) for d in range(10)]

    def end_ok(side: int, lo_st: int | None, hi_st: int | None) -> bool:
        if lo_st is None and hi_st is None:
            return True
        lo, hi = sides[side]
        lo_ok = lo_st is None or (lo_st == len(lo.frac) and not lo.strict)
        hi_ok = hi_st is None or hi_st < len(hi.frac) or not hi.strict
        return lo_ok and hi_ok

    def int_status(side: int, k: int, ta: int, tb: int) -> tuple[int | None, int | None] | None:
        """The fraction states an integer part ends in ((None: the bound is met whatever follows), or None."""
        lo, hi = sides[side]
        a = 1 if ta == 2 or k > len(lo.whole) else -1 if k < len(lo.whole) else ta
        if a < 0:
            return None
        b = -1 if hi is None or k < len(hi.whole) else 1 if k > len(hi.whole) else tb
        if b > 0:
            return None
        return (0 if a == 0 and not lo.free else None), (0 if b == 0 and not hi.free else None)

    def step(key: tuple, col: int) -> tuple | None:
        kind = key[0]
        if kind == "S":
            if col == _MINUS:
                return ("-",) if sides[1] is not None else None
            if col == _DOT or sides[0] is None:
                return None
            return first_digit(0, digits[col - _ZERO])
        if kind == "-":
            return None if col < _ZERO else first_digit(1, digits[col - _ZERO])
        if kind == "L":
            if col == _MINUS or col == _DOT and r.integer and not r.zero_fraction:
                return None
            m = key[1]
            return ("F", -1, None, None, False) if col == _DOT else ("L", None) if m is None else (
                None if m == 0 else ("L", m - 1))
        if kind == "I":
            _, side, k, ta, tb, zero = key
            if col == _MINUS:
                return None
            if col == _DOT:
                if r.integer and not r.zero_fraction:
                    return None
                st = int_status(side, k, ta, tb)
                return None if st is None else ("F", -1 if st == (None, None) else side, st[0], st[1], False)
            if zero:
                return None
            lo, hi = sides[side]
            d = digits[col - _ZERO]
            k += 1
            if hi is not None and k > len(hi.whole):
                return None
            if ta != 2:
                ta = 2 if k > len(lo.whole) else ta if ta else _cmp(d, lo.whole[k - 1])
                ta = settled_lower(side, k, ta)
            if hi is not None:
                tb = settled_upper(side, k, tb if tb else _cmp(d, hi.whole[k - 1]))
            return int_key(side, k, ta, tb, False)
        _, side, ls, us, _seen = key
        if col < _ZERO or (r.integer and col != _ZERO):
            return None
        lo, hi = sides[side] if side >= 0 else (None, None)
        d = digits[col - _ZERO]
        if ls is not None:
            t = lo.frac[ls] if ls < len(lo.frac) else "0"
            if d < t:
                return None
            ls = None if d > t else min(ls + 1, len(lo.frac))
        if us is not None:
            t = hi.frac[us] if us < len(hi.frac) else "0"
            if d > t:
                return None
            us = None if d < t else min(us + 1, len(hi.frac))
        return ("F", -1 if ls is None and us is None else side, ls, us, True)

    def int_key(side: int, k: int, ta: int, tb: int, zero: bool) -> tuple | None:
        """The key of an integer part of k digits (`ta`, `tb`: compared with the bounds' prefixes), None when above
        the upper bound and as long. Past the lower bound and decided against the upper one, only how many more
        digits may follow counts: ("L", m), m None unbounded; the same on both sides of zero."""
        hi = sides[side][1]
        if hi is not None and tb > 0 and k == len(hi.whole):
            return None
        if not zero and ta == 2:
            if hi is None:
                return ("L", None)
            if tb != 0:
                return ("L", len(hi.whole) - k - (1 if tb > 0 else 0))
        return ("I", side, k, ta, tb, zero)

    def first_digit(side: int, d: str) -> tuple | None:
        lo, hi = sides[side]
        tb = 0 if hi is None else settled_upper(side, 1, _cmp(d, hi.whole[0]))
        return int_key(side, 1, settled_lower(side, 1, _cmp(d, lo.whole[0])), tb, d == "0")

    def settled_lower(side: int, k: int, ta: int) -> int:
        """`ta` after k digits, equal to the lower bound's prefix taken as above it where every tail is (the rest
        of a free bound is zeros), above it taken as past it from its length on."""
        lo = sides[side][0]
        if ta == 0 and lo.free and zero_tail[side][k]:
            ta = 1
        return 2 if ta == 1 and k >= len(lo.whole) else ta

    def settled_upper(side: int, k: int, tb: int) -> int:
        """`tb` after k digits, equal to the upper bound's prefix taken as below it where every tail is (the rest
        of a free bound is nines)."""
        hi = sides[side][1]
        return -1 if tb == 0 and hi.free and nine_tail[side][k] else tb

    def digit_cuts(key: tuple) -> list[int]:
        """The digits where `key`'s digit moves may change (a bound's next digit, zero's own move), 10 last: the
        digits from one cut up to the next all move alike, so one of each is stepped."""
        kind = key[0]
        marks = {0, 10}
        if kind == "S" or kind == "-":
            side = 0 if kind == "S" else 1
            if sides[side] is None:
                return [0, 10]
            lo, hi = sides[side]
            marks.update((int(lo.whole[0]), int(lo.whole[0]) + 1, 1))
            if hi is not None:
                marks.update((int(hi.whole[0]), int(hi.whole[0]) + 1))
        elif kind == "I":
            _, side, k, ta, tb, _zero = key
            lo, hi = sides[side]
            if ta == 0 and k < len(lo.whole):
                marks.update((int(lo.whole[k]), int(lo.whole[k]) + 1))
            if hi is not None and tb == 0 and k < len(hi.whole):
                marks.update((int(hi.whole[k]), int(hi.whole[k]) + 1))
        elif kind == "F":
            _, side, ls, us, _seen = key
            for st, bound in ((ls, 0), (us, 1)):
                if st is not None:
                    frac = sides[side][bound].frac
                    t = int(frac[st]) if st < len(frac) else 0
                    marks.update((t, t + 1))
            if r.integer:
                marks.add(1)
        return sorted(marks)

    def accepting(key: tuple) -> bool:
        if key[0] == "L":
            return True
        if key[0] == "I":
            _, side, k, ta, tb, _zero = key
            st = int_status(side, k, ta, tb)
            return st is not None and end_ok(side, *st)
        if key[0] == "F":
            return key[4] and end_ok(key[1], key[2], key[3])
        return False

    start = ("S",)
    states = [start]
    number = {start: 0}
    rows: list[list[int]] = []
    queue = deque([start])
    while queue:  # breadth first, columns in byte order
        key = queue.popleft()
        row = [-1] * 13
        cuts = digit_cuts(key)
        moves = [(_MINUS, _MINUS + 1), (_DOT, _DOT + 1)]
        moves += [(_ZERO + a, _ZERO + b) for a, b in zip(cuts, cuts[1:])]
        for first, end in moves:
            target = step(key, first)
            if target is None:
                continue
            found = number.get(target)
            if found is None:
                found = number[target] = len(states)
                states.append(target)
                queue.append(target)
            row[first:end] = [found] * (end - first)
        rows.append(row)
    trans = np.array(rows, dtype=np.int32)
    accept = np.array([accepting(k) for k in states], dtype=bool)
    return classed_dfa(compose.Classed(trans, accept, _CLASSES), name=name, max_states=max_states)
