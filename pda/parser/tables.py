"""Grammar IR → the static tables the Earley parser runs on.

Symbols are small integers: terminals first (in the IR's terminal order, which
is also the lexer DFA's column order), then nonterminals. Rules that can never
derive a terminal string are pruned here, so that every live parser node can
still be completed to a sentence; `S' -> start` is added as the last rule.

All of it, from the IR's names to everything indexed by dot position (a JSON Schema
has tens of thousands of positions), is one call of the compiled `pda.kernels.tables.build`:
as numpy rounds and Python sets the layout took ~3.4x as long over JSONSchemaBench's
31-schema sample, and for a small schema the interning and some twenty numpy calls
around it were most of the time (~0.3 ms cold). Here its failures become `GrammarError`s.
The compiled parser copies the kernel's bytes of those arrays (`ParserTables.core_arrays`: no numpy
array is made in a compile), and the Python reference parser reads tuple views of them
(`ParserTables.kernel` and the rest), made on first read.
"""

from __future__ import annotations

import sys
from functools import cached_property
from operator import itemgetter

import numpy as np

from pda.errors import GrammarError
from pda.grammar.ir import GrammarIR
from pda.kernels.tables import Built, EmptyLanguage, Layout, RawBuilt, TerminalDefined, build_raw


class ParserTables:
    """Static facts about the grammar that every parser node consults.

    Per rule r: `lhs[r]`, `rhs[r]`, `rule_start[r]` (its first dot position); per
    nonterminal a (index a - n_terminals): `rules_of`, `closure` (the nonterminals
    predicted, transitively, when a is). Dot position p is (`pos_rule[p]`, dot
    `p - rule_start[pos_rule[p]]`); `next_sym[p]` is the symbol after the dot (-1 at
    the end), `step[p]` the positions after moving over it and then over nullable
    symbols, `skip[r][d]` the positions reached from dot d by stepping over nullables.
    `kernel` holds the same as the flat int32/bool arrays `pda.kernels.earley` takes;
    `core_arrays` the same as the kernel's bytes, which the compiled parser reads (no array made).
    """

    def __init__(self, terminal_names: tuple[str, ...], built: RawBuilt) -> None:
        self.terminal_names = terminal_names
        self.nonterminal_names = built.nonterminal_names
        self._built = built
        rules = len(built.lhs) // 8
        self.start_rule = rules - 1
        # `S'`, the start rule's left side (the parser's root predicts it), and the position after its one symbol.
        self.start_symbol = int.from_bytes(built.lhs[-8:], sys.byteorder, signed=True)
        self.accept_pos: int = int.from_bytes(built.layout[0][8 * (rules - 1) : 8 * rules], sys.byteorder,
                                              signed=True) + 1

    @cached_property
    def _arrays(self) -> Built:
        return self._built.arrays()

    @property
    def core_arrays(self) -> dict[str, object]:
        """`kernel` as the kernel's bytes (what `pda.kernels.earley.Core` copies)."""
        return self._core_arguments(dict(zip(Layout._fields, self._built.layout)))

    @cached_property
    def kernel(self) -> dict[str, object]:
        """The arrays `pda.kernels.earley.Core` takes, as numpy arrays, with `n_terminals` and `accept_pos`."""
        return self._core_arguments(self._arrays.layout._asdict())

    def _core_arguments(self, laid: dict[str, object]) -> dict[str, object]:
        """`Core`'s arguments from the layout's arrays by name (`laid`: bytes or arrays)."""
        return {"n_terminals": len(self.terminal_names), **{name: laid[name] for name in _KERNEL_ARRAYS},
                "accept_pos": self.accept_pos}

    @property
    def _lhs(self) -> np.ndarray:
        return self._arrays.lhs

    @property
    def _flat_rhs(self) -> np.ndarray:
        return self._arrays.flat

    @property
    def _rule_start(self) -> np.ndarray:
        return self._arrays.layout.rule_start

    @property
    def _run_end(self) -> np.ndarray:
        return self._arrays.layout.run_end

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


_LHS, _RHS = itemgetter(0), itemgetter(1)
# The `Layout` arrays the compiled parser reads (`ParserTables.kernel`), by their `Core` argument names.
_KERNEL_ARRAYS = ("next_sym", "lhs_of", "is_end", "penultimate", "step_ptr", "step_to", "closure_ptr", "closure",
                  "starts_ptr", "starts")


def build_tables(ir: GrammarIR) -> ParserTables:
    """Index symbols, prune unproductive rules, then lay out the positions (`pda.kernels.tables.build_raw`)."""
    terminal_names = tuple(t.name for t in ir.terminals)
    try:
        rows = ir.rule_rows
        built = build_raw(list(terminal_names), list(map(_LHS, rows)), list(map(_RHS, rows)), ir.start)
    except TerminalDefined as e:
        raise GrammarError(str(e), terminal=e.name) from None
    except EmptyLanguage:
        raise GrammarError(f"the start symbol {ir.start!r} derives no finite sentence: the language is empty") from None
    return ParserTables(terminal_names, built)
