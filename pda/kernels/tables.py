"""The Earley parser's static tables from integer rules, compiled (`pda.kernels._tables`, pda/kernels/_tables.c).

A grammar here is symbols 0..S-1 and rules: rule r is `lhs[r] -> flat[o_r : o_r + lens[r]]`,
o_r the sum of the lengths before it (int64 arrays).

`fixpoint(lhs, flat, lens, holds)` grows `holds` (bool [S]) by every rule whose right-hand
side symbols all hold, until nothing changes (productive symbols from the terminals, nullable
ones from nothing), and says per rule whether its symbols all hold then. One pass over a
worklist, each occurrence visited once, where the vectorised rounds it replaces cost a
round per level of the grammar (69 for Github_hard---o56025).

`layout(n_terminals, lhs, flat, lens, n_symbols)` is every per-position array
`pda.parser.tables.ParserTables` holds (see `Layout`), for rules whose left-hand sides are
nonterminals (ids n_terminals..S-1): dot positions, each one's symbol, nullable runs, steps,
each nonterminal's start positions and its prediction closure, in one pass each. In numpy and
Python sets they were ~70% of `build_tables` (JSONSchemaBench's traefik-v2: 4,002 rules, ~11 ms).

`build(terminal_names, lhs, rhs, start)` is all of `pda.parser.tables.build_tables` but the
messages: rules given by name are numbered (terminals first, then names as met), rules with an
unproductive symbol pruned, the kept nonterminals renumbered (start, the others by name, `$start`)
and laid out (see `Built`). A small JSON Schema's tables took ~0.3 ms of its cold compile as
Python passes over the names and some twenty numpy calls (their dispatch, not their arithmetic);
this is one call. A grammar it cannot lay out raises `TerminalDefined` or `EmptyLanguage`.
`build_raw` is the same tables as the kernel's bytes (`RawBuilt`), which a compile hands the Earley core.

`fixpoint` and `layout` check every index they read (ValueError) and run without the GIL, as does
`build` but for reading the names (TypeError for a name that is no str). The numpy and Python
forms they replaced are the oracles in tests/test_tables_kernel.py.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from pda.kernels import _tables


def fixpoint(lhs: np.ndarray, flat: np.ndarray, lens: np.ndarray, holds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(holds bool [S], complete bool [R]): the least superset of `holds` closed under the rules, and per rule
    whether its right-hand side symbols all hold in it."""
    grown, complete = _tables.fixpoint(_int64(lhs), _int64(flat), _int64(lens), np.ascontiguousarray(holds, dtype=bool))
    return np.frombuffer(grown, dtype=bool), np.frombuffer(complete, dtype=bool)


class Layout(NamedTuple):
    """The per-position arrays of a grammar (P dot positions, N nonterminals).

    Rule r's positions are rule_start[r] .. rule_start[r] + lens[r] (int64 [R + 1]); per position
    p: `next_sym` (int32, -1 at a rule's end), `lhs_of` (int32), `is_end`, `penultimate` (bool),
    `run_end` (int64: the last position reached from p over nullable symbols); `step` p + 1 ..
    run_end[p + 1] (CSR `step_ptr`/`step_to`, int32; none at a rule's end). Per nonterminal a
    (a - n_terminals): `starts` (CSR, int32), its rules' start runs in rule order, and `closure`
    (CSR, int32 symbol ids ascending), a and every nonterminal predicted from it, transitively.
    """

    rule_start: np.ndarray
    run_end: np.ndarray
    next_sym: np.ndarray
    lhs_of: np.ndarray
    is_end: np.ndarray
    penultimate: np.ndarray
    step_ptr: np.ndarray
    step_to: np.ndarray
    starts_ptr: np.ndarray
    starts: np.ndarray
    closure_ptr: np.ndarray
    closure: np.ndarray


LAYOUT_DTYPES = tuple(np.dtype(d) for d in (np.int64, np.int64, np.int32, np.int32, bool, bool, np.int32, np.int32,
                                             np.int32, np.int32, np.int32, np.int32))


def layout(n_terminals: int, lhs: np.ndarray, flat: np.ndarray, lens: np.ndarray, n_symbols: int) -> Layout:
    """The per-position arrays of the rules (see `Layout`); nullable symbols are `fixpoint` from nothing."""
    found = _tables.layout(int(n_terminals), _int64(lhs), _int64(flat), _int64(lens), int(n_symbols))
    return Layout(*(np.frombuffer(b, dtype=d) for b, d in zip(found, LAYOUT_DTYPES)))


def _int64(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int64)


class Built(NamedTuple):
    """`build`'s tables: nonterminal names by id - n_terminals (start first, `$start` last), the kept rules
    renumbered (`lhs` int64 [K + 1], `flat` int64, `$start -> start` last) and their `Layout`."""

    nonterminal_names: tuple[str, ...]
    lhs: np.ndarray
    flat: np.ndarray
    layout: Layout


class TerminalDefined(ValueError):
    """A rule's left-hand side is a terminal (`name`: the first such rule's)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"{name!r} names both a terminal and a rule")
        self.name = name


class EmptyLanguage(ValueError):
    """The start symbol has no rule whose symbols all derive finite strings."""


class RawBuilt(NamedTuple):
    """`build`'s tables as the kernel returns them: the nonterminal names, and the native-order bytes of `lhs`
    and `flat` (int64) and of each `Layout` array (in its order, of `LAYOUT_DTYPES`). A small grammar's
    parser tables are read as arrays only by the reference parser and the tests; the compiled parser copies
    the bytes (`pda.kernels.earley.Core`), so a compile makes no array of them (~15 numpy calls)."""

    nonterminal_names: tuple[str, ...]
    lhs: bytes
    flat: bytes
    layout: tuple[bytes, ...]

    def arrays(self) -> Built:
        """The same tables as numpy arrays (read-only views of the bytes)."""
        return Built(self.nonterminal_names, np.frombuffer(self.lhs, dtype=np.int64),
                     np.frombuffer(self.flat, dtype=np.int64),
                     Layout(*(np.frombuffer(b, dtype=d) for b, d in zip(self.layout, LAYOUT_DTYPES))))


def build_raw(terminal_names: list[str], lhs: list[str], rhs: list[tuple[str, ...]], start: str) -> RawBuilt:
    """The tables of rules `lhs[r] -> rhs[r]` given by name (see the module docstring), as bytes."""
    kind, *found = _tables.build(terminal_names, lhs, rhs, start)
    if kind == 1:
        raise TerminalDefined(found[0])
    if kind == 2:
        raise EmptyLanguage(f"the start symbol {start!r} derives no finite sentence")
    names, lhs_ids, flat, laid = found
    return RawBuilt(tuple(names), lhs_ids, flat, laid)


def build(terminal_names: list[str], lhs: list[str], rhs: list[tuple[str, ...]], start: str) -> Built:
    """The tables of rules `lhs[r] -> rhs[r]` given by name (see the module docstring), as arrays."""
    return build_raw(terminal_names, lhs, rhs, start).arrays()
