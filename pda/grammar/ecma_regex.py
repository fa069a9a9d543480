"""ECMA-262 regexes (JSON Schema `pattern`) as Python regexes and as JSON-string lexemes.

JSON Schema patterns are ECMA-262 regexes applied to the *decoded* string value,
as a search (``"a"`` means "contains a") unless anchored. A grammar terminal
instead matches the *encoded* JSON lexeme: ``"a\\u0062"`` decodes to ``ab``. This
module therefore works in three steps:

1. `ecma_to_python` rewrites ECMA syntax into Python `re` syntax with the ECMA
   meaning (``\\d``/``\\w`` are ASCII, ``\\s`` is ECMA's Unicode white space, ``.``
   excludes the four line terminators, ``$`` is end of input, ``[^]``, ``\\cX``,
   ``\\u{...}``);
2. Python's own regex parser (`re._parser`) turns that into an AST;
3. `_Renderer` renders the AST with every character class replaced by the set
   of JSON spellings of its characters ("units": a raw character, a short
   escape, a ``\\uXXXX`` escape in either hex case, or a surrogate-pair escape
   for characters outside the BMP; printable ASCII other than ``"`` and ``\\``
   is raw only, as serialisers write it). One unit is one code point, so a count
   ``{m,n}`` over units counts code points, as ``minLength``/``maxLength`` do.

What a regex cannot be rewritten into directly (several patterns at once, a
negated pattern, a length bound across several variable pieces) goes through
automata over code-point classes and back to a regex (`pattern_set_body`).

Lone surrogates (``\\ud800`` alone) are not Unicode text and are never accepted.
Every regex produced here is ASCII-only Python `re` syntax, without look-around
except one length look-ahead at the start of a string body (`pattern_set_body`),
so pda's DFA builder can compile it.
"""

from __future__ import annotations

import bisect
import functools
import heapq
import re
import re._constants as C
from collections.abc import Callable, Generator, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from pda.errors import RegexError
from pda.kernels.partition import coarsest_partition
from pda.regex.charset import merge_ranges
from pda.regex.syntax import drive, parse_pattern

MAX_CP = 0x10FFFF
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


# --------------------------------------------------------------------------- ranges


# ECMA ranges keep the surrogates (patterns may name them); merging is the regex layer's.
normalize = merge_ranges


def complement(ranges: Ranges) -> Ranges:
    """All code points not in `ranges`."""
    out = []
    nxt = 0
    for lo, hi in normalize(ranges):
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= MAX_CP:
        out.append((nxt, MAX_CP))
    return tuple(out)


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


# ------------------------------------------------------------------ ECMA → Python


def py_char(cp: int) -> str:
    """One code point as an ASCII Python-regex escape usable in and out of classes."""
    if cp < 0x80 and (chr(cp).isalnum() or chr(cp) == "_"):
        return chr(cp)
    if 0x20 <= cp < 0x7F:
        # Punctuation is backslash-escaped, never \xNN: Lark's grammar loader turns
        # \xNN into the raw character, which would then be a class metacharacter.
        return "\\" + chr(cp)
    if cp <= 0xFF:
        return f"\\x{cp:02x}"
    if cp <= 0xFFFF:
        return f"\\u{cp:04x}"
    return f"\\U{cp:08x}"


def _class_items(ranges: Ranges) -> str:
    return "".join(py_char(lo) if lo == hi else f"{py_char(lo)}-{py_char(hi)}" for lo, hi in ranges)


def char_class(ranges: Ranges) -> str:
    """A Python character class for `ranges` (ASCII-only text)."""
    ranges = normalize(ranges)
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return py_char(ranges[0][0])
    return f"[{_class_items(ranges)}]"


_QUANT = re.compile(r"\{(\d+)(,(\d*))?\}")


