"""A terminal's regex, parsed by Python's own `re._parser`, as a small regular IR.

Two additions to `re`'s syntax and one to its reach: Unicode property classes
(`\\p{L}`, `[^\\P{Lu}x]`, from `unicode_props`); the byte-mode flag `b` (BYTE_MODE);
and any depth of group nesting (`re._parser` recurses per group, so deep groups are
parsed apart and spliced back, `_parse`). Every walk here runs on an explicit stack
(`drive`), never on Python's call stack.

The IR has only what a DFA can do: code-point sets (`Chars`), concatenation,
alternation, bounded/unbounded repetition, and two nodes that the automaton
builder turns into sub-DFAs:

- `FirstMatch(x)`: the strings of x with no proper prefix in x (the lexeme a
  lazy, first-match scan would stop at);
- `Guard(negate, look, body)`: body ∩ look·Σ* (or its complement), the exact
  meaning of a look-ahead followed by the rest of the pattern under fullmatch.

Flags are resolved here (case folding, DOTALL, ASCII), so the IR is
flag-free. Lazy quantifiers denote the same language as greedy ones under
fullmatch; the first-match meaning belongs to the terminal (`TerminalDef.lazy`).

Refused (with a `RegexError` naming terminal, construct and a rewrite):
back-references, conditionals, look-behind (except the escaped-string idiom
below), look-ahead not followed by more pattern or inside a group that is
followed by more pattern, word boundaries, anchors other than at the very
start/end, possessive quantifiers and atomic groups.

The escaped-string idiom `.*?(?<!\\\\)(\\\\\\\\)*?` followed by a literal
delimiter D (Lark's `common.lark` ESCAPED_STRING, python.lark's STRING and
LONG_STRING) becomes `FirstMatch((?:[^\\\\]|\\\\.)*D)` (with `.`'s DOTALL
meaning): the text up to the first D not escaped by an odd run of
backslashes. That equals what `re.match` returns (lazy, first match), not
`re.fullmatch` (which would let the body run past an earlier closing D).
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from re import _constants as C
from re import _parser as sre_parse
from typing import Any, ClassVar, TypeVar

from pda.errors import RegexError
from pda.lru import budget_cache, register_budget
from pda.regex import charset as cs
from pda.regex.unicode_props import property_set

T = TypeVar("T")

MAXREPEAT = C.MAXREPEAT


@dataclass(frozen=True)
class Chars:
    chars: cs.CharSet


class _Keyed:
    """A compound node's `structure_key`, kept on the node once taken (`_key`, not a field: equality and hashing
    ignore it). Translations are memoised, so the JSON string character's IR is one object in every string
    terminal: its key (~100 nodes, ~60 us to list) is listed once, not twice per terminal."""

    _key: ClassVar[tuple | None] = None


@dataclass(frozen=True)
class Seq(_Keyed):
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Alt(_Keyed):
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Repeat(_Keyed):
    item: Node
    lo: int
    hi: int | None  # None: unbounded


@dataclass(frozen=True)
class FirstMatch(_Keyed):
    item: Node


@dataclass(frozen=True)
class Guard(_Keyed):
    negate: bool
    look: Node
    body: Node


Node = Chars | Seq | Alt | Repeat | FirstMatch | Guard
EMPTY = Seq(())


def structure_key(node: Node, max_nodes: int) -> tuple | None:
    """A hashable key equal for equal trees (a flat preorder listing, built without recursion),
    or None for a tree of more than `max_nodes` nodes. Memos of sub-automata are keyed by it.

    A compound node keeps its key once taken (`_Keyed`), and a walk that meets a node with a key copies
    it: a key lists one entry per node, so it serves any `max_nodes` of at least its length."""
    known = None if isinstance(node, Chars) else node._key
    if known is not None:
        return known if len(known) <= max_nodes else None
    out: list = []
    stack = [node]
    while stack:
        item = stack.pop()
        if len(out) >= max_nodes:
            return None
        if isinstance(item, Chars):
            out.append(item.chars)
            continue
        known = item._key
        if known is not None:
            out.extend(known)
        elif isinstance(item, (Seq, Alt)):
            out.append((type(item).__name__, len(item.items)))
            stack.extend(reversed(item.items))
        elif isinstance(item, Repeat):
            out.append(("Repeat", item.lo, item.hi))
            stack.append(item.item)
        elif isinstance(item, FirstMatch):
            out.append(("FirstMatch",))
            stack.append(item.item)
        else:
            out.append(("Guard", item.negate))
            stack += [item.body, item.look]
    if len(out) > max_nodes:
        return None
    key = tuple(out)
    if not isinstance(node, Chars):
        object.__setattr__(node, "_key", key)
    return key


def alternation_key(branch_keys: Sequence[tuple | None], max_nodes: int) -> tuple | None:
    """`structure_key` of an `Alt` of two or more branches from its branches' keys (each taken with the same
    `max_nodes`), without walking them again: a terminal's builder looks its branches up by their keys, and
    keys the whole alternation as well."""
    if any(key is None for key in branch_keys) or 1 + sum(map(len, branch_keys)) > max_nodes:
        return None
    return (("Alt", len(branch_keys)), *itertools.chain.from_iterable(branch_keys))


# The `re` flags as plain ints: `int & re.IGNORECASE` runs enum's `__rand__` (~2 us a test;
# one JSON Schema key set's pattern makes thousands, a fifth of its translation).
_IGNORECASE, _DOTALL, _MULTILINE, _VERBOSE, _ASCII, _UNICODE = (
    int(f) for f in (re.IGNORECASE, re.DOTALL, re.MULTILINE, re.VERBOSE, re.ASCII, re.UNICODE)
)
FLAG_LETTERS = {"i": _IGNORECASE, "s": _DOTALL, "m": _MULTILINE, "x": _VERBOSE, "a": _ASCII, "u": _UNICODE}


# pda's own flag (not a `re` one): the pattern reads bytes, as a Python bytes regex does.
# Code points 0..255 of the pattern stand for the bytes of those values (`\\xe9` is
# the byte E9, not the UTF-8 of é), `.`/`[^...]`/`\\W` range over all 256 bytes, and
# `\\w`, `\\d`, `\\s` and case folding are ASCII-only. A Lark grammar sets it per
# terminal with a `// pda: bytes=NAME ...` line (docs/semantics.md, "Bytes").
BYTE_MODE = "b"
BYTES: cs.CharSet = ((0, 0xFF),)


def flags_value(flags: str, *, name: str) -> int:
    """The `re` flags of a terminal's flag letters (the byte-mode letter adds ASCII)."""
    value = 0
    for letter in flags:
        if letter == BYTE_MODE:
            if "u" in flags:
                raise RegexError("the byte-mode flag excludes the u flag", terminal=name)
            value |= _ASCII
            continue
        if letter not in FLAG_LETTERS:
            raise RegexError(f"unknown regex flag {letter!r}", terminal=name)
        value |= FLAG_LETTERS[letter]
    return value


