"""Pattern sets through automata: intersection, complement and length bounds, kept as automata.

What `lexeme` cannot write directly (several patterns that must all match, patterns
that must not, a length bound across several variable pieces) is built here as a
Thompson NFA over code-point classes, determinised, multiplied with the others,
minimised, multiplied with a length counter and minimised again, and handed on as a
terminal automaton (`pda.grammar.ir.TerminalAutomaton`) whose edges are JSON units
between the quotes (`pattern_set_automaton`). `dfa_automaton` does the last step for
front ends that build their DFA themselves (`free_text`, raw code points).

Why automata and not regex text: a DFA's regex (state elimination) can be exponentially
longer than the DFA, and was re-parsed by the regex layer (a key set of WashingtonPost
wp_124 wrote 8,000 characters that took 47 ms to compile; `\\d+-[A-Fa-f0-9]*-[A-Fa-f0-9]{24}`
with 35+ code points passed 400,000). The lexer builds a terminal automaton's DFA at the
automaton's size.

Invariants: every automaton here is over one partition of the code points (classes);
a terminal automaton has one edge per pair of states (the union of the classes between
them, written as one unit regex), only states on a path from the start to acceptance,
and a deterministic numbering (the minimal DFA's blocks in breadth-first order), so equal
pattern sets give equal automata and the builder shares their terminal. Every
exploration is bounded (`MAX_PATTERN_DFA_STATES`) and raises `RegexError` past it.
`pattern_set_automaton` is memoised by its arguments (its automata are immutable), under the
byte budget `schema_patterns` (`lexeme.SCHEMA_PATTERNS_MAX_BYTES`): an object's key set asks for
the same one for every object that declares the same names and patterns.
"""

from __future__ import annotations

import bisect
import re
import re._constants as C
from collections.abc import Callable, Generator, Hashable, Sequence
from itertools import repeat
from operator import itemgetter
from typing import Any

import numpy as np

from pda.errors import RegexError
from pda.grammar.ecma_regex.json_units import ANY_STRING_BODY, unit_regex
from pda.grammar.ecma_regex.lexeme import (
    Renderer, anchored, expand_branches, inline_groups, top_branches, unsupported_construct,
)
from pda.grammar.ecma_regex.ranges import ANY, MAX_CP, SURROGATES, Ranges, complement, normalize, subtract
from pda.grammar.ecma_regex.to_python import ecma_to_python
from pda.grammar.ir import TerminalAutomaton
from pda.kernels.partition import coarsest_partition
from pda.kernels.subsets import NFAArrays
from pda.kernels.subsets import determinise as subsets_determinise
from pda.lru import budget_cache
from pda.regex.syntax import drive, parse_pattern

MAX_PATTERN_DFA_STATES = 10_000
"""Most states one exploration may reach (a pattern's DFA, the patterns' product, that product
times the length counter, before minimisation); its NFA may have 20 times as many. Measured on
the corpus's largest: `[aA][12].*[zZ]` with three more patterns and 10..90 code points is a
4,396-state automaton built in 0.12 s, whose 55,731-state byte DFA the lexer builds in 3.2 s;
`^(?:\\S+\\s+){0,9}\\S+$` with 0..120 code points, 1,941 states, 3.4 s for 72,262 byte states
(a class with many escaped spellings, as `\\S`, multiplies the byte states). Past it the pattern
set is refused (`{0,49}` there, with 0..500 code points); one below it may still pass the lexer's
own limit of byte states (`{0,19}` with 1..200: 6,321 states, over 200,000 byte states)."""

_pattern_sets = budget_cache("schema_patterns")  # registered by `lexeme`
_ABSENT = object()


class AutomatonTooLarge(Exception):
    """An automaton passed its limit of states."""


