"""`ByteLRU`: an in-memory cache bounded by the bytes of what it holds, least recently used evicted (and `ByteRing`,
its first-in-first-out sibling for values kept alive, never read).

Used for the memos that outlive one grammar (terminal DFAs by pattern, all-terminal
products, walk results by content): they are shared across grammars on purpose, so
nothing else would ever free them; and the memos a grammar would keep alive past its
users (compiled grammars, the masks kept for the next request).

Each such memo is created under a budget name (`budget_cache`), whose default its
owner registers (`register_budget`) and a user may change at any time
(`pda.set_memory_budget(name, max_bytes)`: every live memo of that name is resized at
once, evicting; `pda.memory_budgets()` reports limits and use). docs/limits.md lists
the names and defaults.

Invariants:
* `nbytes` is the sum of the sizes given to `put` (or found by `reweigh`'s last full pass) for the entries present, and stays
  at most `max_bytes` after every `put` or `resize` but while one entry alone is larger
  (the newest entry is always kept, so a caller can use what it just stored).
* `get`, `put` and `resize` are thread-safe: grammars compiled for one vocabulary serve
  from several threads.
"""

from __future__ import annotations

import threading
import weakref
from abc import ABC, abstractmethod
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T", "ByteLRU", "ByteRing")


# `reweigh` weighs this many entries per call, amortised (a full pass once enough calls have paid for it):
# `pda.compile` reweighs its kept grammars on every call, and a full pass over ~120 of them cost ~0.25 ms, a
# tenth of a small JSON Schema's compile.
REWEIGH_PER_CALL = 8


class _ByteBudget(ABC):
    """What `ByteLRU` and `ByteRing` share: `nbytes` held at most `max_bytes` by dropping their oldest entry
    (`_drop_oldest`, which returns its size), but the newest."""

    max_bytes: int
    nbytes: int
    _entries: Any
    _lock: threading.Lock

    def __len__(self) -> int:
        return len(self._entries)

    def resize(self, max_bytes: int) -> None:
        """Hold at most `max_bytes` from now on, dropping the oldest at once."""
        with self._lock:
            self.max_bytes = max_bytes
            self._evict()

    def _evict(self) -> None:
        while self.nbytes > self.max_bytes and len(self._entries) > 1:
            self.nbytes -= self._drop_oldest()

    @abstractmethod
    def _drop_oldest(self) -> int:
        """Remove the oldest entry; its size."""


class ByteLRU(_ByteBudget):
    """A key → value memo holding at most `max_bytes` (as `put`'s callers measure them)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.nbytes = 0
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._reweigh_credit = 0  # entries the `reweigh` calls since its last full pass have paid to weigh

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value stored under `key` (now the most recently used), else `default`."""
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                self.misses += 1
                return default
            self._entries.move_to_end(key)
            self.hits += 1
            return found[0]

    def put(self, key: Hashable, value: Any, size: int) -> None:
        """Store `value` under `key` as `size` bytes, evicting the least recently used past the budget."""
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.nbytes -= old[1]
            self._entries[key] = (value, size)
            self.nbytes += size
            self._evict()

    def reweigh(self, weigh: Callable[[Any], int]) -> None:
        """Measure every entry again (`weigh(value)`: for values that grow while held), evicting past the budget;
        amortised: a call weighs everything only once the calls since the last full pass have paid for it
        (`REWEIGH_PER_CALL` entries each), so growth is seen within len/REWEIGH_PER_CALL calls."""
        with self._lock:
            self._reweigh_credit += REWEIGH_PER_CALL
            if self._reweigh_credit < len(self._entries):
                return
            self._reweigh_credit = 0
            self._entries = OrderedDict((key, (value, weigh(value))) for key, (value, _) in self._entries.items())
            self.nbytes = sum(size for _, size in self._entries.values())
            self._evict()

    def _drop_oldest(self) -> int:
        return self._entries.popitem(last=False)[1][1]  # the least recently used


class ByteRing(_ByteBudget):
    """What was put last, up to `max_bytes` (as `put`'s callers measure them): the oldest dropped first.

    For a memo that only keeps values alive and is never read (`pda.masks`' recent masks: one put
    per computed mask, each a new key): first in, first out is then least recently used, at a
    deque's cost (~0.5 us a put where `ByteLRU`'s ordered dict cost ~1.5). Same invariants as
    `ByteLRU` on `nbytes`, the newest entry and thread safety; resized by its budget like it.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.nbytes = 0
        # Values and their sizes in two deques, oldest first (no tuple per entry for the collector to track).
        self._entries: deque[Any] = deque()
        self._sizes: deque[int] = deque()
        self._lock = threading.Lock()

    def put(self, value: Any, size: int) -> None:
        """Keep `value` as `size` bytes, dropping the oldest past the budget."""
        with self._lock:
            self._entries.append(value)
            self._sizes.append(size)
            self.nbytes += size
            self._evict()

    def _drop_oldest(self) -> int:
        self._entries.popleft()
        return self._sizes.popleft()


# Budget name -> (max bytes of each memo of that name, the live memos).
_budgets: dict[str, tuple[int, "weakref.WeakSet[ByteLRU | ByteRing]"]] = {}
_budgets_lock = threading.Lock()


def register_budget(name: str, default_bytes: int) -> None:
    """Declare a budget name and its default (once, by the module that owns the memos)."""
    with _budgets_lock:
        _budgets.setdefault(name, (default_bytes, weakref.WeakSet()))


def budget_cache(name: str) -> ByteLRU:
    """A new memo under the registered budget `name` (its current limit; resized with it)."""
    return _budgeted(name, ByteLRU)


def budget_ring(name: str) -> ByteRing:
    """A new `ByteRing` under the registered budget `name` (its current limit; resized with it)."""
    return _budgeted(name, ByteRing)


def _budgeted(name: str, kind: type[T]) -> T:
    with _budgets_lock:
        limit, live = _budgets[name]
        cache = kind(limit)
        live.add(cache)
    return cache


def set_memory_budget(name: str, max_bytes: int) -> None:
    """Limit every in-memory cache called `name` to `max_bytes` each, now and for those made later.

    The names and their defaults are in docs/limits.md (`memory_budgets()` lists them);
    0 keeps only the newest entry of each. Raises ValueError for an unknown name or a
    negative size, TypeError for a size that is not an int.
    """
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int):
        raise TypeError(f"max_bytes must be an int, got {type(max_bytes).__name__}")
    if max_bytes < 0:
        raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
    with _budgets_lock:
        if name not in _budgets:
            raise ValueError(f"no memory budget named {name!r}; the names are {', '.join(sorted(_budgets))}")
        live = _budgets[name][1]
        _budgets[name] = (max_bytes, live)
        caches = list(live)
    for cache in caches:
        cache.resize(max_bytes)


def memory_budgets() -> dict[str, dict[str, int]]:
    """Per budget name: its limit per cache (`max_bytes`), the live caches, and the bytes they hold."""
    with _budgets_lock:
        return {
            name: {"max_bytes": limit, "caches": len(live), "bytes": sum(c.nbytes for c in list(live))}
            for name, (limit, live) in sorted(_budgets.items())
        }
