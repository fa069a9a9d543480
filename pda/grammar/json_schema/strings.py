"""Lowering `string` schemas: one terminal per string, quotes included, or counted chunks when long.

Each string terminal spans a whole JSON string lexeme, quotes included, and
matches the allowed values in every spelling a serialiser writes (printable ASCII
raw; other characters raw, as short escapes, ``\\uXXXX`` in either case or
surrogate pairs), so greedy longest-match lexing of a valid instance always ends
a string terminal at its closing quote. Patterns and formats go through
`pda.grammar.ecma_regex` (one pattern directly as a regex; several, negated ones or
lengths a pattern cannot absorb as an automaton terminal, `pattern_set_automaton`,
which is then a string terminal like a regex that starts with a quote). A string whose length bounds exceed
`LONG_STRING_UNITS` is a rule reserved for its bounds, defined once the lowering is
whole (`define_long_strings`): counted in chunk terminals (`long_string`), or one
terminal when a chunk head could compete with another string terminal
(`competing_heads`). A set of string values is one terminal (`string_set`), a
literal alternation the finite-set engine compiles as a trie where it can.
"""

from __future__ import annotations

import functools
import re
import sys
import warnings
from collections import deque
from typing import Any

from pda.errors import GrammarError, RegexError
from pda.grammar import ecma_regex as er
from pda.grammar.ir import TerminalAutomaton
from pda.grammar.json_schema import limits
from pda.grammar.json_schema.context import Context, JsonSchemaWarning
from pda.grammar.json_schema.formats import format_pattern
from pda.grammar.json_schema.keywords import pointer
from pda.grammar.json_schema.typed import StringSchema

def lower_string(ctx: Context, schema: dict[str, Any], path: tuple[str, ...]) -> str | None:
    """The terminal for `string` instances of `schema` (lengths, patterns, format, a negated enum);
    None when there are none."""
    string = StringSchema.of(schema)
    if isinstance(schema.get("format"), str) and string.format is None:
        ctx.approximate("format", path + ("format",), f"{schema['format']!r} is not a format pda checks: "
                        "any string is taken (JSON Schema's default for formats: an annotation)")
    lo, hi = string.min_length, string.max_length
    if hi is not None and hi < lo:
        return None
    positive = ([string.pattern] if string.pattern is not None else []) + list(string.patterns)
    negative = list(string.not_patterns)
    if string.not_in is not None:
        if not positive and not negative and string.format is None and (lo, hi) == (0, None):
            return ctx.builder.terminal('"' + not_in_set(list(string.not_in)) + '"', "STR")
        # Beside other string keywords: each excluded value is a negated pattern matching
        # exactly it, which the automata below subtract.
        negative += ["^" + literal_pattern(v) + "$" for v in string.not_in]
    if string.format is not None:
        positive.append(format_pattern(ctx.formats[string.format]))
    positive = [anchored_group(p) for p in positive]
    negative = [anchored_group(p) for p in negative]
    for p in list(positive):
        split = er.split_leading_lookahead(p)
        if split is not None:
            positive.remove(p)
            positive += split[0]
            negative += split[1]
    if not positive and not negative:
        return any_string(ctx, lo, hi)
    where = path + ("pattern" if string.pattern is not None else "format" if positive else "not",)
    try:
        info: er.PatternInfo | None = None
        if len(positive) == 1 and not negative:
            info = er.ecma_pattern_body(positive[0])
            if info is None:
                return None
            fits = info.min_len >= lo and (hi is None or (info.max_len is not None and info.max_len <= hi))
            if not fits:
                if (info.max_len is not None and info.max_len < lo) or (hi is not None and info.min_len > hi):
                    return None
                info = er.ecma_pattern_body(positive[0], min_len=lo, max_len=hi)
        if info is None:
            # Several patterns, negated ones, or lengths the pattern's shape cannot absorb:
            # through automata (intersection, complement, a length counter), kept as one.
            found = er.pattern_set_automaton(positive, negative, min_len=lo, max_len=hi)
            if found is None:
                return None
            if found == er.ANY_STRING_BODY:
                return any_string(ctx, lo, hi)
            assert isinstance(found, TerminalAutomaton)
            return ctx.builder.automaton_terminal(found, "STR")
    except RegexError as exc:
        if ctx.raise_unsupported:
            raise GrammarError(f"{exc} (at {pointer(where)})") from None
        warnings.warn(f"{exc} at {pointer(where)}; relaxed: 'pattern', 'format' and their lengths are "
                      "ignored", JsonSchemaWarning, stacklevel=3)
        return ctx.builder.terminal(f'"(?:{er.ANY_UNIT})*"', "STR")
    return ctx.builder.terminal(f'"{info.body}"', "STR")

