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
3. `CharRegex` renders the AST with every character class replaced by the set
   of all JSON encodings of its characters ("units": a raw character, a short
   escape, a ``\\uXXXX`` escape in either hex case, or a surrogate-pair escape
   for characters outside the BMP). One unit is one code point, so a count
   ``{m,n}`` over units counts code points, as ``minLength``/``maxLength`` do.

Lone surrogates (``\\ud800`` alone) are not Unicode text and are never accepted.
Every regex produced here is ASCII-only Python `re` syntax without look-around,
so pda's DFA builder can compile it.
"""

from __future__ import annotations

import functools
import re
import re._constants as C
import re._parser as P
from dataclasses import dataclass

from pda.errors import RegexError
from pda.regex.charset import merge_ranges

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
    out = []
    for lo1, hi1 in normalize(a):
        for lo2, hi2 in normalize(b):
            lo, hi = max(lo1, lo2), min(hi1, hi2)
            if lo <= hi:
                out.append((lo, hi))
    return normalize(out)


# ------------------------------------------------------------------ ECMA → Python


def _py_char(cp: int) -> str:
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
    return "".join(_py_char(lo) if lo == hi else f"{_py_char(lo)}-{_py_char(hi)}" for lo, hi in ranges)


def char_class(ranges: Ranges) -> str:
    """A Python character class for `ranges` (ASCII-only text)."""
    ranges = normalize(ranges)
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return _py_char(ranges[0][0])
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
        if c == "c" and j + 2 < n and pattern[j + 2].isalpha():
            return _py_char(ord(pattern[j + 2]) % 32), j + 3, None
        if c == "u" and j + 2 < n and pattern[j + 2] == "{":
            end = pattern.find("}", j + 3)
            if end < 0:
                raise RegexError(f"pattern {pattern!r}: unterminated \\u{{...}} at offset {j}")
            return _py_char(int(pattern[j + 3:end], 16)), end + 1, None
        if c == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", pattern[j + 2:j + 6]):
            hi = int(pattern[j + 2:j + 6], 16)
            # A surrogate pair written as two \u escapes is one code point.
            m = re.fullmatch(r"\\u([dD][c-fC-F][0-9a-fA-F]{2})", pattern[j + 6:j + 12])
            if 0xD800 <= hi <= 0xDBFF and m:
                cp = 0x10000 + ((hi - 0xD800) << 10) + (int(m.group(1), 16) - 0xDC00)
                return _py_char(cp), j + 12, None
            return _py_char(hi), j + 6, None
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
                out.append(_py_char(ord(c)) if c not in "-^" else c)
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


def _digit_seq_regex(seq: list[tuple[int, int]], hex_digits: bool) -> str:
    parts = []
    for lo, hi in seq:
        if hex_digits:
            ranges: list[tuple[int, int]] = []
            for d in range(lo, hi + 1):
                ch = "0123456789abcdef"[d]
                ranges.append((ord(ch), ord(ch)))
                if ch.isalpha():
                    ranges.append((ord(ch.upper()), ord(ch.upper())))
            parts.append(char_class(normalize(ranges)))
        else:
            parts.append(str(lo) if lo == hi else f"[{lo}-{hi}]")
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


@functools.lru_cache(maxsize=4096)
def hex4_regex(lo: int, hi: int) -> str:
    """Four hex digits (either case) spelling a value in lo..hi."""
    alts = [_digit_seq_regex(s, True) for s in digit_range_alternatives(lo, hi, 4, 16)]
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


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
        alts += [_digit_seq_regex(s, False) for s in digit_range_alternatives(wlo, whi, width)]
    if hi is None:
        alts.append(f"[1-9][0-9]{{{width0},}}")
    # Longer numerals first: a backtracking matcher tries alternatives in order.
    alts.reverse()
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


# ------------------------------------------------------------ JSON encodings

_SHORT_ESCAPES = {0x22: '"', 0x5C: "\\\\", 0x2F: "/", 0x08: "b", 0x0C: "f", 0x0A: "n", 0x0D: "r", 0x09: "t"}
_RAW_FORBIDDEN: Ranges = ((0x00, 0x1F), (0x22, 0x22), (0x5C, 0x5C), SURROGATES)


@functools.lru_cache(maxsize=4096)
def unit_regex(ranges: Ranges) -> str | None:
    """Every JSON-string encoding of one character from `ranges`, or None if the set is empty."""
    ranges = subtract(normalize(ranges), (SURROGATES,))
    if not ranges:
        return None
    alts: list[str] = []
    raw = subtract(ranges, _RAW_FORBIDDEN)
    if raw:
        alts.append(char_class(raw))
    short = [esc for cp, esc in sorted(_SHORT_ESCAPES.items()) if intersect(ranges, ((cp, cp),))]
    bmp = intersect(ranges, ((0, 0xFFFF),))
    uesc = [hex4_regex(lo, hi) for lo, hi in bmp]
    escaped = short + (["u" + (uesc[0] if len(uesc) == 1 else "(?:" + "|".join(uesc) + ")")] if uesc else [])
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
    if escaped:
        alts.append("\\\\" + (escaped[0] if len(escaped) == 1 else "(?:" + "|".join(escaped) + ")"))
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


ANY_UNIT = unit_regex(ANY)


def literal_body_regex(text: str) -> str:
    """The lexeme body (between the quotes) of every JSON encoding of `text`."""
    return "".join(unit_regex(((ord(c), ord(c)),)) or "" for c in text)


def literal_string_regex(text: str) -> str:
    """A terminal regex for the JSON string `text`, in any of its encodings."""
    return '"' + literal_body_regex(text) + '"'


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
        out, lo, hi = [], 0, 0
        for op, av in items:
            text, a, b = self.node(op, av)
            if text is None:
                return None, 0, 0
            out.append(text)
            lo += a
            hi = None if hi is None or b is None else hi + b
        return "".join(out), lo, hi

    def node(self, op: object, av: object) -> tuple[str | None, int, int | None]:
        cs = self.charset(op, av)
        if cs is not None:
            u = unit_regex(cs)
            return (u, 1, 1) if u is not None else (None, 0, 0)
        if op is C.SUBPATTERN:
            _group, add_flags, del_flags, sub = av  # type: ignore[misc]
            if add_flags & ~re.IGNORECASE or del_flags:
                raise self.fail("inline flags")
            saved = self.ignore_case
            self.ignore_case = saved or bool(add_flags & re.IGNORECASE)
            text, lo, hi = self.seq(list(sub))
            self.ignore_case = saved
            return (f"(?:{text})" if text is not None else None), lo, hi
        if op is C.BRANCH:
            alts = [self.seq(list(b)) for b in av[1]]  # type: ignore[index]
            live = [a for a in alts if a[0] is not None]
            if not live:
                return None, 0, 0
            hi_vals = [a[2] for a in live]
            return ("(?:" + "|".join(a[0] for a in live) + ")",  # type: ignore[misc]
                    min(a[1] for a in live), None if None in hi_vals else max(hi_vals))  # type: ignore[type-var]
        if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            lo, hi, sub = av  # type: ignore[misc]
            text, a, b = self.seq(list(sub))
            if text is None:
                return ("", 0, 0) if lo == 0 else (None, 0, 0)
            top = None if hi is C.MAXREPEAT else hi
            q = "*" if (lo, top) == (0, None) else "+" if (lo, top) == (1, None) else \
                "?" if (lo, top) == (0, 1) else f"{{{lo},}}" if top is None else \
                f"{{{lo}}}" if lo == top else f"{{{lo},{top}}}"
            return (f"(?:{text}){q}", a * lo, None if top is None or b is None else b * top)
        if op is C.AT:
            raise self.fail(f"anchor {av} inside the pattern")
        if op is C.GROUPREF:
            raise self.fail("a back-reference")
        if op in (C.ASSERT, C.ASSERT_NOT):
            raise self.fail("look-around")
        raise self.fail(f"construct {op}")


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
        tree = P.parse(pattern)
    except re.error as exc:
        raise RegexError(f"pattern {src!r} is not a valid regex: {exc}") from None
    r = _Renderer(src)
    items = list(tree)
    # A top-level alternation whose branches carry their own anchors (`^a|b$`).
    if search and len(items) == 1 and items[0][0] is C.BRANCH:
        branches = [list(b) for b in items[0][1][1]]
    elif search and len(items) == 1 and items[0][0] is C.SUBPATTERN and not items[0][1][1] \
            and len(items[0][1][3]) == 1 and items[0][1][3][0][0] is C.BRANCH:
        branches = [list(b) for b in items[0][1][3][0][1][1]]
    else:
        branches = [items]
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


def ecma_pattern_body(pattern: str, *, min_len: int = 0, max_len: int | None = None) -> PatternInfo | None:
    """Lexeme-body regex for JSON strings that a JSON Schema `pattern` accepts (search semantics).

    With a length range, returns the exact intersection when the pattern is a
    fully anchored repetition of one character class (``^[a-z]{2,}$``), and
    None when that intersection is not expressible this way; without one,
    None means no string matches.
    """
    python = ecma_to_python(pattern)
    if (min_len, max_len) == (0, None):
        return python_pattern_body(python, search=True, source=pattern)
    try:
        items = list(P.parse(python))
    except re.error as exc:
        raise RegexError(f"pattern {pattern!r} is not a valid regex: {exc}") from None
    body, start, end = _anchored(items)
    if not (start and end and len(body) == 1):
        return None
    op, av = body[0]
    r = _Renderer(pattern)
    if r.charset(op, av) is not None:
        lo, hi, sub = 1, 1, [(op, av)]
    elif op is C.MAX_REPEAT and len(av[2]) == 1 and r.charset(*av[2][0]) is not None:
        lo, hi, sub = av[0], (None if av[1] is C.MAXREPEAT else av[1]), list(av[2])
    else:
        return None
    lo = max(lo, min_len)
    hi = max_len if hi is None else hi if max_len is None else min(hi, max_len)
    unit = r.seq(sub)[0]
    if unit is None:
        return None
    count = f"{{{lo},}}" if hi is None else f"{{{lo},{hi}}}"
    return PatternInfo(f"(?:{unit}){count}", lo, hi)


def _lark_regex(regex: str) -> str:
    """Quote a Python regex as a Lark `/.../` literal."""
    return "/" + re.sub(r"(?<!\\)((?:\\\\)*)/", r"\1\\/", regex) + "/"


def regex_to_lark(pattern: str) -> str:
    """A Lark grammar whose language is the strings that fully match Python regex `pattern`."""
    try:
        re.compile(pattern)
    except re.error as exc:
        raise RegexError(f"pattern {pattern!r} is not a valid regex: {exc}") from None
    return f"start: REGEX\nREGEX: {_lark_regex(pattern)}\n"
