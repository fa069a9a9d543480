"""Earley recogniser over terminal sets, with hash-consed item sets.

Invariants (see DESIGN.md, "The parser"):

* An item is `(p, origin)`: `p` a dot position (a rule and how much of it is
  read, flattened to one integer by `ParserTables`), `origin` the interned
  `Node` where the rule was predicted. A node stores only its *kernel*: the
  items that came from scanning or completion. Its predicted items (origin =
  the node itself) are a pure function of the nonterminals after the kernel's
  dots, shared through `Prediction` objects.
* Nodes are interned by kernel content, so two positions with equal item sets
  are the same object, and `advance(node, terminals)` is memoised on the node.
  A node is therefore the parser's whole configuration.
* Nullable symbols are stepped over when an item is added (Aycock–Horspool),
  so completions of empty rules never need to be processed.
* Right recursion uses Leo's deterministic-reduction memo, so a chain of
  10,000 right-recursive completions costs O(1) per step. Nothing recurses in
  Python: completion is a work list, Leo chains are walked in a loop.
* Building one node is bounded (`Limits.max_node_items`, `max_node_work`,
  `max_node_seconds`): over a budget it raises `LimitExceeded` before the node
  is interned or memoised (the Leo and waiting memos it filled on older nodes
  stay valid), so a failed step can be retried or rolled back.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Iterator

from pda.errors import LimitExceeded
from pda.limits import DEFAULT_LIMITS, Limits
from pda.parser.tables import ParserTables

Item = tuple[int, "Node"]

# The clock is read once per this many work units while building a node (~1 ms of work).
CLOCK_EVERY_WORK = 16_384


def iter_bits(mask: int) -> Iterator[int]:
    """Indices of the set bits of `mask`, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


class Prediction:
    """The predicted items for a set of nonterminals, grouped for scanning and completion."""

    __slots__ = ("scan", "waiting", "allowed", "accepting")

    def __init__(self, tables: ParserTables, seeds: frozenset[int]) -> None:
        t = tables.n_terminals
        predicted: set[int] = set()
        for a in seeds:
            predicted |= tables.closure[a - t]
        scan: dict[int, list[int]] = {}
        waiting: dict[int, list[int]] = {}
        allowed = 0
        accepting = False
        for a in predicted:
            for r in tables.rules_of[a - t]:
                for d in tables.skip[r][0]:
                    p = tables.rule_start[r] + d
                    sym = tables.next_sym[p]
                    if sym < 0:
                        accepting |= p == tables.accept_pos
                    elif sym < t:
                        scan.setdefault(sym, []).append(p)
                        allowed |= 1 << sym
                    else:
                        waiting.setdefault(sym, []).append(p)
        self.scan = {k: tuple(v) for k, v in scan.items()}
        self.waiting = {k: tuple(v) for k, v in waiting.items()}
        self.allowed = allowed
        self.accepting = accepting


class Node:
    """An interned Earley item set: the parser's configuration at one position."""

    __slots__ = (
        "parser",
        "kernel",
        "prediction",
        "allowed",
        "accepting",
        "_scan",
        "_waiting",
        "_leo",
        "_next",
        "cache",
        "__weakref__",
    )

    def __init__(self, parser: "EarleyParser", kernel: frozenset[Item], prediction: Prediction) -> None:
        tables = parser.tables
        term_bit = tables.term_bit
        accept_pos = tables.accept_pos
        self.parser = parser
        self.kernel = kernel
        self.prediction = prediction
        allowed = prediction.allowed
        accepting = prediction.accepting
        for p, o in kernel:
            allowed |= term_bit[p]
            if p == accept_pos:
                accepting = True
        self.allowed = allowed
        self.accepting = accepting
        self._scan: dict[int, list[Item]] | None = None
        self._waiting: dict[int, list[Item]] | None = None
        self._leo: dict[int, Item | None] = {}
        self._next: dict[int, Node | None] = {}
        self.cache: dict = {}

    def __repr__(self) -> str:
        return f"<Node {len(self.kernel)} kernel items, allowed={self.parser.tables.names_of(self.allowed)}>"

    def _kernel_scan(self) -> dict[int, list[Item]]:
        if self._scan is None:
            next_sym = self.parser.tables.next_sym
            t = self.parser.tables.n_terminals
            scan: dict[int, list[Item]] = {}
            for item in self.kernel:
                sym = next_sym[item[0]]
                if 0 <= sym < t:
                    scan.setdefault(sym, []).append(item)
            self._scan = scan
        return self._scan

    def waiting(self, sym: int) -> list[Item]:
        """Items of this set with nonterminal `sym` after the dot, origins resolved."""
        if self._waiting is None:
            next_sym = self.parser.tables.next_sym
            t = self.parser.tables.n_terminals
            waiting: dict[int, list[Item]] = {}
            for item in self.kernel:
                s = next_sym[item[0]]
                if s >= t:
                    waiting.setdefault(s, []).append(item)
            for s, positions in self.prediction.waiting.items():
                waiting.setdefault(s, []).extend((p, self) for p in positions)
            self._waiting = waiting
        return self._waiting.get(sym, [])

    def leo_top(self, sym: int) -> Item | None:
        """The topmost item of a deterministic completion chain for `sym`, or None."""
        leo = self._leo
        if sym in leo:
            return leo[sym]
        tables = self.parser.tables
        penultimate, pos_rule, lhs = tables.penultimate, tables.pos_rule, tables.lhs
        chain: list[tuple[Node, int, Item]] = []
        node, s = self, sym
        while True:
            if s in node._leo:
                top = node._leo[s]
                break
            waiting = node.waiting(s)
            if len(waiting) == 1 and penultimate[waiting[0][0]]:
                p, o = waiting[0]
                chain.append((node, s, (p + 1, o)))
                node, s = o, lhs[pos_rule[p]]
            else:
                node._leo[s] = None
                top = None
                break
        for n, s2, item in reversed(chain):
            if top is None:
                top = item
            n._leo[s2] = top
        return leo[sym]

    def advance(self, terminals: int) -> "Node | None":
        """The node after scanning a lexeme that matched `terminals` (a bitmask); None if dead."""
        terminals &= self.allowed
        if not terminals:
            return None
        nxt = self._next.get(terminals, False)
        if nxt is not False:
            return nxt
        nxt = self.parser._advance(self, terminals)
        self._next[terminals] = nxt
        return nxt

    def probe(self, terminals: int) -> "Node | None":
        """`advance` that does not memoise a node it builds: for masks, which look past the next lexeme.

        A mask probes every boundary its tokens may cross; memoised, those nodes would live
        as long as this one and, on a long text, make up most of the garbage collector's heap
        (100k-deep JSON: 13 nodes a token, 10M tracked objects, 2.9 s collections). Unmemoised
        they are freed as soon as the mask is done; the one a matcher then steps into is built again.
        """
        terminals &= self.allowed
        if not terminals:
            return None
        nxt = self._next.get(terminals, False)
        if nxt is not False:
            return nxt
        return self.parser._advance(self, terminals)


