"""An ECMA-262 pattern as the body of a JSON string lexeme: its regex over JSON units.

A JSON Schema `pattern` applies to the *decoded* string, as a search unless
anchored; a grammar terminal matches the *encoded* lexeme (``"a\\u0062"`` decodes
to ``ab``). `ecma_pattern_body` rewrites the pattern (`to_python`), parses it with
Python's parser and renders the AST (`Renderer`) with every character class
replaced by its JSON units (`json_units`), tracking the length range it allows.
What it cannot write directly (several patterns, negated ones, lengths across
variable pieces) is left to `automata`.

`ecma_pattern_body` is memoised by its arguments, under the byte budget `schema_patterns`
(`SCHEMA_PATTERNS_MAX_BYTES`, least recently used evicted; shared with `automata`'s pattern
sets): a `format` is the same long pattern wherever it appears (the `ipv6` regex takes ~2 ms
to render), in one schema and across schemas.
"""

from __future__ import annotations

import re
import re._constants as C
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pda.errors import RegexError
from pda.grammar.ecma_regex.json_units import ANY_UNIT, unit_regex
from pda.grammar.ecma_regex.ranges import (
    ANY, ASCII_DIGIT, ASCII_WORD, ECMA_SPACE, MAX_CP, Ranges, complement, normalize,
)
from pda.grammar.ecma_regex.to_python import ecma_to_python
from pda.lru import budget_cache, register_budget
from pda.regex.syntax import drive, parse_pattern

SCHEMA_PATTERNS_MAX_BYTES = 16 * 2**20
"""Default byte budget of each pattern memo (`ecma_pattern_body`'s, `pattern_set_automaton`'s): the
48-schema JSONSchemaBench sample's patterns, formats and key sets weigh ~0.9 MB in all."""
register_budget("schema_patterns", SCHEMA_PATTERNS_MAX_BYTES)
_bodies = budget_cache("schema_patterns")
_ABSENT = object()


@dataclass(frozen=True)
class PatternInfo:
    """A pattern's lexeme-body regex and the code-point length range it allows (shared by the memo: immutable)."""

    body: str
    min_len: int
    max_len: int | None


_CATEGORIES: dict[object, Ranges] = {
    C.CATEGORY_DIGIT: ASCII_DIGIT, C.CATEGORY_NOT_DIGIT: complement(ASCII_DIGIT),
    C.CATEGORY_WORD: ASCII_WORD, C.CATEGORY_NOT_WORD: complement(ASCII_WORD),
    C.CATEGORY_SPACE: ECMA_SPACE, C.CATEGORY_NOT_SPACE: complement(ECMA_SPACE),
}


def _category(cat: object) -> Ranges:
    if cat not in _CATEGORIES:
        raise RegexError(f"unsupported character category {cat}")
    return _CATEGORIES[cat]


class Renderer:
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
            cs = self.charset(op, av)
            if cs is not None:  # one character: rendered here, not as a sub-call (most items are)
                text, a, b = unit_regex(cs), 1, 1
            else:
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
        raise self.fail(unsupported_construct(op, av))


def unsupported_construct(op: object, av: object) -> str:
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


def anchored(items: list) -> tuple[list, bool, bool]:
    """Strip a leading ^ and a trailing $/\\Z; report which were present."""
    items = inline_groups(items)
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
    r = Renderer(src)
    items = list(tree)
    # Alternations whose branches carry their own anchors (`^a|b$`; Python's parser
    # factors `^01$|^07$` into `^(?:01$|07$)`): multiplied out, each anchored alone.
    branches = [items]
    if search:
        branches = []
        for b in top_branches(items):
            expanded = expand_branches(inline_groups(b))
            # Multiplied out only where a branch carries an anchor of its own: else the branch as written, one
            # regex the size of the pattern (the `ipv4` format's last octet, five ways, wrote its prefix five times).
            whole = expanded == [None] or len(expanded) > 1 and _anchor_free(anchored(b)[0])
            branches += [b] if whole else expanded  # type: ignore[list-item]
    # Branches by their anchors: those open at the same ends share one `(?:ANY_UNIT)*` a side
    # (o21840's `^dev|alpha|beta|rc|RC|stable$` wrote the 270-character unit ten times; grouped, four).
    by_ends: dict[tuple[bool, bool], list[tuple[str, int, int | None]]] = {}
    for b in branches:
        body, start, end = anchored(b) if search else (b, True, True)
        text, lo, hi = r.seq(body)
        if text is not None:
            by_ends.setdefault((start, end), []).append((text, lo, hi))
    outs: list[tuple[str, int, int | None]] = []
    for (start, end), found in by_ends.items():
        if start and end:
            outs += found
            continue
        text = found[0][0] if len(found) == 1 else "(?:" + "|".join(t for t, _, _ in found) + ")"
        text = ("" if start else f"(?:{ANY_UNIT})*") + text + ("" if end else f"(?:{ANY_UNIT})*")
        outs.append((text, min(lo for _, lo, _ in found), None))
    if not outs:
        return None
    his = [o[2] for o in outs]
    text = outs[0][0] if len(outs) == 1 else "(?:" + "|".join(o[0] for o in outs) + ")"
    return PatternInfo(text, min(o[1] for o in outs), None if None in his else max(his))  # type: ignore[type-var]