class _NFA:
    """A Thompson NFA over code-point sets, built from `re._parser` ASTs."""

    def __init__(self) -> None:
        self.eps: list[list[int]] = []
        self.edges: list[list[tuple[Ranges, int]]] = []
        self._labels: dict[Ranges, Ranges] = {}  # a class as parsed -> its edge label (`x{1,500}`: one class 500 times)

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
            label = self._labels.get(cs)
            if label is None:
                label = self._labels[cs] = subtract(normalize(cs), (SURROGATES,))
            a, b = self.state(), self.state()
            self.edges[a].append((label, b))
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
            copies = lo + (1 if hi is C.MAXREPEAT else hi - lo)
            blocks: list[tuple[int, int]] = []
            if copies:
                # The body once, then copies of its states (`x{1,500}`: its class is read once, not 500 times).
                first = len(self.eps)
                blocks.append((yield self._seq(r, list(sub))))
                blocks += self._copies(first, *blocks[0], copies - 1)
            for s, e in blocks[:lo]:
                self.eps[end].append(s)
                end = e
            last = self.state()
            if hi is C.MAXREPEAT:
                s, e = blocks[lo]
                self.eps[end].append(s)
                self.eps[e].append(s)
                self.eps[end].append(last)
                self.eps[e].append(last)
                return start, last
            for s, e in blocks[lo:]:
                self.eps[end].append(s)
                self.eps[end].append(last)
                end = e
            self.eps[end].append(last)
            return start, last
        raise r.fail(unsupported_construct(op, av))

    def _copies(self, first: int, s: int, e: int, n: int) -> list[tuple[int, int]]:
        """`n` copies of the states from `first` on (a body just built, linked only inside: its entry `s`
        and exit `e`), each at an offset; their (entry, exit) pairs."""
        eps, edges = self.eps[first:], self.edges[first:]
        size = len(eps)
        out = []
        for _ in range(n):
            off = len(self.eps) - first
            if len(self.eps) + size - 1 > 20 * MAX_PATTERN_DFA_STATES:  # as `state` would, one at a time
                raise AutomatonTooLarge
            self.eps += [[t + off for t in out_eps] for out_eps in eps]
            self.edges += [[(label, t + off) for label, t in out_edges] for out_edges in edges]
            out.append((s + off, e + off))
        return out


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
    labels = sorted({ranges for edges in nfa.edges for ranges, _ in edges})
    # Cut at the ends of each distinct label once (`x{1,500}` repeats one label 500 times).
    cuts = {0, MAX_CP + 1}
    for lab in labels:
        for lo, hi in lab:
            cuts.add(lo)
            cuts.add(hi + 1)
    bounds = sorted(cuts)
    pieces = [(a, b - 1) for a, b in zip(bounds, bounds[1:])]
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
                   limit: int | None = None) -> tuple[list[Hashable], list[list[int]]]:
    """Breadth-first over the states reachable from `start` by `step(state, class)`: the
    states in numbering order and the transition rows; `AutomatonTooLarge` past `limit`
    states (`MAX_PATTERN_DFA_STATES` as it is when called, unless given)."""
    classes = range(n_classes)
    return explore_rows(start, lambda cur: [step(cur, c) for c in classes], limit)


def explore_rows(start: Hashable, successors: Callable[[Hashable], list[Hashable]],
                 limit: int | None = None) -> tuple[list[Hashable], list[list[int]]]:
    """`explore_states` with a state's successors over every class asked for at once
    (`successors(state)`, in class order): the same states, numbering and rows."""
    if limit is None:
        limit = MAX_PATTERN_DFA_STATES
    index = {start: 0}
    order = [start]
    trans: list[list[int]] = []
    while len(trans) < len(order):
        row = []
        for nxt in successors(order[len(trans)]):
            j = index.get(nxt)
            if j is None:
                if len(order) >= limit:
                    raise AutomatonTooLarge
                j = index[nxt] = len(order)
                order.append(nxt)
            row.append(j)
        trans.append(row)
    return order, trans


