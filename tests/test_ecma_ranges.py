"""`ecma_regex.ranges` against sets of code points: normal inputs taken as they are, bisection cuts (`clip`),
and the merge pass, each the set operation it names, in the normal form `merge_ranges` gives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pda.grammar.ecma_regex.ranges import clip, complement, intersect, normalize, subtract
from pda.regex.charset import merge_ranges

_UNIVERSE = 300  # code points 0.._UNIVERSE - 1: small enough to enumerate as sets
_RANGE = st.tuples(st.integers(0, _UNIVERSE - 1), st.integers(0, 12)).map(
    lambda t: (t[0], min(t[0] + t[1], _UNIVERSE - 1)))
# Lists and tuples, sorted or not, overlapping or not, normal or not.
_RANGES = st.one_of(st.lists(_RANGE, max_size=8), st.lists(_RANGE, max_size=8).map(tuple),
                    st.lists(_RANGE, max_size=80).map(merge_ranges))


def _points(ranges) -> set[int]:
    return {cp for lo, hi in ranges for cp in range(lo, hi + 1)}


def _is_merge_form(ranges) -> bool:
    return type(ranges) is tuple and ranges == merge_ranges(ranges)


@settings(max_examples=500, deadline=None)
@given(_RANGES)
def test_normalize_is_merge_ranges(ranges) -> None:
    assert normalize(ranges) == merge_ranges(ranges)
    assert all(type(pair) is tuple for pair in normalize(ranges))


def test_normalize_returns_a_normal_tuple_itself() -> None:
    ranges = ((1, 3), (5, 9), (20, 20))
    assert normalize(ranges) is ranges
    assert normalize(((1, 3), (4, 9))) == ((1, 9),)  # adjacent: merged
    assert normalize(((5, 9), (1, 3))) == ((1, 3), (5, 9))  # unsorted: sorted
    assert normalize(([1, 3],)) == ((1, 3),)  # a pair that is no tuple: rebuilt


@settings(max_examples=500, deadline=None)
@given(_RANGES, _RANGES)
def test_intersect_and_subtract_are_the_set_operations(a, b) -> None:
    both, left = intersect(a, b), subtract(a, b)
    assert _points(both) == _points(a) & _points(b) and _is_merge_form(both)
    assert _points(left) == _points(a) - _points(b) and _is_merge_form(left)


@settings(max_examples=500, deadline=None)
@given(_RANGES, _RANGE)
def test_clip_cuts_normal_ranges(ranges, bounds) -> None:
    ranges = merge_ranges(ranges)
    cut = clip(ranges, *bounds)
    assert _points(cut) == _points(ranges) & _points([bounds]) and _is_merge_form(cut)


@settings(max_examples=200, deadline=None)
@given(_RANGES)
def test_complement_is_every_other_code_point(ranges) -> None:
    other = complement(ranges)
    assert _is_merge_form(other)
    assert _points(intersect(other, ((0, _UNIVERSE - 1),))) == set(range(_UNIVERSE)) - _points(ranges)