# ---------------------------------------------------------------- running recursions on a heap stack


def drive(root: Generator[Any, Any, T]) -> T:
    """Run a recursive computation written as generators, on an explicit stack.

    A user's grammar or regex can nest thousands deep; Python's own call stack
    stops at about a thousand frames. So the walkers here (and in the GBNF and
    regex front ends) are generators that *yield* a sub-call (another generator)
    instead of calling it; this loop runs the innermost one, sends its result
    back into the caller, and re-raises an exception in the caller, so the
    walker reads like the recursive function it replaces.
    """
    stack: list[Generator[Any, Any, Any]] = [root]
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            if error is not None:
                pending, error = error, None
                call = stack[-1].throw(pending)
            else:
                call = stack[-1].send(value)
        except StopIteration as stop:
            stack.pop()
            if not stack:
                return stop.value
            value = stop.value
            continue
        except Exception as exc:
            stack.pop()
            if not stack:
                raise
            error = exc
            continue
        stack.append(call)
        value = None


# ---------------------------------------------------------------- parsing


# Groups nested this deep are parsed by `re._parser` separately (it recurses per group).
_CHUNK_DEPTH = 50
# Placeholders stand for a separately parsed group or a Unicode property: private-use
# code points that do not occur in the pattern.
_PLACEHOLDERS = (range(0xF0000, 0xFFFFE), range(0x100000, 0x10FFFE))


@dataclass
class _Scan:
    """Where a pattern has Unicode properties, deep groups and long plain classes (spans into the pattern)."""

    props: list[tuple[int, int, str, bool]]  # start, end, name, negated
    groups: list[tuple[int, int, bool]]  # start, end, verbose mode around the group
    classes: list[tuple[int, int, cs.CharSet]]  # start, end, code points


# A class at least this long whose items are all single code points and ranges of them, each a plain character
# or an escape of one (what the JSON Schema front end writes for a set of code points), is read here
# (`_plain_class`) rather than by `re._parser`, which takes ~1.3 us a character (o79409's 4,900-character
# Unicode class: 6.5 ms, parsed once by the front end and again by the lexer).
PLAIN_CLASS_MIN_CHARS = 256
_CLASS_ATOM = r"\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8}|\\x[0-9A-Fa-f]{2}|\\[^0-9A-Za-z]|[^\\\[\]-]"
_PLAIN_CLASS = re.compile(rf"\[(?!\^)(?:(?:{_CLASS_ATOM})(?:-(?:{_CLASS_ATOM}))?)+\]", re.S)
_PLAIN_CLASS_ITEM = re.compile(rf"({_CLASS_ATOM})(?:-({_CLASS_ATOM}))?", re.S)
# What `re._parser` warns about in such a class (a possible set operation: a character doubled that is no range's
# `-`, which the class reads with the range).
_PLAIN_CLASS_WARNING = re.compile(r"&&|~~|\|\|")
# What `_scan` stops at outside classes: an escape, a class, a comment (verbose mode), a group's start or end.
_SCAN_STOP = re.compile(r"[\\\[#()]")


def _atom_value(atom: str) -> int:
    """The code point one `_CLASS_ATOM` spells."""
    if len(atom) == 1:
        return ord(atom)
    return ord(atom[1]) if len(atom) == 2 else int(atom[2:], 16)