def _determinise(nfa: _NFA, ends: Sequence[tuple[int, int]]) -> list[_DFA]:
    """The subset construction of the NFA from each `(start, end)` (accepting at `end`), by the compiled
    kernel (`pda.kernels.subsets`, the lexer's): complete DFAs, each with its dead state (no NFA state
    left) last, all over the classes of the whole NFA. The classes and the NFA's arrays are built once
    for all (a key set's patterns and names share one NFA: built per pattern, they cost the square of
    its size).

    The kernel names a DFA state by its closure's states with an edge or `end`, so two closures
    differing only in pass-through states are one state here; the states and numbering may differ
    from a search over whole closures, never the language, and what this module hands on is
    minimised and numbered breadth first from the start (`_minimise`), so it is the same."""
    classes, edges = _classes(nfa)
    flat = [e for out in edges for e in out]
    m = len(nfa.eps)

    def ptr(lengths: list[int]) -> np.ndarray:
        return np.concatenate(([0], np.cumsum(np.array(lengths, dtype=np.int64))))

    final_term = np.full(m, -1, dtype=np.int64)
    arrays = NFAArrays(
        eps_ptr=ptr([len(e) for e in nfa.eps]), eps_dst=np.array([t for e in nfa.eps for t in e], dtype=np.int64),
        edge_ptr=ptr([len(out) for out in edges]), atom_ptr=ptr([len(cs) for cs, _ in flat]),
        atoms=np.array([c for cs, _ in flat for c in cs], dtype=np.int64),
        edge_dst=np.array([t for _, t in flat], dtype=np.int64), final_term=final_term,
        owner=np.full(m, -1, dtype=np.int64), lazy=np.zeros(1, dtype=bool),
    )
    dfas = []
    for start, end in ends:
        final_term[end] = 0  # the arrays' own: only this pattern's end accepts
        try:
            found = subsets_determinise(arrays, start, len(classes), 1, MAX_PATTERN_DFA_STATES)
        finally:
            final_term[end] = -1
        if found is None:
            raise AutomatonTooLarge
        trans, accept = found
        dead = len(trans)
        table = np.where(trans < 0, dead, trans)
        rows = np.vstack([table, np.full((1, len(classes)), dead, dtype=np.int64)]).tolist()
        dfas.append(_DFA(classes, rows, [*accept[:, 0].tolist(), False]))
    return dfas


def _product(dfas: list[_DFA], wanted: list[bool], lo: int, hi: int | None) -> _DFA:
    """Strings each DFA accepts iff `wanted` says so, of lo..hi units (all on one partition)."""
    classes = dfas[0].classes
    cap = hi + 1 if hi is not None else lo

    def successors(cur: tuple[int, ...]) -> list[tuple[int, ...]]:
        return list(zip(*[d.trans[q] for d, q in zip(dfas, cur)], repeat(min(cur[-1] + 1, cap), len(classes))))

    order, trans = explore_rows(tuple([0] * len(dfas) + [0]), successors)
    accept = [all(d.accept[q] == w for d, q, w in zip(dfas, st, wanted))
              and st[-1] >= lo and (hi is None or st[-1] <= hi) for st in order]
    return _DFA(classes, trans, accept)


def _counted(d: _DFA, lo: int, hi: int | None) -> _DFA:
    """`_product([d], [True], lo, hi)`, the same states in the same numbering, a count at a time: below the cap
    a step from count c reaches count c + 1 only, so breadth first meets the states of one count in the order
    of their parents' rows (one dict keeps the first of each), and only the capped count is searched state by
    state. A pattern set with lengths 35..250 (o79409) has ~7,500 states here: ~20-40 ms as a search over
    tuples, a few ms by counts."""
    cap = hi + 1 if hi is not None else lo
    limit = MAX_PATTERN_DFA_STATES
    trans = d.trans
    rows: list[list[int]] = []
    level, first = [0], 0  # the DFA states of the current count, in numbering order; the id of the first
    counts = [0]  # per level, its count
    levels = [level]
    for _ in range(cap):
        following = list(dict.fromkeys(t for q in level for t in trans[q]))
        base = first + len(level)
        if base + len(following) > limit:
            raise AutomatonTooLarge
        index = dict(zip(following, range(base, base + len(following))))
        rows += [[index[t] for t in trans[q]] for q in level]
        level, first = following, base
        counts.append(counts[-1] + 1)
        levels.append(level)
    index = dict(zip(level, range(first, first + len(level))))
    i = 0
    while i < len(level):  # the capped count: its steps stay in it
        row = []
        for t in trans[level[i]]:
            j = index.get(t)
            if j is None:
                if first + len(level) >= limit:
                    raise AutomatonTooLarge
                j = index[t] = first + len(level)
                level.append(t)
            row.append(j)
        rows.append(row)
        i += 1
    accept = [d.accept[q] and c >= lo and (hi is None or c <= hi) for c, qs in zip(counts, levels) for q in qs]
    return _DFA(d.classes, rows, accept)


