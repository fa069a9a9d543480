"""The JSON spellings of characters: a class of code points as a regex over "units".

A unit is one code point as a JSON string writes it: raw (printable ASCII other
than ``"`` and ``\\`` is raw only, as serialisers write it), a short escape, a
``\\uXXXX`` escape in either hex case, or a surrogate-pair escape outside the BMP.
One unit is one code point, so a count ``{m,n}`` over units counts code points,
as ``minLength``/``maxLength`` do. Lone surrogates are never a unit.
"""

from __future__ import annotations

import bisect
import functools
import re

from pda.grammar.ecma_regex.numeric import hex4_regex, hex_set_regex
from pda.grammar.ecma_regex.ranges import ANY, MAX_CP, SURROGATES, Ranges, intersect, normalize, subtract
from pda.grammar.ecma_regex.to_python import char_class

_SHORT_ESCAPES = {0x22: '"', 0x5C: "\\\\", 0x2F: "/", 0x08: "b", 0x0C: "f", 0x0A: "n", 0x0D: "r", 0x09: "t"}
_RAW_FORBIDDEN: Ranges = ((0x00, 0x1F), (0x22, 0x22), (0x5C, 0x5C), SURROGATES)
# Printable ASCII is spelled raw, as every JSON serialiser writes it: `\u0061` for `a`
# is valid JSON but never produced, and accepting it would multiply every literal's
# and every class's regex (and the DFAs built from them) by the hex spellings.
RAW_ONLY: Ranges = ((0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7E))
SINGLE_SPELLING: Ranges = subtract(RAW_ONLY, ((0x2F, 0x2F),))
"""Characters with exactly one JSON spelling, themselves: no escape spells them."""


@functools.lru_cache(maxsize=4096)
def unit_regex(ranges: Ranges) -> str | None:
    """The JSON-string encodings of one character from `ranges`, or None if the set is empty.

    Printable ASCII other than `"` and `\\` is raw only (`/` may also be `\\/`); every
    other character is raw where JSON allows it, a short escape where one exists, a
    `\\uXXXX` escape in either hex case, or a surrogate pair beyond the BMP.
    """
    raw, escaped = _unit_parts(ranges)
    alts = ([raw] if raw else []) + ([escaped] if escaped else [])
    if not alts:
        return None
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def _unit_parts(ranges: Ranges) -> tuple[str | None, str | None]:
    """(raw spellings as one class, escape spellings starting at the backslash) of `ranges`."""
    ranges = normalize(ranges)
    if ranges and _within(ranges, SINGLE_SPELLING):  # most characters of names and values: no escape
        return char_class(ranges), None
    return _spelled_parts(ranges)


def _spelled_parts(ranges: Ranges) -> tuple[str | None, str | None]:
    """`_unit_parts` of normalised `ranges`, every kind of spelling considered."""
    ranges = subtract(ranges, (SURROGATES,))
    raw = subtract(ranges, _RAW_FORBIDDEN)
    highs = [hi for _, hi in ranges]
    short = [esc for cp, esc in sorted(_SHORT_ESCAPES.items()) if _holds(ranges, highs, cp)]
    bmp = subtract(intersect(ranges, ((0, 0xFFFF),)), RAW_ONLY)
    uesc = hex_set_regex(bmp) if bmp else None
    escaped = short + (["u" + uesc] if uesc else [])
    astral = intersect(ranges, ((0x10000, MAX_CP),))
    for lo, hi in astral:
        # Split into runs sharing one high surrogate, except whole high-surrogate blocks.
        lo_off, hi_off = lo - 0x10000, hi - 0x10000
        hl, ll = divmod(lo_off, 0x400)
        hh, lh = divmod(hi_off, 0x400)
        pieces: list[tuple[int, int, int, int]] = []
        if hl == hh:
            pieces.append((hl, hl, ll, lh))
        else:
            first, last = hl, hh
            if ll != 0:
                pieces.append((hl, hl, ll, 0x3FF))
                first += 1
            if lh != 0x3FF:
                pieces.append((hh, hh, 0, lh))
                last -= 1
            if first <= last:
                pieces.append((first, last, 0, 0x3FF))
        for a, b, c, d in pieces:
            escaped.append(f"u{hex4_regex(0xD800 + a, 0xD800 + b)}\\\\u{hex4_regex(0xDC00 + c, 0xDC00 + d)}")
    esc = "\\\\" + (escaped[0] if len(escaped) == 1 else "(?:" + "|".join(escaped) + ")") if escaped else None
    return (char_class(raw) if raw else None), esc


def _within(ranges: Ranges, bounds: Ranges) -> bool:
    """Is every range of `ranges` inside one range of `bounds`?"""
    return all(any(lo >= a and hi <= b for a, b in bounds) for lo, hi in ranges)


def _holds(ranges: Ranges, highs: list[int], cp: int) -> bool:
    """Is `cp` in `ranges` (sorted and disjoint; `highs` their upper ends)?"""
    i = bisect.bisect_left(highs, cp)
    return i < len(ranges) and ranges[i][0] <= cp


ANY_UNIT = unit_regex(ANY)
ANY_STRING_BODY = f"(?:{ANY_UNIT})*"
"""The body of every JSON string."""
RAW_CHARS: Ranges = subtract(ANY, _RAW_FORBIDDEN)
"""Characters JSON lets a string hold raw."""
RAW_UNIT, ESCAPED_UNIT = _unit_parts(ANY)
"""One unit written raw; one unit written as an escape sequence."""


# Every ASCII character's `unit_regex`, as a `str.translate` table: property names and enum
# values are mostly ASCII, and are written a character at a time.
_ASCII_UNITS = {cp: unit_regex(((cp, cp),)) for cp in range(0x80)}


def literal_body_regex(text: str) -> str:
    """The lexeme body (between the quotes) of every JSON encoding of `text`."""
    if text.isascii():
        return text.translate(_ASCII_UNITS)
    return "".join(unit_regex(((ord(c), ord(c)),)) or "" for c in text)


def literal_string_regex(text: str) -> str:
    """A terminal regex for the JSON string `text`, in any of its encodings."""
    return '"' + literal_body_regex(text) + '"'


def raw_class_regex(ranges: Ranges) -> str | None:
    """A Python regex for one code point of `ranges`, written as itself (not as a JSON unit); None if empty."""
    if not ranges:
        return None

    def char(cp: int) -> str:
        return re.escape(chr(cp)) if 0x20 < cp < 0x7F else f"\\U{cp:08x}"

    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return char(ranges[0][0])
    return "[" + "".join(char(lo) if lo == hi else f"{char(lo)}-{char(hi)}" for lo, hi in ranges) + "]"