@functools.lru_cache(maxsize=512)
def anchored_group(pattern: str) -> str:
    """`^A$|^B$|...` (every top-level alternative anchored at both ends) as `^(?:A|B|...)$`, the
    same language: the automata take anchors only at the pattern's edges (with lengths,
    `^$|^[^/].*$` could not be compiled). Any other pattern is returned as it is. Memoised
    (a scan a character at a time; a format's pattern is long and asked for again)."""
    alts, depth, start, i, in_class = [], 0, 0, 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            alts.append(pattern[start:i])
            start = i + 1
        i += 1
    alts.append(pattern[start:])
    if len(alts) < 2 or in_class or depth:
        return pattern

    def ends_anchored(a: str) -> bool:
        # A "$" that is not escaped: an even number of backslashes before it.
        return a.endswith("$") and (len(a) - 1 - len(a[:-1].rstrip("\\"))) % 2 == 0

    if not all(a.startswith("^") and len(a) >= 2 and ends_anchored(a) for a in alts):
        return pattern
    return "^(?:" + "|".join(a[1:-1] for a in alts) + ")$"

def literal_pattern(text: str) -> str:
    """`text` as an ECMA-262 (u flag) pattern matching it literally."""
    return "".join("\\" + c if c in "^$\\.*+?()[]{}|/" else c for c in text)

def any_string(ctx: Context, lo: int, hi: int | None) -> str | None:
    """Any string of lo..hi code points: one terminal, or, when the count is long, a rule reserved
    for it (one per length bounds) that `define_long_strings` defines after the lowering."""
    if max(lo, hi or 0) > limits.LONG_STRING_UNITS:
        name = ctx.long_strings.get((lo, hi))
        if name is None:
            name = ctx.long_strings[(lo, hi)] = ctx.builder.reserve()
        return name
    return _string_terminal(ctx, lo, hi)


def _string_terminal(ctx: Context, lo: int, hi: int | None) -> str:
    count = "*" if (lo, hi) == (0, None) else f"{{{lo},}}" if hi is None else f"{{{lo},{hi}}}"
    return ctx.builder.terminal(f'"(?:{er.ANY_UNIT}){count}"', "STR")


def define_long_strings(ctx: Context, top: str | None, *, check: bool = True) -> None:
    """Define the rules `any_string` reserved for long strings: counted in chunks (`long_string`), or
    each one terminal when (`check`) a chunk head could compete with another string terminal
    (`competing_heads`). Decided once the lowering is whole, so it is lowered once either way."""
    chunks = not (check and competing_heads(ctx, top or ""))
    for (lo, hi), name in ctx.long_strings.items():
        ctx.builder.define(name, long_string(ctx, lo, hi) if chunks else [[_string_terminal(ctx, lo, hi)]])


