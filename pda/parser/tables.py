"""Grammar IR → the static tables the Earley parser runs on.

Symbols are small integers: terminals first (in the IR's terminal order, which
is also the lexer DFA's column order), then nonterminals. Rules that can never
derive a terminal string are pruned here, so that every live parser node can
still be completed to a sentence; `S' -> start` is added as the last rule.

Everything indexed by dot position is computed as whole arrays (a JSON Schema has
tens of thousands of positions: per position in Python, this was a fifth of its
compile); the compiled parser reads those arrays (`ParserTables.kernel`), and the
Python reference parser reads tuple views of them, made on first read.
"""

from __future__ import annotations

from functools import cached_property
from itertools import chain

import numpy as np

from pda.errors import GrammarError
from pda.grammar.ir import GrammarIR


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


def _ranges(first: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR (pointers, entries) whose row i is first[i], first[i] + 1, ..., first[i] + count[i] - 1 (int32)."""
    ptr = np.zeros(len(count) + 1, dtype=np.int64)
    np.cumsum(count, out=ptr[1:])
    offset = np.arange(ptr[-1], dtype=np.int64) - np.repeat(ptr[:-1], count)
    return ptr.astype(np.int32), (np.repeat(first, count) + offset).astype(np.int32)


def _closures(direct: list[set[int]]) -> list[set[int]]:
    """Per node a, a and every node reachable from it over `direct` edges.

    Each node's set is the union of its successors' (children first, by an explicit
    stack), so a node's closure is walked once, not once per node that reaches it
    (wp_124's 2,275 nonterminals: 2.1 -> 1.1 ms). A cycle (left
    recursion, rare in generated grammars) falls back to one search per node.
    """
    n = len(direct)
    done: list[set[int] | None] = [None] * n
    for root in range(n):
        if done[root] is not None:
            continue
        on_path = {root}
        stack = [(root, iter(direct[root]))]
        while stack:
            a, successors = stack[-1]
            for b in successors:
                if done[b] is None:
                    if b in on_path:
                        return [_reached(a, direct) for a in range(n)]
                    on_path.add(b)
                    stack.append((b, iter(direct[b])))
                    break
            else:
                stack.pop()
                on_path.discard(a)
                reached = {a}
                for b in direct[a]:
                    reached |= done[b]  # type: ignore[operator]
                done[a] = reached
    return done  # type: ignore[return-value]


def _reached(a: int, direct: list[set[int]]) -> set[int]:
    """a and every node reachable from it over `direct` edges, by one search."""
    seen = {a}
    stack = [a]
    while stack:
        for c in direct[stack.pop()]:
            if c not in seen:
                seen.add(c)
                stack.append(c)
    return seen


def _fixpoint(lhs: np.ndarray, flat: np.ndarray, rule_of: np.ndarray, holds: np.ndarray) -> np.ndarray:
    """Grow `holds` (per symbol) by every rule whose right-hand side symbols all hold, until nothing changes.

    One vectorised pass per round; rounds are bounded by the grammar's depth.
    """
    n_rules = len(lhs)
    holds = holds.copy()
    count = np.count_nonzero(holds)
    while True:
        failing = np.bincount(rule_of[~holds[flat]], minlength=n_rules)
        holds[lhs[failing == 0]] = True
        grown = np.count_nonzero(holds)  # symbols only ever join: an unchanged count is no change
        if grown == count:
            return holds
        count = grown


def build_tables(ir: GrammarIR) -> ParserTables:
    """Index symbols, prune unproductive rules, compute nullables, closures and the per-position arrays."""
    terminal_names = [t.name for t in ir.terminals]
    t = len(terminal_names)
    ids = {name: i for i, name in enumerate(terminal_names)}
    lhs_all = np.array([ids.setdefault(r.lhs, len(ids)) for r in ir.rules], dtype=np.int64)
    if t and len(lhs_all) and lhs_all.min() < t:
        name = terminal_names[int(lhs_all[lhs_all < t][0])]
        raise GrammarError(f"{name!r} names both a terminal and a rule", terminal=name)
    flat_all = np.array([ids.setdefault(s, len(ids)) for r in ir.rules for s in r.rhs], dtype=np.int64)
    lens_all = np.array([len(r.rhs) for r in ir.rules], dtype=np.int64)
    rule_of = np.repeat(np.arange(len(lhs_all)), lens_all)

    # Productive: terminals, then every lhs with a rule whose symbols are all productive.
    terminal = np.zeros(len(ids), dtype=bool)
    terminal[:t] = True
    productive = _fixpoint(lhs_all, flat_all, rule_of, terminal)
    kept = np.bincount(rule_of[~productive[flat_all]], minlength=len(lhs_all)) == 0
    start = ids.get(ir.start)
    if start is None or not (lhs_all[kept] == start).any():
        raise GrammarError(f"the start symbol {ir.start!r} derives no finite sentence: the language is empty")
    names = list(ids)
    kept_lhs = {names[a] for a in np.unique(lhs_all[kept]).tolist()}
    kept_lhs.discard(ir.start)  # the start symbol first, then the others by name
    nt_names = [ir.start, *sorted(kept_lhs), "$start"]
    renumber = np.full(len(ids), -1, dtype=np.int64)
    renumber[:t] = np.arange(t)
    renumber[[ids[n] for n in nt_names[:-1]]] = t + np.arange(len(nt_names) - 1)

    # The kept rules in IR order, then `$start -> start`.
    aug = t + len(nt_names) - 1
    lhs = np.append(renumber[lhs_all[kept]], aug)
    flat = np.append(renumber[flat_all[kept[rule_of]]], renumber[start])
    lens = np.append(lens_all[kept], 1)
    n_rules = len(lhs)
    rule_of = np.repeat(np.arange(n_rules), lens)
    nullable = _fixpoint(lhs, flat, rule_of, np.zeros(aug + 1, dtype=bool))

    # Dot positions: rule r's are rule_start[r] .. rule_start[r] + lens[r] (the last at its end).
    rule_start = np.zeros(n_rules + 1, dtype=np.int64)
    np.cumsum(lens + 1, out=rule_start[1:])
    n_pos = int(rule_start[-1])
    pos_rule = np.repeat(np.arange(n_rules), lens + 1)
    dot = np.arange(n_pos) - rule_start[pos_rule]
    is_end = dot == lens[pos_rule]
    next_sym = np.full(n_pos, -1, dtype=np.int64)
    next_sym[~is_end] = flat
    # run_end[p]: the last position reached from p over nullable symbols (a rule's end stops every run).
    over_nullable = ~is_end & nullable[np.maximum(next_sym, 0)]
    run_end = np.minimum.accumulate(np.where(over_nullable, n_pos, np.arange(n_pos))[::-1])[::-1]

    # step[p]: p + 1 .. run_end[p + 1], nothing at a rule's end.
    after = np.minimum(np.arange(n_pos) + 1, n_pos - 1)
    step_ptr, step_to = _ranges(after, np.where(is_end, 0, run_end[after] - after + 1))
    # A nonterminal's start positions: each of its rules' skip[r][0], rules in order.
    by_lhs = np.argsort(lhs, kind="stable")
    firsts = rule_start[:-1][by_lhs]
    counts = run_end[firsts] - firsts + 1
    _, starts = _ranges(firsts, counts)
    starts_ptr = np.zeros(len(nt_names) + 1, dtype=np.int32)
    np.cumsum(np.bincount(lhs[by_lhs] - t, weights=counts, minlength=len(nt_names)).astype(np.int64),
              out=starts_ptr[1:])

    # closure[a]: the nonterminals reached from a through the symbols at its rules' start runs.
    direct: list[set[int]] = [set() for _ in nt_names]
    predicted = next_sym[starts]
    owner = np.repeat(lhs[by_lhs] - t, counts)
    for a, b in zip(owner[predicted >= t].tolist(), (predicted[predicted >= t] - t).tolist()):
        direct[a].add(b)
    closure_rows = list(map(sorted, _closures(direct)))
    closure_ptr = np.zeros(len(closure_rows) + 1, dtype=np.int32)
    np.cumsum(list(map(len, closure_rows)), out=closure_ptr[1:])
    closure = np.fromiter(chain.from_iterable(closure_rows), dtype=np.int32, count=int(closure_ptr[-1])) + t

    kernel = {
        "n_terminals": t,
        "next_sym": next_sym.astype(np.int32),
        "lhs_of": lhs[pos_rule].astype(np.int32),
        "is_end": is_end,
        "penultimate": dot == lens[pos_rule] - 1,
        "step_ptr": step_ptr,
        "step_to": step_to,
        "closure_ptr": closure_ptr,
        "closure": closure,
        "starts_ptr": starts_ptr,
        "starts": starts,
        "accept_pos": int(rule_start[n_rules - 1]) + 1,
    }
    return ParserTables(tuple(terminal_names), tuple(nt_names), lhs, flat, rule_start, run_end, kernel)
