"""Grammar IR → the static tables the Earley parser runs on.

Symbols are small integers: terminals first (in the IR's terminal order, which
is also the lexer DFA's column order), then nonterminals. Rules that can never
derive a terminal string are pruned here, so that every live parser node can
still be completed to a sentence; `S' -> start` is added as the last rule.

Here the symbols are interned and the kept nonterminals named; the productive
symbols and everything indexed by dot position (a JSON Schema has tens of thousands
of positions) come from the compiled `pda.kernels.tables`, one pass each (as numpy
rounds and Python sets they took ~3.4x as long over JSONSchemaBench's 31-schema sample).
The compiled parser reads those arrays (`ParserTables.kernel`), and the Python
reference parser reads tuple views of them, made on first read.
"""

from __future__ import annotations

from functools import cached_property
from itertools import chain
from operator import attrgetter

import numpy as np

from pda.errors import GrammarError
from pda.grammar.ir import GrammarIR
from pda.kernels.tables import fixpoint, layout


class ParserTables:
    """Static facts about the grammar that every parser node consults.

    Per rule r: `lhs[r]`, `rhs[r]`, `rule_start[r]` (its first dot position); per
    nonterminal a (index a - n_terminals): `rules_of`, `closure` (the nonterminals
    predicted, transitively, when a is). Dot position p is (`pos_rule[p]`, dot
    `p - rule_start[pos_rule[p]]`); `next_sym[p]` is the symbol after the dot (-1 at
    the end), `step[p]` the positions after moving over it and then over nullable
    symbols, `skip[r][d]` the positions reached from dot d by stepping over nullables.
    `kernel` holds the same as the flat int32/bool arrays `pda.kernels.earley` takes.
    """

    def __init__(self, terminal_names: tuple[str, ...], nonterminal_names: tuple[str, ...], lhs: np.ndarray,
                 flat_rhs: np.ndarray, rule_start: np.ndarray, run_end: np.ndarray,
                 kernel: dict[str, object]) -> None:
        self.terminal_names = terminal_names
        self.nonterminal_names = nonterminal_names
        self._lhs, self._flat_rhs, self._rule_start, self._run_end = lhs, flat_rhs, rule_start, run_end
        self.kernel = kernel
        self.start_rule = len(lhs) - 1
        self.accept_pos: int = kernel["accept_pos"]

    @property
    def n_terminals(self) -> int:
        return len(self.terminal_names)

    def is_terminal(self, sym: int) -> bool:
        return sym < len(self.terminal_names)

    def symbol_name(self, sym: int) -> str:
        t = len(self.terminal_names)
        return self.terminal_names[sym] if sym < t else self.nonterminal_names[sym - t]

    def names_of(self, terminal_set: int) -> list[str]:
        """Terminal names of a bitmask, in grammar order."""
        names = []
        while terminal_set:
            low = terminal_set & -terminal_set
            names.append(self.terminal_names[low.bit_length() - 1])
            terminal_set ^= low
        return names

    # Tuple views for the reference parser and the CLI (the compiled parser reads `kernel`).
    @cached_property
    def lhs(self) -> tuple[int, ...]:
        return tuple(self._lhs.tolist())

    @cached_property
    def rule_start(self) -> tuple[int, ...]:
        return tuple(self._rule_start[:-1].tolist())

    @cached_property
    def rhs(self) -> tuple[tuple[int, ...], ...]:
        flat, starts = self._flat_rhs.tolist(), self._rule_start.tolist()
        # Rule r's symbols are flat[starts[r] - r : starts[r + 1] - r - 1] (one end position per rule before it).
        return tuple(tuple(flat[s - r : e - r - 1]) for r, (s, e) in enumerate(zip(starts, starts[1:])))

    @cached_property
    def rules_of(self) -> tuple[tuple[int, ...], ...]:
        t = len(self.terminal_names)
        rules: list[list[int]] = [[] for _ in self.nonterminal_names]
        for r, a in enumerate(self.lhs):
            rules[a - t].append(r)
        return tuple(tuple(x) for x in rules)

    @cached_property
    def pos_rule(self) -> tuple[int, ...]:
        return tuple(np.repeat(np.arange(len(self._lhs)), np.diff(self._rule_start)).tolist())

    @cached_property
    def next_sym(self) -> tuple[int, ...]:
        return tuple(self.kernel["next_sym"].tolist())

    @cached_property
    def term_bit(self) -> tuple[int, ...]:
        t = len(self.terminal_names)
        return tuple(1 << s if 0 <= s < t else 0 for s in self.next_sym)

    @cached_property
    def is_end(self) -> tuple[bool, ...]:
        return tuple(self.kernel["is_end"].tolist())

    @cached_property
    def penultimate(self) -> tuple[bool, ...]:
        return tuple(self.kernel["penultimate"].tolist())

    @cached_property
    def step(self) -> tuple[tuple[int, ...], ...]:
        return _rows(self.kernel["step_ptr"], self.kernel["step_to"])

    @cached_property
    def closure(self) -> tuple[frozenset[int], ...]:
        return tuple(frozenset(row) for row in _rows(self.kernel["closure_ptr"], self.kernel["closure"]))

    @cached_property
    def skip(self) -> tuple[tuple[tuple[int, ...], ...], ...]:
        starts, run_end = self._rule_start.tolist(), self._run_end.tolist()
        return tuple(
            tuple(tuple(range(p - s, run_end[p] - s + 1)) for p in range(s, e))
            for s, e in zip(starts, starts[1:])
        )


