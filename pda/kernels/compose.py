"""A step mask composed from its base and boundary groups in one compiled call (`pda.kernels._compose`,
pda/kernels/_compose.c).

`compose(acc, base, node, groups, ignore, after_boundary) -> int` sets the int32 mask
`acc` to `base` (an int32 mask of its length, or None: zeros), ORs in the tokens that
cross lexeme boundaries from parser `node`, and returns the result's `fingerprint`:
for each `BoundaryGroup` (`pda.index.token_index`), the node after its terminals
(`node.probe(group.terminals)` when `group.terminals & node.allowed`, else `node`
itself; a probe that returns None drops the group), then the group's suffix
classification under that node's live set `after.allowed | ignore`: read from the
group's memo `group.after`, or made by `after_boundary(group, live)` on a miss
(which records it there). Its tokens allowed outright are set in `acc` (its `tokens`,
int32 ids, when not None, else its `inside` mask ORed in), and its own `groups`
(tokens that cross a second boundary) are composed from the node after, and so on.

It is the loop `pda.masks` ran in Python, ~4 us a group of attribute reads, int
operations and a 19 KB numpy OR; in C the probes and misses still call back into
Python, everything else does not (a replay of 43 JSON Schemas composes 35,000
groups). The base's copy and the fingerprint are in the same call: as numpy's
`copyto`, a call of their own and two wrapper frames they cost ~0.8 us more a
composed mask (10,078 in a 44-schema replay). Parser nodes are duck-typed (`allowed`, `probe`), so the
index layer does not import the parser. The kernel holds the GIL (it calls Python).

`fingerprint(mask)` is a 64-bit hash of all of an int32 mask's words, the key of
`pda.masks`' table of equal masks (a composed mask usually equals one made before:
80% of those of a 44-schema replay). Its only promise: equal masks, equal fingerprints.

Both are the compiled functions themselves (hot path: one call per composed mask, no wrapper frame).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pda.kernels import _compose

compose: Callable[[np.ndarray, np.ndarray | None, Any, tuple, int, Callable[[Any, int], Any]], int] = _compose.compose
fingerprint: Callable[[np.ndarray], int] = _compose.fingerprint