def ecma_to_python(pattern: str) -> str:
    """Rewrite an ECMA-262 regex (``u`` flag semantics) into Python `re` syntax.

    The result means the same thing under plain `re.search` (no flags). Constructs
    a DFA cannot express (back-references, look-around, ``\\b``) are kept; the
    lexeme renderer rejects them with `RegexError`.
    """
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False

    def escape(j: int) -> tuple[str, int, Ranges | None]:
        """Translate the escape at pattern[j] == '\\'; return (text, next index, class ranges)."""
        if j + 1 >= n:
            raise RegexError(f"pattern {pattern!r}: trailing backslash at offset {j}")
        c = pattern[j + 1]
        sets = {
            "d": ASCII_DIGIT, "D": complement(ASCII_DIGIT), "w": ASCII_WORD,
            "W": complement(ASCII_WORD), "s": ECMA_SPACE, "S": complement(ECMA_SPACE),
        }
        if c in sets:
            return "", j + 2, sets[c]
        if c in "pP" and pattern.startswith("{", j + 2) and "}" in pattern[j + 3:]:
            # a Unicode property (`\\p{L}`, `\\p{Script=Greek}`): pda's parser reads it as is
            return pattern[j:pattern.index("}", j) + 1], pattern.index("}", j) + 1, None
        if c == "c" and j + 2 < n and pattern[j + 2].isalpha():
            return py_char(ord(pattern[j + 2]) % 32), j + 3, None
        if c == "u" and j + 2 < n and pattern[j + 2] == "{":
            end = pattern.find("}", j + 3)
            if end < 0:
                raise RegexError(f"pattern {pattern!r}: unterminated \\u{{...}} at offset {j}")
            return py_char(int(pattern[j + 3:end], 16)), end + 1, None
        if c == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", pattern[j + 2:j + 6]):
            hi = int(pattern[j + 2:j + 6], 16)
            # A surrogate pair written as two \u escapes is one code point.
            m = re.fullmatch(r"\\u([dD][c-fC-F][0-9a-fA-F]{2})", pattern[j + 6:j + 12])
            if 0xD800 <= hi <= 0xDBFF and m:
                cp = 0x10000 + ((hi - 0xD800) << 10) + (int(m.group(1), 16) - 0xDC00)
                return py_char(cp), j + 12, None
            return py_char(hi), j + 6, None
        if c == "0" and not (j + 2 < n and pattern[j + 2].isdigit()):
            return "\\x00", j + 2, None
        if c == "/":
            return "/", j + 2, None
        if c == "b" and in_class:
            return "\\x08", j + 2, None
        return pattern[j:j + 2], j + 2, None

    while i < n:
        c = pattern[i]
        if in_class:
            if c == "]":
                out.append("]")
                in_class = False
                i += 1
            elif c == "\\":
                text, i, sets = escape(i)
                out.append(_class_items(sets) if sets is not None else text)
            elif c == "[":
                out.append("\\[")
                i += 1
            else:
                out.append(py_char(ord(c)) if c not in "-^" else c)
                i += 1
            continue
        if c == "\\":
            text, i, sets = escape(i)
            out.append(char_class(sets) if sets is not None else text)
        elif c == "[":
            if pattern.startswith("[^]", i):
                out.append(char_class(ANY))
                i += 3
            elif pattern.startswith("[]", i):
                out.append(f"[^{_class_items(ANY)}]")
                i += 2
            else:
                in_class = True
                out.append("[")
                i += 1
                if i < n and pattern[i] == "^":
                    out.append("^")
                    i += 1
        elif c == ".":
            out.append(char_class(complement(ECMA_LINE_TERMINATORS)))
            i += 1
        elif c == "$":
            out.append("\\Z")
            i += 1
        elif c == "(" and pattern.startswith("(?<", i) and not pattern.startswith(("(?<=", "(?<!"), i):
            out.append("(?P<")
            i += 3
        elif c == "{":
            m = _QUANT.match(pattern, i)
            if m:
                out.append(m.group(0))
                i = m.end()
            else:
                out.append("\\{")
                i += 1
        elif c == "}":
            out.append("\\}")
            i += 1
        else:
            out.append(c)
            i += 1
    if in_class:
        raise RegexError(f"pattern {pattern!r}: unterminated character class")
    return "".join(out)


# ------------------------------------------------------------- numeric ranges


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
    first, last = dlo, dhi
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


def _hex_class(digits: list[int]) -> str:
    ranges: list[tuple[int, int]] = []
    for d in digits:
        ch = "0123456789abcdef"[d]
        ranges.append((ord(ch), ord(ch)))
        if ch.isalpha():
            ranges.append((ord(ch.upper()), ord(ch.upper())))
    return char_class(normalize(ranges))


@functools.lru_cache(maxsize=8192)
def hex_set_regex(ranges: Ranges, width: int = 4) -> str | None:
    """`width` hex digits (either case) spelling a value in `ranges` (values below 16**width).

    Built as a trie over the digits, so a set with a few holes (every code point
    but the next letters of a property name) stays short: digits whose whole
    block is in the set share one class, the others recurse; equal sub-tries
    share one alternative. None when the set is empty.
    """
    ranges = normalize(ranges)
    if not ranges:
        return None
    if width == 1:
        return _hex_class([d for d in range(16) if any(lo <= d <= hi for lo, hi in ranges)])
    unit = 16 ** (width - 1)
    full: list[int] = []
    partial: dict[str, list[int]] = {}
    for d in range(16):
        sub = intersect(ranges, ((d * unit, (d + 1) * unit - 1),))
        if not sub:
            continue
        if sub == ((d * unit, (d + 1) * unit - 1),):
            full.append(d)
        else:
            shifted = tuple((lo - d * unit, hi - d * unit) for lo, hi in sub)
            partial.setdefault(hex_set_regex(shifted, width - 1) or "", []).append(d)
    alts = []
    if full:
        any_digit = "[0-9A-Fa-f]" + ("" if width == 2 else f"{{{width - 1}}}")
        alts.append(_hex_class(full) + any_digit)
    alts += [_hex_class(ds) + rest for rest, ds in partial.items()]
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def hex4_regex(lo: int, hi: int) -> str:
    """Four hex digits (either case) spelling a value in lo..hi."""
    return hex_set_regex(((lo, hi),)) or "(?!)"


def decimal_range_regex(lo: int, hi: int | None) -> str:
    """Canonical decimal numerals (no sign, no leading zeros) for lo..hi (hi None = unbounded)."""
    if lo < 0 or (hi is not None and hi < lo):
        raise ValueError(f"bad decimal range {lo}..{hi}")
    width0 = len(str(lo))
    finite_hi = 10**width0 - 1 if hi is None else hi
    alts: list[str] = []
    for width in range(width0, len(str(finite_hi)) + 1):
        wlo = max(lo, 10 ** (width - 1) if width > 1 else 0)
        whi = min(finite_hi, 10**width - 1)
        alts += [_digit_seq_regex(s) for s in digit_range_alternatives(wlo, whi, width)]
    if hi is None:
        alts.append(f"[1-9][0-9]{{{width0},}}")
    # Longer numerals first: a backtracking matcher tries alternatives in order.
    alts.reverse()
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


# ------------------------------------------------------------ JSON encodings

_SHORT_ESCAPES = {0x22: '"', 0x5C: "\\\\", 0x2F: "/", 0x08: "b", 0x0C: "f", 0x0A: "n", 0x0D: "r", 0x09: "t"}
_RAW_FORBIDDEN: Ranges = ((0x00, 0x1F), (0x22, 0x22), (0x5C, 0x5C), SURROGATES)
# Printable ASCII is spelled raw, as every JSON serialiser writes it: `\u0061` for `a`
# is valid JSON but never produced, and accepting it would multiply every literal's
# and every class's regex (and the DFAs built from them) by the hex spellings.
RAW_ONLY: Ranges = ((0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7E))


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
    ranges = subtract(normalize(ranges), (SURROGATES,))
    raw = subtract(ranges, _RAW_FORBIDDEN)
    short = [esc for cp, esc in sorted(_SHORT_ESCAPES.items()) if intersect(ranges, ((cp, cp),))]
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


