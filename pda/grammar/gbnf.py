"""GBNF (llama.cpp's grammar format) → pda's IR, built with the shared `GrammarBuilder`.

The text is parsed into a small AST, which is lowered into builder rules and
terminals: each GBNF rule a reserved builder rule, a group of several options a
rule, `{m,n}` the builder's O(log n) repetition. `gbnf_to_lark` is the same
grammar as the builder's Lark text (the tests' reference parses it with Lark).

GBNF has no lexer: its grammar is over characters. pda lexes greedily, so a
multi-character terminal could swallow text that the character-level grammar
would split differently. Invariant: every terminal matches exactly one
character: a literal "abc" becomes the three terminals "a" "b" "c", a character
class becomes a one-character regex terminal. With one-character terminals the
longest match is always one character, and pda hands the parser every terminal
that matches it, so greedy lexing cannot change the language.

Syntax accepted (llama.cpp's `grammar-parser`): rules `name ::= body`, `|`,
groups `( )`, postfix `? * +`, `{m}`, `{m,}`, `{m,n}` (and `{,n}`), literals
`"..."`, classes `[...]` / `[^...]` with ranges, `.` (any character), escapes
`\\x..`, `\\u....`, `\\U........`, `\\t \\r \\n \\\\ \\" \\[ \\]`, `#` comments.
A rule body continues over newlines only after `::=`, after `|`, or inside
parentheses, as in llama.cpp. `root` is the start symbol. Rule names may also
contain `_` (llama.cpp allows letters, digits and `-`). Left recursion, which
llama.cpp rejects, is accepted: pda's Earley parser handles it.
"""

from __future__ import annotations

import re
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from pda.errors import GrammarError
from pda.grammar.builder import GrammarBuilder
from pda.grammar.ir import GrammarIR
from pda.regex.syntax import drive

# -- AST ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Literal:
    text: str


@dataclass(frozen=True)
class _CharClass:
    ranges: tuple[tuple[int, int], ...]
    negated: bool


@dataclass(frozen=True)
class _AnyChar:
    pass


@dataclass(frozen=True)
class _Ref:
    name: str
    line: int
    column: int


@dataclass(frozen=True)
class _Repeat:
    item: _Node
    min: int
    max: int | None  # None: unbounded


@dataclass(frozen=True)
class _Seq:
    items: tuple[_Node, ...]


@dataclass(frozen=True)
class _Alt:
    options: tuple[_Seq, ...]


_Node = _Literal | _CharClass | _AnyChar | _Ref | _Repeat | _Alt  # an item of a sequence

_MAX_REPETITION = 2000  # llama.cpp's MAX_REPETITION_THRESHOLD
_NAME_CHAR = re.compile(r"[A-Za-z0-9_\-]")
_SIMPLE_ESCAPES = {"t": "\t", "r": "\r", "n": "\n", "\\": "\\", '"': '"', "[": "[", "]": "]"}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}


# -- parser ------------------------------------------------------------------


