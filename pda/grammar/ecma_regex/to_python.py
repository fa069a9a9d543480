"""ECMA-262 regex syntax rewritten as Python `re` syntax with the ECMA meaning.

`ecma_to_python` rewrites what differs (``\\d``/``\\w`` are ASCII, ``\\s`` is ECMA's
Unicode white space, ``.`` excludes the four line terminators, ``$`` is end of
input, ``[^]``, ``\\cX``, ``\\u{...}``), so Python's own parser reads an ECMA pattern
as ECMA does (`python_search_regex` compiles one for matching values in Python). `py_char` and
`char_class` write code points and classes as ASCII-only Python regex text, the form every regex
this package produces takes.
"""

from __future__ import annotations

import functools
import re

from pda.errors import RegexError
from pda.grammar.ecma_regex.ranges import (
    ANY, ASCII_DIGIT, ASCII_WORD, ECMA_LINE_TERMINATORS, ECMA_SPACE, MAX_CP, Ranges, complement, normalize,
)

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
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_LOW_SURROGATE_ESCAPE = re.compile(r"\\u([dD][c-fC-F][0-9a-fA-F]{2})")
# The class escapes and their ECMA code points (`\d` and `\w` are ASCII, `\s` ECMA's white space).
_CLASS_ESCAPES: dict[str, Ranges] = {
    "d": ASCII_DIGIT, "D": complement(ASCII_DIGIT), "w": ASCII_WORD,
    "W": complement(ASCII_WORD), "s": ECMA_SPACE, "S": complement(ECMA_SPACE),
}


@functools.lru_cache(maxsize=512)
def python_search_regex(pattern: str) -> re.Pattern[str]:
    """`re.compile(ecma_to_python(pattern))` for matching values with Python's `re` (`re.search`
    semantics), with each class that reaches U+10FFFF outside brackets (``.``, ``\\S``, ``\\D``,
    ``\\W``) written as its complement negated (``[^\\x0a\\x0d\\u2028-\\u2029]`` for ``.``):
    the same code points, but Python compiles a class of ranges up to U+10FFFF by marking every BMP
    code point in it (2-4 ms for ``.``), a negated short one at once. Raises `re.error` as compiling
    `ecma_to_python(pattern)` does (an error's position is in that text), `RegexError` as it does.
    Memoised: a pattern is matched against every declared name and every enum value beside it."""
    try:
        return re.compile(_translate(pattern, negate_wide=True))
    except re.error:
        return re.compile(ecma_to_python(pattern))


@functools.lru_cache(maxsize=512)
def ecma_to_python(pattern: str) -> str:
    """Rewrite an ECMA-262 regex (``u`` flag semantics) into Python `re` syntax.

    The result means the same thing under plain `re.search` (no flags). Constructs
    a DFA cannot express (back-references, look-around, ``\\b``) are kept; the
    lexeme renderer rejects them with `RegexError`. Memoised: a pattern is read a character
    at a time, and asked for again by each declared name it is matched against.
    """
    return _translate(pattern, negate_wide=False)


def _wide_class(ranges: Ranges) -> str:
    """`char_class(ranges)`, or, when `ranges` reaches U+10FFFF and is not every code point, its
    complement negated (`python_search_regex`)."""
    rest = complement(ranges)
    if rest and normalize(ranges)[-1][1] == MAX_CP:
        return f"[^{_class_items(rest)}]"
    return char_class(ranges)


def _translate(pattern: str, negate_wide: bool) -> str:
    """`ecma_to_python`; with `negate_wide`, `python_search_regex`'s spelling of the classes outside brackets."""
    whole_class = _wide_class if negate_wide else char_class
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False

    def escape(j: int) -> tuple[str, int, Ranges | None]:
        """Translate the escape at pattern[j] == '\\'; return (text, next index, class ranges)."""
        if j + 1 >= n:
            raise RegexError(f"pattern {pattern!r}: trailing backslash at offset {j}")
        c = pattern[j + 1]
        if c in _CLASS_ESCAPES:
            return "", j + 2, _CLASS_ESCAPES[c]
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
        if c == "u" and _HEX4.fullmatch(pattern, j + 2, j + 6):
            hi = int(pattern[j + 2:j + 6], 16)
            # A surrogate pair written as two \u escapes is one code point.
            m = _LOW_SURROGATE_ESCAPE.fullmatch(pattern, j + 6, j + 12)
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
            out.append(whole_class(sets) if sets is not None else text)
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
            out.append(whole_class(complement(ECMA_LINE_TERMINATORS)))
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