ANY_UNIT = unit_regex(ANY)
ANY_STRING_BODY = f"(?:{ANY_UNIT})*"
"""The body of every JSON string."""
RAW_CHARS: Ranges = subtract(ANY, _RAW_FORBIDDEN)
"""Characters JSON lets a string hold raw."""
RAW_UNIT, ESCAPED_UNIT = _unit_parts(ANY)
"""One unit written raw; one unit written as an escape sequence."""
SINGLE_SPELLING: Ranges = subtract(RAW_ONLY, ((0x2F, 0x2F),))
"""Characters with exactly one JSON spelling, themselves: no escape spells them."""


def literal_body_regex(text: str) -> str:
    """The lexeme body (between the quotes) of every JSON encoding of `text`."""
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


# --------------------------------------------------------- pattern → lexeme


@dataclass
class PatternInfo:
    """A pattern's lexeme-body regex and the code-point length range it allows."""

    body: str
    min_len: int
    max_len: int | None


def _category(cat: object) -> Ranges:
    table = {
        C.CATEGORY_DIGIT: ASCII_DIGIT, C.CATEGORY_NOT_DIGIT: complement(ASCII_DIGIT),
        C.CATEGORY_WORD: ASCII_WORD, C.CATEGORY_NOT_WORD: complement(ASCII_WORD),
        C.CATEGORY_SPACE: ECMA_SPACE, C.CATEGORY_NOT_SPACE: complement(ECMA_SPACE),
    }
    if cat not in table:
        raise RegexError(f"unsupported character category {cat}")
    return table[cat]


class _Renderer:
    """Renders a `re._parser` AST as a lexeme regex over JSON units; tracks length bounds."""

    def __init__(self, source: str, ignore_case: bool = False) -> None:
        self.source = source
        self.ignore_case = ignore_case

    def fail(self, what: str) -> RegexError:
        return RegexError(f"pattern {self.source!r}: {what} cannot be compiled to a finite automaton")

    @contextmanager
    def group_flags(self, add_flags: int, del_flags: int) -> Iterator[None]:
        """Inside a group with inline flags: only `i` is supported, and it folds case there."""
        if add_flags & ~re.IGNORECASE or del_flags:
            raise self.fail("inline flags")
        saved = self.ignore_case
        self.ignore_case = saved or bool(add_flags & re.IGNORECASE)
        try:
            yield
        finally:
            self.ignore_case = saved

    def charset(self, op: object, av: object) -> Ranges | None:
        if op is C.LITERAL:
            r: Ranges = ((av, av),)  # type: ignore[assignment]
        elif op is C.NOT_LITERAL:
            r = complement(((av, av),))  # type: ignore[arg-type]
        elif op is C.ANY:
            r = ANY
        elif op is C.IN:
            items: list[tuple[int, int]] = []
            negate = False
            for sop, sav in av:  # type: ignore[attr-defined]
                if sop is C.NEGATE:
                    negate = True
                elif sop is C.LITERAL:
                    items.append((sav, sav))
                elif sop is C.RANGE:
                    items.append(tuple(sav))  # type: ignore[arg-type]
                elif sop is C.CATEGORY:
                    items += _category(sav)
                else:
                    raise self.fail(f"class item {sop}")
            r = normalize(items)
            if self.ignore_case:
                r = _fold_case(r)
            return complement(r) if negate else r
        else:
            return None
        return _fold_case(r) if self.ignore_case and op is C.LITERAL else r

    def seq(self, items: list) -> tuple[str | None, int, int | None]:
        """Render a sequence; None means it matches nothing."""
        return drive(self._seq(items))

    def node(self, op: object, av: object) -> tuple[str | None, int, int | None]:
        return drive(self._node(op, av))

    # `_seq`/`_node` are generators run by `drive`: a pattern may nest groups thousands deep.
    def _seq(self, items: list) -> Generator[Any, Any, tuple[str | None, int, int | None]]:
        out, lo, hi = [], 0, 0
        for op, av in items:
            text, a, b = yield self._node(op, av)
            if text is None:
                return None, 0, 0
            out.append(text)
            lo += a
            hi = None if hi is None or b is None else hi + b
        return "".join(out), lo, hi

    def _node(self, op: object, av: Any) -> Generator[Any, Any, tuple[str | None, int, int | None]]:
        cs = self.charset(op, av)
        if cs is not None:
            u = unit_regex(cs)
            return (u, 1, 1) if u is not None else (None, 0, 0)
        if op is C.SUBPATTERN:
            _group, add_flags, del_flags, sub = av
            with self.group_flags(add_flags, del_flags):
                text, lo, hi = yield self._seq(list(sub))
            return (f"(?:{text})" if text is not None else None), lo, hi
        if op is C.BRANCH:
            alts = []
            for b in av[1]:
                alts.append((yield self._seq(list(b))))
            live = [a for a in alts if a[0] is not None]
            if not live:
                return None, 0, 0
            hi_vals = [a[2] for a in live]
            return ("(?:" + "|".join(a[0] for a in live) + ")",  # type: ignore[misc]
                    min(a[1] for a in live), None if None in hi_vals else max(hi_vals))  # type: ignore[type-var]
        if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            lo, hi, sub = av
            text, a, b = yield self._seq(list(sub))
            if text is None:
                return ("", 0, 0) if lo == 0 else (None, 0, 0)
            top = None if hi is C.MAXREPEAT else hi
            q = "*" if (lo, top) == (0, None) else "+" if (lo, top) == (1, None) else \
                "?" if (lo, top) == (0, 1) else f"{{{lo},}}" if top is None else \
                f"{{{lo}}}" if lo == top else f"{{{lo},{top}}}"
            return (f"(?:{text}){q}", a * lo, None if top is None or b is None else b * top)
        raise self.fail(_unsupported(op, av))