class EarleyParser:
    """Owns the tables, the intern table and the root node of one grammar."""

    def __init__(self, tables: ParserTables, *, limits: Limits = DEFAULT_LIMITS) -> None:
        self.tables = tables
        self.max_items = limits.max_node_items
        self.max_work = limits.max_node_work
        self.max_seconds = limits.max_node_seconds
        self._predictions: dict[frozenset[int], Prediction] = {}
        self._nodes: weakref.WeakValueDictionary[frozenset[Item], Node] = weakref.WeakValueDictionary()
        self.root = Node(self, frozenset(), self._prediction(frozenset([tables.lhs[tables.start_rule]])))

    def _prediction(self, seeds: frozenset[int]) -> Prediction:
        pred = self._predictions.get(seeds)
        if pred is None:
            pred = Prediction(self.tables, seeds)
            self._predictions[seeds] = pred
        return pred

    def _check_budget(self, work: int, items: int, started: float) -> int:
        """Raise `LimitExceeded` if building a node went over a budget; else the work at which to check again."""
        if work > self.max_work:
            raise LimitExceeded(
                f"building one Earley item set took over {self.max_work} steps (Limits.max_node_work); "
                "the grammar is too ambiguous for this input"
            )
        if items > self.max_items:
            raise LimitExceeded(
                f"Earley item set has {items} items, over the limit of {self.max_items} "
                "(Limits.max_node_items); the grammar is too ambiguous for this input"
            )
        if time.perf_counter() - started > self.max_seconds:
            raise LimitExceeded(
                f"building one Earley item set took over {self.max_seconds} s (Limits.max_node_seconds)"
            )
        return min(work + CLOCK_EVERY_WORK, self.max_work + 1)

    # Hot path: runs once per new parser node.
    def _advance(self, node: Node, terminals: int) -> Node | None:
        tables = self.tables
        step, is_end, lhs, pos_rule = tables.step, tables.is_end, tables.lhs, tables.pos_rule
        items: set[Item] = set()
        complete: list[Item] = []
        started = time.perf_counter()
        check_at = min(CLOCK_EVERY_WORK, self.max_work + 1)
        kernel_scan = node._kernel_scan()
        pred_scan = node.prediction.scan
        for t in iter_bits(terminals):
            for p, o in kernel_scan.get(t, ()):
                for p2 in step[p]:
                    item = (p2, o)
                    if item not in items:
                        items.add(item)
                        if is_end[p2]:
                            complete.append(item)
            for p in pred_scan.get(t, ()):
                for p2 in step[p]:
                    item = (p2, node)
                    if item not in items:
                        items.add(item)
                        if is_end[p2]:
                            complete.append(item)
        # Work: the items scanned, then one per completion popped and per waiting item it advances.
        work = len(items)
        if work >= check_at:
            check_at = self._check_budget(work, work, started)
        while complete:
            p, o = complete.pop()
            sym = lhs[pos_rule[p]]
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
                check_at = self._check_budget(work, len(items), started)
            for p1, o1 in waiting:
                for p2 in step[p1]:
                    item = (p2, o1)
                    if item not in items:
                        items.add(item)
                        if is_end[p2]:
                            complete.append(item)
        if len(items) > self.max_items:
            self._check_budget(work, len(items), started)
        kernel = frozenset(items)
        found = self._nodes.get(kernel)
        if found is not None:
            return found
        t = tables.n_terminals
        next_sym = tables.next_sym
        seeds = frozenset(next_sym[p] for p, _ in kernel if next_sym[p] >= t)
        new = Node(self, kernel, self._prediction(seeds))
        self._nodes[kernel] = new
        return new
