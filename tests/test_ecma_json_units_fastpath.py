"""`json_units._unit_parts`' shortcuts (characters with one spelling, short escapes found by bisection)
against the general construction and `ranges.intersect`."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pda.grammar.ecma_regex import json_units
from pda.grammar.ecma_regex.ranges import intersect, normalize

_POINTS = st.one_of(st.integers(0, 0x7F), st.integers(0, 0x10FFFF), st.sampled_from([0x22, 0x2F, 0x5C, 0x08, 0x0A]))
_RANGES = st.lists(st.tuples(_POINTS, st.integers(0, 40)).map(lambda t: (t[0], min(t[0] + t[1], 0x10FFFF))),
                   max_size=5).map(tuple)


@settings(max_examples=400, deadline=None)
@given(_RANGES)
def test_unit_parts_are_the_general_construction(ranges) -> None:
    assert json_units._unit_parts(ranges) == json_units._spelled_parts(normalize(ranges))


def test_every_ascii_character_is_spelled_as_before() -> None:
    for cp in range(0x80):
        assert json_units._unit_parts(((cp, cp),)) == json_units._spelled_parts(((cp, cp),))


@settings(max_examples=300, deadline=None)
@given(_RANGES, _POINTS)
def test_holds_is_intersect(ranges, cp) -> None:
    ranges = normalize(ranges)
    assert json_units._holds(ranges, [hi for _, hi in ranges], cp) == bool(intersect(ranges, ((cp, cp),)))