def _unsupported(op: object, av: object) -> str:
    """What a construct that neither translation handles is called in its error."""
    if op is C.AT:
        return f"anchor {av} inside the pattern"
    if op is C.GROUPREF:
        return "a back-reference"
    if op in (C.ASSERT, C.ASSERT_NOT):
        return "look-around"
    return f"construct {op}"


def _fold_case(r: Ranges) -> Ranges:
    """Add the other ASCII case of letters (Python's default IGNORECASE is Unicode, ECMA's simple)."""
    extra = []
    for lo, hi in r:
        for a, b, d in ((0x41, 0x5A, 0x20), (0x61, 0x7A, -0x20)):
            x, y = max(lo, a), min(hi, b)
            if x <= y:
                extra.append((x + d, y + d))
    return normalize(list(r) + extra)


def _anchored(items: list) -> tuple[list, bool, bool]:
    """Strip a leading ^ and a trailing $/\\Z; report which were present."""
    items = _inline_groups(items)
    start = bool(items) and items[0][0] is C.AT and items[0][1] in (C.AT_BEGINNING, C.AT_BEGINNING_STRING)
    if start:
        items = items[1:]
    end = bool(items) and items[-1][0] is C.AT and items[-1][1] in (C.AT_END, C.AT_END_STRING)
    if end:
        items = items[:-1]
    return items, start, end


def python_pattern_body(pattern: str, *, search: bool, source: str | None = None) -> PatternInfo | None:
    """Lexeme-body regex for strings matching the Python regex `pattern`.

    With `search`, the pattern may match anywhere unless anchored by ``^``/``$``
    (JSON Schema semantics); otherwise the whole string must match. Returns None
    when no string can match.
    """
    src = source if source is not None else pattern
    try:
        tree = parse_pattern(pattern)
    except re.error as exc:
        raise RegexError(f"pattern {src!r} is not a valid regex: {exc}") from None
    r = _Renderer(src)
    items = list(tree)
    # Alternations whose branches carry their own anchors (`^a|b$`; Python's parser
    # factors `^01$|^07$` into `^(?:01$|07$)`): multiplied out, each anchored alone.
    branches = [items]
    if search:
        branches = []
        for b in _top_branches(items):
            expanded = _expand_branches(_inline_groups(b))
            branches += [b] if expanded == [None] else expanded  # type: ignore[list-item]
    outs: list[tuple[str, int, int | None]] = []
    for b in branches:
        body, start, end = _anchored(b) if search else (b, True, True)
        text, lo, hi = r.seq(body)
        if text is None:
            continue
        if not start:
            text, hi = f"(?:{ANY_UNIT})*" + text, None
        if not end:
            text, hi = text + f"(?:{ANY_UNIT})*", None
        outs.append((text, lo, hi))
    if not outs:
        return None
    his = [o[2] for o in outs]
    text = outs[0][0] if len(outs) == 1 else "(?:" + "|".join(o[0] for o in outs) + ")"
    return PatternInfo(text, min(o[1] for o in outs), None if None in his else max(his))  # type: ignore[type-var]


def split_leading_lookahead(pattern: str) -> tuple[list[str], list[str]] | None:
    """`^(?!X)Y` as (positive `["^Y"]`, negative `["^(?:X)"]`), `^(?=X)Y` as two positives.

    Under search semantics an anchored look-ahead tests a prefix at offset 0, which is
    what searching `^(?:X)` tests: the pattern is the conjunction, which the automata of
    `pattern_set_body` handle. None when the pattern has no such look-ahead, or has a
    top-level `|` the look-ahead would only cover one side of.
    """
    if not pattern.startswith(("^(?!", "^(?=")):
        return None
    depth, i, end = 0, 1, None
    top_bar = False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "[":
            i += 1
            while i < len(pattern) and pattern[i] != "]":
                i += 2 if pattern[i] == "\\" else 1
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0 and end is None:
                end = i
        elif ch == "|" and depth == 0:
            top_bar = True
        i += 1
    if end is None or top_bar:
        return None
    look, rest = "^(?:" + pattern[4:end] + ")", "^" + pattern[end + 1:]
    return ([rest], [look]) if pattern[3] == "!" else ([rest, look], [])