def long_string(ctx: Context, lo: int, hi: int | None) -> list[list[str]]:
    """The alternatives of a string of lo..hi code points as chunks of `STRING_CHUNK` units and a tail.

    A count of thousands inside one terminal makes a DFA of thousands of states
    per unit; here the count is split: a head terminal (the opening quote and
    one chunk), chunk terminals, and a tail of 0..STRING_CHUNK-1 units with the
    closing quote, repeated by O(log) rules. Lexing stays unambiguous: a chunk
    holds exactly limits.STRING_CHUNK units and no quote, a tail ends at the first
    quote, so exactly one of them matches at each point. A string of fewer
    than limits.STRING_CHUNK units is one short terminal. (`competing_heads` checks that no
    other string terminal competes with a head at the same position.)
    """
    b = limits.STRING_CHUNK
    unit = f"(?:{er.ANY_UNIT})"
    head = ctx.builder.terminal(f'"{unit}{{{b}}}', "HEAD")
    chunk = ctx.builder.terminal(f"{unit}{{{b}}}", "CHUNK")

    def tail(x: int, y: int, opening: bool) -> str:
        return ctx.builder.terminal(('"' if opening else "") + f'{unit}{{{x},{y}}}"', "TAIL")

    def pieces(c_lo: int, c_hi: int | None, t_lo: int, t_hi: int) -> list[str] | None:
        """Strings of c_lo..c_hi whole chunks followed by t_lo..t_hi more units."""
        if c_hi is not None and c_hi < c_lo:
            return None
        if c_lo == 0 and c_hi == 0:
            return [tail(t_lo, t_hi, True)]
        if c_lo == 0:
            more = ctx.builder.rule([[head, *ctx.builder.repeat(chunk, 0, None if c_hi is None else c_hi - 1),
                                      tail(0, t_hi, False)]])
            return [ctx.builder.rule([[tail(t_lo, t_hi, True)], [more or ""]]) or ""]
        return [head, *ctx.builder.repeat(chunk, c_lo - 1, None if c_hi is None else c_hi - 1),
                tail(t_lo, t_hi, False)]

    c_lo, r_lo = divmod(lo, b)
    if hi is None:
        options = [pieces(c_lo, c_lo, r_lo, b - 1), pieces(c_lo + 1, None, 0, b - 1)]
    else:
        c_hi, r_hi = divmod(hi, b)
        if c_lo == c_hi:
            options = [pieces(c_lo, c_lo, r_lo, r_hi)]
        else:
            options = [pieces(c_lo, c_lo, r_lo, b - 1), pieces(c_lo + 1, c_hi - 1, 0, b - 1),
                       pieces(c_hi, c_hi, 0, r_hi)]
    return [list(o) for o in dict.fromkeys(tuple(o) for o in options if o is not None)]


def competing_heads(ctx: Context, top: str) -> bool:
    """Whether a chunk head can be a lexer candidate beside another string terminal
    that is still alive after a chunk (greedy lexing would then follow that one).

    Asked before the long strings are defined: each rule reserved for one (`ctx.long_strings`)
    stands for its chunk head, which is what every one of its alternatives can begin with
    (a head, or a tail terminal that is no rival: it is not a string lexeme alone), and inside
    them no string terminal can be a candidate. Checked on LL(1)-style start sets (FIRST of
    each rule suffix, FOLLOW of its left side when the suffix is nullable), which
    over-approximate the candidates at every parser position. Only heads and the string
    terminals that may match more than a chunk (`_may_be_wide`) are asked about, so the sets
    hold just those, as bits of an int; none such, no rival (most schemas: no sets at all).
    """
    long_rules = set(ctx.long_strings.values())
    if not long_rules:
        return False
    strings = [t for t, (regex, _) in ctx.builder.terminals.items()
               if _may_be_wide(ctx, t, regex) and _is_string(ctx, t, regex)]
    if not strings:
        return False
    bit = {t: 1 << i for i, t in enumerate(sorted(long_rules.union(strings)))}
    heads = sum(bit[t] for t in long_rules)
    rules = {n: alts for n, alts in ctx.builder.rules.items() if n not in long_rules}
    rules["start"] = [[*ctx.ws, top, *ctx.ws]]
    first, nullable = _first_sets(rules, bit, set(ctx.ws))
    follow = _follow_sets(rules, first, nullable)
    # Where a head can begin: a suffix holding one of these, or a nullable one after a rule it can follow.
    hot = {sym for sym, f in first.items() if f & heads}
    rival: dict[str, bool] = {}
    for n, alts in rules.items():
        cold = not follow[n] & heads
        for a in alts:
            if cold and hot.isdisjoint(a):
                continue
            # Backwards: `f` is FIRST of the suffix from here, with FOLLOW(n) when it is nullable.
            f = follow[n]
            for sym in reversed(a):
                f = f | first.get(sym, 0) if sym in nullable else first.get(sym, 0)
                if f & heads:
                    for t in strings:
                        if f & bit[t]:
                            if t not in rival:
                                rival[t] = _terminal_width(ctx, t) > limits.STRING_CHUNK
                            if rival[t]:
                                return True
    return False


