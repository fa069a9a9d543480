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

Both check every index they read (ValueError) and run without the GIL. The numpy and Python
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


_DTYPES = (np.int64, np.int64, np.int32, np.int32, bool, bool, np.int32, np.int32, np.int32, np.int32, np.int32,
           np.int32)


def layout(n_terminals: int, lhs: np.ndarray, flat: np.ndarray, lens: np.ndarray, n_symbols: int) -> Layout:
    """The per-position arrays of the rules (see `Layout`); nullable symbols are `fixpoint` from nothing."""
    found = _tables.layout(int(n_terminals), _int64(lhs), _int64(flat), _int64(lens), int(n_symbols))
    return Layout(*(np.frombuffer(b, dtype=d) for b, d in zip(found, _DTYPES)))


def _int64(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int64)
