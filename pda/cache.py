"""pda's on-disk cache: plain arrays and JSON, verified on every read, bounded in size.

Compiled artefacts (vocabulary tries, lexer DFAs, token-index snapshots, the
converted Qwen2 tokenizer) are stored as one file per entry (docs/cache.md):

    MAGIC | sha256 of the rest (32 bytes) | header length (8 bytes, little-endian) | header JSON | array bytes

The header holds the format version, the entry's kind, its full key, a JSON
`meta` dict and a table of the arrays (name, dtype, shape, offset). Invariants:

* nothing is ever unpickled or evaluated: a file is bytes, JSON and numeric
  arrays of a fixed set of dtypes (`DTYPES`), whatever its content;
* a read returns an object only if the hash matches, the header names the very
  (version, kind, key) asked for, every array lies inside the file, and the
  caller's `decode` accepts the arrays (it checks shapes and index bounds and
  raises `Invalid` otherwise). Anything else is a miss: the caller rebuilds and
  overwrites the entry. A read never raises;
* `VERSION` is a hash of pda's own source, so entries written by other code are
  never read (they age out of the budget);
* the entries' total size stays under `max_bytes()` (`PDA_CACHE_MAX_BYTES`, default
  2 GiB): reads touch an entry's mtime, and a store that pushes this process's
  running total over the budget scans the folder and deletes the least recently
  used entries;
* a folder that cannot be created or written means no disk cache (one logged
  warning), never an error. `PDA_CACHE=0` or `set_enabled(False)` turns it off;
* a store returns once its entry is queued: one background thread (`_Writer`) hashes
  and writes it, so a compile never waits for the disk. A load of a queued entry waits
  for its write; `flush()` waits for all of them, and runs at exit. The queued bytes
  are bounded (`PENDING_MAX_BYTES`): past them a store writes in the caller's thread.

An entry may carry a `tag` (a short hex fingerprint its caller derives cheaply from the
key) as its file name's prefix: `tags(kind)` then answers from the folder's listing,
without hashing a key, whether an entry with that tag may exist. A tag only decides
whether to look; what is read is still verified against the full key.

The hash catches corruption and the key check catches a file copied over
another key's name; neither is a signature against someone who may write the
folder, which is why `decode` still bounds-checks every index it hands on.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import math
import os
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")

MAGIC = b"PDACACHE"
_DIGEST_BYTES = 32
_PREFIX = len(MAGIC) + _DIGEST_BYTES + 8
SUFFIX = ".pdac"
# The only dtypes an entry may hold: no objects, no structured or user types.
DTYPES = frozenset(
    np.dtype(t).str for t in (bool, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)
)
DEFAULT_MAX_BYTES = 2 << 30
# A store re-reads the folder's real size after this many stores even under the budget
# (other processes write to it too).
RESCAN_EVERY = 256
# After an eviction the entries take at most this fraction of the budget, so the next
# stores do not each trigger a scan.
EVICT_TO = 0.9
# A temporary file this old is a crashed writer's leftover.
STALE_TMP_SECONDS = 3600
# Entries queued for the background writer weigh at most this many bytes; a store past it
# writes in the caller's thread. Measured on 43 cold JSON Schemas (Qwen2): 200 stores took
# 0.32 s of the callers' 4.6 s when written in place (hashing, writing, renaming).
PENDING_MAX_BYTES = 256 << 20

_log = logging.getLogger("pda.cache")


class Invalid(ValueError):
    """A cache entry that is well-formed but inconsistent with what its reader needs (a miss)."""


# Errors that reading or decoding a damaged entry can raise: all of them mean a miss.
_BAD_ENTRY = (OSError, ValueError, KeyError, TypeError, IndexError, OverflowError, UnicodeError, RecursionError)


SOURCE_SUFFIXES = (".py", ".c", ".so", ".pyd")


def source_version(root: Path) -> str:
    """A hash of every source and extension file under `root` (relative path and bytes), in sorted order.

    The cache's format version: any change to the code that writes or reads an
    entry changes it, the C kernels (their sources in a clone, their built modules
    in a wheel) included.
    """
    digest = hashlib.sha256(MAGIC)
    for path in sorted(p for p in root.rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file()):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:32]


VERSION = source_version(Path(__file__).resolve().parent)

_enabled: bool | None = None


def set_enabled(flag: bool | None) -> None:
    """Turn the disk cache on or off for this process; None goes back to `$PDA_CACHE`."""
    global _enabled
    _enabled = flag


def enabled() -> bool:
    """Is the disk cache in use? `set_enabled`'s choice, else `$PDA_CACHE` (0/off/false/no: off)."""
    if _enabled is not None:
        return _enabled
    return os.environ.get("PDA_CACHE", "1").strip().lower() not in ("0", "off", "false", "no")


