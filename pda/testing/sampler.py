"""Draw sentences (and near-miss non-sentences) from a grammar IR.

A sentence is drawn in three steps:

1. a random derivation from the start symbol, with a depth budget and a
   lexeme budget drawn per sentence (so short and deep sentences both occur);
   when a budget would be exceeded, only rules of least derivation height are
   taken, which always terminates;
2. one string per terminal, drawn from the terminal's regex (`re`'s own parse
   tree), preferring edge characters: quotes, backslashes, multi-byte UTF-8; a
   terminal given as an automaton (`TerminalAutomaton`) by a random walk over it,
   each edge's regex drawn the same way;
3. the lexemes are joined, with a sampled `%ignore` string wherever the greedy
   lexer would otherwise extend one lexeme into the next.

Greedy, contextual lexing can still read the joined text differently from the
derivation, so every sentence is checked by `ReferenceRecognizer`, an
independent, slow implementation of pda's lexing semantics over an Earley
parser (character-level; see docs/fuzzing.md), and redrawn if it fails.

All randomness goes through a `Choices` object with one method,
`below(n) -> int`. With `random.Random` it is seeded and reproducible; with
hypothesis it is a draw of `integers(0, n-1)`, and because every decision is
ordered so that 0 is the simplest option, shrinking gives shorter sentences
with fewer derivation steps.
"""

from __future__ import annotations

import random
import re
import re._constants as sre
import re._parser as sre_parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import regex

from pda.errors import GrammarError, LimitExceeded
from pda.grammar.ir import BASIC, GrammarIR, TerminalAutomaton, TerminalDef

# -- choices -------------------------------------------------------------------


class Choices(Protocol):
    """The only source of randomness: an integer in [0, n); 0 is the simplest choice."""

    def below(self, n: int) -> int: ...


class RandomChoices:
    """`Choices` from a seeded `random.Random`."""

    def __init__(self, seed: int | random.Random = 0) -> None:
        self.rng = seed if isinstance(seed, random.Random) else random.Random(seed)

    def below(self, n: int) -> int:
        return self.rng.randrange(n) if n > 1 else 0


# -- terminal strings from a regex ------------------------------------------------------

_FLAG_BITS = {
    "i": re.IGNORECASE,
    "s": re.DOTALL,
    "m": re.MULTILINE,
    "x": re.VERBOSE,
    "a": re.ASCII,
    "u": re.UNICODE,
}
# Characters tried first when a class admits them: the simplest, then the edge cases.
_SIMPLE = "a0 A_1z"
_EDGE = '"\\\'\n\t\r/*#{}[]().,:;<>=+-`' + "é😀中\u2028\x00\x7f\x85ß\ufeff"
_POOL = list(dict.fromkeys(_SIMPLE + "".join(map(chr, range(0x20, 0x7F))) + _EDGE))
_CATEGORY = {
    sre.CATEGORY_DIGIT: re.compile(r"\d"),
    sre.CATEGORY_NOT_DIGIT: re.compile(r"\D"),
    sre.CATEGORY_SPACE: re.compile(r"\s"),
    sre.CATEGORY_NOT_SPACE: re.compile(r"\S"),
    sre.CATEGORY_WORD: re.compile(r"\w"),
    sre.CATEGORY_NOT_WORD: re.compile(r"\W"),
}
# Indentation units an indented sentence is drawn with (one per sentence): mostly four spaces.
_INDENT_UNITS = ("    ", "    ", "    ", "  ", "\t", " ")
_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)


# Edges an automaton terminal's walk takes freely before it heads for the nearest accepting state.
_WALK_EDGES = 24


def _flags_of(letters: str) -> int:
    bits = 0
    for letter in letters:
        bits |= _FLAG_BITS.get(letter, 0)
    return bits


def _is_scalar(cp: int) -> bool:
    return 0 <= cp <= 0x10FFFF and not 0xD800 <= cp <= 0xDFFF


def greedy_form(pattern: str) -> str:
    """The pattern with every lazy quantifier made greedy (`*?` → `*`, `{1,3}?` → `{1,3}`)."""
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        out.append(c)
        i += 1
        if in_class:
            in_class = c != "]"
            continue
        if c == "[":
            in_class = True
            for lead in ("^", "]"):  # `[]...]` and `[^]...]` start with a literal ]
                if pattern.startswith(lead, i):
                    out.append(lead)
                    i += 1
            continue
        quantifier = c in "*+" or (c == "?" and len(out) > 1 and out[-2] != "(") or (
            c == "}" and regex.search(r"\{\d*(,\d*)?\}$", "".join(out)) is not None
        )
        if quantifier and pattern.startswith("?", i):
            i += 1  # the lazy marker
    return "".join(out)