class _Parser:
    """Recursive-descent parser mirroring llama.cpp's `grammar-parser.cpp`.

    `_alternates` and `_sequence` recurse into each other at every `(`; they are
    generators run by `drive`, so any depth of nesting parses without Python recursion.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.rules: dict[str, tuple[_Alt, int]] = {}
        self.refs: list[_Ref] = []

    # position helpers
    def _where(self, pos: int | None = None) -> tuple[int, int]:
        pos = self.pos if pos is None else pos
        line = self.text.count("\n", 0, pos) + 1
        column = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        return line, column

    def _error(self, message: str, pos: int | None = None) -> GrammarError:
        line, column = self._where(pos)
        near = self.text[self.pos if pos is None else pos :][:20]
        return GrammarError(f"GBNF: {message} near {near!r}", line=line, column=column)

    def _peek(self, offset: int = 0) -> str:
        i = self.pos + offset
        return self.text[i] if i < len(self.text) else ""

    def _space(self, newline_ok: bool) -> None:
        text = self.text
        while self.pos < len(text):
            c = text[self.pos]
            if c in " \t" or (newline_ok and c in "\r\n"):
                self.pos += 1
            elif c == "#":
                while self.pos < len(text) and text[self.pos] not in "\r\n":
                    self.pos += 1
            else:
                break

    def _name(self) -> str:
        start = self.pos
        while self.pos < len(self.text) and _NAME_CHAR.match(self.text[self.pos]):
            self.pos += 1
        if self.pos == start:
            raise self._error("expecting a rule name")
        return self.text[start : self.pos]

    def _int(self) -> int:
        start = self.pos
        while self._peek().isdigit() and self._peek().isascii():
            self.pos += 1
        if self.pos == start:
            raise self._error("expecting an integer")
        return int(self.text[start : self.pos])

    def _char(self) -> int:
        """One (possibly escaped) character of a literal or class, as a code point."""
        start = self.pos
        c = self._peek()
        if c == "":
            raise self._error("unexpected end of input")
        if c != "\\":
            self.pos += 1
            return ord(c)
        e = self._peek(1)
        if e in _SIMPLE_ESCAPES:
            self.pos += 2
            return ord(_SIMPLE_ESCAPES[e])
        if e in _HEX_ESCAPES:
            size = _HEX_ESCAPES[e]
            digits = self.text[self.pos + 2 : self.pos + 2 + size]
            if len(digits) != size or not re.fullmatch(r"[0-9a-fA-F]+", digits):
                raise self._error(f"expecting {size} hex digits after \\{e}", start)
            value = int(digits, 16)
            if value > 0x10FFFF or 0xD800 <= value <= 0xDFFF:
                raise self._error(f"escape \\{e}{digits} is not a Unicode scalar value", start)
            self.pos += 2 + size
            return value
        raise self._error(f"unknown escape \\{e}", start)

    # grammar structure
    def parse(self) -> dict[str, tuple[_Alt, int]]:
        self._space(True)
        while self.pos < len(self.text):
            self._rule()
        return self.rules

    def _rule(self) -> None:
        start = self.pos
        name = self._name()
        line, _ = self._where(start)
        self._space(False)
        if not self.text.startswith("::=", self.pos):
            raise self._error(f"expecting ::= after rule name {name!r}")
        self.pos += 3
        self._space(True)
        body = drive(self._alternates(nested=False))
        if self._peek() == "\r":
            self.pos += 2 if self._peek(1) == "\n" else 1
        elif self._peek() == "\n":
            self.pos += 1
        elif self.pos < len(self.text):
            raise self._error(f"expecting newline or end of rule {name!r}")
        if name in self.rules:
            raise GrammarError(
                f"GBNF: rule {name!r} is defined twice (first at line {self.rules[name][1]})", line=line
            )
        self.rules[name] = (body, line)
        self._space(True)

    def _alternates(self, nested: bool) -> Generator[Any, Any, _Alt]:
        options = [(yield self._sequence(nested))]
        while self._peek() == "|":
            self.pos += 1
            self._space(True)
            options.append((yield self._sequence(nested)))
        return _Alt(tuple(options))

    def _sequence(self, nested: bool) -> Generator[Any, Any, _Seq]:
        items: list[_Node] = []
        while self.pos < len(self.text):
            c = self._peek()
            if c == '"':
                open_pos = self.pos
                self.pos += 1
                chars = []
                while self._peek() != '"':
                    if self._peek() == "":
                        raise self._error("unterminated string literal", open_pos)
                    chars.append(chr(self._char()))
                self.pos += 1
                items.append(_Literal("".join(chars)))
            elif c == "[":
                items.append(self._char_class())
            elif _NAME_CHAR.match(c):
                line, column = self._where()
                ref = _Ref(self._name(), line, column)
                self.refs.append(ref)
                items.append(ref)
            elif c == "(":
                open_pos = self.pos
                self.pos += 1
                self._space(True)
                inner = yield self._alternates(nested=True)
                if self._peek() != ")":
                    if self._peek():
                        raise self._error("expecting ')' or '|'")
                    raise self._error("expecting ')' to close this group", open_pos)
                self.pos += 1
                items.append(inner)
            elif c == ".":
                self.pos += 1
                items.append(_AnyChar())
            elif c in "*+?":
                if not items:
                    raise self._error(f"{c!r} must follow an item")
                self.pos += 1
                bounds = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
                items[-1] = _Repeat(items[-1], *bounds)
            elif c == "{":
                if not items:
                    raise self._error("'{' must follow an item")
                items[-1] = self._braces(items[-1], nested)
            else:
                break
            self._space(nested)
        return _Seq(tuple(items))

    def _braces(self, item: _Node, nested: bool) -> _Repeat:
        open_pos = self.pos
        self.pos += 1
        self._space(nested)
        low = self._int() if self._peek() != "," else 0
        self._space(nested)
        high: int | None
        if self._peek() == "}":
            high = low
        elif self._peek() == ",":
            self.pos += 1
            self._space(nested)
            high = self._int() if self._peek().isdigit() else None
            self._space(nested)
            if self._peek() != "}":
                raise self._error("expecting '}'")
        else:
            raise self._error("expecting ',' or '}' in repetition")
        self.pos += 1
        if high is not None and high < low:
            raise self._error(f"repetition {{{low},{high}}} has max < min", open_pos)
        if max(low, high or 0) > _MAX_REPETITION:
            raise self._error(f"repetition count above {_MAX_REPETITION}", open_pos)
        return _Repeat(item, low, high)

    def _char_class(self) -> _CharClass:
        open_pos = self.pos
        self.pos += 1
        negated = self._peek() == "^"
        if negated:
            self.pos += 1
        ranges: list[tuple[int, int]] = []
        while self._peek() != "]":
            if self._peek() == "":
                raise self._error("unterminated character class", open_pos)
            low = self._char()
            high = low
            if self._peek() == "-" and self._peek(1) not in ("]", ""):
                self.pos += 1
                high = self._char()
                if high < low:
                    raise self._error(f"character range {chr(low)!r}-{chr(high)!r} is reversed", open_pos)
            ranges.append((low, high))
        self.pos += 1
        if not ranges and not negated:
            raise self._error("empty character class [] matches nothing", open_pos)
        return _CharClass(tuple(ranges), negated)


# -- lowering ----------------------------------------------------------------

# Any one character (GBNF's `.` and `[^]`).
_ANY_CHAR = "(?s:.)"


def _escape(cp: int) -> str:
    """One character as a Python regex, in or out of a class: ASCII letters and digits
    as themselves, other printable ASCII backslash-escaped, the rest as hex escapes."""
    c = chr(cp)
    if c.isascii() and c.isalnum():
        return c
    if 0x20 <= cp < 0x7F:
        return "\\" + c
    if cp <= 0xFF:
        return f"\\x{cp:02x}"
    if cp <= 0xFFFF:
        return f"\\u{cp:04x}"
    return f"\\U{cp:08x}"


class _Lowering:
    """GBNF AST → rules and terminals of a `GrammarBuilder`; generators run by `drive`
    (no recursion at any depth). An item lowers to a list of symbols: a literal to one
    terminal per character, a group of one option to its symbols inline, a group of
    several options or a repeated item of several symbols to a rule."""

    def __init__(self, rules: dict[str, tuple[_Alt, int]], builder: GrammarBuilder) -> None:
        self.builder = builder
        self.names = {name: builder.reserve() for name in rules}

    def define(self, name: str, body: _Alt) -> None:
        self.builder.define(self.names[name], drive(self.alternatives(body)))

    def alternatives(self, node: _Alt) -> Generator[Any, list[str], list[list[str]]]:
        options = []
        for option in node.options:
            options.append((yield self.sequence(option)))
        return options

    def sequence(self, node: _Seq) -> Generator[Any, list[str], list[str]]:
        symbols: list[str] = []
        for item in node.items:
            symbols += yield self.item(item)
        return symbols

    def item(self, node: _Node) -> Generator[Any, Any, list[str]]:
        builder = self.builder
        if isinstance(node, _Literal):
            return [builder.terminal(_escape(ord(c)), "CHAR") for c in node.text]
        if isinstance(node, _CharClass):
            return [builder.terminal(_class_regex(node), "CHAR")]
        if isinstance(node, _AnyChar):
            return [builder.terminal(_ANY_CHAR, "CHAR")]
        if isinstance(node, _Ref):
            return [self.names[node.name]]
        if isinstance(node, _Alt):
            options = yield self.alternatives(node)
            if len(options) == 1:
                return options[0]
            return [builder.rule(options) or ""]
        symbols = yield self.item(node.item)
        if not symbols or node.max == 0:
            return []
        one = symbols[0] if len(symbols) == 1 else builder.rule([symbols]) or ""
        return builder.repeat(one, node.min, node.max)


def _class_regex(node: _CharClass) -> str:
    """A one-character regex for a character class (`[^]`: any character)."""
    if node.negated and not node.ranges:
        return _ANY_CHAR
    if not node.negated and len(node.ranges) == 1 and node.ranges[0][0] == node.ranges[0][1]:
        return _escape(node.ranges[0][0])
    body = "".join(_escape(lo) if lo == hi else f"{_escape(lo)}-{_escape(hi)}" for lo, hi in node.ranges)
    return f"[{'^' if node.negated else ''}{body}]"


def _build(text: str) -> tuple[GrammarBuilder, str]:
    """The builder holding a GBNF grammar's rules, and the builder's name for `root`."""
    parser = _Parser(text)
    rules = parser.parse()
    if "root" not in rules:
        raise GrammarError("GBNF: grammar has no 'root' rule (the start symbol)")
    for ref in parser.refs:
        if ref.name not in rules:
            raise GrammarError(f"GBNF: undefined rule {ref.name!r}", line=ref.line, column=ref.column)
    builder = GrammarBuilder()
    lowering = _Lowering(rules, builder)
    for name, (body, _line) in rules.items():
        lowering.define(name, body)
    return builder, lowering.names["root"]


def gbnf_to_ir(text: str, *, source: str | None = None) -> GrammarIR:
    """The grammar of GBNF text, start rule `root`.

    Every terminal matches exactly one character, so the language under pda's
    greedy lexer equals the GBNF language. Errors (syntax, undefined rules, no
    `root`) raise `GrammarError` with the line.
    """
    builder, root = _build(text)
    return builder.ir([[root]], source=source, name="root")


def gbnf_to_lark(text: str) -> str:
    """The same grammar as Lark text (start rule `root`), written by the builder: the
    tests' character-level reference parses it with Lark's Earley parser."""
    builder, root = _build(text)
    return builder.lark([root], name="root")


__all__ = ["gbnf_to_ir", "gbnf_to_lark"]