def _plain_class(text: str) -> cs.CharSet | None:
    """The code points of a class `[...]` of plain items (`PLAIN_CLASS_MIN_CHARS`), or None when it is anything
    else: negated, holding a class escape or property, a literal `-` or `[`, what `re._parser` warns about, a
    range backwards or a code point past U+10FFFF (which `re._parser` refuses, with its own message)."""
    if not _PLAIN_CLASS.fullmatch(text) or _PLAIN_CLASS_WARNING.search(text):
        return None
    ranges = []
    for m in _PLAIN_CLASS_ITEM.finditer(text, 1, len(text) - 1):
        lo = _atom_value(m.group(1))
        hi = lo if m.group(2) is None else _atom_value(m.group(2))
        if lo > hi or hi > cs.MAX_CP:
            return None
        ranges.append((lo, hi))
    return cs.merge_ranges(ranges)


def _class_end(pattern: str, i: int) -> int:
    """The index after the `]` closing the class that opens at pattern[i] (re's rules), or the pattern's end."""
    found = _CLASS.match(pattern, i)
    return len(pattern) if found is None else found.end()


_PROPERTY = re.compile(r"\\([pP])(?:\{([^}]*)\}|([A-Za-z]))")
_INLINE_FLAGS = re.compile(r"\(\?([aiLmsux]*)(?:-([imsx]*))?([:)])")


def _scan(pattern: str, verbose: bool, name: str, line: int | None) -> _Scan:
    """One pass over the pattern: its `\\p{..}` escapes and the groups at depths 50, 100, ..."""
    found = _Scan([], [], [])
    open_groups: list[tuple[int, bool]] = []
    deepest = 0
    i, n = 0, len(pattern)
    while i < n:
        stop = _SCAN_STOP.search(pattern, i)
        if stop is None:
            break
        i = stop.start()
        c = pattern[i]
        if c == "\\":
            prop = _PROPERTY.match(pattern, i)
            if prop:
                found.props.append((i, prop.end(), prop.group(2) or prop.group(3), prop.group(1) == "P"))
                i = prop.end()
            else:
                i += 2
        elif c == "[":
            end = _class_end(pattern, i)
            plain = _plain_class(pattern[i:end]) if end - i >= PLAIN_CLASS_MIN_CHARS else None
            if plain is not None:
                found.classes.append((i, end, plain))
                i = end
                continue
            first = i + 1 + pattern.startswith("^", i + 1)  # a `-` here is a literal
            j, after_range_dash = first, False
            if "\\p" not in pattern[first:end] and "\\P" not in pattern[first:end]:
                j = end  # no property inside: nothing to record
            while j < end - 1:
                prop = _PROPERTY.match(pattern, j) if pattern[j] == "\\" else None
                if prop:
                    if after_range_dash or (pattern.startswith("-", prop.end()) and prop.end() < end - 2):
                        raise RegexError(
                            f"a Unicode property cannot be a range endpoint in /{pattern}/", terminal=name, line=line
                        )
                    found.props.append((j, prop.end(), prop.group(2) or prop.group(3), prop.group(1) == "P"))
                    j = prop.end()
                    after_range_dash = False
                else:
                    after_range_dash = pattern[j] == "-" and j > first
                    j += 2 if pattern[j] == "\\" else 1
            i = end
        elif c == "#" and verbose:
            newline = pattern.find("\n", i)
            i = n if newline < 0 else newline + 1
        elif c == "(":
            if pattern.startswith("(?#", i):
                while i < n and pattern[i] != ")":
                    i += 2 if pattern[i] == "\\" else 1
                i += 1
                continue
            flags = _INLINE_FLAGS.match(pattern, i)
            if flags and flags.group(3) == ")":  # (?x): global flags, not a group
                verbose = verbose or "x" in flags.group(1)
                i = flags.end()
                continue
            open_groups.append((i, verbose))
            deepest = max(deepest, len(open_groups))
            if flags:
                verbose = (verbose or "x" in flags.group(1)) and "x" not in (flags.group(2) or "")
            i += 1
        elif c == ")" and open_groups:
            start, verbose = open_groups.pop()
            if (len(open_groups) + 1) % _CHUNK_DEPTH == 0:
                found.groups.append((start, i + 1, verbose))
            i += 1
        else:
            i += 1
    if open_groups and deepest >= _CHUNK_DEPTH:
        raise RegexError(f"invalid regex /{pattern[:60]}.../: missing ), unterminated subpattern", terminal=name, line=line)
    return found


def _subpatterns(op: object, av: Any) -> list[sre_parse.SubPattern]:
    """The sub-patterns directly inside one parsed item (as `re._parser` objects)."""
    if op in (C.MIN_REPEAT, C.MAX_REPEAT, C.POSSESSIVE_REPEAT):
        return [av[2]]
    if op is C.SUBPATTERN:
        return [av[3]]
    if op is C.BRANCH:
        return list(av[1])
    if op in (C.ASSERT, C.ASSERT_NOT):
        return [av[1]]
    if op is C.ATOMIC_GROUP:
        return [av]
    if op is C.GROUPREF_EXISTS:
        return [x for x in av[1:] if x is not None]
    return []


def _plain(pattern: str) -> bool:
    """Whether `_scan` would find nothing in the pattern, told from its text alone: no `\\p`/`\\P`
    (no property), fewer `(` than `_CHUNK_DEPTH` (no group that deep) and shorter than a long plain
    class. Most terminals' patterns are such, and `_scan` walks each class in Python (~25 us an int range)."""
    return (len(pattern) < PLAIN_CLASS_MIN_CHARS and pattern.count("(") < _CHUNK_DEPTH
            and "\\p" not in pattern and "\\P" not in pattern)