def _may_be_wide(ctx: Context, name: str, regex: str) -> bool:
    """Whether a terminal may match more than `STRING_CHUNK` characters, cheaply over-approximated: an
    automaton may; a regex without repetition (`*`, `+`, `{`) matches at most its own length."""
    return (ctx.builder.automaton(name) is not None or len(regex) > limits.STRING_CHUNK
            or "*" in regex or "+" in regex or "{" in regex)


def _first_sets(rules: dict[str, list[list[str]]], bit: dict[str, int],
                nullable: set[str]) -> tuple[dict[str, int], set[str]]:
    """FIRST of every symbol (a terminal's is its bit, 0 when it has none) and the nullable symbols
    (`nullable` as given, and the rules found so), by a worklist: a rule is evaluated again only
    when a rule that can begin one of its alternatives has changed (rounds over every rule until
    none changed evaluated wp_124's 4,470 alternatives 17,880 times), and first only where it can
    begin with a terminal that has a bit or may be empty (no other terminal stops an alternative
    before its end): any other rule's FIRST is 0 and it is not nullable until a rule it can begin
    with changes."""
    first: dict[str, int] = {**bit, **{n: 0 for n in rules}}
    users: dict[str, set[str]] = {}  # rule -> the rules where it can begin an alternative
    todo: deque[str] = deque()  # naming order: mostly a rule's parts before it
    for n, alts in rules.items():
        seed = False
        for a in alts:
            for sym in a:
                if sym in rules:
                    users.setdefault(sym, set()).add(n)
                elif sym not in nullable:
                    seed = seed or sym in bit
                    break  # a terminal: what follows never begins the alternative
            else:
                seed = True  # nothing but rules and empty symbols: it may be empty
        if seed:
            todo.append(n)
    queued = set(todo)
    while todo:
        n = todo.popleft()
        queued.discard(n)
        f, null = first[n], n in nullable
        for a in rules[n]:
            g, g_null = _first_of(a, first, nullable)
            f, null = f | g, null or g_null
        if f != first[n] or (null and n not in nullable):
            first[n] = f
            if null:
                nullable.add(n)
            for u in users.get(n, ()):
                if u not in queued:
                    queued.add(u)
                    todo.append(u)
    return first, nullable


def _first_of(seq: list[str], first: dict[str, int], nullable: set[str]) -> tuple[int, bool]:
    """(FIRST, nullable) of the sequence `seq`."""
    out = 0
    for sym in seq:
        out |= first.get(sym, 0)
        if sym not in nullable:
            return out, False
    return out, True


def _follow_sets(rules: dict[str, list[list[str]]], first: dict[str, int], nullable: set[str]) -> dict[str, int]:
    """FOLLOW of every rule: what can start after it inside an alternative (read only in the
    alternatives holding a symbol whose FIRST is not 0: the others add nothing), then, by a
    worklist over the rules whose FOLLOW is not 0, what follows a left side added to the rules
    that can end its alternatives."""
    follow: dict[str, int] = {n: 0 for n in rules}
    lit = {sym for sym, f in first.items() if f}
    for alts in rules.values():
        for a in alts:
            if lit.isdisjoint(a):
                continue
            f = 0  # FIRST of what follows the symbol, read backwards
            for sym in reversed(a):
                if sym in follow:
                    follow[sym] |= f
                g = first.get(sym, 0)
                f = f | g if sym in nullable else g
    ends: dict[str, set[str]] = {}  # rule -> the rules that can end one of its alternatives
    todo = [n for n, f in follow.items() if f]
    while todo:
        n = todo.pop()
        if n not in ends:
            ends[n] = _ends(rules, n, nullable)
        for sym in ends[n]:
            if follow[n] | follow[sym] != follow[sym]:
                follow[sym] |= follow[n]
                todo.append(sym)
    return follow


def _ends(rules: dict[str, list[list[str]]], n: str, nullable: set[str]) -> set[str]:
    """The rules other than `n` that can end one of `n`'s alternatives (all after them nullable)."""
    out: set[str] = set()
    for a in rules[n]:
        for sym in reversed(a):
            if sym != n and sym in rules:
                out.add(sym)
            if sym not in nullable:
                break
    return out

# ---------------------------------------------------------------- arrays