def ecma_pattern_body(pattern: str, *, min_len: int = 0, max_len: int | None = None) -> PatternInfo | None:
    """Lexeme-body regex for JSON strings that a JSON Schema `pattern` accepts (search semantics).

    With a length range, returns the exact intersection when, in every branch of
    the pattern, all pieces but one have a fixed length and that one repeats a
    single unit (``^[a-z]{2,}$``, ``^x-[a-z0-9]+$``, an unanchored end): its count
    absorbs the bounds. Otherwise returns None. Without a length range, None
    means no string matches.
    """
    python = ecma_to_python(pattern)
    if (min_len, max_len) == (0, None):
        return python_pattern_body(python, search=True, source=pattern)
    try:
        items = list(parse_pattern(python))
    except re.error as exc:
        raise RegexError(f"pattern {pattern!r} is not a valid regex: {exc}") from None
    r = _Renderer(pattern)
    outs: list[tuple[str, int, int | None]] = []
    any_unit = (C.MAX_REPEAT, (0, C.MAXREPEAT, [(C.IN, [(C.RANGE, (0, MAX_CP))])]))
    for branch in _top_branches(items):
        body, start, end = _anchored(branch)
        for pieces in _expand_branches(([] if start else [any_unit]) + _inline_groups(body)
                                       + ([] if end else [any_unit])):
            if pieces is None:
                return None
            rendered = [r.node(op, av) for op, av in pieces]
            if any(t is None for t, _, _ in rendered):
                continue
            variable = [i for i, (_, a, b) in enumerate(rendered) if a != b]
            fixed = sum(a for i, (_, a, _) in enumerate(rendered) if i not in variable)
            least = sum(rendered[i][1] for i in variable)
            texts = [t for t, _, _ in rendered]
            if variable and max_len is not None and fixed + least == max_len:
                # Every variable piece at its least length is the only way to fit.
                units = [_repeated_unit(r, *pieces[i]) for i in variable]
                if None in units:
                    return None
                for i, unit in zip(variable, units):
                    texts[i] = f"(?:{unit}){{{pieces[i][1][0]}}}"
                fixed, variable = max_len, []
            if not variable:
                if fixed >= min_len and (max_len is None or fixed <= max_len):
                    outs.append(("".join(texts), fixed, fixed))  # type: ignore[arg-type]
                continue
            if len(variable) > 1:
                return None
            i = variable[0]
            unit = _repeated_unit(r, *pieces[i])
            if unit is None:
                return None
            op, av = pieces[i]
            lo = max(av[0], min_len - fixed)
            top = None if av[1] is C.MAXREPEAT else av[1]
            hi = top if max_len is None else max_len - fixed if top is None else min(top, max_len - fixed)
            if hi is not None and hi < lo:
                continue
            texts[i] = f"(?:{unit})" + (f"{{{lo},}}" if hi is None else f"{{{lo},{hi}}}")
            outs.append(("".join(texts), fixed + lo, None if hi is None else fixed + hi))  # type: ignore[arg-type]
    if not outs:
        return None
    his = [o[2] for o in outs]
    text = outs[0][0] if len(outs) == 1 else "(?:" + "|".join(o[0] for o in outs) + ")"
    return PatternInfo(text, min(o[1] for o in outs), None if None in his else max(his))  # type: ignore[type-var]


def _top_branches(items: list) -> list[list]:
    """The alternatives of a pattern whose top level (or one top group) is an alternation."""
    if len(items) == 1 and items[0][0] is C.BRANCH:
        return [list(b) for b in items[0][1][1]]
    if len(items) == 1 and items[0][0] is C.SUBPATTERN and not items[0][1][1] and not items[0][1][2] \
            and len(items[0][1][3]) == 1 and items[0][1][3][0][0] is C.BRANCH:
        return [list(b) for b in items[0][1][3][0][1][1]]
    return [items]


def _repeated_unit(r: "_Renderer", op: object, av: object) -> str | None:
    """The unit regex of a repetition of one unit (`[a-z]+`, `(a|b){2,}`), else None."""
    if op not in (C.MAX_REPEAT, C.MIN_REPEAT):
        return None
    unit, a, b = r.seq(list(av[2]))  # type: ignore[index]
    return unit if (a, b) == (1, 1) else None


def _expand_branches(pieces: list, limit: int = 64) -> list[list | None]:
    """The sequences a piece list stands for once its alternations are multiplied out.

    A list holding None means there were more than `limit` sequences.
    """
    seqs: list[list] = [[]]
    for op, av in pieces:
        if op is C.BRANCH:
            alts = [_inline_groups(list(b)) for b in av[1]]  # type: ignore[index]
            seqs = [s + a for s in seqs for a in alts]
            if len(seqs) > limit:
                return [None]
        else:
            seqs = [s + [(op, av)] for s in seqs]
    return seqs  # type: ignore[return-value]


def _inline_groups(items: list) -> list:
    """Splice flag-free groups into the sequence around them, so their pieces count separately."""
    out: list = []
    pending = list(reversed(items))  # an explicit stack: groups may nest deep
    while pending:
        op, av = pending.pop()
        if op is C.SUBPATTERN and not av[1] and not av[2]:
            pending.extend(reversed(list(av[3])))
        else:
            out.append((op, av))
    return out


_HEX_ESCAPE = re.compile(r"\\(?:x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8}))")


def lark_regex(regex: str) -> str:
    """Quote a Python regex as a Lark `/.../` literal that Lark reads back as the same regex.

    Lark's loader (`eval_escaping`) evaluates `\\x..`, `\\u....`, `\\U........` into
    the characters themselves and turns `\\\\"` into `\\"`. So: every `"` is written
    `\\x22` (Lark makes it a plain `"`), `/` is written `\\/`, and a hex escape of
    ASCII punctuation becomes a backslash-escaped character (`\\x5d` → `\\]`), so a
    `]` or `\\` it stood for stays literal once Lark has evaluated it.
    """
    out: list[str] = []
    i = 0
    while i < len(regex):
        c = regex[i]
        if c == "\\" and i + 1 < len(regex):
            hex_escape = _HEX_ESCAPE.match(regex, i)
            if hex_escape:
                ch = chr(int(next(g for g in hex_escape.groups() if g), 16))
                punctuation = ch.isascii() and ch.isprintable() and not ch.isalnum()
                out.append("\\x22" if ch == '"' else "\\" + ch if punctuation else hex_escape.group())
                i = hex_escape.end()
                continue
            out.append("\\x22" if regex[i + 1] == '"' else regex[i : i + 2])
            i += 2
            continue
        out.append("\\x22" if c == '"' else "\\/" if c == "/" else c)
        i += 1
    return "/" + "".join(out) + "/"


def regex_to_lark(pattern: str) -> str:
    """A Lark grammar whose language is the strings that fully match Python regex `pattern`."""
    try:
        parse_pattern(pattern)
    except re.error as exc:
        raise RegexError(f"pattern {pattern!r} is not a valid regex: {exc}") from None
    return f"start: REGEX\nREGEX: {lark_regex(pattern)}\n"


