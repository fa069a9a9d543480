"""The slow reference paths: the correctness oracles for masks and for trie walks (docs/design.md).

For a state and a token, feed the token's bytes one at a time through the
lexer and parser, with no token index and no mask cache. The fast mask must
equal this exactly: every allowed token keeps the text a viable prefix, and
every token that does is allowed.

`reference_walk` is the oracle of one trie walk (`pda.kernels.walk`): each token's
bytes fed one at a time through the walk tables, with no trie sharing and no cut;
`reference_classification` reads it as the token index's `Classification`.
`reference_partition` is the oracle of DFA minimisation's refinement
(`pda.kernels.partition`): Moore's rounds until no block splits.
`reference_explore` is the oracle of the product search (`pda.kernels.product`):
the same breadth-first numbering, over Python tuples and a dict; `reference_product`
the oracle of a whole product (`pda.regex.product.combine`): every reachable vector of
the terminals' own states, dense, dead ones included.
`reference_subsets` is the oracle of the subset construction (`pda.kernels.subsets`),
state for state. `ReferenceEarley` is the oracle of the Earley parser's compiled
nodes and step (`pda.kernels.earley`): the same algorithm over Python sets, node for node.
`reference_scan`, `reference_commit` and `reference_can_end` are the oracles of the
scanner's compiled loop (`pda.kernels.scan`), and the token-by-token paths above feed
tokens through them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from pda.bits import iter_bits
from pda.compiler import CompiledGrammar
from pda.errors import LimitExceeded
from pda.index.token_index import BoundaryGroup, Classification, TokenIndex
from pda.limits import DEFAULT_LIMITS, Limits
from pda.kernels.earley import CLOCK_EVERY_WORK
from pda.lexer.lexer import START
from pda.parser.earley import Node
from pda.parser.tables import ParserTables
from pda.scanner import Scanner

if TYPE_CHECKING:
    from pda.index.trie import TokenTrie
    from pda.kernels.subsets import NFAArrays
    from pda.regex.dfa import LexerDFA


def reference_commit(scanner: Scanner, node: Node, q: int) -> Node | None:
    """`Scanner.commit` in plain Python: the parser node after the lexeme pending in state `q` ends (of the
    candidates it matches, the top-priority ones are handed to the parser); None if it cannot."""
    if q == START:
        return node
    lexer = scanner.lexer
    matched = lexer.tables(node.allowed | lexer.ignore).accept_at(q)
    if not matched:
        return None
    terminals = lexer.best(matched)
    if terminals & node.allowed:
        return node.advance(terminals)
    return node


def reference_can_end(scanner: Scanner, node: Node, q: int) -> bool:
    """`Scanner.can_end` in plain Python: the pending lexeme commits and the parser accepts."""
    end = reference_commit(scanner, node, q)
    return end is not None and end.accepting


def reference_scan(scanner: Scanner, node: Node, q: int, data: bytes) -> tuple[Node, int, int]:
    """`Scanner.scan` in plain Python, the oracle of the compiled byte loop (`pda.kernels.scan`): feed bytes
    until one is rejected; (node, q, bytes consumed), the state before that byte (`pda.scanner`'s rules)."""
    lexer = scanner.lexer
    ignore = lexer.ignore
    tables = lexer.tables(node.allowed | ignore)
    for offset, byte in enumerate(data):
        q2 = tables.row(q)[tables.cls[byte]]
        if tables.live_flag(q2):
            q = q2
            continue
        if q == START or tables.extends[q2]:
            return node, q, offset
        after = reference_commit(scanner, node, q)
        if after is None:
            return node, q, offset
        tables = lexer.tables(after.allowed | ignore)
        q2 = tables.row(START)[tables.cls[byte]]
        if not tables.live_flag(q2):
            return node, q, offset
        node, q = after, q2
    return node, q, len(data)


def reference_feed(scanner: Scanner, node: Node, q: int, data: bytes) -> tuple[Node, int] | None:
    """`Scanner.feed` by `reference_scan`: the new state, or None if some byte is rejected."""
    node2, q2, consumed = reference_scan(scanner, node, q, data)
    return (node2, q2) if consumed == len(data) else None


def reference_allowed(compiled: CompiledGrammar, node: Node, q: int) -> np.ndarray:
    """Allowed token ids at (node, q), ascending, computed token by token."""
    scanner = compiled.scanner
    vocab = compiled.vocab
    allowed = [
        i for i, data in enumerate(vocab.tokens) if data and reference_feed(scanner, node, q, data) is not None
    ]
    if reference_can_end(scanner, node, q):
        allowed.extend(int(i) for i in compiled.eos_ids)
    return np.array(sorted(allowed), dtype=np.int64)


def mask_mismatches(compiled: CompiledGrammar, node: Node, q: int, token_ids=None) -> list[tuple[int, bool, bool]]:
    """Tokens where the fast mask and the reference disagree: (id, fast, reference).

    `token_ids` restricts the check to some ids (for 100k-token vocabularies); by
    default every id of the vocabulary is checked.
    """
    scanner = compiled.scanner
    vocab = compiled.vocab
    mask = compiled.text_mask(node, q)
    fast_bits = np.unpackbits(mask.view(np.uint8), bitorder="little")
    can_end = reference_can_end(scanner, node, q)
    ids = range(vocab.size) if token_ids is None else token_ids
    out = []
    for i in ids:
        i = int(i)
        data = vocab.tokens[i]
        if i in vocab.eos_ids:
            ref = can_end
            fast = bool(compiled.can_end(node, q))
        else:
            ref = bool(data) and reference_feed(scanner, node, q, data) is not None
            fast = bool(fast_bits[i])
        if ref != fast:
            out.append((i, fast, ref))
    return out


def random_walk_states(compiled: CompiledGrammar, rng, *, max_steps: int, eos_probability: float = 0.1):
    """Yield (node, q, token) along one random constrained walk (token None at the end).

    Each step picks a uniformly random allowed token by the fast mask; where the
    text can end, EOS is taken with `eos_probability`.
    """
    node, q = compiled.initial_state()
    scanner = compiled.scanner
    for _ in range(max_steps):
        mask = compiled.text_mask(node, q)
        allowed = np.flatnonzero(np.unpackbits(mask.view(np.uint8), bitorder="little"))
        can_end = compiled.can_end(node, q)
        if len(allowed) == 0 or (can_end and rng.random() < eos_probability):
            yield node, q, None
            return
        token = int(allowed[rng.randrange(len(allowed))])
        yield node, q, token
        nxt = scanner.feed(node, q, compiled.vocab.tokens[token])
        assert nxt is not None, f"fast mask allowed token {token} that the lexer rejects"
        node, q = nxt


def reference_walk(trie: TokenTrie, tables, roots, root_state: int) -> tuple[set, set]:
    """One walk's outcome for every token below `roots` from `root_state`, token by token.

    `tables` has the walk tables `trans`, `byte_class`, `live`, `stops`, `ends_as`
    (`pda.index.token_index._WalkTables`). A token below root r is fed from r's byte on:
    while each next state is live the token goes on; it is *inside* when all its
    bytes do. At the first byte whose next state is not live it is a *boundary* there
    when that state `stops` and the state before the byte ends a lexeme
    (`ends_as >= 0`), else it is dead. Returns (inside, boundaries): the set of
    (token id, its end node, its last state) and the set of (node, state before
    the node's byte). Nodes come from the trie's parent links, not from the walk's
    child lists.
    """
    byte_class = tables.byte_class.tolist()
    live, stops, ends_as = tables.live.tolist(), tables.stops.tolist(), tables.ends_as.tolist()
    rows: dict[int, list[int]] = {}  # the transition rows read so far, as lists

    def step(state: int, byte: int) -> int:
        row = rows.get(state)
        if row is None:
            row = rows[state] = tables.trans[state].tolist()
        return row[byte_class[byte]]

    parent, byte = trie.parent.tolist(), trie.byte.tolist()
    starts = {int(r) for r in roots}
    inside, boundaries = set(), set()
    for token, end_node in zip(trie.token_ids.tolist(), trie.token_end.tolist()):
        path = []  # the token's nodes, from the trie's root down
        node = end_node
        while node:
            path.append(node)
            node = parent[node]
        path.reverse()
        for first in range(len(path)):
            if path[first] not in starts:
                continue
            state = root_state
            for node in path[first:]:
                nxt = step(state, byte[node])
                if not live[nxt]:
                    if stops[nxt] and ends_as[state] >= 0:
                        boundaries.add((node, state))
                    break
                state = nxt
            else:
                inside.add((token, end_node, state))
    return inside, boundaries


def reference_classification(index: TokenIndex, roots, root_state: int, live_set: int) -> Classification:
    """What `index._classify(roots, root_state, live_set)` must return, by `reference_walk` on the candidate
    set's walk tables: the inside tokens' mask (None when empty) and one group per terminal set, its nodes
    ascending (int64)."""
    tables = index.walk_tables(live_set)
    inside, boundaries = reference_walk(index.trie, tables, roots, root_state)
    mask = None
    if inside:
        bits = np.zeros(index.mask_words * 32, dtype=bool)
        bits[[token for token, _, _ in inside]] = True
        mask = np.packbits(bits, bitorder="little").view(np.int32)
    nodes: dict[int, set[int]] = {}
    for node, state in boundaries:
        nodes.setdefault(int(tables.ends_as[state]), set()).add(node)
    return Classification(mask, [
        BoundaryGroup(tables.sets[k], np.array(sorted(nodes[k]), dtype=np.int64)) for k in sorted(nodes)
    ])


def reference_partition(trans: np.ndarray, initial: np.ndarray) -> list[int]:
    """The coarsest stable partition of a partial DFA (-1: no transition) refining `initial`, by Moore's rounds.

    Each round splits blocks by (block, successors' blocks); it stops when a round splits none.
    Block ids are by first appearance, so equal partitions give equal lists.
    """
    rows = [tuple(int(t) for t in row) for row in np.asarray(trans)]
    ids: dict = {}
    block = [ids.setdefault(x, len(ids)) for x in np.asarray(initial).tolist()]
    while True:
        ids = {}
        refined = [ids.setdefault((block[q], tuple(block[t] if t >= 0 else -1 for t in row)), len(ids))
                   for q, row in enumerate(rows)]
        if len(ids) == len(set(block)):
            return refined
        block = refined


def reference_coaccessible(trans: np.ndarray, accepting: np.ndarray) -> list[bool]:
    """The states of a partial DFA (-1: no transition) from which an accepting state is reachable, by a fixpoint."""
    rows = np.asarray(trans).tolist()
    good = [bool(a) for a in np.asarray(accepting).tolist()]
    changed = True
    while changed:
        changed = False
        for q, row in enumerate(rows):
            if not good[q] and any(t >= 0 and good[t] for t in row):
                good[q] = changed = True
    return good


def reference_explore(
    table: np.ndarray, dead: np.ndarray, start: np.ndarray, max_states: int
) -> tuple[list[list[int]], list[tuple[int, ...]]] | None:
    """The product search of `pda.kernels.product.explore` in plain Python: (transitions, components) per state.

    Same numbering: state 0 has no live component, state 1 is the start, the rest by
    breadth-first discovery (states in id order, classes in order); a successor with one
    live component s is -(s + 1) and not explored. None when an id would exceed `max_states`.
    """
    rows = np.asarray(table).tolist()
    is_dead = np.asarray(dead, dtype=bool).tolist()
    states: list[tuple[int, ...]] = [(), tuple(int(s) for s in start)]
    index: dict[tuple[int, ...], int] = {}
    for q, components in enumerate(states):
        index.setdefault(components, q)
    trans: list[list[int]] = []
    q = 0
    while q < len(states):
        row = []
        for c in range(len(rows[0]) if rows else 0):
            following = tuple(t for t in (rows[s][c] for s in states[q]) if not is_dead[t])
            if len(following) == 1:
                row.append(-(following[0] + 1))
                continue
            j = index.get(following)
            if j is None:
                j = len(states)
                if j > max_states:
                    return None
                index[following] = j
                states.append(following)
            row.append(j)
        trans.append(row)
        q += 1
    return trans, states


def reference_product(dfas: Sequence[LexerDFA]) -> tuple[list[int], list[tuple[int, ...]], list[list[int]]]:
    """The product of one-terminal DFAs in plain Python, dense and unnumbered by `combine`'s rules.

    Returns (byte classes, states, transitions): bytes that every DFA treats alike share a
    class (numbered by first byte); state 0 is the vector of the DFAs' starts and the others
    every vector of the terminals' own states (dead ones included) reached breadth first
    (states in order, classes in order); `trans[i][c]` is state i's successor on class c.
    """
    signature: dict[tuple[int, ...], int] = {}
    byte_class = [signature.setdefault(tuple(int(d.byte_class[b]) for d in dfas), len(signature)) for b in range(256)]
    reps = [byte_class.index(c) for c in range(len(signature))]
    moves = [d.trans[:, d.byte_class[reps]].tolist() for d in dfas]  # per terminal, per own state: by class
    states: list[tuple[int, ...]] = [tuple(int(d.start) for d in dfas)]
    index = {states[0]: 0}
    trans: list[list[int]] = []
    for vector in states:
        rows = [moves[j][s] for j, s in enumerate(vector)]
        row = []
        for following in zip(*rows) if rows else [()] * len(reps):
            found = index.get(following)
            if found is None:
                found = index[following] = len(states)
                states.append(following)
            row.append(found)
        trans.append(row)
    return byte_class, states, trans


def reference_reachable(table: np.ndarray, dead: np.ndarray, seeds: np.ndarray) -> list[int]:
    """`pda.kernels.product.reachable` in plain Python: the live states reachable from `seeds`, ascending."""
    rows = np.asarray(table).tolist()
    is_dead = np.asarray(dead, dtype=bool).tolist()
    reached = {int(s) for s in seeds if not is_dead[s]}
    frontier = list(reached)
    while frontier:
        following = {t for s in frontier for t in rows[s] if not is_dead[t]} - reached
        reached |= following
        frontier = list(following)
    return sorted(reached)


def reference_subsets(nfa: "NFAArrays", start: int, n_atoms: int, n_terms: int) -> tuple[np.ndarray, np.ndarray]:
    """The subset construction of `pda.kernels.subsets.determinise` in plain Python, same numbering, no limit."""
    eps = [nfa.eps_dst[a:b].tolist() for a, b in zip(nfa.eps_ptr[:-1], nfa.eps_ptr[1:])]
    edges = [
        [(nfa.atoms[nfa.atom_ptr[e] : nfa.atom_ptr[e + 1]].tolist(), int(nfa.edge_dst[e])) for e in range(a, b)]
        for a, b in zip(nfa.edge_ptr[:-1].tolist(), nfa.edge_ptr[1:].tolist())
    ]
    final_term, owner, lazy = nfa.final_term.tolist(), nfa.owner.tolist(), nfa.lazy.tolist()
    important = [bool(edges[q]) or final_term[q] >= 0 for q in range(len(eps))]

    def closure(q: int) -> set[int]:
        seen, stack = {q}, [q]
        while stack:
            for y in eps[stack.pop()]:
                if y not in seen:
                    seen.add(y)
                    stack.append(y)
        return {x for x in seen if important[x]}

    sets = [tuple(sorted(closure(start)))]
    index = {sets[0]: 0}
    rows = []
    for members in sets:  # grows while it is read: breadth-first
        done = {final_term[q] for q in members if final_term[q] >= 0 and lazy[final_term[q]]}
        moves: dict[int, set[int]] = {}
        for q in members:
            if owner[q] in done:
                continue
            for atoms, t in edges[q]:
                for c in atoms:
                    moves.setdefault(c, set()).add(t)
        row = [-1] * n_atoms
        for c in sorted(moves):
            key = tuple(sorted(set().union(*(closure(t) for t in moves[c]))))
            row[c] = index.setdefault(key, len(sets))
            if row[c] == len(sets):
                sets.append(key)
        rows.append(row)
    accept = np.zeros((len(sets), n_terms), dtype=bool)
    for s, members in enumerate(sets):
        for q in members:
            if final_term[q] >= 0:
                accept[s, final_term[q]] = True
    return np.array(rows, dtype=np.int64).reshape(len(sets), n_atoms), accept


class _ReferencePrediction:
    """The predicted items for a set of nonterminals, grouped for scanning and completion."""

    def __init__(self, tables: ParserTables, seeds: frozenset[int]) -> None:
        t = tables.n_terminals
        predicted: set[int] = set()
        for a in seeds:
            predicted |= tables.closure[a - t]
        self.scan: dict[int, list[int]] = {}
        self.waiting: dict[int, list[int]] = {}
        self.allowed = 0
        self.accepting = False
        for a in predicted:
            for r in tables.rules_of[a - t]:
                for d in tables.skip[r][0]:
                    p = tables.rule_start[r] + d
                    sym = tables.next_sym[p]
                    if sym < 0:
                        self.accepting |= p == tables.accept_pos
                    elif sym < t:
                        self.scan.setdefault(sym, []).append(p)
                        self.allowed |= 1 << sym
                    else:
                        self.waiting.setdefault(sym, []).append(p)


class ReferenceNode:
    """An interned Earley item set of `ReferenceEarley`: `kernel`, `allowed`, `accepting`, `advance`."""

    def __init__(self, parser: "ReferenceEarley", kernel: frozenset, prediction: _ReferencePrediction) -> None:
        self.parser = parser
        self.kernel = kernel
        self.prediction = prediction
        self.allowed = prediction.allowed
        self.accepting = prediction.accepting
        for p, _ in kernel:
            self.allowed |= parser.tables.term_bit[p]
            self.accepting |= p == parser.tables.accept_pos
        self.leo: dict[int, tuple | None] = {}
        self._next: dict[int, ReferenceNode | None] = {}

    def waiting(self, sym: int) -> list[tuple]:
        """Every item (kernel or predicted) with nonterminal `sym` after the dot."""
        next_sym = self.parser.tables.next_sym
        kernel = [item for item in self.kernel if next_sym[item[0]] == sym]
        return kernel + [(p, self) for p in self.prediction.waiting.get(sym, ())]

    def leo_top(self, sym: int) -> tuple | None:
        """The topmost item of a deterministic completion chain for `sym` (Leo), or None; memoised on every link."""
        tables = self.parser.tables
        chain = []
        node, s = self, sym
        while s not in node.leo:
            only = node.waiting(s)
            if len(only) != 1 or not tables.penultimate[only[0][0]]:
                node.leo[s] = None
                break
            p, o = only[0]
            chain.append((node, s, (p + 1, o)))
            node, s = o, tables.lhs[tables.pos_rule[p]]
        top = node.leo[s]
        for n, s2, item in reversed(chain):
            if top is None:
                top = item
            n.leo[s2] = top
        return self.leo[sym]

    def advance(self, terminals: int) -> "ReferenceNode | None":
        """The node after scanning a lexeme that matched `terminals` (a bitmask); None if dead. Memoised."""
        terminals &= self.allowed
        if terminals not in self._next:
            self._next[terminals] = self.parser.step(self, terminals) if terminals else None
        return self._next[terminals]


class ReferenceEarley:
    """The Earley parser of `pda.kernels.earley` in plain Python: the oracle of its nodes, same algorithm and budgets.

    Same items (Aycock–Horspool nullable steps, Leo's memo for right recursion), same
    work count and `LimitExceeded` messages; nodes are interned in a plain dict and
    `advance` memoises on the node (no probe memo).
    """

    def __init__(self, tables: ParserTables, *, limits: Limits = DEFAULT_LIMITS) -> None:
        self.tables = tables
        self.limits = limits
        self._predictions: dict[frozenset[int], _ReferencePrediction] = {}
        self._nodes: dict[frozenset, ReferenceNode] = {}
        self.root = ReferenceNode(self, frozenset(), self._prediction(frozenset([tables.lhs[tables.start_rule]])))

    def _prediction(self, seeds: frozenset[int]) -> _ReferencePrediction:
        if seeds not in self._predictions:
            self._predictions[seeds] = _ReferencePrediction(self.tables, seeds)
        return self._predictions[seeds]

    def _check(self, work: int, items: int, started: float) -> int:
        """Raise `LimitExceeded` past a budget; else the work at which to check again."""
        limits = self.limits
        if work > limits.max_node_work:
            raise LimitExceeded(
                f"building one Earley item set took over {limits.max_node_work} steps (Limits.max_node_work); "
                "the grammar is too ambiguous for this input"
            )
        if items > limits.max_node_items:
            raise LimitExceeded(
                f"Earley item set has {items} items, over the limit of {limits.max_node_items} "
                "(Limits.max_node_items); the grammar is too ambiguous for this input"
            )
        if time.perf_counter() - started > limits.max_node_seconds:
            raise LimitExceeded(
                f"building one Earley item set took over {limits.max_node_seconds} s (Limits.max_node_seconds)"
            )
        return min(work + CLOCK_EVERY_WORK, limits.max_node_work + 1)

    def step(self, node: ReferenceNode, terminals: int) -> ReferenceNode:
        """The node after scanning `terminals` (non-empty, within `node.allowed`): scan, then complete to a fixpoint."""
        tables = self.tables
        items: set = set()
        complete: list = []

        def add(p: int, origin: ReferenceNode) -> None:
            for p2 in tables.step[p]:
                if (p2, origin) not in items:
                    items.add((p2, origin))
                    if tables.is_end[p2]:
                        complete.append((p2, origin))

        started = time.perf_counter()
        check_at = min(CLOCK_EVERY_WORK, self.limits.max_node_work + 1)
        for p, o in node.kernel:
            if tables.term_bit[p] & terminals:
                add(p, o)
        for t in iter_bits(terminals):
            for p in node.prediction.scan.get(t, ()):
                add(p, node)
        work = len(items)
        if work >= check_at:
            check_at = self._check(work, work, started)
        while complete:
            p, o = complete.pop()
            sym = tables.lhs[tables.pos_rule[p]]
            top = o.leo_top(sym)
            if top is not None:
                work += 1
                if top not in items:
                    items.add(top)
                    complete.append(top)
                continue
            waiting = o.waiting(sym)
            work += 1 + len(waiting)
            if work >= check_at:
                check_at = self._check(work, len(items), started)
            for p1, o1 in waiting:
                add(p1, o1)
        if len(items) > self.limits.max_node_items:
            self._check(work, len(items), started)
        kernel = frozenset(items)
        if kernel not in self._nodes:
            seeds = frozenset(tables.next_sym[p] for p, _ in kernel if tables.next_sym[p] >= tables.n_terminals)
            self._nodes[kernel] = ReferenceNode(self, kernel, self._prediction(seeds))
        return self._nodes[kernel]