def _minimise(d: _DFA) -> _DFA:
    """The coarsest partition refining acceptance (the compiled Hopcroft, `pda.kernels.partition`);
    unreachable states are already absent. Blocks are numbered by their first state."""
    table = np.array(d.trans, dtype=np.int64).reshape(len(d.trans), len(d.classes))
    accept = np.array(d.accept, dtype=np.int64)
    block = coarsest_partition(table, accept)
    _, first, inverse = np.unique(block, return_index=True, return_inverse=True)
    # Block b is the b-th to begin (so the start state's block is 0); its first state stands for it.
    order = np.argsort(first)
    part = np.empty(len(first), dtype=np.int64)
    part[order] = np.arange(len(first))
    part = part[inverse.reshape(-1)]
    reps = first[order]
    return _DFA(d.classes, part[table[reps]].tolist(), accept[reps].astype(bool).tolist())


def _accepts_everything(d: _DFA) -> bool:
    """Whether a minimal DFA accepts every string: its start accepts and loops on every
    class of scalar values (only the surrogate class, never matched, may leave it)."""
    return d.accept[0] and all(t == 0 for c, t in enumerate(d.trans[0]) if subtract(d.classes[c], (SURROGATES,)))


def _terminal_automaton(d: _DFA, unit: Callable[[Ranges], str | None], quoted: bool) -> TerminalAutomaton | None:
    """A DFA's language as a terminal automaton: one edge per pair of states, labelled with `unit`
    of the classes between them (a pair whose classes have no unit has no edge), over the
    states on some path from the start to acceptance (the start first, then in the DFA's
    order). With `quoted`, the strings are between an opening and a closing `"`: a state
    before the DFA's start and one after its accepting states. None when the language is empty."""
    labels = _edge_labels(d, unit)
    succ: list[list[int]] = [[] for _ in d.trans]
    pred: list[list[int]] = [[] for _ in d.trans]
    for q, t in labels:
        succ[q].append(t)
        pred[t].append(q)
    keep = _closure({0}, succ) & _closure({q for q, a in enumerate(d.accept) if a}, pred)
    if 0 not in keep:
        return None
    kept = sorted(keep)
    first = 1 if quoted else 0
    ids = dict(zip(kept, range(first, first + len(kept))))
    edges = [(ids[q], label, ids[t]) for (q, t), label in labels.items() if q in ids and t in ids]
    accept = tuple(ids[q] for q in kept if d.accept[q])
    if not quoted:
        return TerminalAutomaton(len(keep), 0, accept, tuple(edges))
    final = len(keep) + 1
    edges = [(0, '"', 1), *edges, *((q, '"', final) for q in accept)]
    return TerminalAutomaton(final + 1, 0, (final,), tuple(edges))


def _edge_labels(d: _DFA, unit: Callable[[Ranges], str | None]) -> dict[tuple[int, int], str]:
    """Per pair of states (q, t) with a class from q to t, `unit` of those classes' union (pairs whose
    union has no unit left out), in the order of q, then of each target's first class. A row's shape
    (which classes share a target) is grouped once for every row of that shape, and `unit` called once
    per distinct set of classes: rows share them (o79409's 845 states and 3,070 edges have ~30 sets)."""
    texts: dict[tuple[int, ...], str | None] = {}
    shapes: dict[tuple[int, ...], list[tuple[int, str]]] = {}  # shape -> (first class, label) per target
    out: dict[tuple[int, int], str] = {}
    n = len(d.classes)
    # Classes that partition every code point (`_classes`' do): the union of most of them is the
    # complement of the few others, merged from far fewer ranges (a state of a key trie goes on
    # "any other character" over all but a few of the classes).
    partition = normalize([r for c in d.classes for r in c]) == ANY and sum(
        hi - lo + 1 for c in d.classes for lo, hi in c) == MAX_CP + 1
    for q, row in enumerate(d.trans):
        first: dict[int, int] = {}
        shape = tuple([first.setdefault(t, c) for c, t in enumerate(row)])  # each class's target's first class
        groups = shapes.get(shape)
        if groups is None:
            by_first: dict[int, list[int]] = {}
            for c, f in enumerate(shape):
                by_first.setdefault(f, []).append(c)
            groups = shapes[shape] = []
            for f, cs in by_first.items():
                key = tuple(cs)
                if key not in texts:
                    if partition and 2 * len(cs) > n:
                        held = set(cs)
                        ranges = complement([r for c in range(n) if c not in held for r in d.classes[c]])
                    else:
                        ranges = normalize([r for c in cs for r in d.classes[c]])
                    texts[key] = unit(ranges)
                text = texts[key]
                if text is not None:
                    groups.append((f, text))
        for f, text in groups:
            out[(q, row[f])] = text
    return out


