"""Deterministic composition: the byte DFA of a pattern from its parts' DFAs, without the NFA.

Through the NFA every terminal pays its own subset construction, and a UTF-8 spelling
per state: a counted string such as `"C{3,255}"` (JSON Schema's `maxLength`) costs 255
copies of C's NFA, and each of a schema's strings, key exclusions and look-aheads
rebuilds the JSON string character C from its Unicode classes. Yet most of these
patterns are sequences, repeats and look-aheads of parts that no byte can read two
ways, and those compose directly on the parts' DFAs (each part's DFA memoised by the
caller, so C is built once per process):

* `concat(A, B)`: when, at every accepting state of A, the bytes A reads there and
  the bytes B's start reads are disjoint, the accepting states of A take B's start
  edges as well (and accept where B's start does), and B's start itself goes (a
  start that B re-enters is first split off as a copy, `_fresh_start`). The result
  is a DFA for A·B.
* `repeat(X, lo, hi)`: X{lo,hi} is the chain X^lo · (X · (X · ...)?)? of copies of
  X, each copy's accepting states taking the next copy's start edges; X{lo,} loops
  the last copy's accepting states back onto its own start edges. It needs X's
  start not to accept, and X's accepting states to read no byte that X's start
  reads (a JSON string character, a digit: prefix codes). A sequence writes a
  repeat straight after what comes before it, A · X{lo,hi} in one compiled pass
  (`pda.kernels.repeat.extended`: a JSON string of `maxLength` 64 is 64 copies of
  the JSON string character's 25 states), never the chain and then its copy; and the
  part after the repeat (the closing quote) into rows that pass leaves free after it,
  never the whole table copied to append it (`_concat_into`).
* `guard_product(body, look, negate)`: a look-ahead `(?=look)body` (or `(?!look)body`) is
  body ∩ look·Σ* (or body minus it): the product of the two DFAs in which the look's
  accepting states absorb (a prefix matched) and so does its dead state (none can).
* `union(parts)`: A|B|... as the product of the parts' DFAs, each part alone from
  where the others are dead (`pda.kernels.product.explore`). The caller takes it
  where every part's DFA is at hand already (JSON Schema's `anyOf` of a string and a
  number, whose two halves are terminals of earlier schemas): composing small ASCII
  parts one by one costs more than their NFA does.
* A finite set of ASCII strings (JSON Schema's keys in a look-ahead) is a trie, and
  an ASCII character class two states: neither needs the NFA.
* `automaton(graph)`: a terminal given as an automaton (`pda.regex.automaton.Graph`, a JSON
  Schema's pattern set with its length bounds: hundreds of states, thousands of edges, each
  a JSON string unit) whose labels out of each state are a prefix code telling its edges
  apart (no label's word is a prefix of, or equal to, another's or its own longer word).
  Then each state's edges are one DFA, the product of its labels' DFAs (`_dispatch`,
  memoised per set of labels), whose words each end at one label's accepting state; the
  terminal's DFA is one copy of it per state, each accepting state of label i leading on
  to the copy of edge i's target state. The NFA path copies every edge's fragment and
  determinises them all (o79409's 845-state automaton: ~100 ms of a 130 ms compile).

Composition keeps minimality (`Classed.minimal_acyclic`): when A and B are minimal, acyclic
and trimmed (every state reachable and reaching an accepting one), so is A·B. Its states
of B keep their languages, all distinct; a state a of A has a longest word at least as long
as B's longest (it reads on to an accepting state of A, then a word of B), longer than any
state of B but B's start (merged away) has, so no state of A has a B state's language; and
equal languages of two states of A are equal in A (a relation on A's states that relates
states with equal languages in A·B is a bisimulation of A: both accept in A or neither, as
an accepting state of A reads B's start edges, or accepts by B's empty word, where the
other cannot; on a byte, both step within A, or both die, or both read the same B's start
edge). A bounded X{lo,hi} is X · (X · ...) so, and the caller then only finishes the tables
(`pda.kernels.partition.minimal_dfa(..., settled=True)`): the partition of a counted string
cost as much as its composition. An unbounded repeat, a look-ahead, a union, a trie (not
minimal: `ab|cb`) or a terminal automaton is not known minimal, and is minimised in full.

Wherever a condition fails the composition gives None and the caller builds the
pattern through the NFA as usual, so the language is always the pattern's own (the
caller minimises the result). Only patterns `worth_composing` are composed; a repeat
whose chain would exceed four times `max_states` states, or a sequence over
`max_states`, gives None too (the usual path then reports the limit).

Automata here are partial DFAs: (trans int32 [n, columns] with -1 for dead, accept
bool [n]), start 0. `concat`, `repeat` and `guard_product` take operands over the same
columns (the NFA path runs `guard_product` over its atoms). `composed` works over byte
classes (`Classed`: each part carries the map from bytes to its columns, and two parts are
brought onto their common refinement before they meet), so a counted JSON string is
built over its ~20 classes instead of 256 byte columns: about a tenth of the work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from pda.errors import LimitExceeded
from pda.kernels import product as product_kernel
from pda.kernels.partition import coaccessible, minimal_dfa
from pda.kernels.product import TerminalArrays, explore
from pda.kernels.repeat import extended
from pda.kernels.trie import string_trie
from pda.regex.automaton import Graph
from pda.regex.syntax import Alt, Chars, Guard, Node, Repeat, Seq
from pda.regex.utf8 import distinct_rows

# A counted repeat this large (its lower or upper count) is worth composing.
MIN_COMPOSED_REPEAT = 16
# Sequences, repeats and look-aheads nested deeper than this are built the usual way (no recursion here).
MAX_COMPOSED_DEPTH = 40
# A finite set of ASCII strings with at most this many bytes in all is built as a trie.
MAX_TRIE_BYTES = 1 << 16
# A terminal automaton is composed from its labels' DFAs when it has at least this many edges per distinct label.
AUTOMATON_EDGES_PER_LABEL = 16
# A part whose longest path is longer than this is not checked for `Classed.minimal_acyclic` (`settled`).
SETTLED_MAX_DEPTH = 64

Partial = tuple[np.ndarray, np.ndarray]


class Classed(NamedTuple):
    """A partial DFA over byte classes: `trans` int32 [n, k] (-1 dead), `accept` bool [n], and
    `classes` int32 [256], the column each byte reads (every column is read by some byte).
    `minimal_acyclic`: known to be minimal, acyclic and trimmed, every state reachable and
    reaching an accepting one (see the module docstring); False: not known."""

    trans: np.ndarray
    accept: np.ndarray
    classes: np.ndarray
    minimal_acyclic: bool = False

    @classmethod
    def of_bytes(cls, trans: np.ndarray, accept: np.ndarray) -> "Classed":
        """A partial DFA over the 256 byte columns, its equal columns merged."""
        first, inverse = distinct_rows(trans.T)
        return cls(np.ascontiguousarray(trans[:, first]), accept, inverse.astype(np.int32))


def settled(part: Classed) -> Classed:
    """`part` (a partial DFA every state of which is reachable from its start) marked `minimal_acyclic` when it
    is: a part made elsewhere (by the NFA path: the JSON string character), checked once as it is memoised. A
    path of over `SETTLED_MAX_DEPTH` states is taken for a cycle (the check peels sinks a level a pass)."""
    trans, accept = part.trans, part.accept
    if not accept.any():
        return part._replace(minimal_acyclic=False)
    alive = np.ones(len(trans), dtype=bool)
    for _ in range(SETTLED_MAX_DEPTH):  # acyclic: peeling off the states that step to none alive empties it
        sinks = alive & ~np.where(trans >= 0, alive[np.maximum(trans, 0)], False).any(axis=1)
        alive &= ~sinks
        if not alive.any() or not sinks.any():
            break
    n = len(minimal_dfa(trans, accept, part.classes)[2]) - 1  # its minimal DFA's states but dead
    return part._replace(minimal_acyclic=not alive.any() and n == len(trans))


def _aligned(a: Classed, b: Classed) -> tuple[Classed, Classed]:
    """`a` and `b` over the same columns: their classes' common refinement (each byte's pair of columns)."""
    if a.classes is b.classes or np.array_equal(a.classes, b.classes):
        return a, b
    # b's classes coarser (each of a's columns reads one of b's): a keeps its columns; or the other way round
    picked = b.classes[_representatives(a.classes)]
    if np.array_equal(picked[a.classes], b.classes):
        return a, b._replace(trans=_columns(b.trans, picked), classes=a.classes)
    picked = a.classes[_representatives(b.classes)]
    if np.array_equal(picked[b.classes], a.classes):
        return a._replace(trans=_columns(a.trans, picked), classes=b.classes), b
    pairs = a.classes.astype(np.int64) * b.trans.shape[1] + b.classes
    _, first, classes = np.unique(pairs, return_index=True, return_inverse=True)
    classes = classes.reshape(-1).astype(np.int32)
    return (a._replace(trans=_columns(a.trans, a.classes[first]), classes=classes),
            b._replace(trans=_columns(b.trans, b.classes[first]), classes=classes))


def _columns(trans: np.ndarray, picked: np.ndarray) -> np.ndarray:
    """`trans[:, picked]`, contiguous; by `take`, which on a large table costs a fraction of the indexing."""
    return np.take(trans, picked, axis=1)


def _representatives(classes: np.ndarray) -> np.ndarray:
    """One byte per column of `classes` (the lowest), in column order."""
    order = np.argsort(classes, kind="stable")  # bytes by column, ascending within one
    return order[np.searchsorted(classes[order], np.arange(int(classes.max()) + 1))]


def worth_composing(node: Node | Graph) -> bool:
    """Whether `node` is a terminal automaton, or a sequence, repeat or look-ahead holding a look-ahead, a
    counted repeat of `MIN_COMPOSED_REPEAT` or more, or a repeat of a part that reads beyond ASCII (the JSON
    string character, whose DFA the caller memoises).

    Only through at most `MAX_COMPOSED_DEPTH` nested sequences, repeats and look-aheads (an
    explicit stack: patterns nest thousands deep), so that `composed` recurses no deeper.
    """
    if isinstance(node, Graph):
        return True
    stack = [(node, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_COMPOSED_DEPTH:
            return False
        if isinstance(item, Guard):
            return True
        if isinstance(item, Repeat):
            if max(item.lo, item.hi or 0) >= MIN_COMPOSED_REPEAT or _beyond_ascii(item.item):
                return True
            stack.append((item.item, depth + 1))
        elif isinstance(item, Seq):
            stack.extend((x, depth + 1) for x in item.items)
    return False


def _beyond_ascii(node: Node) -> bool:
    """Whether a character set directly under `node` (through alternations and sequences, a few levels) reads a code point above 127."""
    stack = [(node, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Chars):
            if item.chars and item.chars[-1][1] > 127:
                return True
        elif isinstance(item, (Alt, Seq)) and depth < 3:
            stack.extend((x, depth + 1) for x in item.items)
    return False


def composed(node: Node | Graph, leaf: Callable[[Node], Classed], max_states: int) -> Classed | None:
    """The partial DFA of `node` over byte classes by composition, or None where a part cannot be composed."""
    if isinstance(node, Graph):
        return automaton(node, leaf, max_states)
    direct = ascii_dfa(node)
    if direct is not None:
        return direct
    if isinstance(node, Seq) and worth_composing(node):
        out: Classed | None = None
        items, i = node.items, 0
        while i < len(items):
            item = items[i]
            i += 1
            if isinstance(item, Repeat) and worth_composing(item):  # written straight after `out`
                # and the part after it (a counted string's closing quote) straight after that
                suffix = None
                if i < len(items) and not (isinstance(items[i], Repeat) and worth_composing(items[i])):
                    suffix = composed(items[i], leaf, max_states)
                    if suffix is None:
                        return None
                    i += 1
                joined = _repeated(out, item, leaf, max_states, suffix)
            else:
                part = composed(item, leaf, max_states)
                if part is None:
                    return None
                if out is None:
                    out = part
                    continue
                a, b = _aligned(out, part)
                pair = concat(a[:2], b[:2])
                joined = None if pair is None else Classed(*pair, a.classes, a.minimal_acyclic and b.minimal_acyclic)
            if joined is None or len(joined.trans) > max_states:
                return None
            out = joined
        return out
    if isinstance(node, Repeat) and worth_composing(node):
        return _repeated(None, node, leaf, max_states)
    if isinstance(node, Guard):
        body = composed(node.body, leaf, max_states)
        look = composed(node.look, leaf, max_states) if body is not None else None
        if look is None:
            return None
        body, look = _aligned(body, look)
        try:
            return Classed(*guard_product(body[:2], look[:2], node.negate, max_states), body.classes)
        except LimitExceeded:  # over bytes the product has more states than over atoms: the NFA path decides
            return None
    return leaf(node)


def _repeated(prefix: Classed | None, node: Repeat, leaf: Callable[[Node], Classed], max_states: int,
              suffix: Classed | None = None) -> Classed | None:
    """prefix · node · suffix (a counted repeat; no prefix, no suffix: the empty string) by
    `pda.kernels.repeat.extended`, or None where it does not apply or its chain would pass four times
    `max_states` states. A suffix over the repeat's columns or coarser ones is written in the rows the repeat
    leaves free after itself (`_concat_into`), any other concatenated after (`concat`): the same table."""
    item = composed(node.item, leaf, max_states)
    if item is None or len(item.trans) * max(node.lo, node.hi or 1) > 4 * max_states:
        return None
    if prefix is not None:
        prefix, item = _aligned(prefix, item)
    minimal = (prefix is None or prefix.minimal_acyclic) and item.minimal_acyclic and node.hi is not None
    after = None
    if suffix is not None:
        kept, aligned = _aligned(item, suffix)
        if kept is item:  # the suffix's columns laid over the repeat's: its rows go in the room left for them
            after = _fresh_start(aligned[:2])
            suffix = None
    room = 0 if after is None else len(after[0]) - 1
    found = repeat(item[:2], node.lo, node.hi, None if prefix is None else prefix[:2], room)
    if found is None:
        return None
    if after is not None:
        if not _concat_into(*found, len(found[0]) - room, after):
            return None
        minimal = minimal and aligned.minimal_acyclic
    out = Classed(*found, item.classes, minimal)
    if suffix is None:
        return out
    a, b = _aligned(out, suffix)
    pair = concat(a[:2], b[:2])
    return None if pair is None else Classed(*pair, a.classes, a.minimal_acyclic and b.minimal_acyclic)


def _label(part: Classed) -> TerminalArrays:
    """A label's DFA as the product kernel reads a one-terminal DFA: complete (its dead state last), over the
    byte classes of `part`, with accepting and live columns."""
    t, acc, classes = part.trans, part.accept, part.classes
    m = len(t)
    trans = np.empty((m + 1, t.shape[1]), dtype=np.int32)
    _shifted(t, 0, trans[:m])
    trans[:m][t < 0] = m
    trans[m] = m
    accept = np.zeros((m + 1, 1), dtype=bool)
    accept[:m, 0] = acc
    live = np.zeros((m + 1, 1), dtype=bool)
    live[:m, 0] = coaccessible(t, acc)
    return TerminalArrays(trans, classes, accept, live, 0, m)


class _Dispatch(NamedTuple):
    """The edges out of one automaton state as one DFA (`_dispatch`): `trans` int32 [n, k] over `classes`,
    start 0 (never entered again), `dead` (n - 1) its dead state. Rows [0, mixed) are the start and the states
    where two or more labels are live; each other row but dead has one label live: position `label[s]` (among
    the state's labels) in its own DFA's state `state[s]`, and `leaf[s]` where that label's word ends there
    (its accepting state, which reads nothing more)."""

    trans: np.ndarray
    classes: np.ndarray
    mixed: int
    label: np.ndarray
    state: np.ndarray
    leaf: np.ndarray

    @property
    def dead(self) -> int:
        return len(self.trans) - 1


def _dispatch(labels: list[TerminalArrays], max_states: int) -> _Dispatch | None:
    """The product of the labels' DFAs (`pda.kernels.product.combine`), or None unless their words are a prefix
    code that tells them apart: wherever a word ends, its label alone is live and reads nothing more; and the
    start neither accepts nor is entered again."""
    if not labels:  # a state with no edge out: nothing to read
        none = np.zeros(2, dtype=np.int64)
        return _Dispatch(np.ones((2, 1), dtype=np.int32), np.zeros(256, dtype=np.int32), 1, none, none,
                         np.zeros(2, dtype=bool))
    found = product_kernel.combine(labels, np.arange(len(labels), dtype=np.int32), -(-len(labels) // 64), max_states)
    if found is None:
        return None
    n, classes, trans, ptr, term, state, accept_bits, _ = found
    leaf = accept_bits.any(axis=1)
    ends = np.flatnonzero(leaf)
    count = np.diff(ptr)
    if (leaf[0] or (trans == 0).any() or (trans[ends] != n - 1).any() or (count[ends] != 1).any()):
        return None
    # The start and the explored states come first (`combine`'s numbering); every later state but dead has one
    # label live (else, where a label's DFA has states that cannot accept, the layout is not this one: None).
    mixed = 1 + int(np.argmin(np.append(count[1:], 0) >= 2))
    if (count[mixed:-1] != 1).any():
        return None
    first = np.minimum(ptr[:-1], len(term) - 1)  # each state's first component (dead has none: unread)
    return _Dispatch(trans, classes, mixed, term[first].astype(np.int64), state[first].astype(np.int64), leaf)


def automaton(graph: Graph, leaf: Callable[[Node], Classed], max_states: int) -> Classed | None:
    """The partial DFA of a terminal automaton over byte classes, from its labels' DFAs (see the module
    docstring), or None: when it has fewer than `AUTOMATON_EDGES_PER_LABEL` edges per distinct label (the NFA
    path builds such an automaton in one pass: a schema's key set, each edge a label of its own, costs it
    ~2-4 ms, and ~15-40 ms composed), when the labels out of some state are not a prefix code telling its edges
    apart, or when a label cannot be composed.

    Each automaton state reachable from the start (the start first) gets a copy of its dispatch's start and
    mixed states; a state where one label i alone is live leads into label i's own DFA, one copy per pair of
    label and edge target (the target fixes all that follows), whose accepting states lead to the target's copy.
    """
    nodes = graph.labels
    if len(graph.label) < AUTOMATON_EDGES_PER_LABEL * len(nodes):
        return None
    # Each state's edges as a CSR, sorted by (label, target).
    by = np.lexsort((graph.target, graph.label, graph.source))
    edge_label, edge_target = graph.label[by], graph.target[by]
    ptr = np.searchsorted(graph.source[by], np.arange(graph.n_states + 1))
    labels_of, targets_of, bounds = edge_label.tolist(), edge_target.tolist(), ptr.tolist()
    order = [graph.start]
    position = np.full(graph.n_states, -1, dtype=np.int64)
    position[graph.start] = 0
    seen = position.tolist()
    for q in order:  # grows while it is read: breadth first
        for r in targets_of[bounds[q] : bounds[q + 1]]:
            if seen[r] < 0:
                seen[r] = len(order)
                order.append(r)
    position[order] = np.arange(len(order))
    parts: list[TerminalArrays | None] = [None] * len(nodes)
    dispatches: dict[tuple[int, ...], _Dispatch] = {}
    by_kind: dict[tuple[int, ...], list[int]] = {}  # a state's labels (in index order) -> those states' positions
    for j, q in enumerate(order):
        kind = tuple(labels_of[bounds[q] : bounds[q + 1]])
        members = by_kind.get(kind)
        if members is not None:
            members.append(j)
            continue
        by_kind[kind] = [j]
        for i in kind:
            if parts[i] is None:
                part = composed(nodes[i], leaf, max_states)
                if part is None:
                    return None
                parts[i] = _label(part)
        found = _dispatch([parts[i] for i in kind], max_states)
        if found is None:
            return None
        dispatches[kind] = found
    # Every dispatch's classes refine its labels' classes: their common refinement is every part's.
    byte_class, rep = product_kernel.classes([d.classes for d in dispatches.values()])
    k = len(rep)
    sizes = np.zeros(len(order), dtype=np.int64)
    for kind, members in by_kind.items():
        sizes[members] = dispatches[kind].mixed
    start_of = np.zeros(len(order), dtype=np.int64)  # each state's copy of its dispatch's start
    np.cumsum(sizes[:-1], out=start_of[1:])
    total = int(sizes.sum())
    # Where each kind's dispatch states go for its states: the mixed ones to the state's own copy, a label's
    # accepting ones to the edge target's copy, its other ones into that label's copy for the target (a chain,
    # made where first needed: (label, target position) pairs numbered in the order they are met).
    order_states = np.array(order, dtype=np.int64)
    n_positions = len(order)
    wheres: list[np.ndarray] = []
    inners: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]] = []  # (kind number, inner states, chain keys)
    for number, (kind, members) in enumerate(by_kind.items()):
        d = dispatches[kind]
        rows = ptr[order_states[members]][:, None] + np.arange(len(kind))[None, :]
        targets = position[edge_target[rows]].reshape(len(members), len(kind))
        where = np.full((len(members), len(d.trans)), -1, dtype=np.int64)  # dead: -1
        where[:, : d.mixed] = start_of[members][:, None] + np.arange(d.mixed)[None, :]
        singles = np.arange(d.mixed, d.dead)
        for p, i in enumerate(kind):
            mine = singles[d.label[singles] == p]
            ends, inner = mine[d.leaf[mine]], mine[~d.leaf[mine]]
            where[:, ends] = start_of[targets[:, p]][:, None]
            if len(inner):
                inners.append((number, inner, d.state[inner], i * n_positions + targets[:, p]))
        wheres.append(where)
    chain_keys = np.concatenate([keys for *_, keys in inners]) if inners else np.zeros(0, dtype=np.int64)
    distinct, first = np.unique(chain_keys, return_index=True)
    met = np.argsort(first, kind="stable")  # the distinct pairs in the order they are met
    chain_label, chain_target = distinct[met] // n_positions, distinct[met] % n_positions
    chain_size = np.array([len(parts[i].trans) - 1 for i in chain_label.tolist()], dtype=np.int64)
    chain_base = np.empty(len(met), dtype=np.int64)
    chain_base[met] = total + np.cumsum(chain_size) - chain_size  # by distinct key
    total += int(chain_size.sum())
    for number, inner, state, keys in inners:
        wheres[number][:, inner] = chain_base[np.searchsorted(distinct, keys)][:, None] + state[None, :]
    blocks: list[np.ndarray] = []
    for (kind, members), where in zip(by_kind.items(), wheres):
        d = dispatches[kind]
        table = np.take(d.trans[: d.mixed], d.classes[rep], axis=1)
        blocks.append((start_of[members][:, None] + np.arange(d.mixed)[None, :]).reshape(-1))
        blocks.append(where[np.arange(len(members))[:, None, None], table[None, :, :]].reshape(-1, k))
    if total > 4 * max_states:
        return None
    trans = np.empty((total, k), dtype=np.int64)
    for rows, values in zip(blocks[::2], blocks[1::2]):
        trans[rows] = values
    for i, t, base in zip(chain_label.tolist(), chain_target.tolist(), chain_base[met].tolist()):
        part = parts[i]  # label i's own DFA, its accepting states leading to t's copy
        m = len(part.trans) - 1
        where = np.where(part.accept[:, 0], start_of[t], base + np.arange(m + 1))
        where[m] = -1
        trans[base : base + m] = where[np.take(part.trans[:m], part.byte_class[rep], axis=1)]
    accept = np.zeros(total, dtype=bool)
    reached = position[np.array(graph.accept, dtype=np.int64)]
    accept[start_of[reached[reached >= 0]]] = True
    # Copies of labels' states that no dispatch enters (their starts) are dropped: reachable states only.
    dead = np.zeros(total + 1, dtype=bool)
    dead[total] = True
    kept = product_kernel.reachable(np.vstack([np.where(trans >= 0, trans, total), np.full((1, k), total)]),
                                    dead, np.zeros(1, dtype=np.int64))
    renumber = np.full(total + 1, -1, dtype=np.int64)
    renumber[kept] = np.arange(len(kept))
    return Classed(renumber[trans[kept]].astype(np.int32), accept[kept], byte_class)


def _shifted(t: np.ndarray, by: int, out: np.ndarray) -> None:
    """out = t + by where t holds a state, -1 where it holds none (in place: a counted string's
    table has millions of entries, and each temporary of a `np.where` costs a pass over them)."""
    out.fill(-1)
    np.add(t, by, out=out, where=t >= 0)


def _fresh_start(x: Partial) -> Partial:
    """`x` with a start that is never re-entered: when some edge leads back to it, a copy of it becomes the start."""
    t, acc = x
    if not (t == 0).any():
        return x
    shifted = np.empty((len(t) + 1, t.shape[1]), dtype=np.int32)
    _shifted(t, 1, shifted[1:])
    shifted[0] = shifted[1]
    return shifted, np.concatenate([acc[:1], acc])


def concat(a: Partial, b: Partial) -> Partial | None:
    """A·B (see the module docstring), or None when a byte could be read two ways."""
    ta, aa = a
    b = _fresh_start(b)
    n = len(ta)
    trans = np.empty((n + len(b[0]) - 1, ta.shape[1]), dtype=np.result_type(ta.dtype, np.int32))
    trans[:n] = ta
    accept = np.empty(len(trans), dtype=bool)
    accept[:n] = aa
    return (trans, accept) if _concat_into(trans, accept, n, b) else None


def _concat_into(trans: np.ndarray, accept: np.ndarray, n: int, b: Partial) -> bool:
    """A·B written in place: A is rows [0, n) of `trans` and `accept`, B (over the same columns, its start never
    re-entered: `_fresh_start`) goes in the rows after them, len(B) - 1 of them; False (the tables half written)
    when a byte could be read two ways."""
    tb, ab = b
    finals = np.flatnonzero(accept[:n])
    opens = tb[0] >= 0
    if (trans[finals][:, opens] >= 0).any():
        return False
    # B's state s >= 1 becomes n + s - 1 (no edge enters B's start)
    _shifted(tb[1:], n - 1, trans[n:])
    trans[finals[:, None], np.flatnonzero(opens)[None, :]] = (tb[0, opens].astype(np.int64) + n - 1)[None, :]
    accept[n:] = ab[1:]
    accept[finals] = ab[0]
    return True


def repeat(x: Partial, lo: int, hi: int | None, prefix: Partial | None = None, room: int = 0) -> Partial | None:
    """X{lo,hi} (hi None: unbounded) as a chain of copies of X (see the module docstring), written straight
    after `prefix` (over the same columns) when given, or None; `room` more rows left unset at the end
    (`pda.kernels.repeat.extended`)."""
    if prefix is None:  # the empty string: prefix · X{lo,hi} is X{lo,hi} itself
        prefix = (np.full((1, x[0].shape[1]), -1, dtype=np.int32), np.ones(1, dtype=bool))
    return extended(prefix, _fresh_start(x), lo, hi, room)


def guard_product(body: Partial, look: Partial, negate: bool, max_states: int) -> Partial:
    """body ∩ look·Σ* (`negate`: body minus look·Σ*), both partial DFAs over the same columns.

    By the compiled product search (`pda.kernels.product`): the look's accepting states
    become SAT and its dead state NEVER, both absorbing, so a pair dies exactly when the
    body does. Raises `LimitExceeded` over `max_states` pairs.
    """
    (tb, bacc), (tl, lacc) = body, look
    k = tb.shape[1]
    nb, nl = len(tb), len(tl)
    body_dead, look_base = nb, nb + 1
    never, sat = look_base + nl, look_base + nl + 1
    table = np.empty((nb + nl + 3, k), dtype=np.int32)
    table[:nb] = np.where(tb >= 0, tb, body_dead)
    table[body_dead] = body_dead
    table[look_base:never] = np.where(tl < 0, never, np.where(lacc[np.maximum(tl, 0)], sat, look_base + tl))
    table[never], table[sat] = never, sat
    dead = np.zeros(len(table), dtype=bool)
    dead[body_dead] = True
    start = np.array([0, sat if lacc[0] else look_base], dtype=np.int32)
    explored = explore(table, dead, start, max_states)
    if explored is None:
        raise LimitExceeded(f"look-ahead product exceeds max_states={max_states}")
    # Product state q >= 1 is pair q - 1 (state 0, nothing live, is never reached); a successor
    # with one live component has lost its body: dead.
    trans = np.where(explored.trans >= 1, explored.trans - 1, -1)[1:].astype(np.int32)
    pairs = explored.ids.reshape(-1, 2)  # state 0 has no components, each other state two
    return trans, bacc[pairs[:, 0]] & ((pairs[:, 1] == sat) != negate)


def union(parts: list[Classed], max_states: int) -> Classed | None:
    """A|B|... of two or more partial DFAs over byte classes, or None over `max_states` states.

    The parts' DFAs in one table (each part's states a range, then its dead state) searched in lockstep from
    their starts (`pda.kernels.product.explore`): a product state lists its live components, and one with a
    single live component is that part's own state, from where the union is that part alone. The result is
    the product states with two or more live components (the start first), then the parts' states reached
    from single ones, ascending; a state accepts where one of its components does. Every state is reachable
    from the start; the caller minimises.
    """
    byte_class, rep = product_kernel.classes([p.classes for p in parts])
    sizes = np.array([len(p.trans) + 1 for p in parts], dtype=np.int64)  # each part's states and its dead
    offsets = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    total = int(sizes.sum())
    table = np.empty((total, len(rep)), dtype=np.int32)
    dead = np.zeros(total, dtype=bool)
    accept = np.zeros(total, dtype=bool)
    for p, base, size in zip(parts, offsets.tolist(), sizes.tolist()):
        part_dead = base + size - 1
        columns = np.take(p.trans, p.classes[rep], axis=1)
        rows = table[base:part_dead]
        _shifted(columns, base, rows)
        rows[columns < 0] = part_dead
        table[part_dead] = part_dead
        dead[part_dead] = True
        accept[base:part_dead] = p.accept
    explored = explore(table, dead, offsets.astype(np.int32), max_states)
    if explored is None:
        return None
    # Product state q >= 1 becomes q - 1 (state 0, nothing live, is the union's dead: -1); a single s becomes
    # its rank among the parts' states reached, after the product states.
    entries = explored.trans[1:]
    mixed = len(entries)
    singles = product_kernel.reachable(table, dead, -entries[entries < 0] - 1)
    if mixed + len(singles) > max_states:
        return None
    rank = np.full(total, -1, dtype=np.int64)
    rank[singles] = mixed + np.arange(len(singles))
    trans = np.empty((mixed + len(singles), len(rep)), dtype=np.int32)
    trans[:mixed] = np.where(entries > 0, entries - 1, np.where(entries < 0, rank[np.maximum(-entries - 1, 0)], -1))
    trans[mixed:] = rank[table[singles]]
    # The product states' components, each state's run of `ids` (two or more apiece): any accepting?
    components = accept[explored.ids].astype(np.int64)
    out_accept = np.concatenate([np.add.reduceat(components, explored.ptr[1:-1]) > 0, accept[singles]])
    return Classed(trans, out_accept, byte_class)


def ascii_dfa(node: Node) -> Classed | None:
    """The partial DFA of an ASCII character class, or of a finite set of ASCII strings (a trie); else None.

    Over byte classes: the class's bytes and the rest; each byte the strings use, and the rest.
    """
    if isinstance(node, Chars):
        if not node.chars or node.chars[-1][1] > 127:
            return None
        classes = np.zeros(256, dtype=np.int32)
        for lo, hi in node.chars:
            classes[lo : hi + 1] = 1
        return Classed(np.array([[-1, 1], [-1, -1]], dtype=np.int32), np.array([False, True]), classes, True)
    strings = _ascii_strings(node)
    if strings is None:
        return None
    # The strings' trie (preorder ids, root 0): each node's edge from its parent.
    trie = string_trie(list(set(strings)))
    parent, byte, end_node = trie.parent, trie.byte, trie.end_node
    used = np.flatnonzero(np.bincount(byte[1:], minlength=256))  # (`np.unique` imports `numpy.ma` on first use)
    classes = np.zeros(256, dtype=np.int32)
    classes[used] = np.arange(1, len(used) + 1, dtype=np.int32)
    trans = np.full((len(parent), len(used) + 1), -1, dtype=np.int32)
    trans[parent[1:], classes[byte[1:]]] = np.arange(1, len(parent), dtype=np.int32)
    accept = np.zeros(len(parent), dtype=bool)
    accept[end_node] = True
    return Classed(trans, accept, classes)


def _ascii_strings(node: Node, depth: int = 0) -> list[bytes] | None:
    """The strings of a node built from single ASCII characters by sequences and alternations
    (a finite set: JSON Schema's keys), else None; None too past `MAX_TRIE_BYTES` bytes in all
    or 8 levels of nesting."""
    if isinstance(node, Chars):
        if len(node.chars) == 1 and node.chars[0][0] == node.chars[0][1] < 128:
            return [bytes((node.chars[0][0],))]
        return None
    if depth >= 8 or not isinstance(node, (Seq, Alt)) or not node.items:
        return None
    if isinstance(node, Seq) and all(isinstance(x, Chars) for x in node.items):  # a key: one string, read at once
        if not all(len(x.chars) == 1 and x.chars[0][0] == x.chars[0][1] < 128 for x in node.items):
            return None
        return [bytes(x.chars[0][0] for x in node.items)] if len(node.items) <= MAX_TRIE_BYTES else None
    parts = []
    for item in node.items:
        found = _ascii_strings(item, depth + 1)
        if found is None:
            return None
        parts.append(found)
    if isinstance(node, Alt):
        out = [s for part in parts for s in part]
    else:
        out = [b""]
        for part in parts:
            if len(out) * len(part) * (max(map(len, out)) + max(map(len, part))) > MAX_TRIE_BYTES:
                return None
            out = [a + b for a in out for b in part]
    return out if sum(map(len, out)) <= MAX_TRIE_BYTES else None