def _parse(pattern: str, flags: int, name: str, line: int | None) -> sre_parse.SubPattern:
    """`re._parser`'s parse of the pattern, for any nesting depth and with `\\p{..}` classes.

    `re._parser` recurses once per group, so groups at every 50th level of
    nesting are cut out, parsed on their own, and spliced back; each Unicode
    property escape is parsed as a placeholder character and then replaced by
    its code-point ranges (`unicode_props`), and so is each long plain class
    (`_plain_class`), by the ranges read here. A pattern without any of these is
    parsed by `re._parser` alone.
    """
    if _plain(pattern):
        return sre_parse.parse(pattern, flags)
    found = _scan(pattern, bool(flags & _VERBOSE), name, line)
    if not found.props and not found.groups and not found.classes:
        return sre_parse.parse(pattern, flags)
    used = set(map(ord, pattern))
    free = (cp for block in _PLACEHOLDERS for cp in block if cp not in used)
    # Spans in order of their start; a group contains the spans up to its end.
    spans = sorted([(a, b, "group", v) for a, b, v in found.groups] + [(a, b, "prop", None) for a, b, _, _ in found.props]
                   + [(a, b, "class", None) for a, b, _ in found.classes])
    # Equal classes share a placeholder, so that `re._parser` factors branches as it would factor the classes.
    same_class: dict[str, int] = {}
    placeholder = {span[:2]: (same_class.setdefault(pattern[span[0]:span[1]], next(free)) if span[2] == "class"
                              else next(free)) for span in spans}
    ranges: dict[int, cs.CharSet] = {placeholder[a, b]: plain for a, b, plain in found.classes}
    for a, b, prop_name, negated in found.props:
        try:
            ranges[placeholder[a, b]] = property_set(prop_name, negated)
        except ValueError as e:
            raise RegexError(f"{e} in /{pattern}/", terminal=name, line=line) from None
    # Each chunk's text: the pattern between its direct children, each child as its placeholder.
    children: dict[tuple[int, int], list[tuple[int, int, str]]] = {(0, len(pattern)): []}
    enclosing = [(0, len(pattern))]
    for a, b, kind, _ in spans:
        while enclosing[-1][1] < b:
            enclosing.pop()
        children[enclosing[-1]].append((a, b, kind))
        if kind == "group":
            children[a, b] = []
            enclosing.append((a, b))
    texts: dict[tuple[int, int], str] = {}
    for (lo, hi), inside in children.items():
        pieces, at = [], lo
        for a, b, kind in inside:
            z = chr(placeholder[a, b])
            # a capturing group: `re._parser` unwraps `(?:z)` and may merge `x|z` into a class
            pieces += [pattern[at:a], f"({z})" if kind == "group" else z]
            at = b
        texts[lo, hi] = "".join(pieces) + pattern[at:hi]
    try:
        root = sre_parse.parse(texts.pop((0, len(pattern))), flags)
    except re.error:
        if found.classes and not found.props and not found.groups:
            sre_parse.parse(pattern, flags)  # the error as the pattern's own text gives it (positions)
        raise
    verbose_at = {(a, b): v for a, b, v in found.groups}
    groups: dict[int, tuple] = {}
    for span, text in texts.items():
        chunk_flags = (flags & ~_VERBOSE) | (_VERBOSE if verbose_at[span] else 0)
        chunk = sre_parse.parse(text, chunk_flags)
        # `re._parser` unwraps a plain `(?:...)`: its items are then the group's sequence.
        groups[placeholder[span]] = chunk.data[0] if len(chunk.data) == 1 else (C.SUBPATTERN, (None, 0, 0, chunk))
    _splice(root, groups, ranges)
    return root


def _splice(root: sre_parse.SubPattern, groups: dict[int, tuple], ranges: dict[int, cs.CharSet]) -> None:
    """Replace placeholder literals by their groups and property classes, in place (explicit stack)."""
    def as_class(cp: int, negate: bool) -> tuple:
        items = [(C.RANGE, r) for r in ranges[cp]]
        return (C.IN, ([(C.NEGATE, None)] if negate else []) + items)

    stack = [root]
    while stack:
        sub = stack.pop()
        for i, (op, av) in enumerate(sub.data):
            while op is C.LITERAL and av in groups:
                op, av = sub.data[i] = groups[av]
            if op in (C.LITERAL, C.NOT_LITERAL) and av in ranges:
                op, av = sub.data[i] = as_class(av, op is C.NOT_LITERAL)
            elif op is C.IN and any(sop is C.LITERAL and sav in ranges for sop, sav in av):
                items = []
                for sop, sav in av:
                    items += as_class(sav, False)[1] if sop is C.LITERAL and sav in ranges else [(sop, sav)]
                sub.data[i] = (C.IN, items)
            stack.extend(_subpatterns(op, av))


def parse_pattern(pattern: str, flags: int = 0) -> sre_parse.SubPattern:
    """`re._parser.parse` for any nesting depth and with Unicode properties (raises `re.error`)."""
    return _parse(pattern, flags, "<regex>", None)


@functools.lru_cache(maxsize=1024)
def _parsed(pattern: str, flags: int, name: str, line: int | None) -> sre_parse.SubPattern:
    """The parse of a pattern; memoised, as a terminal is parsed by several passes (read-only).

    The passes are a grammar's lowering (`has_lazy_quantifier`) and its lexer's DFA
    construction (`translate`); the lexer calls `release_parses` once its DFAs exist.
    """
    return _parse(pattern, flags, name, line)