def cache_dir() -> Path:
    """$PDA_CACHE_DIR, else $XDG_CACHE_HOME/pda, else ~/.cache/pda."""
    return Path(_dir_name())


# The folder's name per ($PDA_CACHE_DIR, $XDG_CACHE_HOME): a lookup runs on every walk a disk
# entry may hold, where building a Path costs more than the miss it decides (~10 us).
_dir_names: dict[tuple[str | None, str | None], str] = {}


def _dir_name() -> str:
    """`cache_dir()` as a string, memoised by the environment variables that choose it (`$XDG_CACHE_HOME` only
    read without `$PDA_CACHE_DIR`: each read of `os.environ` costs ~1 us, ~10 in a compile's cold path)."""
    env = os.environ
    named = env.get("PDA_CACHE_DIR")
    which = (named, None) if named else (named, env.get("XDG_CACHE_HOME"))
    found = _dir_names.get(which)
    if found is None:
        if which[0]:
            found = which[0]
        else:
            found = os.path.join(which[1] or os.path.join(os.path.expanduser("~"), ".cache"), "pda")
        if len(_dir_names) >= 16:
            _dir_names.clear()
        _dir_names[which] = found
    return found


def max_bytes() -> int:
    """The size budget of all entries: $PDA_CACHE_MAX_BYTES, else 2 GiB."""
    try:
        return max(0, int(os.environ.get("PDA_CACHE_MAX_BYTES", DEFAULT_MAX_BYTES)))
    except ValueError:
        return DEFAULT_MAX_BYTES


# `json.dumps` with these options made an encoder per call: ~11 us of a ~19 us lookup that misses.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _canonical(key: Mapping[str, Any]) -> str:
    """The key as JSON text, keys sorted and no spaces: what an entry's name hashes and its header holds."""
    return _CANONICAL.encode(key)


def entry_path(kind: str, key: Mapping[str, Any], tag: str | None = None) -> Path:
    """Where the entry of `kind` with this key (and tag) lives: its name is `tag-` and a hash of (version, kind, key)."""
    return Path(_dir_name(), kind, _entry_name(kind, key, tag))


# A tag is the prefix of its entry's file name: lowercase hex, at most this many characters.
TAG_MAX_CHARS = 32
_HEX = frozenset("0123456789abcdef")


def _entry_name(kind: str, key: Mapping[str, Any], tag: str | None = None) -> str:
    name = hashlib.sha256(f"{VERSION}\0{kind}\0{_canonical(key)}".encode()).hexdigest()[:40] + SUFFIX
    if tag is None:
        return name
    if not 0 < len(tag) <= TAG_MAX_CHARS or not _HEX.issuperset(tag):
        raise ValueError(f"a cache entry's tag is 1-{TAG_MAX_CHARS} lowercase hex digits, got {tag!r}")
    return f"{tag}-{name}"


def _tag_of(name: str) -> str | None:
    """The tag of an entry file's name, or None for an untagged entry (or another file)."""
    tag, dash, _ = name.partition("-")
    return tag if dash and name.endswith(SUFFIX) else None


# Per (cache folder, kind): when its entries were last listed, their file names and their tags,
# plus what this process wrote since. A name missing from a listing younger than LISTING_MAX_AGE
# seconds is a miss without a file system call: most walks cost less than the failed open
# (~0.1 ms) that would otherwise confirm it. Another process's new entry is seen once the
# listing is that old (until then it is only a miss, never a wrong answer).
LISTING_MAX_AGE = 5.0
_listings: dict[str, tuple[float, set[str], set[str]]] = {}
# Held while a listing is renewed and while the writer adds an entry to one: an entry written
# during a renewal is in the new listing either way.
_listings_lock = threading.Lock()


def _listing(folder: str) -> tuple[float, set[str], set[str]]:
    """(when, the entry file names, their tags) of `folder` as of a listing at most LISTING_MAX_AGE seconds old."""
    now = time.monotonic()
    found = _listings.get(folder)
    if found is not None and now - found[0] <= LISTING_MAX_AGE:
        return found
    with _listings_lock:
        try:
            names = set(os.listdir(folder))
        except OSError:
            names = set()
        tags = {_tag_of(name) for name in names}
        tags.discard(None)
        found = _listings[folder] = (now, names, tags)
    return found