class AutomatonMatcher:
    """`fullmatch` (with `regex`'s `partial`) for a terminal given as an automaton, by running
    its NFA over the edges' own regexes compiled by `regex`: independent of pda's DFA builder.

    A run is the set of states reached at each position; from each, every edge tries the
    ends its regex's width allows. Slow (quadratic in the text for unbounded edges), as
    the reference recogniser may be."""

    def __init__(self, a: TerminalAutomaton, flags: int) -> None:
        self.automaton = a
        compiled = {label: (regex.compile(label, flags), _max_width(sre_parse.parse(label, flags)))
                    for _, label, _ in a.edges}
        self.out: list[list[tuple[Any, int | None, int]]] = [[] for _ in range(a.n_states)]
        for q, label, r in a.edges:
            self.out[q].append((*compiled[label], r))
        self.accept = frozenset(a.accept)
        self.distance = _distance_to_accept(a)

    def fullmatch(self, text: str, pos: int = 0, endpos: int | None = None, *, partial: bool = False,
                  timeout: float | None = None) -> bool | None:
        """True when text[pos:endpos] is a whole string of the automaton (with `partial`: or a
        prefix of one), else None, as `regex` answers (`timeout` is accepted and unused)."""
        end = len(text) if endpos is None else min(endpos, len(text))
        reached: dict[int, set[int]] = {pos: {self.automaton.start}}
        for i in range(pos, end + 1):
            todo = list(reached.get(i, ()))
            while todo:  # an edge whose regex matches the empty string moves within position i
                q = todo.pop()
                for rx, width, r in self.out[q]:
                    if r not in self.distance:
                        continue
                    for j in range(i, end + 1 if width is None else min(end, i + width) + 1):
                        if rx.fullmatch(text, i, j) is not None and r not in reached.setdefault(j, set()):
                            reached[j].add(r)
                            if j == i:
                                todo.append(r)
                    if partial and i < end and rx.fullmatch(text, i, end, partial=True) is not None:
                        return True
        last = reached.get(end, set())
        found = bool(last & self.accept) or (partial and any(q in self.distance for q in last))
        return True if found else None


def _max_width(tree: Any) -> int | None:
    high = tree.getwidth()[1]
    return None if high >= sre.MAXREPEAT else high


def _distance_to_accept(a: TerminalAutomaton) -> dict[int, int]:
    """Edges from each state to the nearest accepting one; states that cannot accept are absent."""
    into: list[list[int]] = [[] for _ in range(a.n_states)]
    for q, _, r in a.edges:
        into[r].append(q)
    distance = {q: 0 for q in a.accept}
    frontier = list(distance)
    while frontier:
        nxt = []
        for r in frontier:
            for q in into[r]:
                if q not in distance:
                    distance[q] = distance[r] + 1
                    nxt.append(q)
        frontier = nxt
    return distance


