"""The token index's classification objects, and a step mask composed from them in one compiled call
(`pda.kernels._compose`, pda/kernels/_compose.c).

Types (compiled; none is tracked by the garbage collector):

* `Classification(inside=None, groups=(), tokens=None)`: the tokens allowed outright from a
  lexer state, `inside` (a packed int32 mask) or `tokens` (int32 ids ascending, a sparse
  walk's few) or neither (both None), and `groups`, a tuple of `BoundaryGroup`s;
  `nbytes()` is the bytes of its arrays (the allowed tokens and the groups' nodes).
  `compose` keeps a reference to the numpy array it last read from one (with its address:
  asking a numpy array for its buffer was a quarter of compose's own time), read again only
  once the field holds another array (see the invariants in pda/kernels/_compose.c).
* `BoundaryGroup(terminals=None, nodes=None, key=None)`: tokens whose lexeme ended as the
  terminal set `terminals` (an int) at the trie nodes `nodes` (int64); `key` is their bytes
  (`nodes.tobytes()` when not given), `after` a new dict, the group's suffix classification
  per live set after the boundary. Called without arguments both give an object whose
  fields the caller then sets (the walk kernel, `pda.kernels.walk.IndexWalks`, makes them so).
* `ExtendedMask(base, ids)`: the int32 mask `base` (None: no words) with the int32 token ids
  `ids` set: a step mask that adds a few tokens to its state's shared mask keeps only those
  (`base` shared, `ids` ascending and distinct; an `ExtendedMask` base is flattened into its base
  and ids). `pda.rows.copy_row` writes it into a row; `ids` reads back as bytes, `nbytes` is
  the object's own size.

They hold arrays, ints, bytes, tuples of each other and dicts of classifications, and the
index never makes a cycle of them (a group's `after` holds the classifications of walks made
after it, whose groups are new objects): so the collector need not read them, nor then their
groups' tuples and `after` dicts, which hold nothing it tracks. A first document of a JSON
Schema makes tens of thousands; tracked (as classes with `__slots__`), every collection of
the old generations read them all (a 44-schema replay: ~20% of its mask time in collections).

`compose(acc, root, node, ignore, after_boundary, sparse_max)` is the mask at a lexer state
for parser `node`: `root`, the index's `Classification` there, gives its inside tokens (its
`inside` mask, or its few `tokens`, set in `acc` as a group's are; None: none) and its
boundary groups; `acc` is an int32 scratch buffer of the
mask's length (not `root.inside`), written only where the result is dense (below). For each group, the node after its terminals
(`node.probe(group.terminals)` when `group.terminals & node.allowed`, else `node` itself; a
probe that returns None drops the group), then the group's suffix classification under that
node's live set `after.allowed | ignore`: read from the group's memo `group.after`, or made
by `after_boundary(group, live)` on a miss (which records it there). Its tokens allowed
outright are set in `acc` (its `tokens`, when not None, else its `inside` mask ORed in), and
its own `groups` (tokens that cross a second boundary) are composed from the node after, and
so on. The result by what the groups added to `root.inside`:

* nothing: `root.inside` itself (None when it is None and nothing was added): shared, no copy;
* at most `sparse_max` tokens (a root's `tokens` among them): `ExtendedMask(root.inside, those ids)`; a 44-schema replay's
  step masks add p50 66 tokens, p99 803, to their state's (Qwen2: 4,748 words), so no 19 KB
  mask is made, kept and faulted in per step (a first document's masks were ~45 MB of them);
* more: `fingerprint(acc)`, `acc` holding the mask (the caller keeps it, equal ones once).

`acc` is written only when needed: while the groups add ids only, those not in `root.inside`
are noted as they come and `acc` is left as it was; an inside mask ORed in, or more than
`sparse_max` ids, copy `root.inside` into it first. Copying the 19 KB root mask for every
composition, most of which end as an `ExtendedMask`, was the bulk of a miss's memory traffic.

It is the loop `pda.masks` ran in Python, ~4 us a group of attribute reads, int
operations and a 19 KB numpy OR; in C the probes and misses still call back into
Python, everything else does not, the groups' and classifications' fields read directly.
Parser nodes are duck-typed (`allowed`, `probe`), so the index layer does not import the
parser. The kernel holds the GIL (it calls Python).

`fingerprint(mask)` is a 64-bit hash of all of an int32 mask's words, the key of
`pda.masks`' table of equal dense masks. Its only promise: equal masks, equal fingerprints.

All are the compiled objects themselves (hot path: one call per composed mask, no wrapper frame).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pda.kernels import _compose

Classification = _compose.Classification
BoundaryGroup = _compose.BoundaryGroup
ExtendedMask = _compose.ExtendedMask

compose: Callable[[np.ndarray, Any, Any, int, Callable[[Any, int], Any], int],
                  np.ndarray | ExtendedMask | int | None] = _compose.compose
fingerprint: Callable[[np.ndarray], int] = _compose.fingerprint