def split_leading_lookahead(pattern: str) -> tuple[list[str], list[str]] | None:
    """`^(?!X)Y` as (positive `["^Y"]`, negative `["^(?:X)"]`), `^(?=X)Y` as two positives.

    Under search semantics an anchored look-ahead tests a prefix at offset 0, which is
    what searching `^(?:X)` tests: the pattern is the conjunction, which the automata of
    `pattern_set_automaton` handle. None when the pattern has no such look-ahead, or has a
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
    key = (pattern, min_len, max_len)
    found = _bodies.get(key, _ABSENT)
    if found is _ABSENT:
        found = _ecma_pattern_body(pattern, min_len, max_len)
        _bodies.put(key, found, 100 + len(pattern) + (0 if found is None else 2 * len(found.body)))
    return found


def _ecma_pattern_body(pattern: str, min_len: int, max_len: int | None) -> PatternInfo | None:
    python = ecma_to_python(pattern)
    if (min_len, max_len) == (0, None):
        return python_pattern_body(python, search=True, source=pattern)
    try:
        items = list(parse_pattern(python))
    except re.error as exc:
        raise RegexError(f"pattern {pattern!r} is not a valid regex: {exc}") from None
    r = Renderer(pattern)
    outs: list[tuple[str, int, int | None]] = []
    any_unit = (C.MAX_REPEAT, (0, C.MAXREPEAT, [(C.IN, [(C.RANGE, (0, MAX_CP))])]))
    for branch in top_branches(items):
        body, start, end = anchored(branch)
        if start and end and _anchor_free(body):
            # Lengths the branch's strings all have already bound nothing: the branch as written.
            text, a, b = r.seq(body)
            if text is None:
                continue
            if a >= min_len and b is not None and (max_len is None or b <= max_len):
                outs.append((text, a, b))
                continue
        for pieces in expand_branches(([] if start else [any_unit]) + inline_groups(body)
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


def _anchor_free(items: list) -> bool:
    """Whether no anchor (`^`, `$`, `\\b`...) is left anywhere in a parsed sequence."""
    stack = list(items)
    while stack:
        op, av = stack.pop()
        if op is C.AT:
            return False
        if op is C.SUBPATTERN:
            stack += av[3]
        elif op is C.BRANCH:
            stack += [item for alt in av[1] for item in alt]
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            stack += av[2]
        elif op in (C.ASSERT, C.ASSERT_NOT):
            stack += av[1]
    return True


def top_branches(items: list) -> list[list]:
    """The alternatives of a pattern whose top level (or one top group) is an alternation."""
    if len(items) == 1 and items[0][0] is C.BRANCH:
        return [list(b) for b in items[0][1][1]]
    if len(items) == 1 and items[0][0] is C.SUBPATTERN and not items[0][1][1] and not items[0][1][2] \
            and len(items[0][1][3]) == 1 and items[0][1][3][0][0] is C.BRANCH:
        return [list(b) for b in items[0][1][3][0][1][1]]
    return [items]


def _repeated_unit(r: "Renderer", op: object, av: object) -> str | None:
    """The unit regex of a repetition of one unit (`[a-z]+`, `(a|b){2,}`), else None."""
    if op not in (C.MAX_REPEAT, C.MIN_REPEAT):
        return None
    unit, a, b = r.seq(list(av[2]))  # type: ignore[index]
    return unit if (a, b) == (1, 1) else None


def expand_branches(pieces: list, limit: int = 64) -> list[list | None]:
    """The sequences a piece list stands for once its alternations are multiplied out.

    A list holding None means there were more than `limit` sequences.
    """
    seqs: list[list] = [[]]
    for op, av in pieces:
        if op is C.BRANCH:
            alts = [inline_groups(list(b)) for b in av[1]]  # type: ignore[index]
            seqs = [s + a for s in seqs for a in alts]
            if len(seqs) > limit:
                return [None]
        else:
            seqs = [s + [(op, av)] for s in seqs]
    return seqs  # type: ignore[return-value]


def inline_groups(items: list) -> list:
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