# ------------------------------------------------ automata: intersection, complement

MAX_PATTERN_DFA_STATES = 4000
"""Largest DFA (after products with other patterns and a length counter) turned back into a regex."""

MAX_PATTERN_REGEX = 400_000
"""Longest regex text the state elimination may produce before the construction gives up."""


class AutomatonTooLarge(Exception):
    """An automaton or its regex passed its limit (states, or characters of regex)."""


class _NFA:
    """A Thompson NFA over code-point sets, built from `re._parser` ASTs."""

    def __init__(self) -> None:
        self.eps: list[list[int]] = []
        self.edges: list[list[tuple[Ranges, int]]] = []

    def state(self) -> int:
        if len(self.eps) > 20 * MAX_PATTERN_DFA_STATES:
            raise AutomatonTooLarge
        self.eps.append([])
        self.edges.append([])
        return len(self.eps) - 1

    def seq(self, r: _Renderer, items: list) -> tuple[int, int]:
        return drive(self._seq(r, items))

    # `_seq`/`_node` are generators run by `drive` (no recursion, whatever the nesting).
    def _seq(self, r: _Renderer, items: list) -> Generator[Any, Any, tuple[int, int]]:
        start = end = self.state()
        for op, av in items:
            a, b = yield self._node(r, op, av)
            self.eps[end].append(a)
            end = b
        return start, end

    def _node(self, r: _Renderer, op: object, av: Any) -> Generator[Any, Any, tuple[int, int]]:
        cs = r.charset(op, av)
        if cs is not None:
            a, b = self.state(), self.state()
            self.edges[a].append((subtract(normalize(cs), (SURROGATES,)), b))
            return a, b
        if op is C.SUBPATTERN:
            _group, add_flags, del_flags, sub = av  # type: ignore[misc]
            with r.group_flags(add_flags, del_flags):
                return (yield self._seq(r, list(sub)))
        if op is C.BRANCH:
            a, b = self.state(), self.state()
            for alt in av[1]:
                s, e = yield self._seq(r, list(alt))
                self.eps[a].append(s)
                self.eps[e].append(b)
            return a, b
        if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            lo, hi, sub = av
            start = end = self.state()
            for _ in range(lo):
                s, e = yield self._seq(r, list(sub))
                self.eps[end].append(s)
                end = e
            if hi is C.MAXREPEAT:
                s, e = yield self._seq(r, list(sub))
                self.eps[end].append(s)
                self.eps[e].append(s)
                last = self.state()
                self.eps[end].append(last)
                self.eps[e].append(last)
                return start, last
            last = self.state()
            for _ in range(hi - lo):
                s, e = yield self._seq(r, list(sub))
                self.eps[end].append(s)
                self.eps[end].append(last)
                end = e
            self.eps[end].append(last)
            return start, last
        raise r.fail(_unsupported(op, av))


def _pattern_nfa(nfa: _NFA, pattern: str) -> tuple[int, int]:
    """NFA states (start, end) of the strings an ECMA `pattern` matches (search semantics)."""
    python = ecma_to_python(pattern)
    try:
        items = list(parse_pattern(python))
    except re.error as exc:
        raise RegexError(f"pattern {pattern!r} is not a valid regex: {exc}") from None
    r = _Renderer(pattern)
    any_star = [(C.MAX_REPEAT, (0, C.MAXREPEAT, [(C.IN, [(C.RANGE, (0, MAX_CP))])]))]
    start, end = nfa.state(), nfa.state()
    for branch in _top_branches(items):
        for seq in _expand_branches(_inline_groups(branch)):
            body, at_start, at_end = _anchored(seq if seq is not None else branch)
            s, e = nfa.seq(r, ([] if at_start else any_star) + body + ([] if at_end else any_star))
            nfa.eps[start].append(s)
            nfa.eps[e].append(end)
    return start, end


class _DFA:
    """A complete DFA over classes of code points (`classes[c]` is class c's ranges)."""

    def __init__(self, classes: list[Ranges], trans: list[list[int]], accept: list[bool]) -> None:
        self.classes, self.trans, self.accept = classes, trans, accept


def _classes(nfa: _NFA) -> tuple[list[Ranges], list[list[tuple[list[int], int]]]]:
    """The coarsest partition of the code points that every edge label is a union of."""
    cuts = {0, MAX_CP + 1}
    for edges in nfa.edges:
        for ranges, _ in edges:
            for lo, hi in ranges:
                cuts |= {lo, hi + 1}
    bounds = sorted(cuts)
    pieces = [(a, b - 1) for a, b in zip(bounds, bounds[1:])]
    labels = sorted({ranges for edges in nfa.edges for ranges, _ in edges})
    # A piece lies wholly inside or outside each range (every range end is a cut), so its
    # signature, the labels that hold it as a bitmask, is set range by range over the pieces' ids.
    held = [0] * len(pieces)
    for i, lab in enumerate(labels):
        bit = 1 << i
        for lo, hi in lab:
            for p in range(bisect.bisect_left(bounds, lo), bisect.bisect_left(bounds, hi + 1)):
                held[p] |= bit
    sig: dict[int, list[tuple[int, int]]] = {}
    for piece, key in zip(pieces, held):
        sig.setdefault(key, []).append(piece)
    keys = list(sig)
    classes = [normalize(sig[k]) for k in keys]
    label_classes = {lab: [c for c, k in enumerate(keys) if k >> i & 1] for i, lab in enumerate(labels)}
    edges = [[(label_classes[ranges], dst) for ranges, dst in out] for out in nfa.edges]
    return classes, edges


