"""Earley recogniser over terminal sets, with hash-consed item sets.

Invariants (see docs/design.md, "The parser"):

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
* A node keeps few Python objects alive: a long text holds one node per position, and
  every tracked object is work for each of the garbage collector's full collections.
  Which kernel items scan a terminal or wait for a nonterminal is found by walking the
  kernel (a few items; only a kernel over `INDEX_KERNEL_ITEMS` is indexed, once), and
  predicted items are never materialised as `(p, node)` tuples (their positions live
  in the shared `Prediction`).
* Building one node is bounded (`Limits.max_node_items`, `max_node_work`,
  `max_node_seconds`): over a budget it raises `LimitExceeded` before the node
  is interned or memoised (the Leo memos and kernel indexes it filled on
  older nodes stay valid), so a failed step can be retried or rolled back.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Sequence

from pda.bits import iter_bits
from pda.errors import LimitExceeded
from pda.limits import DEFAULT_LIMITS, Limits
from pda.lru import ByteLRU
from pda.parser.tables import ParserTables

Item = tuple[int, "Node"]

# The clock is read once per this many work units while building a node (~1 ms of work).
CLOCK_EVERY_WORK = 16_384
# Kernels above this many items are indexed by the symbol after each item's dot, once;
# smaller ones (nearly all: json 3, python 5, sqlite 17 at the median) are walked.
INDEX_KERNEL_ITEMS = 32
# Probes the parser remembers, most recent first (each entry keeps two nodes alive): the
# masks of one node at several lexer states probe the same terminal sets (JSON replay:
# 8,884 probes that built a node, 3,302 of them distinct).
RECENT_PROBES = 2048


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
        "_by_sym",
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
        self._by_sym: dict[int, tuple[Item, ...]] | None = None
        self._leo: dict[int, Item | None] = {}
        self._next: dict[int, Node | None] = {}
        self.cache: dict = {}

    def __repr__(self) -> str:
        return f"<Node {len(self.kernel)} kernel items, allowed={self.parser.tables.names_of(self.allowed)}>"

    def kernel_waiting(self, sym: int) -> Sequence[Item]:
        """Kernel items with nonterminal `sym` after the dot (the predicted ones: `prediction.waiting`)."""
        if len(self.kernel) > INDEX_KERNEL_ITEMS:
            return self._kernel_index().get(sym, ())
        next_sym = self.parser.tables.next_sym
        return [item for item in self.kernel if next_sym[item[0]] == sym]

    def kernel_scanning(self, terminals: int) -> list[Item]:
        """Kernel items with one of `terminals` (a bitmask) after the dot."""
        if len(self.kernel) > INDEX_KERNEL_ITEMS:
            by_sym = self._kernel_index()
            return [item for t in iter_bits(terminals) for item in by_sym.get(t, ())]
        term_bit = self.parser.tables.term_bit
        return [item for item in self.kernel if term_bit[item[0]] & terminals]

    def _kernel_index(self) -> dict[int, tuple[Item, ...]]:
        """A large kernel's items by the symbol after the dot (built once)."""
        if self._by_sym is None:
            next_sym = self.parser.tables.next_sym
            by_sym: dict[int, list[Item]] = {}
            for item in self.kernel:
                by_sym.setdefault(next_sym[item[0]], []).append(item)
            self._by_sym = {sym: tuple(items) for sym, items in by_sym.items()}
        return self._by_sym

    def _only_waiting(self, sym: int) -> Item | None:
        """The one item (kernel or predicted) waiting for `sym`; None if there are none or several."""
        predicted = self.prediction.waiting.get(sym, ())
        waiting = self.kernel_waiting(sym)
        if len(waiting) + len(predicted) != 1:
            return None
        return waiting[0] if waiting else (predicted[0], self)

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
            only = node._only_waiting(s)
            if only is not None and penultimate[only[0]]:
                p, o = only
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
        """The node after scanning a lexeme that matched `terminals` (a bitmask); None if dead. Memoised."""
        terminals &= self.allowed
        nxt = self._next.get(terminals, False)
        if nxt is False:
            nxt = self._next[terminals] = self.probe(terminals)
        return nxt

    def probe(self, terminals: int) -> "Node | None":
        """`advance` that does not memoise a node it builds: for masks, which look past the next lexeme.

        A mask probes every boundary its tokens may cross; memoised, those nodes would live
        as long as this one and, on a long text, make up most of the garbage collector's heap
        (100k-deep JSON: 13 nodes a token, 10M tracked objects, 2.9 s collections). So the
        parser remembers only the `RECENT_PROBES` most recent probes (least recently used
        forgotten, with the nodes only they held); an older one is built again.
        """
        terminals &= self.allowed
        if not terminals:
            return None
        nxt = self._next.get(terminals, False)
        if nxt is not False:
            return nxt
        probes = self.parser.probes
        key = (self, terminals)
        nxt = probes.get(key, False)
        if nxt is False:
            nxt = self.parser._advance(self, terminals)
            probes.put(key, nxt, 1)
        return nxt


class EarleyParser:
    """Owns the tables, the intern table and the root node of one grammar."""

    def __init__(self, tables: ParserTables, *, limits: Limits = DEFAULT_LIMITS) -> None:
        self.tables = tables
        self.max_items = limits.max_node_items
        self.max_work = limits.max_node_work
        self.max_seconds = limits.max_node_seconds
        self._predictions: dict[frozenset[int], Prediction] = {}
        self._nodes: weakref.WeakValueDictionary[frozenset[Item], Node] = weakref.WeakValueDictionary()
        # The RECENT_PROBES most recent probes, (node, terminals) -> the node after or None (`Node.probe`):
        # least recently used forgotten, thread-safe; each entry counts 1.
        self.probes = ByteLRU(RECENT_PROBES)
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
        for p, o in node.kernel_scanning(terminals):
            for p2 in step[p]:
                item = (p2, o)
                if item not in items:
                    items.add(item)
                    if is_end[p2]:
                        complete.append(item)
        pred_scan = node.prediction.scan
        for t in iter_bits(terminals):
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
            waiting = o.kernel_waiting(sym)
            predicted = o.prediction.waiting.get(sym, ())
            work += 1 + len(waiting) + len(predicted)
            if work >= check_at:
                check_at = self._check_budget(work, len(items), started)
            for p1, o1 in waiting:
                for p2 in step[p1]:
                    item = (p2, o1)
                    if item not in items:
                        items.add(item)
                        if is_end[p2]:
                            complete.append(item)
            for p1 in predicted:
                for p2 in step[p1]:
                    item = (p2, o)
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