def release_parses() -> None:
    """Forget the memoised parses: they are lists the garbage collector would scan on
    every full collection (python.lark's: ~90k objects) and no later pass reads them."""
    _parsed.cache_clear()


def parse_sre(pattern: str, flags: str, *, name: str, line: int | None = None) -> sre_parse.SubPattern:
    """`re._parser`'s tree of a terminal's pattern (any depth, Unicode properties resolved)."""
    try:
        return _parsed(pattern, flags_value(flags, name=name), name, line)
    except re.error as e:
        raise RegexError(f"invalid regex /{pattern}/: {e}", terminal=name, line=line) from None


def nullable(node: Node) -> bool:
    """Does the node match the empty string?"""
    return drive(_nullable(node))


def _nullable(node: Node) -> Generator[Any, bool, bool]:
    if isinstance(node, Chars):
        return False
    if isinstance(node, Seq):
        for x in node.items:
            if not (yield _nullable(x)):
                return False
        return True
    if isinstance(node, Alt):
        for x in node.items:
            if (yield _nullable(x)):
                return True
        return False
    if isinstance(node, Repeat):
        return node.lo == 0 or (yield _nullable(node.item))
    if isinstance(node, FirstMatch):
        return (yield _nullable(node.item))
    return (yield _nullable(node.body)) and ((yield _nullable(node.look)) != node.negate)


# ---------------------------------------------------------------- the escaped-string idiom


def _is_backslash_pair(item: list) -> bool:
    if len(item) == 1 and item[0][0] is C.SUBPATTERN:
        _, add, dele, inner = item[0][1]
        if add or dele:
            return False
        item = list(inner)
    return [tuple(x) for x in item] == [(C.LITERAL, 92), (C.LITERAL, 92)]


def idiom_length(items: list, i: int) -> int:
    """If items[i:] starts with `.*?(?<!\\\\)(\\\\\\\\)*?` return its length (3), else 0."""
    if i + 3 > len(items):
        return 0
    (op0, av0), (op1, av1), (op2, av2) = items[i : i + 3]
    ok = (
        op0 is C.MIN_REPEAT
        and av0[0] == 0
        and av0[1] == MAXREPEAT
        and [op for op, _ in av0[2]] == [C.ANY]
        and op1 is C.ASSERT_NOT
        and av1[0] == -1
        and [tuple(x) for x in av1[1]] == [(C.LITERAL, 92)]
        and op2 is C.MIN_REPEAT
        and av2[0] == 0
        and av2[1] == MAXREPEAT
        and _is_backslash_pair(list(av2[2]))
    )
    return 3 if ok else 0


def has_lazy_quantifier(pattern: str, flags: str = "", *, name: str = "<regex>", line: int | None = None) -> bool:
    """Whether the pattern has a lazy quantifier outside the escaped-string idiom.

    Such a terminal only means what `re.match` means if it is lexed with
    first-match semantics (`TerminalDef.lazy=True`); the idiom is already
    translated to its first-match form and needs no flag.
    """
    stack = [list(parse_sre(pattern, flags, name=name, line=line))]
    while stack:
        items = stack.pop()
        i = 0
        while i < len(items):
            n = idiom_length(items, i)
            if n:
                i += n
                continue
            op, av = items[i]
            if op is C.MIN_REPEAT:
                return True
            stack.extend(_children(op, av))
            i += 1
    return False


def has_string_idiom(pattern: str, flags: str = "") -> bool:
    """Whether the pattern uses the escaped-string idiom (its DFA then follows `re.match`)."""
    stack = [list(parse_sre(pattern, flags, name="<regex>"))]
    while stack:
        items = stack.pop()
        if any(idiom_length(items, i) for i in range(len(items))):
            return True
        stack.extend(sub for op, av in items for sub in _children(op, av))
    return False


def _children(op: object, av: object) -> list[list]:
    return [list(sub) for sub in _subpatterns(op, av)]


# ---------------------------------------------------------------- translation


# The items `_Translator.leaf` translates: no sub-patterns.
_LEAVES = frozenset((C.LITERAL, C.NOT_LITERAL, C.IN, C.ANY))


