"""A Python regex quoted as a Lark `/.../` literal that Lark's loader reads back as the same regex.
"""

from __future__ import annotations

import re

from pda.errors import RegexError
from pda.regex.syntax import parse_pattern

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

