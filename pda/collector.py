"""The cyclic garbage collector paused while a grammar is built.

Building a grammar allocates hundreds of thousands of short-lived containers (regex
syntax trees, NFA state lists, subset-construction sets, Earley items), and each
700 allocations start a collection that walks the young objects, now and then all
of them: measured on a JSONSchemaBench sample, collections were 15-20% of a cold
compile. Reference counting frees all of that garbage as it goes; the builders make
no reference cycles worth collecting. So `paused()` disables the cyclic collector
for the duration of a build and restores it afterwards.

Invariants: the collector is restored to what it was before the outermost `paused()`
(a user who disabled it keeps it disabled); nested and concurrent builds share one
pause, which ends when the last of them leaves; a user's own `gc.enable()` during a
build is honoured until the build ends.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def paused() -> Iterator[None]:
    """Run the body with the cyclic garbage collector disabled (see the module docstring)."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