class _Translator:
    """`re._parser` tree → IR. The methods are generators run by `drive` (no recursion)."""

    def __init__(
        self, pattern: str, name: str, line: int | None, byte_mode: bool, cuts: dict[int, Node] | None = None
    ) -> None:
        self.pattern = pattern
        self.name = name
        self.line = line
        self.byte_mode = byte_mode
        self.cuts = cuts or {}  # placeholder code point -> the IR of the group it stands for (`_translate_cut`)
        self.ranges = 0  # the ranges of every set made so far (what the IR weighs, `_translation_bytes`)
        self.characters: dict[tuple, Chars] = {}  # (op, code point, flags) -> a character's set made before

    def refuse(self, construct: str, rewrite: str) -> RegexError:
        return RegexError(
            f"{construct} in /{self.pattern}/ cannot be expressed by a finite automaton; {rewrite}",
            terminal=self.name,
            line=self.line,
        )

    def chars(self, cset: cs.CharSet) -> Chars:
        """A character set; in byte mode, the bytes it contains (code points 0..255 are bytes)."""
        self.ranges += len(cset)
        return Chars(cs.intersect(cset, BYTES) if self.byte_mode else cset)

    def byte_literal(self, c: int) -> None:
        if self.byte_mode and c > 0xFF:
            raise RegexError(
                f"a byte-mode terminal can only name bytes \\x00-\\xff, not {chr(c)!r}, in /{self.pattern}/",
                terminal=self.name,
                line=self.line,
            )

    def seq(
        self, items: list, flags: int, head: bool, tail: bool, before: tuple = ()
    ) -> Generator[Any, Node, Node]:
        """Translate a sequence; `before` holds the items that precede it (for the idiom)."""
        out: list[Node] = []
        i = 0
        n = len(items)
        while i < n:
            op, av = items[i]
            last = i == n - 1
            k = idiom_length(items, i) if op is C.MIN_REPEAT else 0  # (the idiom opens with `.*?`)
            if k:
                out.append((yield self.idiom(list(before) + items[:i], items[i:], k, flags, tail)))
                break
            if op in (C.ASSERT, C.ASSERT_NOT):
                direction, sub = av
                if direction < 0:
                    raise self.refuse(
                        "a look-behind assertion",
                        "rewrite it as a plain regular expression (only Lark's "
                        "escaped-string idiom `.*?(?<!\\\\)(\\\\\\\\)*?` is recognised)",
                    )
                if not tail:
                    raise self.refuse(
                        "a look-ahead inside a group that is followed by more pattern",
                        "move the look-ahead to the top level of the pattern",
                    )
                if last:
                    raise self.refuse(
                        "a look-ahead at the end of a terminal (it inspects text after the lexeme)",
                        "drop it and let the greedy lexer and terminal priorities decide, "
                        "or move the condition into the grammar rules",
                    )
                look = yield self.seq(_items(sub), flags, False, False)
                # a look-ahead reads nothing: what follows one at the start is still at the start
                body = yield self.seq(items[i + 1 :], flags, head and i == 0, tail, tuple(before) + tuple(items[:i]))
                out.append(Guard(op is C.ASSERT_NOT, look, body))
                break
            if op in _LEAVES:
                out.append(self.cuts[av] if op is C.LITERAL and av in self.cuts else self.leaf(op, av, flags))
            else:
                out.append((yield self.item(op, av, flags, head and i == 0, tail and last)))
            i += 1
        if len(out) == 1:
            return out[0]
        return Seq(tuple(out))

    def idiom(self, before: list, items: list, k: int, flags: int, tail: bool) -> Generator[Any, Node, Node]:
        before = [x for x in before if x[0] not in (C.ASSERT, C.ASSERT_NOT)]
        if not before or before[-1][0] is not C.LITERAL or before[-1][1] == 92:
            raise self.refuse(
                "the escaped-string idiom `.*?(?<!\\\\)(\\\\\\\\)*?` without an opening delimiter",
                'write the string as `"(?:[^"\\\\]|\\\\.)*"`',
            )
        j = k
        delim: list = []
        while j < len(items) and items[j][0] is C.LITERAL:
            delim.append(items[j])
            j += 1
        rest = (yield self.seq(items[j:], flags, False, tail)) if j < len(items) else EMPTY
        if not delim or not tail or not nullable(rest):
            raise self.refuse(
                "a lazy `.*?` with a look-behind not followed by a closing delimiter",
                'write the string as `"(?:[^"\\\\]|\\\\.)*"`',
            )
        dot = cs.any_set(bool(flags & _DOTALL))
        unit = Alt(
            (
                self.chars(_minus(dot, 92)),
                Seq((Chars(((92, 92),)), self.chars(dot))),
            )
        )
        closing = yield self.seq(delim, flags, False, False)
        body = FirstMatch(Seq((Repeat(unit, 0, None), closing)))
        return body if rest == EMPTY else Seq((body, rest))

    def leaf(self, op: object, av: Any, flags: int) -> Chars:
        """A character, class or `.`: no sub-pattern, so no generator (most of a pattern's items)."""
        ignorecase = bool(flags & _IGNORECASE)
        ascii_only = bool(flags & _ASCII) or self.byte_mode
        if op is C.IN:
            for sop, sav in av:
                if sop is C.LITERAL or sop is C.RANGE:
                    self.byte_literal(sav if sop is C.LITERAL else sav[1])
            return self.chars(cs.class_set(list(av), ignorecase, ascii_only))
        if op is C.ANY:
            return self.chars(cs.any_set(bool(flags & _DOTALL)))
        # A character recurs (JSON Schema keys, digits): its set is made once (an IR node is never changed).
        found = self.characters.get((op, av, flags))
        if found is not None:
            self.ranges += len(found.chars)
            return found
        self.byte_literal(av)
        chars = cs.literal_set(av, ignorecase, ascii_only)
        found = self.characters[op, av, flags] = self.chars(chars if op is C.LITERAL else cs.complement(chars))
        return found

    def item(self, op: object, av: Any, flags: int, head: bool, tail: bool) -> Generator[Any, Node, Node]:
        """Any item but a leaf (`seq` translates those directly)."""
        if op in (C.MAX_REPEAT, C.MIN_REPEAT):
            lo, hi, sub = av
            inner = yield self.seq(_items(sub), flags, False, False)
            return Repeat(inner, lo, None if hi == MAXREPEAT else hi)
        if op is C.SUBPATTERN:
            _, add, dele, sub = av
            return (yield self.seq(_items(sub), _combine_flags(flags, add, dele), head, tail))
        if op is C.BRANCH:
            branches = []
            for b in av[1]:
                branches.append((yield self.seq(_items(b), flags, head, tail)))
            return Alt(tuple(branches))
        if op is C.AT:
            if av in (C.AT_BEGINNING, C.AT_BEGINNING_STRING) and head:
                return EMPTY
            if av in (C.AT_END, C.AT_END_STRING) and tail:
                return EMPTY
            if av in (C.AT_BOUNDARY, C.AT_NON_BOUNDARY):
                raise self.refuse(
                    "a word boundary (\\b or \\B)",
                    "drop it: the greedy lexer already prefers the longest lexeme "
                    "(keyword vs identifier is decided by length and priority)",
                )
            raise self.refuse(
                f"an anchor ({av}) away from the start/end of the terminal",
                "remove the anchor; a terminal always matches a whole lexeme",
            )
        if op is C.GROUPREF:
            raise self.refuse(
                "a back-reference", "repeat the referenced sub-pattern instead of referring to it"
            )
        if op is C.GROUPREF_EXISTS:
            raise self.refuse(
                "a conditional group (?(id)yes|no)", "write both cases as an alternation"
            )
        if op is C.POSSESSIVE_REPEAT:
            raise self.refuse("a possessive quantifier", "use the greedy quantifier")
        if op is C.ATOMIC_GROUP:
            raise self.refuse("an atomic group (?>...)", "use a non-capturing group (?:...)")
        raise self.refuse(f"the construct {op}", "rewrite it with classes, groups and quantifiers")


