"""The Earley parser's nodes and their step, one compiled module (`pda.kernels._earley`, pda/kernels/_earley.c).

`Core(...)` holds one grammar's static tables, given as flat arrays over dot positions
p (a rule and how much of it is read, flattened by `pda.parser.tables`):

* `next_sym` int32 [P]: the symbol after the dot, -1 at a rule's end; `lhs_of` int32 [P]:
  the rule's left-hand side; `is_end`, `penultimate` bool [P]: the dot is at the end, or
  one symbol before it;
* `step_ptr` int32 [P + 1], `step_to`: the positions after moving the dot over the next
  symbol and then over nullable ones (`step_to[step_ptr[p]:step_ptr[p + 1]]`);
* per nonterminal a (symbol `n_terminals + a`): `closure` (CSR), the nonterminals
  predicted, transitively, when a is; `starts` (CSR), the positions its rules start at
  (after leading nullable symbols);
* each array a 1-dimensional C-contiguous buffer of its entries (int32, or one byte for the bool ones), or a
  `bytes` object of their native-order bytes, as `pda.kernels.tables.build` returns them (copied, not kept);
* `accept_pos`, the position of the finished start rule; the budgets `max_items`,
  `max_work`, `max_seconds` and the exception class raised past one; `recent_probes`,
  the size of the probe memo.

`Core.root(symbol)` makes a root node predicting `symbol`. A node (`Node`) is an
interned Earley item set with `allowed` (the terminals it can scan, an int bitmask),
`accepting`, `cache` (a dict the mask layer owns), `kernel` (a frozenset of
(position, origin node), built when read) and `advance(terminals)` /
`probe(terminals)`: the node after a lexeme typed as `terminals`, or None. `advance`
memoises on the node; `probe` only in the core's `recent_probes` most recent probes
(least recently used forgotten), as masks probe many boundaries whose nodes should not
live as long as the node. `Core.stats()` counts live nodes, predictions and remembered
probes; `Core.clear_probes()` forgets the probes.

The core owns its nodes (an arena) and the garbage collector tracks the core only: a
node refers to the nodes it reaches by plain pointers and holds its core, so a node a
matcher holds keeps the core and everything the node reaches alive, and a core nothing
holds is freed with its nodes. The nodes nothing reaches any more (forgotten probes,
dropped matchers' paths) are freed by a sweep that runs before a step once the arena
has doubled since the last one, and in `stats` and `clear_probes`. A step reads the clock once per `CLOCK_EVERY_WORK` work units (~1 ms of work)
for `max_seconds`.

Why C: a mask at a new parser state probes every lexeme boundary its tokens cross,
and on a large grammar each probe builds a node (python.lark: ~250 per new mask). In
Python a node cost ~40 µs of interpreter work; here it is a few µs. The step runs
with the GIL held (it reads Python-owned nodes) but runs no Python code between its
start and its result. `pda.reference.ReferenceEarley` is the plain-Python parser the
tests compare it to, node for node.
"""

from __future__ import annotations

from pda.kernels._earley import CLOCK_EVERY_WORK, Core, Node

__all__ = ["CLOCK_EVERY_WORK", "Core", "Node"]
