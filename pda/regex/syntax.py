"""A terminal's regex, parsed by Python's own `re._parser`, as a small regular IR.

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
import re
from dataclasses import dataclass
from re import _constants as C
from re import _parser as sre_parse

from pda.errors import RegexError
from pda.regex import charset as cs

MAXREPEAT = C.MAXREPEAT


@dataclass(frozen=True)
class Chars:
    chars: cs.CharSet


@dataclass(frozen=True)
class Seq:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Alt:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Repeat:
    item: Node
    lo: int
    hi: int | None  # None: unbounded


@dataclass(frozen=True)
class FirstMatch:
    item: Node


@dataclass(frozen=True)
class Guard:
    negate: bool
    look: Node
    body: Node


Node = Chars | Seq | Alt | Repeat | FirstMatch | Guard
EMPTY = Seq(())

FLAG_LETTERS = {
    "i": re.IGNORECASE,
    "s": re.DOTALL,
    "m": re.MULTILINE,
    "x": re.VERBOSE,
    "a": re.ASCII,
    "u": re.UNICODE,
}


def flags_value(flags: str, *, name: str) -> int:
    value = 0
    for letter in flags:
        if letter not in FLAG_LETTERS:
            raise RegexError(f"unknown regex flag {letter!r}", terminal=name)
        value |= FLAG_LETTERS[letter]
    return value


@functools.lru_cache(maxsize=1024)
def _parsed(pattern: str, flags: int) -> sre_parse.SubPattern:
    """`re`'s parse of a pattern; memoised, as a terminal is parsed by several passes (read-only)."""
    return sre_parse.parse(pattern, flags)


def parse_sre(pattern: str, flags: str, *, name: str) -> sre_parse.SubPattern:
    try:
        return _parsed(pattern, flags_value(flags, name=name))
    except re.error as e:
        raise RegexError(f"invalid regex /{pattern}/: {e}", terminal=name) from None


def nullable(node: Node) -> bool:
    """Does the node match the empty string?"""
    if isinstance(node, Chars):
        return False
    if isinstance(node, Seq):
        return all(nullable(x) for x in node.items)
    if isinstance(node, Alt):
        return any(nullable(x) for x in node.items)
    if isinstance(node, Repeat):
        return node.lo == 0 or nullable(node.item)
    if isinstance(node, FirstMatch):
        return nullable(node.item)
    return nullable(node.body) and (nullable(node.look) != node.negate)


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


def has_lazy_quantifier(pattern: str, flags: str = "") -> bool:
    """Whether the pattern has a lazy quantifier outside the escaped-string idiom.

    Such a terminal only means what `re.match` means if it is lexed with
    first-match semantics (`TerminalDef.lazy=True`); the idiom is already
    translated to its first-match form and needs no flag.
    """
    def walk(items: list) -> bool:
        items = list(items)
        i = 0
        while i < len(items):
            n = idiom_length(items, i)
            if n:
                i += n
                continue
            op, av = items[i]
            if op is C.MIN_REPEAT:
                return True
            for sub in _children(op, av):
                if walk(sub):
                    return True
            i += 1
        return False

    return walk(list(parse_sre(pattern, flags, name="<regex>")))


def has_string_idiom(pattern: str, flags: str = "") -> bool:
    """Whether the pattern uses the escaped-string idiom (its DFA then follows `re.match`)."""
    def walk(items: list) -> bool:
        items = list(items)
        return any(idiom_length(items, i) for i in range(len(items))) or any(
            walk(sub) for op, av in items for sub in _children(op, av)
        )

    return walk(list(parse_sre(pattern, flags, name="<regex>")))


def _children(op: object, av: object) -> list[list]:
    if op in (C.MIN_REPEAT, C.MAX_REPEAT, C.POSSESSIVE_REPEAT):
        return [list(av[2])]
    if op is C.SUBPATTERN:
        return [list(av[3])]
    if op is C.BRANCH:
        return [list(b) for b in av[1]]
    if op in (C.ASSERT, C.ASSERT_NOT):
        return [list(av[1])]
    if op is C.ATOMIC_GROUP:
        return [list(av)]
    if op is C.GROUPREF_EXISTS:
        return [list(x) for x in av[1:] if x is not None]
    return []