def _items(sub: sre_parse.SubPattern | list) -> list:
    """A parsed sequence's items, read only: a `SubPattern`'s own list (`list(sub)` goes through its
    `__getitem__` item by item, a tenth of a translation)."""
    return sub.data if isinstance(sub, sre_parse.SubPattern) else list(sub)


def _minus(cset: cs.CharSet, c: int) -> cs.CharSet:
    return cs.normalise(
        [r for lo, hi in cset for r in ((lo, min(hi, c - 1)), (max(lo, c + 1), hi)) if r[0] <= r[1]]
    )


def _combine_flags(flags: int, add: int, dele: int) -> int:
    if add & sre_parse.TYPE_FLAGS:
        flags &= ~sre_parse.TYPE_FLAGS
    return (flags | add) & ~dele


# IRs by (pattern, flags), shared by every grammar: an automaton terminal's edge labels recur
# in every terminal of its kind, and long groups recur inside patterns (`_translate_cut`).
REGEX_TRANSLATIONS_MAX_BYTES = 8 << 20
register_budget("regex_translations", REGEX_TRANSLATIONS_MAX_BYTES)
_translations = budget_cache("regex_translations")
# A pattern (or group) longer than this is not kept: it is one terminal's own, translated once (the
# lexer memoises its DFA), and its IR is tens of thousands of objects that every full garbage
# collection would walk for as long as the memo holds them (python.lark's string terminal, 84 KB:
# ~25k objects, most of what its compile left behind). A JSON Schema's patterns stay under ~2 KB.
MEMO_MAX_CHARS = 16 << 10
# A `(?:...)` group of at least this many characters is translated on its own, once (the JSON
# string unit and its escape part are in nearly every string and key pattern of a JSON Schema),
# and groups inside such a group are cut again down to this depth (each level scans and parses its
# text once more: a new string pattern costs ~0.31 ms whole, ~0.39 ms at depth 2, ~0.49 ms at 4,
# while 400 corpus patterns sharing the memo take 403, 168 and 172 ms).
CUT_MIN_CHARS = 48
CUT_MAX_DEPTH = 2
# What `_cuttable_groups` stops at (group 1, after a run of anything else): an anchor escape, a
# class, a group opening, a group end, an anchor.
_CUT_TOKEN = re.compile(r"(?:[^\\\[()^$]++|\\[^AZbB])*+(\\[AZbB]|\[|\((?:\?[:=!]?)?|[)^$])", re.S)
# A whole class, as `_class_end` reads one.
_CLASS = re.compile(r"\[\^?\]?(?:[^\\\]]|\\.)*+\]", re.S)
# A class `re._parser` warns about (a possible nested set or set operation): the warning gives a
# position, which must be the whole pattern's.
_WARNING_CLASS = re.compile(r"\[\[|--|&&|~~|\|\|")
# A counted quantifier as `re._parser` reads one (`{}` and `{x}` are literal text).
_BRACES = re.compile(r"\{(?:[0-9]+,?[0-9]*|,[0-9]*)\}")


def translate(pattern: str, flags: str = "", *, name: str = "<regex>", line: int | None = None) -> Node:
    """Parse `pattern` with `re`'s parser and return its regular IR (or raise RegexError).

    With the byte-mode flag `b` the IR's sets hold bytes, not code points (see BYTE_MODE).
    Memoised by (pattern, flags): the IR does not depend on the name and line, which
    only errors carry (and an error is never memoised).
    """
    return _translate(pattern, flags, name, line, 0)


