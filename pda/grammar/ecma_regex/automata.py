"""Pattern sets through automata: intersection, complement and length bounds, and back to a regex.

What `lexeme` cannot write directly (several patterns that must all match, patterns
that must not, a length bound across several variable pieces) is built here as a
Thompson NFA over code-point classes, determinised, multiplied with the others and
with a length counter, minimised, and written back as a regex over JSON units by
state elimination (`pattern_set_body`). `dfa_regex` does the last two steps for
front ends that build their automaton themselves (`free_text`). Every
construction is bounded (`MAX_PATTERN_DFA_STATES`, `MAX_PATTERN_REGEX`) and raises
`RegexError` past its bound.
"""

from __future__ import annotations

import bisect
import heapq
import re
import re._constants as C
from collections.abc import Callable, Generator, Hashable
from typing import Any

import numpy as np

from pda.errors import RegexError
from pda.grammar.ecma_regex.json_units import ANY_STRING_BODY, ANY_UNIT, unit_regex
from pda.grammar.ecma_regex.lexeme import (
    PatternInfo, Renderer, anchored, expand_branches, inline_groups, top_branches, unsupported_construct,
)
from pda.grammar.ecma_regex.ranges import MAX_CP, SURROGATES, Ranges, normalize, subtract
from pda.grammar.ecma_regex.to_python import ecma_to_python
from pda.kernels.partition import coarsest_partition
from pda.regex.syntax import drive, parse_pattern

MAX_PATTERN_DFA_STATES = 4000
"""Largest DFA (after products with other patterns and a length counter) turned back into a regex."""

MAX_PATTERN_REGEX = 400_000
"""Longest regex text the state elimination may produce before the construction gives up."""


class AutomatonTooLarge(Exception):
    """An automaton or its regex passed its limit (states, or characters of regex)."""


class _NFA:
    """A Thompson NFA over code-point sets, built from `re._parser` ASTs."""

    def __init__(self) -> None:
        self.eps: list[list[int]] = []
        self.edges: list[list[tuple[Ranges, int]]] = []

    def state(self) -> int:
        if len(self.eps) > 20 * MAX_PATTERN_DFA_STATES:
            raise AutomatonTooLarge
        self.eps.append([])
        self.edges.append([])
        return len(self.eps) - 1

    def seq(self, r: Renderer, items: list) -> tuple[int, int]:
        return drive(self._seq(r, items))

    # `_seq`/`_node` are generators run by `drive` (no recursion, whatever the nesting).
    def _seq(self, r: Renderer, items: list) -> Generator[Any, Any, tuple[int, int]]:
        start = end = self.state()
        for op, av in items:
            a, b = yield self._node(r, op, av)
            self.eps[end].append(a)
            end = b
        return start, end

    def _node(self, r: Renderer, op: object, av: Any) -> Generator[Any, Any, tuple[int, int]]:
        cs = r.charset(op, av)
        if cs is not None:
            a, b = self.state(), self.state()
            self.edges[a].append((subtract(normalize(cs), (SURROGATES,)), b))
            return a, b
        if op is C.SUBPATTERN:
            _group, add_flags, del_flags, sub = av  # type: ignore[misc]
            with r.group_flags(add_flags, del_flags):
                return (yield self._seq(r, list(sub)))
        if op is C.BRANCH:
            a, b = self.state(), self.state()
            for alt in av[1]:
                s, e = yield self._seq(r, list(alt))
                self.eps[a].append(s)
                self.eps[e].append(b)
            return a, b
        if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            lo, hi, sub = av
            start = end = self.state()
            for _ in range(lo):
                s, e = yield self._seq(r, list(sub))
                self.eps[end].append(s)
                end = e
            if hi is C.MAXREPEAT:
                s, e = yield self._seq(r, list(sub))
                self.eps[end].append(s)
                self.eps[e].append(s)
                last = self.state()
                self.eps[end].append(last)
                self.eps[e].append(last)
                return start, last
            last = self.state()
            for _ in range(hi - lo):
                s, e = yield self._seq(r, list(sub))
                self.eps[end].append(s)
                self.eps[end].append(last)
                end = e
            self.eps[end].append(last)
            return start, last
        raise r.fail(unsupported_construct(op, av))