# ---------------------------------------------------------------- translation


class _Translator:
    def __init__(self, pattern: str, name: str) -> None:
        self.pattern = pattern
        self.name = name

    def refuse(self, construct: str, rewrite: str) -> RegexError:
        return RegexError(
            f"{construct} in /{self.pattern}/ cannot be expressed by a finite automaton; {rewrite}",
            terminal=self.name,
        )

    def seq(self, items: list, flags: int, head: bool, tail: bool, before: tuple = ()) -> Node:
        """Translate a sequence; `before` holds the items that precede it (for the idiom)."""
        out: list[Node] = []
        i = 0
        n = len(items)
        while i < n:
            op, av = items[i]
            last = i == n - 1
            k = idiom_length(items, i)
            if k:
                out.append(self.idiom(list(before) + items[:i], items[i:], k, flags, tail))
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
                look = self.seq(list(sub), flags, False, False)
                body = self.seq(items[i + 1 :], flags, False, tail, tuple(before) + tuple(items[:i]))
                out.append(Guard(op is C.ASSERT_NOT, look, body))
                break
            out.append(self.item(op, av, flags, head and i == 0, tail and last))
            i += 1
        if len(out) == 1:
            return out[0]
        return Seq(tuple(out))

    def idiom(self, before: list, items: list, k: int, flags: int, tail: bool) -> Node:
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
        rest = self.seq(items[j:], flags, False, tail) if j < len(items) else EMPTY
        if not delim or not tail or not nullable(rest):
            raise self.refuse(
                "a lazy `.*?` with a look-behind not followed by a closing delimiter",
                'write the string as `"(?:[^"\\\\]|\\\\.)*"`',
            )
        dot = cs.any_set(bool(flags & re.DOTALL))
        unit = Alt(
            (
                Chars(_minus(dot, 92)),
                Seq((Chars(((92, 92),)), Chars(dot))),
            )
        )
        closing = self.seq(delim, flags, False, False)
        body = FirstMatch(Seq((Repeat(unit, 0, None), closing)))
        return body if rest == EMPTY else Seq((body, rest))

    def item(self, op: object, av: object, flags: int, head: bool, tail: bool) -> Node:
        ignorecase = bool(flags & re.IGNORECASE)
        ascii_only = bool(flags & re.ASCII)
        if op is C.LITERAL:
            return Chars(cs.literal_set(av, ignorecase, ascii_only))
        if op is C.NOT_LITERAL:
            return Chars(cs.complement(cs.literal_set(av, ignorecase, ascii_only)))
        if op is C.IN:
            return Chars(cs.class_set(list(av), ignorecase, ascii_only))
        if op is C.ANY:
            return Chars(cs.any_set(bool(flags & re.DOTALL)))
        if op in (C.MAX_REPEAT, C.MIN_REPEAT):
            lo, hi, sub = av
            inner = self.seq(list(sub), flags, False, False)
            return Repeat(inner, lo, None if hi == MAXREPEAT else hi)
        if op is C.SUBPATTERN:
            _, add, dele, sub = av
            return self.seq(list(sub), _combine_flags(flags, add, dele), head, tail)
        if op is C.BRANCH:
            return Alt(tuple(self.seq(list(b), flags, head, tail) for b in av[1]))
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


def _minus(cset: cs.CharSet, c: int) -> cs.CharSet:
    return cs.normalise(
        [r for lo, hi in cset for r in ((lo, min(hi, c - 1)), (max(lo, c + 1), hi)) if r[0] <= r[1]]
    )


def _combine_flags(flags: int, add: int, dele: int) -> int:
    if add & sre_parse.TYPE_FLAGS:
        flags &= ~sre_parse.TYPE_FLAGS
    return (flags | add) & ~dele


def translate(pattern: str, flags: str = "", *, name: str = "<regex>") -> Node:
    """Parse `pattern` with `re`'s parser and return its regular IR (or raise RegexError)."""
    parsed = parse_sre(pattern, flags, name=name)
    return _Translator(pattern, name).seq(list(parsed), parsed.state.flags, True, True)