def string_set(ctx: Context, values: list[str]) -> str:
    """One terminal for a set of string values.

    Values whose every JSON spelling is short to list become quoted literals of
    one `(?:"a"|"b"|...)` alternation, the shape the finite-set engine
    (`pda.trie`) compiles as a trie; values with many spellings (non-ASCII,
    control characters, several `/`) are added as their general regex, which
    keeps the terminal on the general DFA path.
    """
    literals: list[str] = []
    general: list[str] = []
    for v in dict.fromkeys(values):
        spellings = _literal_spellings(v)
        if spellings is None:
            general.append(er.literal_string_regex(v))
        else:
            literals += [re.escape('"' + s + '"') for s in spellings]
    if general:
        return ctx.builder.terminal("(?:" + "|".join(literals + general) + ")", "STR")
    return ctx.builder.terminal("(?:" + "|".join(sorted(literals)) + ")", "ENUM")

_SINGLE_OR_SLASH = re.compile("[" + "".join(f"{er.py_char(a)}-{er.py_char(b)}" for a, b in er.SINGLE_SPELLING)
                              + "/]*")


def _literal_spellings(text: str) -> list[str] | None:
    """Every JSON spelling of `text` (raw, and `\\/` for each `/`), or None when there
    are more than `MAX_LITERAL_SPELLINGS` or a character has escaped spellings."""
    if not _SINGLE_OR_SLASH.fullmatch(text) or 2 ** text.count("/") > limits.MAX_LITERAL_SPELLINGS:
        return None
    first, *rest = text.split("/")
    out = [first]
    for piece in rest:
        out = [s + sep + piece for s in out for sep in ("/", "\\/")]
    return out


def _is_string(ctx: Context, name: str, regex: str) -> bool:
    """Whether a builder terminal is a string lexeme: its regex starts with a quote, or it is an
    automaton whose every edge out of the start is a quote (`pattern_set_automaton`'s are)."""
    automaton = ctx.builder.automaton(name)
    if automaton is None:
        return regex.startswith('"')
    return all(label == '"' for q, label, _ in automaton.edges if q == automaton.start)


def _terminal_width(ctx: Context, name: str) -> int:
    """The most characters a builder terminal can match (a large number when unbounded)."""
    automaton = ctx.builder.automaton(name)
    return _max_width(ctx.builder.terminals[name][0]) if automaton is None else _automaton_width(automaton)


def _automaton_width(a: TerminalAutomaton) -> int:
    """The most characters `a` can match: its longest path, each edge as wide as its label's widest
    match (a large number when a cycle makes it unbounded; `pattern_set_automaton`'s automata hold
    only states on a path to acceptance, so any cycle is on one)."""
    succ: dict[int, list[tuple[int, int]]] = {}
    indegree = [0] * a.n_states
    for q, label, r in a.edges:
        succ.setdefault(q, []).append((r, _max_width(label)))
        indegree[r] += 1
    ready = [q for q in range(a.n_states) if indegree[q] == 0]
    longest: list[int | None] = [None] * a.n_states
    longest[a.start] = 0
    done = 0
    while ready:
        q = ready.pop()
        done += 1
        for r, w in succ.get(q, ()):
            lq = longest[q]
            if lq is not None:
                longest[r] = max(longest[r] or 0, lq + w)
            indegree[r] -= 1
            if indegree[r] == 0:
                ready.append(r)
    if done < a.n_states:
        return sys.maxsize
    return max((longest[q] for q in a.accept if longest[q] is not None), default=0)  # type: ignore[type-var]


def _max_width(regex: str) -> int:
    """The most characters `regex` can match (a large number when unbounded)."""
    try:
        return re._parser.parse(regex).getwidth()[1]  # type: ignore[attr-defined]
    except (re.error, OverflowError, RecursionError):
        return sys.maxsize


def not_in_set(names: list[str]) -> str:
    """Lexeme-body regex for strings not in `names`: a negative look-ahead for any spelling
    of a name followed by the closing quote, then any string body.

    Exact because a body holds no raw quote: the look-ahead's quote is the lexeme's
    last character. pda's DFA builder intersects the two (a trie of the names
    against the unit loop), which is far cheaper than writing the complement of a
    few hundred names out as one regex.
    """
    anything = f"(?:{er.ANY_UNIT})*"
    if not names:
        return anything
    spellings = "|".join(er.literal_body_regex(n) for n in sorted(set(names)))
    return f'(?!(?:{spellings})")' + anything