def explore_states(start: Hashable, n_classes: int, step: Callable[[Hashable, int], Hashable],
                   limit: int = MAX_PATTERN_DFA_STATES) -> tuple[list[Hashable], list[list[int]]]:
    """Breadth-first over the states reachable from `start` by `step(state, class)`: the
    states in numbering order and the transition rows; `AutomatonTooLarge` past `limit` states."""
    index = {start: 0}
    order = [start]
    trans: list[list[int]] = []
    while len(trans) < len(order):
        cur = order[len(trans)]
        row = []
        for c in range(n_classes):
            nxt = step(cur, c)
            j = index.get(nxt)
            if j is None:
                if len(order) >= limit:
                    raise AutomatonTooLarge
                j = index[nxt] = len(order)
                order.append(nxt)
            row.append(j)
        trans.append(row)
    return order, trans


def _determinise(nfa: _NFA, start: int, end: int) -> _DFA:
    classes, edges = _classes(nfa)

    def closure(states: set[int]) -> frozenset[int]:
        stack, seen = list(states), set(states)
        while stack:
            for t in nfa.eps[stack.pop()]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        return frozenset(seen)

    # Per NFA state, its targets by class; and the closure of each move set met, memoised (many
    # (state, class) pairs move to the same set, the empty one most of all).
    moves: list[dict[int, list[int]]] = []
    for out in edges:
        by_class: dict[int, list[int]] = {}
        for cs, dst in out:
            for c in cs:
                by_class.setdefault(c, []).append(dst)
        moves.append(by_class)
    closures: dict[frozenset[int], frozenset[int]] = {}

    def step(cur: frozenset[int], c: int) -> frozenset[int]:
        moved = frozenset(dst for s in cur for dst in moves[s].get(c, ()))
        found = closures.get(moved)
        if found is None:
            found = closures[moved] = closure(moved)
        return found

    order, trans = explore_states(closure({start}), len(classes), step)
    return _DFA(classes, trans, [end in st for st in order])


def _product(dfas: list[_DFA], wanted: list[bool], lo: int, hi: int | None) -> _DFA:
    """Strings each DFA accepts iff `wanted` says so, of lo..hi units (all on one partition)."""
    classes = dfas[0].classes
    cap = hi + 1 if hi is not None else lo
    order, trans = explore_states(tuple([0] * len(dfas) + [0]), len(classes),
                            lambda cur, c: tuple([d.trans[q][c] for d, q in zip(dfas, cur)] + [min(cur[-1] + 1, cap)]))
    accept = [all(d.accept[q] == w for d, q, w in zip(dfas, st, wanted))
              and st[-1] >= lo and (hi is None or st[-1] <= hi) for st in order]
    return _DFA(classes, trans, accept)


def _minimise(d: _DFA) -> _DFA:
    """The coarsest partition refining acceptance (the compiled Hopcroft, `pda.kernels.partition`);
    unreachable states are already absent. Blocks are numbered by their first state."""
    table = np.array(d.trans, dtype=np.int64).reshape(len(d.trans), len(d.classes))
    block = coarsest_partition(table, np.array(d.accept, dtype=np.int64))
    _, first, inverse = np.unique(block, return_index=True, return_inverse=True)
    part = np.argsort(np.argsort(first))[inverse.reshape(-1)].tolist()
    n = len(set(part))
    trans = [[0] * len(d.classes) for _ in range(n)]
    accept = [False] * n
    for q in range(len(d.trans)):
        trans[part[q]] = [part[t] for t in d.trans[q]]
        accept[part[q]] = d.accept[q]
    # Renumber so the start state (old 0) stays 0.
    perm = {part[0]: 0}
    for q in range(n):
        perm.setdefault(q, len(perm))
    out = [[0] * len(d.classes) for _ in range(n)]
    acc = [False] * n
    for q in range(n):
        out[perm[q]] = [perm[t] for t in trans[q]]
        acc[perm[q]] = accept[q]
    return _DFA(d.classes, out, acc)


def _to_regex(d: _DFA, limit: int = MAX_PATTERN_REGEX, reverse: bool = False,
              unit: Callable[[Ranges], str | None] = unit_regex) -> PatternInfo | None:
    """The DFA's language as a lexeme-body regex over JSON units (state elimination);
    `AutomatonTooLarge` once an entry passes `limit` characters. With `reverse`, the regex of the
    language's reversal (each path's pieces concatenated the other way round). `unit`
    writes one class of code points (JSON string units by default)."""
    n = len(d.trans)
    # Live states: those from which an accepting state is reachable.
    live = {q for q in range(n) if d.accept[q]}
    changed = True
    while changed:
        changed = False
        for q in range(n):
            if q not in live and any(t in live for t in d.trans[q]):
                live.add(q)
                changed = True
    if 0 not in live:
        return None
    # Length range over live states (None = unbounded: a live cycle).
    lo = _shortest(d, live)
    hi = _longest(d, live)
    S, F = n, n + 1
    R: dict[int, dict[int, str]] = {q: {} for q in range(n + 2)}
    for q in live:
        by_target: dict[int, list[tuple[int, int]]] = {}
        for c, t in enumerate(d.trans[q]):
            if t in live:
                by_target.setdefault(t, []).extend(d.classes[c])
        for t, ranges in by_target.items():
            u = unit(normalize(ranges))
            if u is not None:
                R[q][t] = u
        if d.accept[q]:
            R[q][F] = ""
    R[S][0] = ""
    incoming: dict[int, set[int]] = {q: set() for q in range(n + 2)}
    for i, outs in R.items():
        for j in outs:
            incoming[j].add(i)
    # Eliminate the state of least (incoming x outgoing) first: a heap of (cost, state), an
    # entry stale once its state is gone or its cost changed (each elimination changes the
    # costs of its neighbours, which are pushed again).
    def cost(x: int) -> int:
        return (len(incoming[x]) - (x in incoming[x])) * len(R[x])

    pending = set(live)
    heap = [(cost(x), x) for x in pending]
    heapq.heapify(heap)
    while pending:
        c, k = heapq.heappop(heap)
        if k not in pending or c != cost(k):
            continue
        pending.discard(k)
        loop = R[k].pop(k, None)
        incoming[k].discard(k)
        star = f"(?:{loop})*" if loop else ""
        outs = R.pop(k)
        for j in outs:
            incoming[j].discard(k)
        incoming_k = incoming.pop(k)
        for i in incoming_k:
            into = R[i].pop(k)
            for j, out in outs.items():
                text = out + star + into if reverse else into + star + out
                prev = R[i].get(j)
                if prev is not None and prev != text:
                    text = f"(?:{prev}|{text})"
                if len(text) > limit:
                    raise AutomatonTooLarge
                # Every entry is safe to concatenate (a unit, a group, or a concatenation of those).
                R[i][j] = text
                incoming[j].add(i)
        for x in {*outs, *incoming_k} & pending:
            heapq.heappush(heap, (cost(x), x))
    body = R[S].get(F)
    return None if body is None else PatternInfo(body, lo, hi)


