"""Integrations with serving stacks: packed bitmask helpers (`bitmask`), transformers (`transformers`),
SGLang's grammar backend (`sglang`).

`bitmask` needs only numpy and is imported with pda. `transformers` needs torch
and transformers, `sglang` SGLang, so each is imported the first time it is used:
`import pda` stays light, and the attribute still works without an explicit import.
"""

import importlib
from types import ModuleType

from pda.integrations import bitmask

_LAZY = ("transformers", "sglang")


def __getattr__(name: str) -> ModuleType:
    if name in _LAZY:
        return importlib.import_module(f"pda.integrations.{name}")
    raise AttributeError(f"module 'pda.integrations' has no attribute {name!r}")


__all__ = ["bitmask", "sglang", "transformers"]
