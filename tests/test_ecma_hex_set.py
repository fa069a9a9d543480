"""`numeric.hex_set_regex`: the `\\uXXXX` spellings of a set of code points, against their meaning.

The trie writes each digit set as a class itself (`_hex_class`, not through `char_class`); these
tests hold it to `char_class` of the same characters, and the whole regex to the set it spells."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from pda.grammar.ecma_regex import numeric
from pda.grammar.ecma_regex.ranges import normalize
from pda.grammar.ecma_regex.to_python import char_class


def test_every_digit_set_is_the_class_char_class_writes() -> None:
    for mask in range(1, 1 << 16):
        digits = tuple(d for d in range(16) if mask >> d & 1)
        chars = [c for d in digits for c in {"0123456789abcdef"[d], "0123456789ABCDEF"[d]}]
        assert numeric._hex_class(digits) == char_class(normalize([(ord(c), ord(c)) for c in chars])), digits


_RANGES = st.lists(st.tuples(st.integers(0, 0xFFFF), st.integers(0, 300)), min_size=1, max_size=12).map(
    lambda pairs: normalize([(lo, min(lo + n, 0xFFFF)) for lo, n in pairs]))


@settings(max_examples=60, deadline=None)
@given(_RANGES, st.integers(0, 0xFFFF))
def test_hex_set_regex_spells_exactly_the_set(ranges, probe) -> None:
    """Every value in the set, in either case, matches; values outside it do not (the range ends and
    their neighbours, and a random probe)."""
    regex = re.compile(numeric.hex_set_regex(ranges) or "(?!)")
    inside = lambda v: any(lo <= v <= hi for lo, hi in ranges)  # noqa: E731
    points = {probe, *(v for lo, hi in ranges for v in (lo - 1, lo, hi, hi + 1) if 0 <= v <= 0xFFFF)}
    for v in points:
        for text in (f"{v:04x}", f"{v:04X}"):
            assert bool(regex.fullmatch(text)) == inside(v), (ranges, text)