def _pattern_nfa(nfa: _NFA, pattern: str) -> tuple[int, int]:
    """NFA states (start, end) of the strings an ECMA `pattern` matches (search semantics)."""
    python = ecma_to_python(pattern)
    try:
        items = list(parse_pattern(python))
    except re.error as exc:
        raise RegexError(f"pattern {pattern!r} is not a valid regex: {exc}") from None
    r = Renderer(pattern)
    any_star = [(C.MAX_REPEAT, (0, C.MAXREPEAT, [(C.IN, [(C.RANGE, (0, MAX_CP))])]))]
    start, end = nfa.state(), nfa.state()
    for branch in top_branches(items):
        for seq in expand_branches(inline_groups(branch)):
            body, at_start, at_end = anchored(seq if seq is not None else branch)
            s, e = nfa.seq(r, ([] if at_start else any_star) + body + ([] if at_end else any_star))
            nfa.eps[start].append(s)
            nfa.eps[e].append(end)
    return start, end


class _DFA:
    """A complete DFA over classes of code points (`classes[c]` is class c's ranges)."""

    def __init__(self, classes: list[Ranges], trans: list[list[int]], accept: list[bool]) -> None:
        self.classes, self.trans, self.accept = classes, trans, accept


def _classes(nfa: _NFA) -> tuple[list[Ranges], list[list[tuple[list[int], int]]]]:
    """The coarsest partition of the code points that every edge label is a union of."""
    cuts = {0, MAX_CP + 1}
    for edges in nfa.edges:
        for ranges, _ in edges:
            for lo, hi in ranges:
                cuts |= {lo, hi + 1}
    bounds = sorted(cuts)
    pieces = [(a, b - 1) for a, b in zip(bounds, bounds[1:])]
    labels = sorted({ranges for edges in nfa.edges for ranges, _ in edges})
    # A piece lies wholly inside or outside each range (every range end is a cut), so its
    # signature, the labels that hold it as a bitmask, is set range by range over the pieces' ids.
    held = [0] * len(pieces)
    for i, lab in enumerate(labels):
        bit = 1 << i
        for lo, hi in lab:
            for p in range(bisect.bisect_left(bounds, lo), bisect.bisect_left(bounds, hi + 1)):
                held[p] |= bit
    sig: dict[int, list[tuple[int, int]]] = {}
    for piece, key in zip(pieces, held):
        sig.setdefault(key, []).append(piece)
    keys = list(sig)
    classes = [normalize(sig[k]) for k in keys]
    label_classes = {lab: [c for c, k in enumerate(keys) if k >> i & 1] for i, lab in enumerate(labels)}
    edges = [[(label_classes[ranges], dst) for ranges, dst in out] for out in nfa.edges]
    return classes, edges


def explore_states(start: Hashable, n_classes: int, step: Callable[[Hashable, int], Hashable],
                   limit: int = MAX_PATTERN_DFA_STATES) -> tuple[list[Hashable], list[list[int]]]:
    """Breadth-first over the states reachable from `start` by `step(state, class)`: the
    states in numbering order and the transition rows; `AutomatonTooLarge` past `limit` states."""
    index = {start: 0}
    order = [start]
    trans: list[list[int]] = []
    while len(trans) < len(order):
        cur = order[len(trans)]
        row = []
        for c in range(n_classes):
            nxt = step(cur, c)
            j = index.get(nxt)
            if j is None:
                if len(order) >= limit:
                    raise AutomatonTooLarge
                j = index[nxt] = len(order)
                order.append(nxt)
            row.append(j)
        trans.append(row)
    return order, trans


def _determinise(nfa: _NFA, start: int, end: int) -> _DFA:
    classes, edges = _classes(nfa)

    def closure(states: set[int]) -> frozenset[int]:
        stack, seen = list(states), set(states)
        while stack:
            for t in nfa.eps[stack.pop()]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        return frozenset(seen)

    # Per NFA state, its targets by class; and the closure of each move set met, memoised (many
    # (state, class) pairs move to the same set, the empty one most of all).
    moves: list[dict[int, list[int]]] = []
    for out in edges:
        by_class: dict[int, list[int]] = {}
        for cs, dst in out:
            for c in cs:
                by_class.setdefault(c, []).append(dst)
        moves.append(by_class)
    closures: dict[frozenset[int], frozenset[int]] = {}

    def step(cur: frozenset[int], c: int) -> frozenset[int]:
        moved = frozenset(dst for s in cur for dst in moves[s].get(c, ()))
        found = closures.get(moved)
        if found is None:
            found = closures[moved] = closure(moved)
        return found

    order, trans = explore_states(closure({start}), len(classes), step)
    return _DFA(classes, trans, [end in st for st in order])