class TerminalGenerator:
    """Random strings of one terminal: generated from the regex parse tree (for an automaton
    terminal, a walk over the automaton drawing each edge's regex so), then
    checked with `fullmatch` (which also enforces look-arounds and anchors the
    generator ignores) and, for lazy terminals, that no shorter prefix matches."""

    def __init__(self, term: TerminalDef) -> None:
        self.term = term
        self.flags = _flags_of(term.flags)
        self._class_cache: dict[int, tuple[list[str], list[tuple[int, int]]]] = {}
        a = term.automaton
        try:
            if a is not None:  # its `pattern` only describes it: never parsed
                self.regex = self.viable = AutomatonMatcher(a, self.flags)
                trees = {label: sre_parse.parse(label, self.flags) for _, label, _ in a.edges}
                distance = self.regex.distance
                # Per state, the edges that can still reach acceptance, the nearest first (choice 0 shrinks to them).
                self.walk: list[list[tuple[int, Any, int]]] = [[] for _ in range(a.n_states)]
                for q, label, r in a.edges:
                    if r in distance:
                        self.walk[q].append((distance[r], trees[label], r))
                for edges in self.walk:
                    edges.sort(key=lambda e: e[0])
                self.max_width: int | None = None
                return
            self.tree = sre_parse.parse(term.pattern, self.flags)
            self.regex = regex.compile(term.pattern, self.flags)
            # `regex`'s partial matching is wrong for lazy quantifiers; the greedy form has
            # the same language, so prefix viability is asked of it.
            self.viable = regex.compile(greedy_form(term.pattern), self.flags)
        except (re.error, regex.error) as exc:
            raise GrammarError(f"cannot parse pattern /{term.pattern}/: {exc}", terminal=term.name) from None
        self.max_width = _max_width(self.tree)

    def matches(self, text: str) -> bool:
        """Whether `text` is one lexeme of this terminal (lazy: its first match)."""
        if self.regex.fullmatch(text) is None:
            return False
        return not self.term.lazy or not any(self.regex.fullmatch(text, 0, k) for k in range(1, len(text)))

    def generate(self, choices: Choices, tries: int = 40) -> str:
        for _ in range(tries):
            out: list[str] = []
            if self.term.automaton is None:
                self._gen(self.tree, self.flags, out, {}, choices)
            else:
                self._walk(out, choices)
            text = "".join(out)
            if text and self.matches(text):
                return text
        raise LimitExceeded(f"could not draw a string of terminal {self.term.name} (/{self.term.pattern}/) in {tries} tries")

    def _walk(self, out: list[str], choices: Choices) -> None:
        """A path of the automaton from its start to an accepting state, each edge's regex drawn into `out`.

        At an accepting state choice 0 stops; after `_WALK_EDGES` edges only edges that come
        nearer to acceptance are taken, so the walk ends."""
        a = self.term.automaton
        assert a is not None
        q, steps = a.start, 0
        if q not in self.regex.distance:
            return  # the empty language: `generate` finds no string
        while True:
            edges = self.walk[q]
            if steps >= _WALK_EDGES:
                edges = [e for e in edges if e[0] < self.regex.distance[q]]
            if not edges or (q in self.regex.accept and choices.below(4) == 0):
                return
            _, tree, q = edges[choices.below(len(edges))]
            self._gen(tree, self.flags, out, {}, choices)
            steps += 1

    def _gen(self, items: Any, flags: int, out: list[str], groups: dict[int, str], choices: Choices) -> None:
        for op, av in items:
            if op is sre.LITERAL:
                c = chr(av)
                if flags & re.IGNORECASE and len(c.swapcase()) == 1 and choices.below(4) == 3:
                    c = c.swapcase()
                out.append(c)
            elif op is sre.NOT_LITERAL:
                out.append(self._pick(choices, lambda ch, v=av: ch != chr(v) and ch.lower() != chr(v).lower(), []))
            elif op is sre.ANY:
                out.append(self._pick(choices, lambda ch, f=flags: ch != "\n" or bool(f & re.DOTALL), []))
            elif op is sre.IN:
                out.append(self._pick_in(av, flags, choices))
            elif op is sre.BRANCH:
                alternatives = av[1]
                self._gen(alternatives[choices.below(len(alternatives))], flags, out, groups, choices)
            elif op is sre.SUBPATTERN:
                group, add_flags, del_flags, body = av
                start = len(out)
                self._gen(body, (flags | add_flags) & ~del_flags, out, groups, choices)
                if group is not None:
                    groups[group] = "".join(out[start:])
            elif op in _REPEATS:
                low, high, body = av
                for _ in range(_repeat_count(low, high, choices)):
                    self._gen(body, flags, out, groups, choices)
            elif op is sre.ATOMIC_GROUP:
                self._gen(av, flags, out, groups, choices)
            elif op is sre.GROUPREF:
                out.append(groups.get(av, ""))
            elif op is sre.GROUPREF_EXISTS:
                group, yes, no = av
                branch = yes if group in groups else no
                if branch is not None:
                    self._gen(branch, flags, out, groups, choices)
            elif op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
                continue  # zero-width: checked by fullmatch afterwards
            else:
                raise GrammarError(f"regex construct {op} is not supported by the sampler", terminal=self.term.name)

    def _pick_in(self, items: list[tuple[Any, Any]], flags: int, choices: Choices) -> str:
        key = id(items) ^ flags
        cached = self._class_cache.get(key)
        if cached is None:
            negated = bool(items) and items[0][0] is sre.NEGATE
            body = items[1:] if negated else items
            ignorecase = bool(flags & re.IGNORECASE)

            def member(ch: str) -> bool:
                # Case forms that are one character (`ß`.upper() is `SS`, not a class member).
                forms = {f for f in (ch, ch.lower(), ch.upper()) if len(f) == 1} if ignorecase else {ch}
                hit = any(_class_item_has(op, av, f) for op, av in body for f in forms)
                return hit != negated

            ranges = [] if negated else [_as_range(op, av) for op, av in body if op in (sre.LITERAL, sre.RANGE)]
            pool = [c for c in _POOL if member(c)]
            cached = self._class_cache[key] = (pool, ranges)
        pool, ranges = cached
        return self._choose(choices, pool, ranges, None)

    def _pick(self, choices: Choices, member: Callable[[str], bool], ranges: list[tuple[int, int]]) -> str:
        return self._choose(choices, [c for c in _POOL if member(c)], ranges, member)

    def _choose(
        self,
        choices: Choices,
        pool: list[str],
        ranges: list[tuple[int, int]],
        member: Callable[[str], bool] | None,
    ) -> str:
        """0: the simplest member; 1-2: an edge character; otherwise a random member."""
        k = choices.below(8)
        edges = [c for c in pool if c in _EDGE]
        if pool and k == 0:
            return pool[0]
        if edges and k in (1, 2):
            return edges[choices.below(len(edges))]
        if ranges and (not pool or k >= 5):
            low, high = ranges[choices.below(len(ranges))]
            cp = low + choices.below(high - low + 1)
            if _is_scalar(cp):
                return chr(cp)
        if pool:
            return pool[choices.below(len(pool))]
        if member is not None:
            for _ in range(200):
                c = chr(0x80 + choices.below(0xD800 - 0x80))
                if member(c):
                    return c
        raise LimitExceeded(f"no character found for a class in terminal {self.term.name}")


