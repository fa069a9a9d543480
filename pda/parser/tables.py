"""Grammar IR → the static tables the Earley parser runs on.

Symbols are small integers: terminals first (in the IR's terminal order, which
is also the lexer DFA's column order), then nonterminals. Rules that can never
derive a terminal string are pruned here, so that every live parser node can
still be completed to a sentence; `S' -> start` is added as the last rule.
"""

from __future__ import annotations

from dataclasses import dataclass

from pda.errors import GrammarError
from pda.grammar.ir import GrammarIR


@dataclass(frozen=True)
class ParserTables:
    """Static facts about the grammar that every parser node consults."""

    terminal_names: tuple[str, ...]
    nonterminal_names: tuple[str, ...]
    lhs: tuple[int, ...]
    rhs: tuple[tuple[int, ...], ...]
    rule_len: tuple[int, ...]
    skip: tuple[tuple[tuple[int, ...], ...], ...]
    nullable: frozenset[int]
    closure: tuple[frozenset[int], ...]
    rules_of: tuple[tuple[int, ...], ...]
    start_rule: int
    start_symbol: int
    # Dot positions, flattened: position p is (pos_rule[p], pos_dot[p]).
    rule_start: tuple[int, ...]
    pos_rule: tuple[int, ...]
    next_sym: tuple[int, ...]
    term_bit: tuple[int, ...]
    step: tuple[tuple[int, ...], ...]
    is_end: tuple[bool, ...]
    penultimate: tuple[bool, ...]
    accept_pos: int

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


def _productive(ir: GrammarIR, terminal_names: set[str]) -> set[str]:
    productive: set[str] = set()
    changed = True
    while changed:
        changed = False
        for rule in ir.rules:
            if rule.lhs not in productive and all(
                s in terminal_names or s in productive for s in rule.rhs
            ):
                productive.add(rule.lhs)
                changed = True
    return productive


def build_tables(ir: GrammarIR) -> ParserTables:
    """Index symbols, prune unproductive rules, compute nullables and closures."""
    terminal_names = [t.name for t in ir.terminals]
    term_set = set(terminal_names)
    productive = _productive(ir, term_set)
    if ir.start not in productive:
        raise GrammarError(f"the start symbol {ir.start!r} derives no finite sentence: the language is empty")
    rules = [
        r for r in ir.rules if r.lhs in productive and all(s in term_set or s in productive for s in r.rhs)
    ]
    nt_names = sorted({r.lhs for r in rules}, key=lambda n: (n != ir.start, n))
    aug = "$start"
    nt_names.append(aug)
    t = len(terminal_names)
    sym_id = {name: i for i, name in enumerate(terminal_names)}
    sym_id.update({name: t + i for i, name in enumerate(nt_names)})

    lhs = [sym_id[r.lhs] for r in rules] + [sym_id[aug]]
    rhs = [tuple(sym_id[s] for s in r.rhs) for r in rules] + [(sym_id[ir.start],)]
    n_nt = len(nt_names)
    rules_of: list[list[int]] = [[] for _ in range(n_nt)]
    for r, a in enumerate(lhs):
        rules_of[a - t].append(r)

    nullable: set[int] = set()
    changed = True
    while changed:
        changed = False
        for r, a in enumerate(lhs):
            if a not in nullable and all(s in nullable for s in rhs[r]):
                nullable.add(a)
                changed = True

    # skip[r][d]: the dot positions reached from d by stepping over nullable symbols.
    skip = []
    for r in range(len(lhs)):
        per_rule = []
        for d in range(len(rhs[r]) + 1):
            positions = [d]
            e = d
            while e < len(rhs[r]) and rhs[r][e] in nullable:
                e += 1
                positions.append(e)
            per_rule.append(tuple(positions))
        skip.append(tuple(per_rule))

    # closure[A]: nonterminals predicted, transitively, when A is predicted.
    direct: list[set[int]] = [set() for _ in range(n_nt)]
    for r, a in enumerate(lhs):
        for d in skip[r][0]:
            if d < len(rhs[r]) and rhs[r][d] >= t:
                direct[a - t].add(rhs[r][d])
    closure = []
    for a in range(n_nt):
        seen = {a + t}
        stack = [a + t]
        while stack:
            b = stack.pop()
            for c in direct[b - t]:
                if c not in seen:
                    seen.add(c)
                    stack.append(c)
        closure.append(frozenset(seen))

    rule_start, pos_rule, next_sym, term_bit, is_end, penult = [], [], [], [], [], []
    for r in range(len(lhs)):
        rule_start.append(len(pos_rule))
        for d in range(len(rhs[r]) + 1):
            pos_rule.append(r)
            sym = rhs[r][d] if d < len(rhs[r]) else -1
            next_sym.append(sym)
            term_bit.append(1 << sym if 0 <= sym < t else 0)
            is_end.append(d == len(rhs[r]))
            penult.append(d == len(rhs[r]) - 1)
    # step[p]: positions after moving the dot over the next symbol, then over nullables.
    step = []
    for p, r in enumerate(pos_rule):
        d = p - rule_start[r]
        step.append(tuple(rule_start[r] + e for e in skip[r][d + 1]) if d < len(rhs[r]) else ())
    start_rule = len(lhs) - 1

    return ParserTables(
        terminal_names=tuple(terminal_names),
        nonterminal_names=tuple(nt_names),
        lhs=tuple(lhs),
        rhs=tuple(rhs),
        rule_len=tuple(len(x) for x in rhs),
        skip=tuple(skip),
        nullable=frozenset(nullable),
        closure=tuple(closure),
        rules_of=tuple(tuple(x) for x in rules_of),
        start_rule=start_rule,
        start_symbol=sym_id[ir.start],
        rule_start=tuple(rule_start),
        pos_rule=tuple(pos_rule),
        next_sym=tuple(next_sym),
        term_bit=tuple(term_bit),
        step=tuple(step),
        is_end=tuple(is_end),
        penultimate=tuple(penult),
        accept_pos=rule_start[start_rule] + 1,
    )