def _rows(ptr: np.ndarray, entries: np.ndarray) -> tuple[tuple[int, ...], ...]:
    """CSR rows as tuples."""
    ptr_list, flat = ptr.tolist(), entries.tolist()
    return tuple(tuple(flat[a:b]) for a, b in zip(ptr_list, ptr_list[1:]))


class _Symbols(dict):
    """Symbol name -> id, a name numbered the first time it is looked up (so lookups run in C: `map`)."""

    def __missing__(self, name: str) -> int:
        self[name] = number = len(self)
        return number


_LHS, _RHS = attrgetter("lhs"), attrgetter("rhs")


def build_tables(ir: GrammarIR) -> ParserTables:
    """Index symbols, prune unproductive rules, then lay out the positions (`pda.kernels.tables`)."""
    terminal_names = [t.name for t in ir.terminals]
    t = len(terminal_names)
    ids = _Symbols(zip(terminal_names, range(t)))
    rules = ir.rules
    lhs_all = np.fromiter(map(ids.__getitem__, map(_LHS, rules)), np.int64, len(rules))
    if t and len(lhs_all) and lhs_all.min() < t:
        name = terminal_names[int(lhs_all[lhs_all < t][0])]
        raise GrammarError(f"{name!r} names both a terminal and a rule", terminal=name)
    rhss = list(map(_RHS, rules))
    lens_all = np.fromiter(map(len, rhss), np.int64, len(rules))
    flat_all = np.fromiter(map(ids.__getitem__, chain.from_iterable(rhss)), np.int64, int(lens_all.sum()))

    # Productive: terminals, then every lhs with a rule whose symbols are all productive; the rules kept.
    terminal = np.zeros(len(ids), dtype=bool)
    terminal[:t] = True
    _, kept = fixpoint(lhs_all, flat_all, lens_all, terminal)
    start = ids.get(ir.start)
    if start is None or not (lhs_all[kept] == start).any():
        raise GrammarError(f"the start symbol {ir.start!r} derives no finite sentence: the language is empty")
    names = list(ids)
    has_rule = np.zeros(len(ids), dtype=bool)
    has_rule[lhs_all[kept]] = True
    has_rule[start] = False  # the start symbol first, then the others by name
    nt_names = [ir.start, *sorted([names[a] for a in np.flatnonzero(has_rule).tolist()]), "$start"]
    renumber = np.full(len(ids), -1, dtype=np.int64)
    renumber[:t] = np.arange(t)
    renumber[[ids[n] for n in nt_names[:-1]]] = t + np.arange(len(nt_names) - 1)

    # The kept rules in IR order, then `$start -> start`.
    aug = t + len(nt_names) - 1
    lhs = np.append(renumber[lhs_all[kept]], aug)
    flat = np.append(renumber[flat_all[np.repeat(kept, lens_all)]], renumber[start])
    lens = np.append(lens_all[kept], 1)
    at = layout(t, lhs, flat, lens, aug + 1)
    kernel = {
        "n_terminals": t,
        "next_sym": at.next_sym,
        "lhs_of": at.lhs_of,
        "is_end": at.is_end,
        "penultimate": at.penultimate,
        "step_ptr": at.step_ptr,
        "step_to": at.step_to,
        "closure_ptr": at.closure_ptr,
        "closure": at.closure,
        "starts_ptr": at.starts_ptr,
        "starts": at.starts,
        "accept_pos": int(at.rule_start[len(lhs) - 1]) + 1,
    }
    return ParserTables(tuple(terminal_names), tuple(nt_names), lhs, flat, at.rule_start, at.run_end, kernel)