def _as_range(op: Any, av: Any) -> tuple[int, int]:
    return (av, av) if op is sre.LITERAL else av


def _class_item_has(op: Any, av: Any, ch: str) -> bool:
    if op is sre.LITERAL:
        return ch == chr(av)
    if op is sre.RANGE:
        return av[0] <= ord(ch) <= av[1]
    if op is sre.CATEGORY:
        pattern = _CATEGORY.get(av)
        return pattern is not None and pattern.fullmatch(ch) is not None
    return False


def _repeat_count(low: int, high: int, choices: Choices) -> int:
    """Mostly the minimum or a few more; sometimes many (shrinks to the minimum)."""
    k = choices.below(10)
    if k < 4:
        n = low
    elif k < 8:
        n = low + 1 + choices.below(3)
    elif k == 8:
        n = low + choices.below(12)
    else:
        n = low + choices.below(40)
    return min(n, high)


# -- grammar analysis -----------------------------------------------------------------


@dataclass(frozen=True)
class Lexeme:
    """One lexeme of a sampled sentence: the terminal and its text."""

    terminal: str
    text: str


class GrammarShape:
    """Per symbol: productive or not, least derivation height, least lexeme count.

    `dead` terminals match no string (e.g. `%declare`d ones a post-lexer would
    produce); rules that use them are never sampled. `produced` terminals are
    made by a post-lexer (the indenter's `_INDENT`/`_DEDENT`): not lexed, so
    not in `terminals`, but derivable (counted like a lexeme in the budgets).
    """

    def __init__(
        self, ir: GrammarIR, dead: frozenset[str] = frozenset(), produced: frozenset[str] = frozenset()
    ) -> None:
        self.ir = ir
        self.terminals = ir.terminal_names - dead - produced
        self.produced = produced & ir.terminal_names
        self.rules_of: dict[str, list[int]] = {}
        for i, rule in enumerate(ir.rules):
            self.rules_of.setdefault(rule.lhs, []).append(i)
        inf = float("inf")
        self.height: dict[str, float] = {t: 0 for t in self.terminals | self.produced}
        self.length: dict[str, float] = {t: 1 for t in self.terminals | self.produced}
        for lhs in self.rules_of:
            self.height.setdefault(lhs, inf)
            self.length.setdefault(lhs, inf)
        changed = True
        while changed:
            changed = False
            for rule in ir.rules:
                h = 1 + max((self.height.get(s, inf) for s in rule.rhs), default=0)
                n = sum(self.length.get(s, inf) for s in rule.rhs)
                if h < self.height[rule.lhs]:
                    self.height[rule.lhs] = h
                    changed = True
                if n < self.length[rule.lhs]:
                    self.length[rule.lhs] = n
                    changed = True
        if self.height.get(ir.start, inf) == inf:
            raise GrammarError(f"start symbol {ir.start!r} derives no sentence")
        self.rule_height = [1 + max((self.height.get(s, inf) for s in r.rhs), default=0) for r in ir.rules]
        self.rule_length = [sum(self.length.get(s, inf) for s in r.rhs) for r in ir.rules]
        # Simplest first, so that choice 0 (what hypothesis shrinks to) is the shortest rule.
        for rules in self.rules_of.values():
            rules.sort(key=lambda i: (self.rule_height[i], self.rule_length[i], i))
        self.nullable = {s for s, n in self.length.items() if n == 0}


# -- the reference recogniser ---------------------------------------------------------


