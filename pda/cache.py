"""pda's on-disk cache folder and atomic writes into it.

Compiled artefacts (vocabulary tries, token-index snapshots, the converted
Qwen2 tokenizer, the demo model) are keyed by content hashes and pda's
version, so a stale entry is never read; deleting the folder is always safe.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

from pda._version import __version__


def cache_dir() -> Path:
    """$PDA_CACHE_DIR, else $XDG_CACHE_HOME/pda, else ~/.cache/pda."""
    if os.environ.get("PDA_CACHE_DIR"):
        return Path(os.environ["PDA_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pda"


def cache_path(kind: str, *key: str) -> Path:
    """Where an artefact of `kind` with this key lives (the key includes pda's version)."""
    name = "-".join([__version__, *key])
    return cache_dir() / kind / f"{name}.pkl"


def load(path: Path) -> Any | None:
    """The object stored at `path`, or None when absent or unreadable (a cache miss)."""
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError):
        return None


def store(path: Path, obj: Any) -> None:
    """Write `obj` at `path` atomically; a cache that cannot be written is skipped silently."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            pickle.dump(obj, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except (OSError, pickle.PicklingError, RecursionError):
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
