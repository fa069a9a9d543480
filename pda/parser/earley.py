"""Earley recogniser over terminal sets, with hash-consed item sets.

Invariants (see DESIGN.md, "The parser"):

* An item is `(rule, dot, origin)`; `origin` is the interned `Node` where the
  rule was predicted. A node stores only its *kernel*: the items that came from
  scanning or completion. Its predicted items (origin = the node itself) are a
  pure function of the nonterminals after the kernel's dots, shared through
  `Prediction` objects.
* Nodes are interned by kernel content, so two positions with equal item sets
  are the same object, and `advance(node, terminals)` is memoised on the node.
  A node is therefore the parser's whole configuration.
* Nullable symbols are stepped over when an item is added (Aycock–Horspool),
  so completions of empty rules never need to be processed.
* Right recursion uses Leo's deterministic-reduction memo, so a chain of
  10,000 right-recursive completions costs O(1) per step. Nothing recurses in
  Python: completion is a work list, Leo chains are walked in a loop.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator

from pda.errors import LimitExceeded
from pda.parser.tables import ParserTables

Item = tuple[int, int, "Node"]

DEFAULT_MAX_KERNEL_ITEMS = 100_000


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
        scan: dict[int, list[tuple[int, int]]] = {}
        waiting: dict[int, list[tuple[int, int]]] = {}
        allowed = 0
        accepting = False
        for a in predicted:
            for r in tables.rules_of[a - t]:
                for d in tables.skip[r][0]:
                    if d == tables.rule_len[r]:
                        accepting |= r == tables.start_rule
                        continue
                    sym = tables.rhs[r][d]
                    if sym < t:
                        scan.setdefault(sym, []).append((r, d))
                        allowed |= 1 << sym
                    else:
                        waiting.setdefault(sym, []).append((r, d))
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
        t = tables.n_terminals
        self.parser = parser
        self.kernel = kernel
        self.prediction = prediction
        allowed = prediction.allowed
        accepting = prediction.accepting
        for r, d, o in kernel:
            if d < tables.rule_len[r]:
                sym = tables.rhs[r][d]
                if sym < t:
                    allowed |= 1 << sym
            elif r == tables.start_rule and o is parser.root_or_none():
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
            tables = self.parser.tables
            t = tables.n_terminals
            scan: dict[int, list[Item]] = {}
            for r, d, o in self.kernel:
                if d < tables.rule_len[r] and tables.rhs[r][d] < t:
                    scan.setdefault(tables.rhs[r][d], []).append((r, d, o))
            self._scan = scan
        return self._scan

    def waiting(self, sym: int) -> list[Item]:
        """Items of this set with nonterminal `sym` after the dot, origins resolved."""
        if self._waiting is None:
            tables = self.parser.tables
            t = tables.n_terminals
            waiting: dict[int, list[Item]] = {}
            for r, d, o in self.kernel:
                if d < tables.rule_len[r] and tables.rhs[r][d] >= t:
                    waiting.setdefault(tables.rhs[r][d], []).append((r, d, o))
            for s, items in self.prediction.waiting.items():
                waiting.setdefault(s, []).extend((r, d, self) for r, d in items)
            self._waiting = waiting
        return self._waiting.get(sym, [])

    def leo_top(self, sym: int) -> Item | None:
        """The topmost item of a deterministic completion chain for `sym`, or None."""
        leo = self._leo
        if sym in leo:
            return leo[sym]
        tables = self.parser.tables
        chain: list[tuple[Node, int, Item]] = []
        node, s = self, sym
        while True:
            if s in node._leo:
                top = node._leo[s]
                break
            waiting = node.waiting(s)
            if len(waiting) == 1 and waiting[0][1] == tables.rule_len[waiting[0][0]] - 1:
                r2, _, o2 = waiting[0]
                chain.append((node, s, (r2, tables.rule_len[r2], o2)))
                node, s = o2, tables.lhs[r2]
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


class EarleyParser:
    """Owns the tables, the intern table and the root node of one grammar."""

    def __init__(self, tables: ParserTables, *, max_kernel_items: int = DEFAULT_MAX_KERNEL_ITEMS) -> None:
        self.tables = tables
        self.max_kernel_items = max_kernel_items
        self._predictions: dict[frozenset[int], Prediction] = {}
        self._nodes: weakref.WeakValueDictionary[frozenset[Item], Node] = weakref.WeakValueDictionary()
        self._root: Node | None = None
        self._root = Node(self, frozenset(), self._prediction(frozenset([tables.lhs[tables.start_rule]])))

    @property
    def root(self) -> Node:
        assert self._root is not None
        return self._root

    def root_or_none(self) -> Node | None:
        return self._root

    def _prediction(self, seeds: frozenset[int]) -> Prediction:
        pred = self._predictions.get(seeds)
        if pred is None:
            pred = Prediction(self.tables, seeds)
            self._predictions[seeds] = pred
        return pred

    def _advance(self, node: Node, terminals: int) -> Node | None:
        tables = self.tables
        skip, rule_len, lhs = tables.skip, tables.rule_len, tables.lhs
        items: set[Item] = set()
        complete: list[Item] = []

        def add(r: int, d: int, o: Node) -> None:
            for d2 in skip[r][d]:
                item = (r, d2, o)
                if item not in items:
                    items.add(item)
                    if d2 == rule_len[r]:
                        complete.append(item)

        kernel_scan = node._kernel_scan()
        pred_scan = node.prediction.scan
        for t in iter_bits(terminals):
            for r, d, o in kernel_scan.get(t, ()):
                add(r, d + 1, o)
            for r, d in pred_scan.get(t, ()):
                add(r, d + 1, node)
        while complete:
            r, _, o = complete.pop()
            top = o.leo_top(lhs[r])
            if top is not None:
                if top not in items:
                    items.add(top)
                    complete.append(top)
                continue
            for r2, d2, o2 in o.waiting(lhs[r]):
                add(r2, d2 + 1, o2)
        if len(items) > self.max_kernel_items:
            raise LimitExceeded(
                f"Earley item set has {len(items)} items, over the limit of {self.max_kernel_items} "
                "(max_kernel_items); the grammar is too ambiguous for this input"
            )
        kernel = frozenset(items)
        found = self._nodes.get(kernel)
        if found is not None:
            return found
        t = tables.n_terminals
        seeds = frozenset(
            tables.rhs[r][d] for r, d, _ in kernel if d < rule_len[r] and tables.rhs[r][d] >= t
        )
        new = Node(self, kernel, self._prediction(seeds))
        self._nodes[kernel] = new
        return new
