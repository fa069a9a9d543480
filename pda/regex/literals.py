"""Recognise a terminal whose pattern is an alternation of literal strings.

Lark writes `T: "a" | "b"` as `(?:a|b)` with each string `re.escape`d, and an
alternative that names another such terminal as a nested group
(`(?:(?:a|b)|c)`). Only that shape is recognised: alternatives made of plain
characters and escaped non-alphanumeric characters, or a group that is itself
such an alternation. Anything else — a class, a quantifier, an escape like
`\\d`, an inline flag group such as `(?i:...)`, a group inside a concatenation —
is not a finite literal set for this purpose, and the terminal keeps the general
regex path. The scan is one compiled-regex pass, so it stays cheap for patterns
of megabytes (100,000 values).

A free JSON key with exclusions, `"(?!(?:a|b)")(?:G)*"` (what `pda.grammar.json_schema` writes for the keys
an object's named properties leave free), is read back by `excluded_alternatives` as the literals `a`, `b`
and the pattern without its look-ahead, `"(?:G)*"`, so that the terminal builder can take those strings out
of that pattern's DFA directly (`pda.regex.finite_set.excluding_dfa`).

The other alternation read here is of whole patterns, each in a group of its own,
`(?:(?:P1)|(?:P2)|...)` (`patterns_alternation`: what `pda.grammar.alternatives` writes
when it merges regex terminals), read back by `alternation_parts` so that the terminal
builder can unite the parts' DFAs instead of parsing the whole pattern.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

# One lexical item of a literal alternation: a run of plain characters, an
# escaped non-alphanumeric character, `(?:`, `)` or `|`. Anything else stops the scan.
_ITEM = re.compile(r"[^\\|()\[\]{}.*+?^$]+|\\[^0-9A-Za-z]|\(\?:|[|)]", re.S)
_ESCAPE = re.compile(r"\\(.)", re.S)
# What may not appear inside a flat alternation for the fast path (`|` separates).
_SPECIAL = re.compile(r"[\\()\[\]{}.*+?^$]")
# Global inline-flag groups at the start of a pattern.
_LEADING_FLAGS = re.compile(r"(?:\(\?[aiLmsux]+\))*")
# Flags that do not change what a literal matches (`x` does: whitespace and `#`).
_NEUTRAL_FLAGS = frozenset("smau")


def literal_alternatives(pattern: str, flags: str = "") -> list[str] | None:
    """The strings whose alternation `pattern` is (duplicates kept, in order), or None.

    None means the pattern is not recognised as a pure alternation of literals (or a
    flag such as `i` or `x` changes the meaning of its characters).
    """
    found = _scan(pattern, flags)
    return None if found is None else list(found)


def single_literal(pattern: str, flags: str = "") -> str | None:
    """The string a pattern of plain characters spells (the pattern itself: a JSON Schema key), or None: the
    case of `literal_alternatives` that most terminals are, read without its memo or a list."""
    if "|" in pattern or _SPECIAL.search(pattern) or (flags and not set(flags) <= _NEUTRAL_FLAGS):
        return None
    return pattern


def alternation_pattern(strings: Iterable[str]) -> str:
    """The pattern `literal_alternatives` reads back as `strings`, sorted and without duplicates: `(?:a|b)`."""
    return "(?:" + "|".join(re.escape(w) for w in sorted(set(strings))) + ")"


def leading_inline_flags(pattern: str) -> str:
    """The global inline-flag groups a pattern starts with (`(?i)(?s)`), or "": they must stay at its very start."""
    return _LEADING_FLAGS.match(pattern).group()


# The DFA builder and the token index's lookup both ask about the same terminals; a
# 100,000-value pattern takes ~0.1 s to scan, and a str caches its own hash.
@functools.lru_cache(maxsize=32)
def _scan(pattern: str, flags: str) -> tuple[str, ...] | None:
    if not set(flags) <= _NEUTRAL_FLAGS:
        return None
    if single_literal(pattern) is not None:  # one plain literal: a search, not the item loop (~1.2 -> ~0.3 µs)
        return (pattern,)
    # The usual case, `(?:v1|v2|...)` with no escape and no nested group, is a split (a C loop).
    if pattern.startswith("(?:") and pattern.endswith(")") and not _SPECIAL.search(pattern, 3, len(pattern) - 1):
        return tuple(pattern[3:-1].split("|"))
    out: list[str] = []
    current: list[str] = []  # pieces of the alternative being read
    depth = 0
    # Per open group: did an alternative start with this group (and must end with it)?
    expect_bar_or_close = False  # after a group closes, only `|` or `)` may follow
    pos = 0
    n = len(pattern)
    for m in _ITEM.finditer(pattern):
        if m.start() != pos:
            return None
        pos = m.end()
        item = m.group()
        if item == "(?:":
            if current or expect_bar_or_close:
                return None  # a group inside a concatenation: not a plain alternation
            depth += 1
        elif item == ")":
            if depth == 0:
                return None
            if not expect_bar_or_close:
                out.append("".join(current))
                current = []
            depth -= 1
            expect_bar_or_close = True
        elif item == "|":
            if not expect_bar_or_close:
                out.append("".join(current))
                current = []
            expect_bar_or_close = False
        else:
            if expect_bar_or_close:
                return None
            current.append(_ESCAPE.sub(r"\1", item) if item[0] == "\\" else item)
    if pos != n or depth != 0:
        return None
    if not expect_bar_or_close:
        out.append("".join(current))
    return tuple(out)


def excluded_alternatives(pattern: str, flags: str = "") -> tuple[list[str], str] | None:
    """(the literals L, the pattern P) of a pattern written `"(?!(?:L1|L2|...)")(?:G)*"`, with P = `"(?:G)*"`,
    or None. Its language is P's minus the strings that start with `"` Li `"`: the look-ahead, read under
    `re.fullmatch`, takes those out of what follows the first quote, and what follows is one repeated group
    and the closing quote, which means alone what it means in place (its group balanced as `re` reads it)."""
    if not pattern.startswith('"(?!(?:') or not pattern.endswith('*"'):
        return None
    close = _group_end(pattern, 4)
    if close is None or not pattern.startswith('")(?:', close):
        return None
    strings = literal_alternatives(pattern[4:close], flags)
    rest = pattern[close + 2 :]
    if strings is None or _group_end(rest, 0) != len(rest) - 2:
        return None
    return strings, '"' + rest


def patterns_alternation(patterns: list[str]) -> str:
    """The regex of the alternation of `patterns`, each in a group of its own: `(?:(?:P1)|(?:P2))`."""
    return "(?:" + "|".join(f"(?:{p})" for p in patterns) + ")"


# One item of a pattern as `re` reads group nesting: a run of escapes, classes (`]` first is a literal, `\\`
# escapes) and other characters but parentheses; a comment group; a group's `(` or `)`.
_GROUP_ITEM = re.compile(r"(?:[^\\\[()]++|\\.|\[\^?\]?(?:[^\\\]]|\\.)*+\])++|\(\?#[^)]*\)|[()]", re.S)


def alternation_parts(pattern: str, flags: str = "") -> list[str] | None:
    """The patterns P1, P2, ... (two or more) of a pattern written as `(?:(?:P1)|(?:P2)|...)`, or None.

    Their union is the pattern's language when each Pi stands alone: its groups balanced (read as `re`
    reads them: escapes, classes and comments skipped), no global inline flags at its start and no named
    group (which would clash between parts); the verbose flag `x` (comments to the end of a line) is
    never read here. A pattern in that form is not necessarily one `patterns_alternation` wrote
    (`(?:(?:a)|(?:b))` may be anyone's): the reading holds for any."""
    if "x" in flags or not pattern.startswith("(?:(?:") or not pattern.endswith("))"):
        return None
    parts, at, end = [], 3, len(pattern) - 1
    while True:
        close = _group_end(pattern, at)
        if close is None or close > end:
            return None
        part = pattern[at + 3 : close - 1]
        if "(?P" in part or leading_inline_flags(part):
            return None
        parts.append(part)
        if close == end:
            return parts if len(parts) > 1 else None
        if not pattern.startswith("|(?:", close):
            return None
        at = close + 1


def _group_end(pattern: str, at: int) -> int | None:
    """The index after the `)` that closes the group opening at `pattern[at]`, or None (an item `re` would
    refuse, such as an unclosed class, or no closing `)`)."""
    depth, i = 0, at
    while True:
        m = _GROUP_ITEM.match(pattern, i)
        if m is None:
            return None
        i = m.end()
        item = m.group()
        if item == "(":
            depth += 1
        elif item == ")":
            depth -= 1
            if depth == 0:
                return i
