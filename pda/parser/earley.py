"""Earley recogniser over terminal sets, with hash-consed item sets; the step is compiled.

Invariants (see docs/design.md, "The parser"):

* An item is `(p, origin)`: `p` a dot position (a rule and how much of it is
  read, flattened to one integer by `ParserTables`), `origin` the interned
  `Node` where the rule was predicted. A node stores only its *kernel*: the
  items that came from scanning or completion. Its predicted items (origin =
  the node itself) are a pure function of the nonterminals after the kernel's
  dots, shared through predictions.
* Nodes are interned by kernel content, so two positions with equal item sets
  are the same object, and `advance(node, terminals)` is memoised on the node.
  A node is therefore the parser's whole configuration.
* Nullable symbols are stepped over when an item is added (Aycock–Horspool),
  so completions of empty rules never need to be processed.
* Right recursion uses Leo's deterministic-reduction memo, so a chain of
  10,000 right-recursive completions costs O(1) per step. Nothing recurses:
  completion is a work list, Leo chains are walked in a loop.
* `Node.probe` is `advance` for masks, which look past the next lexeme: it is
  remembered only among the parser's `RECENT_PROBES` most recent probes (least
  recently used forgotten; the nodes only they held go at the core's next sweep),
  not on the node. Memoised, those nodes would live as long as the node and, on a long text, make up most of the
  heap (100k-deep JSON: 13 nodes a token).
* Building one node is bounded (`Limits.max_node_items`, `max_node_work`,
  `max_node_seconds`): over a budget it raises `LimitExceeded` before the node
  is interned or memoised (the Leo memos it filled on older nodes stay valid),
  so a failed step can be retried or rolled back.

The nodes and their step are `pda.kernels.earley` (C), which copies a grammar's
`ParserTables.core_arrays`. `pda.reference.ReferenceEarley` is the same
algorithm in Python, the oracle the tests compare the kernel to.
"""

from __future__ import annotations

from pda.errors import LimitExceeded
from pda.kernels.earley import Core, Node
from pda.limits import DEFAULT_LIMITS, Limits
from pda.parser.tables import ParserTables

__all__ = ["EarleyParser", "Node", "RECENT_PROBES"]

# Probes the parser remembers, most recent first (each entry keeps two nodes alive): the
# masks of one node at several lexer states probe the same terminal sets (JSON replay:
# 8,884 probes that built a node, 3,302 of them distinct).
RECENT_PROBES = 2048


class EarleyParser:
    """Owns the tables, the compiled core (predictions, intern table, probe memo) and the root node of one grammar."""

    def __init__(self, tables: ParserTables, *, limits: Limits = DEFAULT_LIMITS) -> None:
        self.tables = tables
        self.limits = limits
        self.core = Core(
            **tables.core_arrays,
            max_items=limits.max_node_items,
            max_work=limits.max_node_work,
            max_seconds=limits.max_node_seconds,
            recent_probes=RECENT_PROBES,
            error=LimitExceeded,
        )
        self.root: Node = self.core.root(tables.start_symbol)
