"""One terminal for a rule's alternatives that are each one terminal used nowhere else.

`start: "a" | "b" | ...` (a Lark alternation of literals) or a JSON Schema enum of
numbers gives one terminal per alternative: 10,000 values are 10,000 terminals,
and the lexer's product DFA and its per-state rows over the terminals grow with
their number (8.5 GB at 10,000 before this pass). Such terminals are merged into
one whose pattern is their alternation, which the terminal builder turns into a
trie DFA when the alternatives are literals (`pda.regex.finite_set`).

Why the language is unchanged. Take terminals T1..Tn that appear only as whole
alternatives `r: Ti` of one rule r, with one priority and one set of flags, none
ignored, lazy or kept by the caller (the indenter reads some by name). Wherever the
parser can take one of them it can take all of them (each one completes r, and
nothing else), so every candidate set holds all or none of them. The contextual
lexer extends a lexeme while some candidate is live, and a lexeme matches their
union exactly when it matches some Ti; among matching terminals it keeps the top
priority, which the Ti share with their union. So a lexeme ends at the same byte,
and the parser then completes r in both grammars, with the same other terminals
beside it. Under the basic lexer mode the same holds over all terminals. Rule
order and the other rules are kept; the merged terminal takes the place of the
first Ti. Terminals that are literal strings or alternations of them merge apart from the
others, so that their union stays a literal set the finite-set builder takes
(`pda.regex.finite_set`), which a regex beside them would spoil.

The other merged pattern is `(?:(?:P1)|(?:P2)|...)` (`pda.regex.literals.patterns_alternation`), which
`pda.regex.literals.alternation_parts` reads back, so that the terminal builder takes the union of the
Pi's DFAs (each most often built before, as a terminal of an earlier grammar) instead of parsing the
whole pattern again.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import replace
from itertools import chain
from operator import itemgetter

from pda.grammar.ir import GrammarIR, TerminalDef
from pda.regex.literals import alternation_pattern, leading_inline_flags, literal_alternatives, patterns_alternation


def merge_alternative_terminals(ir: GrammarIR, keep: frozenset[str] = frozenset()) -> GrammarIR:
    """`ir` with each rule's mergeable single-terminal alternatives as one terminal (see the module docstring)."""
    terminals = ir.terminal_by_name
    groups = [(key, names) for key, names in _candidates(ir, keep).items() if len(names) > 1]
    if not groups:
        return ir
    merged_into: dict[str, str] = {}
    new_terminals: dict[str, TerminalDef] = {}
    rows = ir.rule_rows
    taken = set(terminals) | set(map(itemgetter(0), rows))
    for (lhs, _, flags), names in groups:
        strings = {n: literal_alternatives(terminals[n].pattern, flags) for n in names}
        # Literal sets merge into one literal set (the finite-set builder's), the rest into one regex:
        # a literal set merged with a regex would lose its trie DFA and token tables.
        for part in ([n for n in names if strings[n] is not None], [n for n in names if strings[n] is None]):
            if len(part) < 2:
                continue
            if strings[part[0]] is not None:
                pattern = alternation_pattern(w for n in part for w in strings[n])
            else:
                pattern = patterns_alternation([terminals[n].pattern for n in part])
            name = _fresh(f"{str(lhs).upper()}_ALTERNATIVES", taken)
            new_terminals[part[0]] = replace(terminals[part[0]], name=name, pattern=pattern, literal=False)
            for n in part:
                merged_into[n] = name
    if not merged_into:
        return ir
    out_terminals = []
    for t in ir.terminals:
        if t.name in new_terminals:
            out_terminals.append(new_terminals[t.name])
        elif t.name not in merged_into:
            out_terminals.append(t)
    out_rows = []
    emitted: set[tuple] = set()
    for row in rows:
        lhs, rhs, _ = row
        if len(rhs) == 1 and rhs[0] in merged_into:
            merged = (lhs, (merged_into[rhs[0]],))
            if merged in emitted:
                continue
            emitted.add(merged)
            row = (*merged, None)
        out_rows.append(row)
    return ir.with_rule_rows(out_rows, terminals=tuple(out_terminals))


def _candidates(ir: GrammarIR, keep: frozenset[str]) -> dict[tuple, list[str]]:
    """The terminals that may merge, by (rule, priority, flags): each a whole alternative `r: T` and
    used nowhere else. Uses are counted only when some group has two names without that test (most
    grammars have none: a small JSON Schema's rules then take one pass over the rules, not a count of
    every symbol); then only those groups' names are counted, in one C pass over every symbol (a set
    test each, `filter`: 0.85 -> 0.50 ms over the 15 of the 31 common JSON Schemas that count, against
    counting every symbol), and the alternatives found grouped again, those used once (not the rules
    again: the 31 common JSON Schemas' 7,030 rules took ~0.3 ms a pass). A name of a group of one,
    uncounted, is dropped by that grouping: it had nothing to merge with."""
    alternatives = _alternatives(ir, keep)
    loose = _grouped(alternatives, None)
    counted = {name for names in loose.values() if len(names) > 1 for name in names}
    if not counted:
        return loose  # the uses test only drops names: nothing merges
    symbols = chain.from_iterable(map(itemgetter(1), ir.rule_rows))
    return _grouped(alternatives, Counter(filter(counted.__contains__, symbols)))


def _alternatives(ir: GrammarIR, keep: frozenset[str]) -> list[tuple[tuple, str]]:
    """The rules `r: T` whose T may merge but for the uses test, in rule order, as ((r, priority, flags), T)."""
    terminals = ir.terminal_by_name
    found = []
    for lhs, rhs, alias in ir.rule_rows:
        if len(rhs) != 1 or alias is not None:
            continue
        name = rhs[0]
        t = terminals.get(name)
        if t is None or t.lazy or name in ir.ignore or name in keep or not _embeddable(t):
            continue
        found.append(((lhs, t.priority, t.flags), name))
    return found


def _grouped(alternatives: list[tuple[tuple, str]], uses: Counter | None) -> dict[tuple, list[str]]:
    """`_candidates`' groups, in rule order; with `uses`, only terminals used once."""
    groups: dict[tuple, list[str]] = defaultdict(list)
    for key, name in alternatives:
        if uses is None or uses[name] == 1:
            groups[key].append(name)
    return groups


def _embeddable(t: TerminalDef) -> bool:
    """Whether t's pattern can sit inside a group beside others: a regex (not an automaton, whose
    `pattern` only describes it), with no global inline flags and no named groups."""
    return t.automaton is None and not leading_inline_flags(t.pattern) and "(?P" not in t.pattern


def _fresh(base: str, taken: set[str]) -> str:
    """`base`, or `base_2`, `base_3`, ...: the first name not in `taken` (which it joins)."""
    name, k = base, 2
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    taken.add(name)
    return name
