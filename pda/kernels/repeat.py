"""A counted repeat of a small DFA written out copy by copy, one compiled call (`pda.kernels._repeat`,
pda/kernels/_repeat.c).

`extended(prefix, body, lo, hi)` is prefix · body{lo,hi} (hi None: unbounded) as
`pda.regex.compose` composes it: the prefix's states first, then one copy of the body's
states but its start per count, every copy's accepting states reading the next copy's start
edges (the last copy's, unbounded, its own). A JSON Schema string of `maxLength` 64 is 64
copies of the JSON string character's 25 states; numpy wrote them in a dozen passes over
the whole table and its prefix then took another copy of it, this writes each entry once,
without the GIL. None where the composition does not apply (the body's start accepts, or a
byte could be read two ways: an accepting state of the body, or of the prefix, reads a byte
the body's start reads). tests/test_counted_repeat.py checks it against the numpy
construction it replaced.
"""

from __future__ import annotations

import numpy as np

from pda.kernels import _repeat

Partial = tuple[np.ndarray, np.ndarray]


def extended(prefix: Partial, body: Partial, lo: int, hi: int | None, room: int = 0) -> Partial | None:
    """prefix · body{lo,hi} over the same columns (see the module docstring): (trans int32 [n, k] with -1 for
    none, accept bool [n]), or None. Partial DFAs (trans, accept) start at 0; the body's start is never entered
    again (`pda.regex.compose` splits off a start that is). `room`: both arrays have as many more rows at their
    end, left unset, where the caller writes what follows the repeat (a counted string's closing quote) instead
    of copying the whole table to append it."""
    pt, pa = prefix
    bt, ba = body
    pt = np.ascontiguousarray(pt, dtype=np.int32)
    bt = np.ascontiguousarray(bt, dtype=np.int32)
    copies = hi if hi is not None else max(lo, 1)
    n = len(pt) + copies * (len(bt) - 1)
    trans = np.empty((n + room, bt.shape[1]), dtype=np.int32)
    accept = np.empty(n + room, dtype=bool)
    if not _repeat.extend(pt, np.ascontiguousarray(pa, dtype=bool).view(np.uint8), bt,
                          np.ascontiguousarray(ba, dtype=bool).view(np.uint8), lo, -1 if hi is None else hi,
                          trans[:n], accept[:n].view(np.uint8)):
        return None
    return trans, accept