def _listed(path: Path) -> None:
    """Record an entry this process just wrote in its folder's listing."""
    with _listings_lock:
        found = _listings.get(str(path.parent))
        if found is not None:
            found[1].add(path.name)
            tag = _tag_of(path.name)
            if tag is not None:
                found[2].add(tag)


_NO_TAGS: frozenset[str] = frozenset()
# Per (cache folder, kind): the kind's folder, joined once (bounded: a few kinds per folder).
_kind_folders: dict[tuple[str, str], str] = {}


def _kind_folder(kind: str) -> str:
    """The folder of `kind`'s entries under the current cache folder, as a string."""
    root = _dir_name()
    found = _kind_folders.get((root, kind))
    if found is None:
        if len(_kind_folders) >= 64:
            _kind_folders.clear()
        found = _kind_folders[root, kind] = os.path.join(root, kind)
    return found


def tags(kind: str) -> "set[str] | frozenset[str]":
    """The tags of the entries of `kind` as of the folder's listing (at most LISTING_MAX_AGE seconds old), with
    those this process wrote since; empty with the cache off. Read-only: the set is the listing's own.

    For a caller that looks up many keys of which few are stored (the token index's root walks): a
    tag not in it is a miss decided without hashing the key (~10-20 us with the key's own digest).
    """
    if not enabled():
        return _NO_TAGS
    return _listing(_kind_folder(kind))[2]


def load(
    kind: str, key: Mapping[str, Any], decode: Callable[[dict, dict[str, np.ndarray]], T], tag: str | None = None
) -> T | None:
    """`decode(meta, arrays)` of the verified entry, or None (absent, damaged, another key, or refused by `decode`).

    `decode` raises `Invalid` (or any error a malformed meta dict causes) to refuse an entry.
    `tag` is the one the entry was stored with (part of its file name).
    """
    if not enabled():
        return None
    folder = _kind_folder(kind)
    names = _listing(folder)[1]
    # An empty folder: a miss without hashing the key. The queue is asked first: once it is
    # empty, whatever it held is in the listing.
    if not _writer.busy() and not names:
        return None
    name = _entry_name(kind, key, tag)
    where = os.path.join(folder, name)
    # An entry this process queued is read once written (the write lists it); others only if listed.
    if not _writer.wait_for(where) and name not in names:
        return None
    path = Path(where)
    try:
        meta, arrays = _read(path, kind, key)
        found = decode(meta, arrays)
    except _BAD_ENTRY:
        return None
    try:
        os.utime(path)  # recency for the budget's eviction
    except OSError:
        pass
    return found


