"""Unicode property classes (`\\p{L}`, `\\P{Lu}`, `\\p{Greek}`) as code-point sets.

Python's `re` has no `\\p{...}`; Lark grammars written for the `regex` package use
it (`/\\p{L}+/`). pda reads a property's members off the `regex` package itself,
so a terminal means exactly what `regex.fullmatch` would make of it: one
`finditer` of `\\p{NAME}+` over a string of every code point gives the ranges,
about 5 ms per property, cached for the life of the process. Any name `regex`
knows works: general categories (`Lu`, `Nd`) and their one-letter groups (`L`,
`N`), long names (`Letter`), scripts (`Greek`, `Script=Latin`), binary
properties (`Alphabetic`). Surrogates never belong to a set (`charset`).
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np
import regex

from pda.regex import charset as cs

# A property name as `regex` spells one; anything else (a `}`, a backslash) is refused early.
PROPERTY_NAME = re.compile(r"[A-Za-z0-9_ .&=:-]+")


@lru_cache(maxsize=1)
def _every_code_point() -> str:
    """The string of all code points 0..U+10FFFF in order (index = code point)."""
    return np.arange(cs.N_CP, dtype="<u4").tobytes().decode("utf-32-le", "surrogatepass")


@lru_cache(maxsize=256)
def property_set(name: str, negated: bool = False) -> cs.CharSet:
    """The code points of `\\p{name}` (`\\P{name}` when `negated`); ValueError for an unknown name."""
    if not PROPERTY_NAME.fullmatch(name):
        raise ValueError(f"malformed Unicode property name {name!r}")
    try:
        members = regex.compile(rf"\p{{{name}}}+")
    except regex.error:
        raise ValueError(f"unknown Unicode property {name!r}") from None
    ranges = [(m.start(), m.end() - 1) for m in members.finditer(_every_code_point())]
    positive = cs.normalise(ranges)
    return cs.complement(positive) if negated else positive


__all__ = ["PROPERTY_NAME", "property_set"]