def _product(dfas: list[_DFA], wanted: list[bool], lo: int, hi: int | None) -> _DFA:
    """Strings each DFA accepts iff `wanted` says so, of lo..hi units (all on one partition)."""
    classes = dfas[0].classes
    cap = hi + 1 if hi is not None else lo
    order, trans = explore_states(tuple([0] * len(dfas) + [0]), len(classes),
                            lambda cur, c: tuple([d.trans[q][c] for d, q in zip(dfas, cur)] + [min(cur[-1] + 1, cap)]))
    accept = [all(d.accept[q] == w for d, q, w in zip(dfas, st, wanted))
              and st[-1] >= lo and (hi is None or st[-1] <= hi) for st in order]
    return _DFA(classes, trans, accept)


def _minimise(d: _DFA) -> _DFA:
    """The coarsest partition refining acceptance (the compiled Hopcroft, `pda.kernels.partition`);
    unreachable states are already absent. Blocks are numbered by their first state."""
    table = np.array(d.trans, dtype=np.int64).reshape(len(d.trans), len(d.classes))
    block = coarsest_partition(table, np.array(d.accept, dtype=np.int64))
    _, first, inverse = np.unique(block, return_index=True, return_inverse=True)
    part = np.argsort(np.argsort(first))[inverse.reshape(-1)].tolist()
    n = len(set(part))
    trans = [[0] * len(d.classes) for _ in range(n)]
    accept = [False] * n
    for q in range(len(d.trans)):
        trans[part[q]] = [part[t] for t in d.trans[q]]
        accept[part[q]] = d.accept[q]
    # Renumber so the start state (old 0) stays 0.
    perm = {part[0]: 0}
    for q in range(n):
        perm.setdefault(q, len(perm))
    out = [[0] * len(d.classes) for _ in range(n)]
    acc = [False] * n
    for q in range(n):
        out[perm[q]] = [perm[t] for t in trans[q]]
        acc[perm[q]] = accept[q]
    return _DFA(d.classes, out, acc)


def _to_regex(d: _DFA, limit: int = MAX_PATTERN_REGEX,
              unit: Callable[[Ranges], str | None] = unit_regex) -> PatternInfo | None:
    """The DFA's language as a lexeme-body regex over JSON units (state elimination);
    `AutomatonTooLarge` once an entry passes `limit` characters. `unit` writes one class
    of code points (JSON string units by default)."""
    n = len(d.trans)
    # Live states: those from which an accepting state is reachable.
    live = {q for q in range(n) if d.accept[q]}
    changed = True
    while changed:
        changed = False
        for q in range(n):
            if q not in live and any(t in live for t in d.trans[q]):
                live.add(q)
                changed = True
    if 0 not in live:
        return None
    # Length range over live states (None = unbounded: a live cycle).
    lo = _shortest(d, live)
    hi = _longest(d, live)
    S, F = n, n + 1
    R: dict[int, dict[int, str]] = {q: {} for q in range(n + 2)}
    for q in live:
        by_target: dict[int, list[tuple[int, int]]] = {}
        for c, t in enumerate(d.trans[q]):
            if t in live:
                by_target.setdefault(t, []).extend(d.classes[c])
        for t, ranges in by_target.items():
            u = unit(normalize(ranges))
            if u is not None:
                R[q][t] = u
        if d.accept[q]:
            R[q][F] = ""
    R[S][0] = ""
    incoming: dict[int, set[int]] = {q: set() for q in range(n + 2)}
    for i, outs in R.items():
        for j in outs:
            incoming[j].add(i)
    # Eliminate the state of least (incoming x outgoing) first: a heap of (cost, state), an
    # entry stale once its state is gone or its cost changed (each elimination changes the
    # costs of its neighbours, which are pushed again).
    def cost(x: int) -> int:
        return (len(incoming[x]) - (x in incoming[x])) * len(R[x])

    pending = set(live)
    heap = [(cost(x), x) for x in pending]
    heapq.heapify(heap)
    while pending:
        c, k = heapq.heappop(heap)
        if k not in pending or c != cost(k):
            continue
        pending.discard(k)
        loop = R[k].pop(k, None)
        incoming[k].discard(k)
        star = f"(?:{loop})*" if loop else ""
        outs = R.pop(k)
        for j in outs:
            incoming[j].discard(k)
        incoming_k = incoming.pop(k)
        for i in incoming_k:
            into = R[i].pop(k)
            for j, out in outs.items():
                text = into + star + out
                prev = R[i].get(j)
                if prev is not None and prev != text:
                    text = f"(?:{prev}|{text})"
                if len(text) > limit:
                    raise AutomatonTooLarge
                # Every entry is safe to concatenate (a unit, a group, or a concatenation of those).
                R[i][j] = text
                incoming[j].add(i)
        for x in {*outs, *incoming_k} & pending:
            heapq.heappush(heap, (cost(x), x))
    body = R[S].get(F)
    return None if body is None else PatternInfo(body, lo, hi)