def _read(path: Path, kind: str, key: Mapping[str, Any]) -> tuple[dict, dict[str, np.ndarray]]:
    """Parse and verify one entry file; raises one of `_BAD_ENTRY` on anything unexpected."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        buf = bytearray(size)  # writable, so the arrays are too (as freshly built ones are)
        if f.readinto(buf) != size or size < _PREFIX or buf[: len(MAGIC)] != MAGIC:
            raise Invalid("truncated or not an entry")
    view = memoryview(buf)
    if hashlib.sha256(view[len(MAGIC) + _DIGEST_BYTES :]).digest() != buf[len(MAGIC) : len(MAGIC) + _DIGEST_BYTES]:
        raise Invalid("content hash mismatch")
    header_len = int.from_bytes(buf[_PREFIX - 8 : _PREFIX], "little")
    body = _PREFIX + header_len
    if body > size:
        raise Invalid("header past the end")
    header = json.loads(bytes(view[_PREFIX:body]).decode("utf-8"))
    if header["version"] != VERSION or header["kind"] != kind or header["key"] != json.loads(_canonical(key)):
        raise Invalid("another version's or key's entry")
    arrays = {}
    for name, dtype, shape, offset in header["arrays"]:
        if dtype not in DTYPES or not all(isinstance(n, int) and n >= 0 for n in shape) or offset < 0:
            raise Invalid(f"array {name!r}: bad dtype or shape")
        dt = np.dtype(dtype)
        count = math.prod(shape)
        if body + offset + count * dt.itemsize > size:
            raise Invalid(f"array {name!r} past the end")
        arrays[name] = np.frombuffer(buf, dtype=dt, count=count, offset=body + offset).reshape(shape)
    meta = header["meta"]
    if not isinstance(meta, dict):
        raise Invalid("meta is not an object")
    return meta, arrays


def store(
    kind: str, key: Mapping[str, Any], meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray],
    tag: str | None = None,
) -> None:
    """Queue an entry for writing; it is written atomically (a temporary file renamed into place), then the
    folder kept within budget. Raises TypeError, in the caller, for an array of a dtype an entry cannot hold,
    and ValueError for a malformed `tag` (`TAG_MAX_CHARS` lowercase hex digits at most; `load` names it again).

    Arrays that can still change are copied first, so the entry holds what they held at
    this call. A folder that cannot be written is skipped (one warning per folder and process).
    """
    if not enabled():
        return
    path = entry_path(kind, key, tag)
    table, parts, offset = [], [], 0
    for name, array in arrays.items():
        array = np.ascontiguousarray(array)
        if array.dtype.str not in DTYPES:
            raise TypeError(f"cache entry array {name!r} has dtype {array.dtype}, not a plain numeric one")
        if array.flags.writeable:
            array = array.copy()
        pad = -offset % 16  # aligned arrays read faster
        parts.append(bytes(pad))
        offset += pad
        table.append([name, array.dtype.str, list(array.shape), offset])
        parts.append(array.data.cast("B") if array.size else b"")
        offset += array.nbytes
    header = json.dumps(
        {"version": VERSION, "kind": kind, "key": json.loads(_canonical(key)), "meta": meta, "arrays": table},
        separators=(",", ":"), ensure_ascii=True,
    ).encode()
    head = len(header).to_bytes(8, "little") + header
    _writer.submit(_Entry(path, cache_dir(), head, parts, len(head) + offset))


class _Entry:
    """One entry to write: its path, its cache folder, the header and the array bytes."""

    __slots__ = ("path", "root", "head", "parts", "size")

    def __init__(self, path: Path, root: Path, head: bytes, parts: list, size: int) -> None:
        self.path, self.root, self.head, self.parts, self.size = path, root, head, parts, size

    def write(self) -> None:
        """Hash and write the entry (the hash and the writes release the GIL), then account for it."""
        digest = hashlib.sha256(self.head)
        for part in self.parts:
            digest.update(part)
        path, tmp = self.path, None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                f.write(MAGIC + digest.digest() + self.head)
                for part in self.parts:
                    f.write(part)
            os.replace(tmp, path)
            tmp = None
            _listed(path)
        except OSError as e:
            _unwritable(path.parent, e)
            return
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
        _account(self.root, len(MAGIC) + _DIGEST_BYTES + self.size)


class _Writer:
    """The background thread that writes queued entries in order (started on the first store).

    `pending` counts the queued entries per path (a key stored twice is queued twice);
    `wait_for(path)` and `flush()` block on the condition until those are written.
    """

    def __init__(self) -> None:
        self._done = threading.Condition()
        self._queue: deque[_Entry] = deque()
        self._pending: dict[str, int] = {}
        self._bytes = 0
        self._thread: threading.Thread | None = None

    def submit(self, entry: _Entry) -> None:
        """Queue `entry`, or write it here when the queue is full or no thread can be started."""
        with self._done:
            inline = self._bytes + entry.size > PENDING_MAX_BYTES or not self._running()
            if not inline:
                self._queue.append(entry)
                self._pending[str(entry.path)] = self._pending.get(str(entry.path), 0) + 1
                self._bytes += entry.size
                self._done.notify_all()
        if inline:
            entry.write()

    def _running(self) -> bool:
        """Whether the writer thread runs, starting it if need be (not at interpreter shutdown)."""
        if self._thread is None:
            thread = threading.Thread(target=self._run, name="pda-cache-writer", daemon=True)
            try:
                thread.start()
            except RuntimeError:
                return False
            self._thread = thread
        return True

    def _run(self) -> None:
        while True:
            with self._done:
                while not self._queue:
                    self._done.wait()
                entry = self._queue[0]
            try:
                entry.write()
            except Exception:  # a bug, not a full disk: logged, and the queue goes on
                _log.exception("pda: writing the cache entry %s failed", entry.path)
            with self._done:
                self._queue.popleft()
                key = str(entry.path)
                left = self._pending[key] - 1
                if left:
                    self._pending[key] = left
                else:
                    del self._pending[key]
                self._bytes -= entry.size
                self._done.notify_all()

    def busy(self) -> bool:
        """Whether any entry is queued and not yet written (a dict read, no lock)."""
        return bool(self._pending)

    def wait_for(self, path: str) -> bool:
        """Wait until the entries queued for `path` are written; whether there were any."""
        if path not in self._pending:  # a dict read: no lock on the usual path, a miss
            return False
        with self._done:
            while path in self._pending:
                self._done.wait()
        return True

    def flush(self) -> None:
        """Wait until every queued entry is written."""
        with self._done:
            while self._queue:
                self._done.wait()

    def forget(self) -> None:
        """In a forked child: the parent's thread and queue are not this process's (the parent writes them)."""
        self._done = threading.Condition()
        self._queue.clear()
        self._pending.clear()
        self._bytes = 0
        self._thread = None


_writer = _Writer()
atexit.register(_writer.flush)
os.register_at_fork(after_in_child=_writer.forget)


def flush() -> None:
    """Wait until every entry this process stored is on disk (stores return before they are written)."""
    _writer.flush()


_warned: set[str] = set()


def _unwritable(folder: Path, error: OSError) -> None:
    if str(folder) not in _warned:
        _warned.add(str(folder))
        _log.warning("pda: cannot write the cache folder %s (%s); continuing without a disk cache", folder, error)


# Per cache folder: (this process's estimate of its entries' bytes, stores since the last scan).
_usage: dict[str, tuple[int, int]] = {}


def _account(root: Path, written: int) -> None:
    """Add a store to the running total of `root`; past the budget (or every RESCAN_EVERY stores), scan and evict."""
    total, stores = _usage.get(str(root), (-1, 0))
    budget = max_bytes()
    if total >= 0 and total + written <= budget and stores + 1 < RESCAN_EVERY:
        _usage[str(root)] = (total + written, stores + 1)
        return
    _usage[str(root)] = (evict(root, budget), 0)


def usage(root: Path | None = None) -> int:
    """The bytes the entries under `root` (default `cache_dir()`) take now."""
    return sum(size for _, size, _ in _entries(root or cache_dir()))


def _entries(root: Path) -> list[tuple[Path, int, float]]:
    """(path, size, mtime) of every entry under `root`; deletes stale temporary files on the way."""
    found = []
    now = time.time()
    try:
        kinds = [d for d in os.scandir(root) if d.is_dir(follow_symlinks=False)]
    except OSError:
        return found
    for kind in kinds:
        try:
            files = list(os.scandir(kind.path))
        except OSError:
            continue
        for f in files:
            try:
                st = f.stat(follow_symlinks=False)
                if f.name.endswith(SUFFIX):
                    found.append((Path(f.path), st.st_size, st.st_mtime))
                elif f.name.endswith(".tmp") and now - st.st_mtime > STALE_TMP_SECONDS:
                    os.unlink(f.path)
            except OSError:
                continue
    return found


def evict(root: Path, budget: int) -> int:
    """Delete the least recently used entries under `root` until they fit `EVICT_TO * budget`; returns the bytes left.

    Nothing happens while the entries fit the budget itself.
    """
    entries = _entries(root)
    total = sum(size for _, size, _ in entries)
    if total <= budget:
        return total
    target = int(budget * EVICT_TO)
    for path, size, _ in sorted(entries, key=lambda e: e[2]):
        if total <= target:
            break
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        except OSError:
            continue
        total -= size
    return total


def take(
    arrays: Mapping[str, np.ndarray],
    name: str,
    dtype: Any,
    shape: tuple[int | None, ...],
    bounds: tuple[int, int] | None = None,
) -> np.ndarray:
    """`arrays[name]`, checked: exactly this dtype, this shape (None: any length), values in [lo, hi) if given.

    For `decode` functions; raises `Invalid` (a cache miss) otherwise.
    """
    array = arrays.get(name)
    if array is None or array.dtype != np.dtype(dtype) or array.ndim != len(shape):
        raise Invalid(f"array {name!r} is missing or has the wrong dtype or rank")
    if any(want is not None and got != want for got, want in zip(array.shape, shape)):
        raise Invalid(f"array {name!r} has shape {array.shape}, expected {shape}")
    if bounds is not None and array.size and (array.min() < bounds[0] or array.max() >= bounds[1]):
        raise Invalid(f"array {name!r} has values outside [{bounds[0]}, {bounds[1]})")
    return array


def int_to_json(value: int) -> str:
    """A Python int of any size (a terminal bitset) as a hex string, losslessly."""
    return format(value, "x") if value >= 0 else "-" + format(-value, "x")


def int_from_json(text: str) -> int:
    """The inverse of `int_to_json`; raises ValueError or TypeError (a miss) on anything else."""
    if not isinstance(text, str):
        raise Invalid("expected a hex string")
    return int(text, 16)