def _translate(pattern: str, flags: str, name: str, line: int | None, depth: int) -> Node:
    """`translate` at a depth of group cutting: memoised (up to `MEMO_MAX_CHARS`), with long groups cut when that is safe."""
    key = (pattern, flags)
    found = _translations.get(key)
    if found is not None:
        return found
    cut = _translate_cut(pattern, flags, name, line, depth) if depth < CUT_MAX_DEPTH else None
    node, ranges = cut or _translate_whole(pattern, flags, name, line)
    if len(pattern) <= MEMO_MAX_CHARS:
        _translations.put(key, node, _translation_bytes(pattern, ranges))
    return node


def _translate_whole(pattern: str, flags: str, name: str, line: int | None) -> tuple[Node, int]:
    """The IR of the whole pattern as one parse (and the ranges of its sets): the general path."""
    parsed = parse_sre(pattern, flags, name=name, line=line)
    translator = _Translator(pattern, name, line, BYTE_MODE in flags)
    return drive(translator.seq(_items(parsed), parsed.state.flags, True, True)), translator.ranges


def _translation_bytes(pattern: str, ranges: int) -> int:
    """About what an IR holds (at most ~40 bytes a pattern character and ~70 a range, as measured), with margin."""
    return 256 + 64 * len(pattern) + 96 * ranges


def _translate_cut(pattern: str, flags: str, name: str, line: int | None, depth: int) -> tuple[Node, int] | None:
    """The IR (and its ranges) with long self-contained groups translated on their own, or None.

    A group `(?:G)` that `_cuttable_groups` finds is replaced by `(z)` for a private-use code
    point z absent from the pattern, and the translator puts G's own IR where z is. That is the
    whole pattern's IR when `re._parser` would have left G's parse one item: under a quantifier
    (the repeated item is G's parse), or when G is one alternation or repetition (`re._parser`
    unpacks a `(?:G)` into its sequence, and only classes and literals are merged into a class or
    compared as a shared prefix of branches, never a group, an alternation or a repetition). None
    when no group qualifies, and on any error: the whole pattern's path then raises the error it
    always did (with its own positions and text).
    """
    if "x" in flags or len(pattern) < 2 * CUT_MIN_CHARS:
        return None
    spans = _cuttable_groups(pattern)
    if not spans:
        return None
    used = set(map(ord, pattern))
    free = (cp for block in _PLACEHOLDERS for cp in block if cp not in used)
    placeholder: dict[str, int] = {}
    cuts: dict[int, Node] = {}
    pieces, at = [], 0
    try:
        for a, b, quantified in spans:
            group = pattern[a:b]
            node = _translate(group, flags, name, line, depth + 1)
            if quantified or isinstance(node, (Alt, Repeat)):
                if group not in placeholder:
                    placeholder[group] = next(free)
                    cuts[placeholder[group]] = node
                pieces += [pattern[at:a], "(", chr(placeholder[group]), ")"]
                at = b
        if not cuts:
            return None
        text = "".join(pieces) + pattern[at:]
        parsed = _parse(text, flags_value(flags, name=name), name, line)
        translator = _Translator(pattern, name, line, BYTE_MODE in flags, cuts)
        return drive(translator.seq(_items(parsed), parsed.state.flags, True, True)), translator.ranges
    except Exception:  # the whole pattern's path raises its own error
        return None


def _cuttable_groups(pattern: str) -> list[tuple[int, int, bool]]:
    """The outermost `(?:...)` groups of at least `CUT_MIN_CHARS` characters (never the whole
    pattern) whose text means alone what it means in place, as (start, end, under a quantifier).

    Such a group holds no group, look-ahead or anchor but `(?:...)` groups. None at all if the
    pattern has any other `(?` (inline flags would change a group's meaning in place; look-behind,
    named groups, comments and conditionals are rare) or a class `re._parser` warns about.
    Back-references need no test: the translator refuses them, and an error takes the whole
    pattern's path.
    """
    open_groups: list[list] = []  # [start, cuttable so far]
    spans: list[tuple[int, int]] = []
    i, n = 0, len(pattern)
    while True:
        m = _CUT_TOKEN.match(pattern, i)
        if m is None:
            break
        token, at, i = m.group(1), m.start(1), m.end()
        if token == "[":
            found = _CLASS.match(pattern, at)
            if found is None or _WARNING_CLASS.search(pattern, at, found.end()):
                return []
            i = found.end()
        elif token == "(?:":
            open_groups.append([at, True])
        elif token == "(?":
            return []
        elif token[0] == "(":  # a capturing group or a look-ahead
            _spoil(open_groups)
            open_groups.append([at, False])
        elif token == ")":
            if not open_groups:
                return []
            start, cuttable = open_groups.pop()
            if cuttable and i - start >= CUT_MIN_CHARS and (start, i) != (0, n):
                spans.append((start, i))
        else:
            _spoil(open_groups)
    if open_groups:
        return []
    spans.sort()
    outermost: list[tuple[int, int, bool]] = []
    for a, b in spans:
        if not outermost or a >= outermost[-1][1]:
            outermost.append((a, b, pattern.startswith(("*", "+", "?"), b) or bool(_BRACES.match(pattern, b))))
    return outermost


def _spoil(open_groups: list[list]) -> None:
    """The open groups hold something that does not mean the same alone: none can be cut."""
    for group in open_groups:
        group[1] = False
