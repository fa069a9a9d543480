"""Regexes for ranges of numbers written in digits: decimal integers, hex escapes.

`decimal_range_regex` is the integers lo..hi (hi None: unbounded) as plain decimal
numerals without leading zeros; `hex_set_regex`/`hex4_regex` are fixed-width hex
numerals (either case) in a set of ranges, the ``\\uXXXX`` escapes of a class.
Each is built digit position by digit position, so its size grows with the
number of digits, not with the range.
"""

from __future__ import annotations

import functools

from pda.grammar.ecma_regex.ranges import Ranges, clip, normalize
from pda.grammar.ecma_regex.to_python import char_class

def digit_range_alternatives(lo: int, hi: int, width: int, base: int = 10) -> list[list[tuple[int, int]]]:
    """Fixed-width digit strings for the integers lo..hi, as sequences of digit ranges.

    Each returned sequence is `width` (low, high) digit ranges; together they
    match exactly the base-`base` numerals of lo..hi zero-padded to `width`.
    """
    if lo > hi:
        return []
    if width == 0:
        return [[]]
    unit = base ** (width - 1)
    dlo, rlo = divmod(lo, unit)
    dhi, rhi = divmod(hi, unit)
    if dlo == dhi:
        return [[(dlo, dlo)] + rest for rest in digit_range_alternatives(rlo, rhi, width - 1, base)]
    out: list[list[tuple[int, int]]] = []
    first = dlo
    if rlo != 0:
        out += [[(dlo, dlo)] + rest for rest in digit_range_alternatives(rlo, unit - 1, width - 1, base)]
        first = dlo + 1
    tail_full = rhi == unit - 1
    mid_last = dhi if tail_full else dhi - 1
    if first <= mid_last:
        out.append([(first, mid_last)] + [(0, base - 1)] * (width - 1))
    if not tail_full:
        out += [[(dhi, dhi)] + rest for rest in digit_range_alternatives(0, rhi, width - 1, base)]
    return out


def _digit_seq_regex(seq: list[tuple[int, int]]) -> str:
    parts = [str(lo) if lo == hi else f"[{lo}-{hi}]" for lo, hi in seq]
    # Collapse runs of identical classes into counts to keep terminals short.
    out: list[str] = []
    k = 0
    while k < len(parts):
        j = k
        while j < len(parts) and parts[j] == parts[k]:
            j += 1
        out.append(parts[k] if j - k == 1 else f"{parts[k]}{{{j - k}}}")
        k = j
    return "".join(out)


_HEX_RUNS = ((0, 9, "0123456789"), (10, 15, "ABCDEF"), (10, 15, "abcdef"))  # digit values, in code-point order


@functools.lru_cache(maxsize=1024)
def _hex_class(digits: tuple[int, ...]) -> str:
    """A class of the hex digits `digits` (sorted, distinct) in either case, as `char_class` writes it: runs
    of digits, of upper-case letters, of lower-case letters (never adjacent code points), a run of one
    written alone, one digit without brackets. Memoised: a Unicode-wide class asks for the same few
    digit sets at hundreds of places of its trie."""
    items = []
    for lo, hi, chars in _HEX_RUNS:
        run: list[int] = []
        for d in digits:
            if lo <= d <= hi:
                if run and d != run[-1] + 1:
                    items.append(_run(run, lo, chars))
                    run = []
                run.append(d)
        if run:
            items.append(_run(run, lo, chars))
    return items[0] if len(items) == 1 and len(items[0]) == 1 else "[" + "".join(items) + "]"


def _run(run: list[int], base: int, chars: str) -> str:
    first, last = chars[run[0] - base], chars[run[-1] - base]
    return first if first == last else f"{first}-{last}"


def hex_set_regex(ranges: Ranges, width: int = 4) -> str | None:
    """`width` hex digits (either case) spelling a value in `ranges` (values below 16**width).

    Built as a trie over the digits, so a set with a few holes (every code point
    but the next letters of a property name) stays short: digits whose whole
    block is in the set share one class, the others recurse; equal sub-tries
    share one alternative. None when the set is empty.
    """
    return _hex_trie(normalize(ranges), width)


@functools.lru_cache(maxsize=8192)
def _hex_trie(ranges: Ranges, width: int) -> str | None:
    """`hex_set_regex` of normal `ranges` (every sub-trie's are: cut from normal ones and shifted)."""
    if not ranges:
        return None
    if width == 1:
        return _hex_class(tuple([d for lo, hi in ranges for d in range(lo, hi + 1)]))
    unit = 16 ** (width - 1)
    full: list[int] = []
    partial: dict[str, list[int]] = {}
    for d in range(ranges[0][0] // unit, ranges[-1][1] // unit + 1):
        sub = clip(ranges, d * unit, (d + 1) * unit - 1)
        if not sub:
            continue
        if sub == ((d * unit, (d + 1) * unit - 1),):
            full.append(d)
        else:
            shifted = tuple([(lo - d * unit, hi - d * unit) for lo, hi in sub])
            partial.setdefault(_hex_trie(shifted, width - 1) or "", []).append(d)
    alts = []
    if full:
        any_digit = "[0-9A-Fa-f]" + ("" if width == 2 else f"{{{width - 1}}}")
        alts.append(_hex_class(tuple(full)) + any_digit)
    alts += [_hex_class(tuple(ds)) + rest for rest, ds in partial.items()]
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def hex4_regex(lo: int, hi: int) -> str:
    """Four hex digits (either case) spelling a value in lo..hi."""
    return hex_set_regex(((lo, hi),)) or "(?!)"


@functools.lru_cache(maxsize=4096)
def decimal_range_regex(lo: int, hi: int | None) -> str:
    """Canonical decimal numerals (no sign, no leading zeros) for lo..hi (hi None = unbounded).

    Memoised: every number terminal asks for its bounds' ranges, and the generation default's
    exponent range (`any_number_regex`) is asked for by every schema with an unbounded number."""
    if lo < 0 or (hi is not None and hi < lo):
        raise ValueError(f"bad decimal range {lo}..{hi}")
    width0 = len(str(lo))
    finite_hi = 10**width0 - 1 if hi is None else hi
    alts: list[str] = []
    full: list[int] = []  # a run of widths whose every numeral is in range: one counted class for all
    for width in range(width0, len(str(finite_hi)) + 1):
        wlo = max(lo, 10 ** (width - 1) if width > 1 else 0)
        whi = min(finite_hi, 10**width - 1)
        if width > 1 and (wlo, whi) == (10 ** (width - 1), 10**width - 1):
            full.append(width - 1)
            continue
        alts += _full_widths(full)
        full = []
        alts += [_digit_seq_regex(s) for s in digit_range_alternatives(wlo, whi, width)]
    alts += _full_widths(full)
    if hi is None:
        alts.append(f"[1-9][0-9]{{{width0},}}")
    # Longer numerals first: a backtracking matcher tries alternatives in order.
    alts.reverse()
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"



def _full_widths(counts: list[int]) -> list[str]:
    """The numerals of every width 1 + c for c in `counts` (consecutive, at least 1) as one alternative:
    `[1-9][0-9]{a,b}`, not one alternative a width (an integer bound of 20 digits wrote 18; the regex
    path's NFA holds each copy of `[0-9]`, ~190 there, ~20 here)."""
    if not counts:
        return []
    a, b = counts[0], counts[-1]
    return ["[1-9][0-9]" + ("" if a == b == 1 else f"{{{a}}}" if a == b else f"{{{a},{b}}}")]