class ReferenceRecognizer:
    """Membership by pda's lexing rules, implemented independently of pda's engine.

    Lexing is contextual and greedy without backtracking: at a lexeme start the
    candidates are the terminals the Earley set can scan plus `%ignore`; the
    lexeme extends while any candidate can still match (a lazy terminal stops
    at its first match); the candidates that match the whole lexeme, cut to the
    highest priority, are scanned together, or the lexeme is skipped if only
    ignored terminals are among them. Under the basic lexer mode every terminal
    takes part in cutting and typing the lexeme, and the candidates among the
    top-priority matches are scanned (none: refused). Works on characters, not bytes.
    """

    def __init__(self, ir: GrammarIR, shape: GrammarShape | None = None) -> None:
        self.ir = ir
        self.shape = shape or GrammarShape(ir)
        self.gens = {t.name: TerminalGenerator(t) for t in ir.terminals}
        self.priority = {t.name: t.priority for t in ir.terminals}
        self.ignore = frozenset(ir.ignore)
        self.basic = ir.lexer == BASIC
        self.rhs = [r.rhs for r in ir.rules]
        self.lhs = [r.lhs for r in ir.rules]

    def accepts(self, text: str | bytes) -> bool:
        """Whether the whole text is a sentence."""
        if isinstance(text, bytes):
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError:
                return False
        sets: list[dict[str, list[tuple[int, int, int]]]] = []  # per set: items by the symbol they wait for
        current = self._closure({(r, 0, 0) for r in self.shape.rules_of.get(self.ir.start, [])}, sets)
        pos = 0
        while pos < len(text):
            allowed = {self.rhs[r][d] for r, d, _ in current if d < len(self.rhs[r]) and self.rhs[r][d] in self.gens}
            lexed = self.lex(text, pos, allowed | self.ignore)
            if lexed is None:
                return False
            end, matched = lexed
            usable = matched & allowed
            if usable:
                waiting: dict[str, list[tuple[int, int, int]]] = {}
                for r, d, o in current:
                    if d < len(self.rhs[r]):
                        waiting.setdefault(self.rhs[r][d], []).append((r, d, o))
                sets.append(waiting)
                advanced = {
                    (r, d + 1, o) for r, d, o in current if d < len(self.rhs[r]) and self.rhs[r][d] in usable
                }
                current = self._closure(advanced, sets)
            pos = end
        return any(self.lhs[r] == self.ir.start and o == 0 and d == len(self.rhs[r]) for r, d, o in current)

    def lex(self, text: str, pos: int, candidates: frozenset[str] | set[str]) -> tuple[int, frozenset[str]] | None:
        """The greedy lexeme at `pos`: its end and the terminals it commits as."""
        reach = {name: self._reach(name, text, pos) for name in (self.gens if self.basic else candidates)}
        end = max(reach.values(), default=pos)
        if end == pos:
            return None
        matched = [n for n, r in reach.items() if r == end and self.gens[n].regex.fullmatch(text, pos, end)]
        if not matched:
            return None
        top = max(self.priority[n] for n in matched)
        typed = frozenset(n for n in matched if self.priority[n] == top)
        if self.basic:
            typed &= frozenset(candidates)
        return (end, typed) if typed else None

    def typed_as(self, text: str, name: str) -> bool:
        """Whether `text`, as one whole lexeme, commits as terminal `name` (when the parser wants it).

        The lexeme is all of `text`, so only whole matches decide: `name` matches it and no
        terminal of higher priority that takes part does. Same answer as `lex`, without its
        partial-match search, which is slow on large patterns (Python's f-strings)."""
        if self.gens[name].term.lazy:  # a lazy terminal may end before the text does
            lexed = self.lex(text, 0, {name} | self.ignore)
            return lexed is not None and lexed[0] == len(text) and name in lexed[1]
        if self.gens[name].regex.fullmatch(text) is None:
            return False
        top = self.priority[name]
        others = self.gens if self.basic else {name} | self.ignore
        return not any(self.priority[n] > top and self.gens[n].regex.fullmatch(text) is not None for n in others)

    def _reach(self, name: str, text: str, pos: int) -> int:
        """The end of the longest prefix of text[pos:] that `name` could still extend to a match."""
        gen = self.gens[name]
        pattern = gen.viable
        low, high = pos, len(text) if gen.max_width is None else min(len(text), pos + gen.max_width)
        if pattern.fullmatch(text, pos, pos + 1, partial=True) is None:
            return pos  # most candidates die on the first character
        while low < high:  # viability is prefix-closed: binary search its end
            mid = (low + high + 1) // 2
            if pattern.fullmatch(text, pos, mid, partial=True) is not None:
                low = mid
            else:
                high = mid - 1
        if self.gens[name].term.lazy:
            for end in range(pos + 1, low + 1):
                if gen.regex.fullmatch(text, pos, end) is not None:
                    return end
        return low

    def _closure(
        self, items: set[tuple[int, int, int]], sets: list[dict[str, list[tuple[int, int, int]]]]
    ) -> set[tuple[int, int, int]]:
        k = len(sets)
        result = set(items)
        work = list(items)
        rules_of = self.shape.rules_of
        nullable = self.shape.nullable
        while work:
            r, d, o = work.pop()
            rhs = self.rhs[r]
            new: list[tuple[int, int, int]] = []
            if d < len(rhs):
                sym = rhs[d]
                if sym in rules_of:
                    new.extend((r2, 0, k) for r2 in rules_of[sym])
                    if sym in nullable:  # Aycock-Horspool: step over a nullable symbol at once
                        new.append((r, d + 1, o))
            else:
                lhs = self.lhs[r]
                if o < k:
                    new.extend((r2, d2 + 1, o2) for r2, d2, o2 in sets[o].get(lhs, ()))
                else:
                    new.extend(
                        (r2, d2 + 1, o2) for r2, d2, o2 in list(result) if d2 < len(self.rhs[r2]) and self.rhs[r2][d2] == lhs
                    )
            for item in new:
                if item not in result:
                    result.add(item)
                    work.append(item)
        return result


