"""`ByteLRU`: an in-memory cache bounded by the bytes of what it holds, least recently used evicted.

Used for the memos that outlive one grammar (terminal DFAs by pattern, all-terminal
products, walk results by content): they are shared across grammars on purpose, so
nothing else would ever free them.

Invariants:
* `nbytes` is the sum of the sizes given to `put` for the entries present, and stays
  at most `max_bytes` after every `put` but while one entry alone is larger (the newest
  entry is always kept, so a caller can use what it just stored).
* `get` and `put` are thread-safe: grammars compiled for one vocabulary serve from
  several threads.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any


class ByteLRU:
    """A key → value memo holding at most `max_bytes` (as `put`'s callers measure them)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.nbytes = 0
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

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
            while self.nbytes > self.max_bytes and len(self._entries) > 1:
                _, (_, dropped) = self._entries.popitem(last=False)
                self.nbytes -= dropped