def _closure(states: set[int], edges: list[list[int]]) -> set[int]:
    """`states` and every state reachable from them along `edges` (`edges[q]`: the states q has an edge to)."""
    seen, stack = set(states), list(states)
    while stack:
        for t in edges[stack.pop()]:
            if t not in seen:
                seen.add(t)
                stack.append(t)
    return seen


def dfa_automaton(classes: list[Ranges], trans: list[list[int]], accept: list[bool],
                  unit: Callable[[Ranges], str | None] = unit_regex) -> TerminalAutomaton | None:
    """The language of a complete DFA (start state 0, `trans[q][c]` for class `classes[c]`) as
    a terminal automaton, minimised first; None when it is empty. For front ends that build a
    regular language as an automaton (`free_text`). `unit` writes a class's edge label (JSON
    string units by default; `raw_class_regex` for the code points themselves)."""
    return _terminal_automaton(_minimise(_DFA(classes, trans, accept)), unit, quoted=False)


def pattern_set_automaton(positive: Sequence[str], negative: Sequence[str], *, min_len: int = 0,
                          max_len: int | None = None) -> TerminalAutomaton | str | None:
    """The JSON string lexemes (quotes included) whose values match every `positive` ECMA
    pattern, no `negative` one, and have min_len..max_len code points, as a terminal
    automaton whose edges are JSON units (`unit_regex`); None when there are none.

    Built through automata over code-point classes (determinised, multiplied with each
    other and with a length counter, minimised, trimmed). A pattern set that every string
    matches (`([a-z]+)?` unanchored) gives `ANY_STRING_BODY` whatever the lengths: the
    caller applies them (it counts long strings in chunks). Raises `RegexError` when an
    automaton, the length counter's product included, would exceed `MAX_PATTERN_DFA_STATES`.
    """
    # The state limit the explorations read is part of the key: a changed limit is never answered from the memo.
    key = (tuple(positive), tuple(negative), min_len, max_len, MAX_PATTERN_DFA_STATES)
    found = _pattern_sets.get(key, _ABSENT)
    if found is _ABSENT:
        found = _pattern_set_automaton(positive, negative, min_len, max_len)
        size = 100 + sum(map(len, key[0] + key[1])) + (
            64 * len(found.edges) + 2 * sum(map(len, map(itemgetter(1), found.edges)))
            if isinstance(found, TerminalAutomaton) else 0)
        _pattern_sets.put(key, found, size)
    return found


def _pattern_set_automaton(positive: Sequence[str], negative: Sequence[str], min_len: int,
                           max_len: int | None) -> TerminalAutomaton | str | None:
    nfa = _NFA()
    wanted = [True] * len(positive) + [False] * len(negative)
    try:
        ends = [_pattern_nfa(nfa, p) for p in [*positive, *negative]]
        # Every DFA is over the classes of the whole NFA, so they share one partition.
        dfas = _determinise(nfa, ends)
        free = _minimise(_product(dfas, wanted, 0, None))
        if _accepts_everything(free):
            return ANY_STRING_BODY
        if not any(free.accept) or (min_len, max_len) == (0, None):
            counted = free
        else:
            # The counter multiplies the minimal automaton, not the patterns' own ones.
            counted = _minimise(_counted(free, min_len, max_len))
    except AutomatonTooLarge:
        raise RegexError(f"patterns {[*positive, *negative]!r} with lengths {min_len}..{max_len}: the automaton "
                         f"has more than MAX_PATTERN_DFA_STATES = {MAX_PATTERN_DFA_STATES} states") from None
    return _terminal_automaton(counted, unit_regex, quoted=True)