# -- the sampler ---------------------------------------------------------------------


# Seconds one partial match in `GrammarSampler._merges` may take.
_MERGE_TIMEOUT = 0.05


def _can_generate(gen: TerminalGenerator) -> bool:
    try:
        gen.generate(RandomChoices(0))
    except LimitExceeded:
        return False
    return True


def grammar_ir(grammar: Any) -> GrammarIR:
    """The IR of a `pda.Grammar` or of a `GrammarIR` itself."""
    if isinstance(grammar, GrammarIR):
        return grammar
    ir = getattr(grammar, "ir", None)
    if isinstance(ir, GrammarIR):
        return ir
    raise TypeError(f"expected a pda.Grammar or GrammarIR, got {type(grammar).__name__}")


class GrammarSampler:
    """Sentences and near-misses of one grammar (see the module docstring)."""

    def __init__(
        self,
        grammar: Any,
        *,
        max_depth: int = 40,
        max_lexemes: int = 60,
        tries: int = 50,
        verify: Callable[[str], bool] | None = None,
    ) -> None:
        """`verify` checks each joined sentence; by default the independent
        `ReferenceRecognizer` (slow on large grammars; pass the engine's
        `Grammar.accepts` for speed when the engine is not what is under test).
        The reference has no indenter, so a grammar with one (`ir.indent`) is
        verified by its own `accepts` unless `verify` is given."""
        self.ir = grammar_ir(grammar)
        self.indent = self.ir.indent
        produced = frozenset() if self.indent is None else frozenset({self.indent.indent, self.indent.dedent})
        dead = frozenset(
            t.name for t in self.ir.terminals if t.name not in produced and not _can_generate(TerminalGenerator(t))
        )
        self.shape = GrammarShape(self.ir, dead, produced)
        self.reference = ReferenceRecognizer(self.ir, self.shape)
        if verify is None and self.indent is not None:
            verify = getattr(grammar, "accepts", None)
            if verify is None:
                raise GrammarError(
                    "the reference recogniser has no indenter: sample an indented grammar from a pda.Grammar, "
                    "or pass verify="
                )
        self.verify = verify or self.reference.accepts
        self.gens = self.reference.gens
        self.max_depth = max_depth
        self.max_lexemes = max_lexemes
        self.tries = tries
        self.ignore = [name for name in self.ir.ignore if name in self.shape.terminals]

    # derivations

    def derive(self, choices: Choices) -> list[str]:
        """A terminal sequence derived from the start symbol within drawn budgets."""
        shape = self.shape
        least_depth = int(shape.height[self.ir.start])
        least_length = int(shape.length[self.ir.start])
        depth_budget = least_depth + choices.below(max(1, self.max_depth - least_depth + 1))
        length_budget = least_length + choices.below(max(1, self.max_lexemes - least_length + 1))
        out: list[str] = []
        pending = shape.length[self.ir.start]  # least lexemes still owed by the stack
        stack: list[tuple[str, int]] = [(self.ir.start, 0)]
        # Rules that derive nothing (`r: r r+ r` with a nullable r) owe no lexemes, so the
        # length budget cannot stop them: past this many expansions only least-height rules are used.
        expansions_left = 20 * (self.max_depth + self.max_lexemes)
        while stack:
            symbol, depth = stack.pop()
            if symbol in self.gens:
                out.append(symbol)
                pending -= 1
                continue
            rules = [i for i in shape.rules_of[symbol] if shape.rule_height[i] != float("inf")]
            base = len(out) + pending - shape.length[symbol]
            expansions_left -= 1
            feasible = [
                i
                for i in rules
                if depth + shape.rule_height[i] <= depth_budget and base + shape.rule_length[i] <= length_budget
            ] if expansions_left > 0 else []
            if not feasible:  # least height strictly decreases: always terminates
                least = min(shape.rule_height[i] for i in rules)
                feasible = [i for i in rules if shape.rule_height[i] == least]
            # Simplest first; a third of the time prefer the bigger half, so deep sentences occur too.
            if choices.below(3) < 2:
                rule = feasible[choices.below(len(feasible))]
            else:
                rule = feasible[len(feasible) - 1 - choices.below(max(1, len(feasible) // 2))]
            pending = base - len(out) + shape.rule_length[rule]
            stack.extend((s, depth + 1) for s in reversed(self.ir.rules[rule].rhs))
        return out

    def sample_lexemes(self, choices: Choices) -> list[Lexeme]:
        """A verified sentence as its lexemes (ignored text included, as lexemes of %ignore terminals)."""
        for _ in range(self.tries):
            joined = self._join(self._lexemes(self.derive(choices), choices), choices)
            if self.verify("".join(x.text for x in joined)):
                return joined
        raise LimitExceeded(
            f"no sampled sentence of {self.ir.source or 'the grammar'} passed the reference check in {self.tries} tries"
        )

    def _lexemes(self, terminals: list[str], choices: Choices) -> list[Lexeme]:
        """One string per derived terminal; with an indenter, its terminals become line structure."""
        if self.indent is None:
            return [Lexeme(t, self._generate(t, choices)) for t in terminals]
        config = self.indent
        unit = _INDENT_UNITS[choices.below(len(_INDENT_UNITS))]
        out: list[Lexeme] = []
        level = 0
        for i, name in enumerate(terminals):
            if name == config.indent:
                level += 1
            elif name == config.dedent:
                level = max(0, level - 1)
            elif name == config.newline:
                # The next line's indentation: the level after the _INDENT/_DEDENT run that follows.
                after = level
                j = i + 1
                while j < len(terminals) and terminals[j] in (config.indent, config.dedent):
                    after = after + 1 if terminals[j] == config.indent else max(0, after - 1)
                    j += 1
                last = j == len(terminals)
                out.append(Lexeme(name, self._line_break(choices, last) + ("" if last else unit * after)))
            else:
                out.append(Lexeme(name, self._generate(name, choices)))
        return out

    def _generate(self, name: str, choices: Choices) -> str:
        """A string of terminal `name`; under the basic lexer mode, one the lexer also types as `name`
        (an identifier that spells a keyword is the keyword there)."""
        text = self.gens[name].generate(choices)
        if self.reference.basic:
            for _ in range(8):
                if self.reference.typed_as(text, name):
                    break
                text = self.gens[name].generate(choices)
        return text

    def _line_break(self, choices: Choices, last: bool) -> str:
        """Mostly a bare line break; sometimes what else the newline terminal admits before the
        next line's indentation (comments, blank lines); at the end of the text sometimes nothing."""
        k = choices.below(10)
        if last and k == 9:
            return ""
        if k < 7:
            return "\n"
        text = self.gens[self.indent.newline].generate(choices)
        cut = text.rfind("\n") + 1  # drop the drawn indentation of the next line
        return text[:cut] if cut else text + "\n"

    def sample(self, choices: Choices) -> str:
        """A sentence of the grammar."""
        return "".join(x.text for x in self.sample_lexemes(choices))

    def samples(self, n: int, *, seed: int = 0) -> Iterator[str]:
        """`n` sentences, reproducible from `seed`."""
        choices = RandomChoices(seed)
        for _ in range(n):
            yield self.sample(choices)

    def _join(self, lexemes: list[Lexeme], choices: Choices) -> list[Lexeme]:
        """Lexemes with ignored text where the greedy lexer would merge neighbours (and sometimes elsewhere)."""
        out: list[Lexeme] = []
        for i, lexeme in enumerate(lexemes):
            if i == 0 and self.ignore and choices.below(20) == 19:
                out.extend(self._ignored("", lexeme.text, choices))
            out.append(lexeme)
            following = lexemes[i + 1].text if i + 1 < len(lexemes) else ""
            if self.ignore and ((following and self._merges(lexeme.text, following)) or choices.below(10) == 9):
                out.extend(self._ignored(lexeme.text, following, choices))
        return out

    def _merges(self, left: str, right: str) -> bool:
        """Whether some terminal could read on from `left` into `right`.

        A partial match of a large pattern (Python's f-strings) against a long lexeme can
        backtrack for minutes; one not decided within `_MERGE_TIMEOUT` counts as merging,
        which only puts ignored text where none was needed."""
        probe = left + right[0]
        for g in self.gens.values():
            if g.regex.fullmatch(probe, 0, 1, partial=True) is None:
                continue  # most terminals die on the first character
            try:
                if g.regex.fullmatch(probe, partial=True, timeout=_MERGE_TIMEOUT) is not None:
                    return True
            except TimeoutError:
                return True
        return False

    def _ignored(self, left: str, right: str, choices: Choices) -> list[Lexeme]:
        for _ in range(8):
            name = self.ignore[choices.below(len(self.ignore))]
            text = self.gens[name].generate(choices)
            if not (left and self._merges(left, text)) and not (right and self._merges(text, right)):
                return [Lexeme(name, text)]
        return []

    # near-misses

    def near_miss(self, choices: Choices) -> str:
        """A sampled sentence with one mutation: often, but not always, outside the language."""
        lexemes = self.sample_lexemes(choices)
        text = "".join(x.text for x in lexemes)
        kind = choices.below(8)
        n = len(lexemes)
        if kind == 0 and n:  # delete a lexeme
            i = choices.below(n)
            return "".join(x.text for j, x in enumerate(lexemes) if j != i)
        if kind == 1 and n:  # duplicate a lexeme
            i = choices.below(n)
            return "".join(x.text * (2 if j == i else 1) for j, x in enumerate(lexemes))
        if kind == 2 and n > 1:  # swap adjacent lexemes
            i = choices.below(n - 1)
            parts = [x.text for x in lexemes]
            parts[i], parts[i + 1] = parts[i + 1], parts[i]
            return "".join(parts)
        if kind == 3:  # insert a lexeme of a random terminal
            names = sorted(self.shape.terminals)
            extra = self.gens[names[choices.below(len(names))]].generate(choices)
            i = choices.below(n + 1)
            return "".join(x.text for x in lexemes[:i]) + extra + "".join(x.text for x in lexemes[i:])
        if kind == 4 and text:  # delete a character
            i = choices.below(len(text))
            return text[:i] + text[i + 1 :]
        if kind == 5:  # insert an edge character
            i = choices.below(len(text) + 1)
            return text[:i] + _EDGE[choices.below(len(_EDGE))] + text[i:]
        if kind == 6 and text:  # replace a character
            i = choices.below(len(text))
            return text[:i] + _POOL[choices.below(len(_POOL))] + text[i + 1 :]
        return text[: choices.below(len(text) + 1)]  # truncate


def sample_main(argv: list[str] | None = None) -> int:
    """`pda sample GRAMMAR -n N`: print sampled sentences (or near-misses), one JSON string
    per line with `--json`, else raw text separated by blank lines."""
    import json

    from pda.cli import GRAMMAR_HELP, add_grammar_options, command_parser, load_grammar, positive_int, run_command

    parser = command_parser("pda sample", "Print random sentences of a grammar.")
    parser.add_argument("grammar", help=GRAMMAR_HELP)
    parser.add_argument("-n", type=positive_int, default=10, help="how many (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--near-misses", action="store_true", help="print mutated sentences instead")
    parser.add_argument("--max-depth", type=positive_int, default=40, help="derivation depth budget (default 40)")
    parser.add_argument("--max-lexemes", type=positive_int, default=60, help="lexeme budget per sentence (default 60)")
    parser.add_argument("--json", action="store_true", help="one JSON-quoted string per line")
    add_grammar_options(parser)
    args = parser.parse_args(argv)

    def run() -> int:
        grammar = load_grammar(args.grammar, args)
        sampler = GrammarSampler(grammar, max_depth=args.max_depth, max_lexemes=args.max_lexemes)
        choices = RandomChoices(args.seed)
        for i in range(args.n):
            text = sampler.near_miss(choices) if args.near_misses else sampler.sample(choices)
            if args.json:
                print(json.dumps(text, ensure_ascii=False))
            else:
                print(("\n" if i else "") + text)
        return 0

    return run_command(parser.prog, run)


__all__ = [
    "Choices",
    "GrammarSampler",
    "GrammarShape",
    "Lexeme",
    "RandomChoices",
    "ReferenceRecognizer",
    "TerminalGenerator",
    "grammar_ir",
    "sample_main",
]