def _shortest(d: _DFA, live: set[int]) -> int:
    dist = {0: 0}
    frontier = [0]
    while frontier:
        nxt = []
        for q in frontier:
            if d.accept[q]:
                return dist[q]
            for t in d.trans[q]:
                if t in live and t not in dist:
                    dist[t] = dist[q] + 1
                    nxt.append(t)
        frontier = nxt
    return 0


def _longest(d: _DFA, live: set[int]) -> int | None:
    """Longest accepted length, or None when a live cycle makes it unbounded."""
    memo: dict[int, int | None] = {}
    on_path: set[int] = set()
    order: list[tuple[int, int]] = [(0, 0)]
    while order:
        q, i = order.pop()
        if i == 0:
            on_path.add(q)
        succ = sorted({t for t in d.trans[q] if t in live})
        if i < len(succ):
            order.append((q, i + 1))
            t = succ[i]
            if t in on_path:
                return None
            if t not in memo:
                order.append((t, 0))
            continue
        on_path.discard(q)
        best = 0 if d.accept[q] else -1
        for t in succ:
            m = memo.get(t)
            if m is None:
                return None
            if m >= 0:
                best = max(best, m + 1)
        memo[q] = best
    return memo.get(0)


def _accepts_everything(d: _DFA) -> bool:
    """Whether a minimal DFA accepts every string: its start accepts and loops on every
    class of scalar values (only the surrogate class, never matched, may leave it)."""
    return d.accept[0] and all(t == 0 for c, t in enumerate(d.trans[0]) if subtract(d.classes[c], (SURROGATES,)))


def dfa_regex(classes: list[Ranges], trans: list[list[int]], accept: list[bool], limit: int,
              unit: Callable[[Ranges], str | None] = unit_regex) -> str | None:
    """The language of a complete DFA (start state 0, `trans[q][c]` for class `classes[c]`)
    as one regex, minimised first; None when it is empty. For front ends that build a
    regular language as an automaton (`free_text`); `RegexError` when the regex would pass
    `limit` characters. `unit` writes a class (JSON string units by default;
    `raw_class_regex` for the code points themselves)."""
    try:
        info = _to_regex(_minimise(_DFA(classes, trans, accept)), limit, unit)
    except AutomatonTooLarge:
        raise RegexError(f"the automaton's regex is longer than {limit} characters") from None
    return None if info is None else info.body


def pattern_set_body(positive: list[str], negative: list[str], *, min_len: int = 0,
                     max_len: int | None = None) -> PatternInfo | None:
    """Lexeme-body regex for strings that match every `positive` ECMA pattern, no `negative`
    one, and have min_len..max_len code points; None when there are none.

    Built through automata over code-point classes (determinised, multiplied,
    minimised) and back to a regex by state elimination. When the length counter
    makes that too large, the lengths become a look-ahead in front of the
    patterns' own regex (`(?=(?:unit){m,n}")`, exact: the closing quote is the
    first raw quote), which pda's DFA builder intersects. A pattern set that
    every string matches (`([a-z]+)?` unanchored) gives `ANY_STRING_BODY`
    whatever the lengths: the caller applies them (it counts long strings in
    chunks). Raises `RegexError` when the automaton or the regex would exceed
    `MAX_PATTERN_DFA_STATES` or `MAX_PATTERN_REGEX`.
    """
    nfa = _NFA()
    wanted = [True] * len(positive) + [False] * len(negative)
    try:
        ends = [_pattern_nfa(nfa, p) for p in [*positive, *negative]]
        # Every DFA is over the classes of the whole NFA, so they share one partition.
        dfas = [_determinise(nfa, s, e) for s, e in ends]
        free = _minimise(_product(dfas, wanted, 0, None))
        if _accepts_everything(free):
            return PatternInfo(ANY_STRING_BODY, 0, None)
        if (min_len, max_len) == (0, None):
            return _to_regex(free)
        try:
            return _to_regex(_minimise(_product(dfas, wanted, min_len, max_len)))
        except AutomatonTooLarge:
            info = _to_regex(free)
    except AutomatonTooLarge:
        raise RegexError(f"patterns {[*positive, *negative]!r} with lengths {min_len}..{max_len}: "
                         "the automaton is too large to write as one terminal") from None
    if info is None:
        return None
    count = f"{{{min_len},}}" if max_len is None else f"{{{min_len},{max_len}}}"
    lo = max(min_len, info.min_len)
    hi = info.max_len if max_len is None else max_len if info.max_len is None else min(max_len, info.max_len)
    return PatternInfo(f'(?=(?:{ANY_UNIT}){count}")' + info.body, lo, hi)