def _shortest(d: _DFA, live: set[int]) -> int:
    dist = {0: 0}
    frontier = [0]
    while frontier:
        nxt = []
        for q in frontier:
            if d.accept[q]:
                return dist[q]
            for t in d.trans[q]:
                if t in live and t not in dist:
                    dist[t] = dist[q] + 1
                    nxt.append(t)
        frontier = nxt
    return 0


def _longest(d: _DFA, live: set[int]) -> int | None:
    """Longest accepted length, or None when a live cycle makes it unbounded."""
    memo: dict[int, int | None] = {}
    on_path: set[int] = set()
    order: list[tuple[int, int]] = [(0, 0)]
    while order:
        q, i = order.pop()
        if i == 0:
            on_path.add(q)
        succ = sorted({t for t in d.trans[q] if t in live})
        if i < len(succ):
            order.append((q, i + 1))
            t = succ[i]
            if t in on_path:
                return None
            if t not in memo:
                order.append((t, 0))
            continue
        on_path.discard(q)
        best = 0 if d.accept[q] else -1
        for t in succ:
            m = memo.get(t)
            if m is None:
                return None
            if m >= 0:
                best = max(best, m + 1)
        memo[q] = best
    return memo.get(0)


def _accepts_everything(d: _DFA) -> bool:
    """Whether a minimal DFA accepts every string: its start accepts and loops on every
    class of scalar values (only the surrogate class, never matched, may leave it)."""
    return d.accept[0] and all(t == 0 for c, t in enumerate(d.trans[0]) if subtract(d.classes[c], (SURROGATES,)))


def dfa_regex(classes: list[Ranges], trans: list[list[int]], accept: list[bool], limit: int,
              reverse: bool = False, unit: Callable[[Ranges], str | None] = unit_regex) -> str | None:
    """The language of a complete DFA (start state 0, `trans[q][c]` for class `classes[c]`)
    as one regex, minimised first; None when it is empty. With `reverse`, the DFA reads
    the strings backwards and the regex is of the strings themselves (numerals decided
    by their last digits have the simpler automaton backwards). For front ends that
    build a regular language as an automaton (`multiples`); `RegexError` when the regex
    would pass `limit` characters. `unit` writes a class (JSON string units by default;
    `raw_class_regex` for the code points themselves)."""
    try:
        info = _to_regex(_minimise(_DFA(classes, trans, accept)), limit, reverse, unit)
    except AutomatonTooLarge:
        raise RegexError(f"the automaton's regex is longer than {limit} characters") from None
    return None if info is None else info.body


def pattern_set_body(positive: list[str], negative: list[str], *, min_len: int = 0,
                     max_len: int | None = None) -> PatternInfo | None:
    """Lexeme-body regex for strings that match every `positive` ECMA pattern, no `negative`
    one, and have min_len..max_len code points; None when there are none.

    Built through automata over code-point classes (determinised, multiplied,
    minimised) and back to a regex by state elimination. When the length counter
    makes that too large, the lengths become a look-ahead in front of the
    patterns' own regex (`(?=(?:unit){m,n}")`, exact: the closing quote is the
    first raw quote), which pda's DFA builder intersects. A pattern set that
    every string matches (`([a-z]+)?` unanchored) gives `ANY_STRING_BODY`
    whatever the lengths: the caller applies them (it counts long strings in
    chunks). Raises `RegexError` when the automaton or the regex would exceed
    `MAX_PATTERN_DFA_STATES` or `MAX_PATTERN_REGEX`.
    """
    nfa = _NFA()
    wanted = [True] * len(positive) + [False] * len(negative)
    try:
        ends = [_pattern_nfa(nfa, p) for p in [*positive, *negative]]
        # Every DFA is over the classes of the whole NFA, so they share one partition.
        dfas = [_determinise(nfa, s, e) for s, e in ends]
        free = _minimise(_product(dfas, wanted, 0, None))
        if _accepts_everything(free):
            return PatternInfo(ANY_STRING_BODY, 0, None)
        if (min_len, max_len) == (0, None):
            return _to_regex(free)
        try:
            return _to_regex(_minimise(_product(dfas, wanted, min_len, max_len)))
        except AutomatonTooLarge:
            info = _to_regex(free)
    except AutomatonTooLarge:
        raise RegexError(f"patterns {[*positive, *negative]!r} with lengths {min_len}..{max_len}: "
                         "the automaton is too large to write as one terminal") from None
    if info is None:
        return None
    count = f"{{{min_len},}}" if max_len is None else f"{{{min_len},{max_len}}}"
    lo = max(min_len, info.min_len)
    hi = info.max_len if max_len is None else max_len if info.max_len is None else min(max_len, info.max_len)
    return PatternInfo(f'(?=(?:{ANY_UNIT}){count}")' + info.body, lo, hi)
