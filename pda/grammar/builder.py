"""The one grammar builder the front ends share: fresh names, deduplicated terminals and rules, a `GrammarIR`.

A front end that generates a grammar (JSON Schema, regex, choices, GBNF, structural
tags) asks this builder for symbols instead of writing grammar text: `terminal(regex)`
names a terminal (one name per distinct regex and priority), `automaton_terminal`
one given as an automaton (`TerminalAutomaton`: a language whose regex would be far
larger than its automaton; one name per distinct automaton and priority), `rule(alternatives)`
names a rule (one name per distinct body; a rule that would be one rule symbol is
that symbol), `reserve()` names a rule whose body is defined later (recursion),
and `repeat` spells a counted repetition in O(log n) rules. `ir(start)` is the
grammar: the start rule first, then every rule and terminal reachable from it, in
the order they were named, so the same lowering always gives the same IR and the
same content hash.

Invariants: names never collide (numbered terminals are `HINT_<n>`, n the number of
terminals before them; rules `r<n>`; fixed names are given by the caller and must
be upper case); a rule's alternatives hold no duplicates; the optional symbol X
(`optional`) is the rule `x_opt` in alternatives and in the IR (written after all
the others, never a rule's whole body), `X?` in Lark text. Lark text has no automata:
it spells an automaton terminal as a regex by state elimination, up to
`MAX_LARK_AUTOMATON_REGEX` characters, and refuses past that (the IR is the way to use it).
"""

from __future__ import annotations

import functools
import heapq
import re
from typing import Sequence

from pda.errors import GrammarError
from pda.grammar.ecma_regex import lark_regex
from pda.grammar.ir import NEVER, GrammarIR, TerminalAutomaton, TerminalDef
from pda.regex import has_lazy_quantifier

Alternatives = list[Sequence[str]]  # a rule's alternatives, each a sequence of symbol names

# Only a pattern with a lazy quantifier can make a lazy terminal; most have none.
_MAYBE_LAZY = re.compile(r"[*+?}](?=\?)")
# A label that concatenates as it is: one (escaped) character or one class without nested brackets.
_ATOM = re.compile(r"\\?[^\\\[\](){}|*+?^$]|\[\^?\]?(?:[^\]\\\[]|\\.)*\]", re.S)

MAX_LARK_AUTOMATON_REGEX = 100_000
"""Longest regex `lark` writes for an automaton terminal: the multiples of 7 (44,000 characters)
fit and their Lark text compiles in ~0.2 s; those of 9 (700,000) do not."""


class GrammarBuilder:
    """Rules and terminals of one grammar, named as a front end asks for them.

    `terminals` (name → (regex, priority)) and `rules` (name → alternatives) are
    public to read, in naming order; write them only through the methods.
    """

    def __init__(self) -> None:
        self.terminals: dict[str, tuple[str, int]] = {}
        self.rules: dict[str, Alternatives] = {}
        self._fixed_terminals: dict[str, str] = {}
        self._optional_rules: dict[str, str] = {}  # "x_opt" -> the symbol X it makes optional
        self._terminal_by_regex: dict[tuple[str, int], str] = {}
        self._automata: dict[str, TerminalAutomaton] = {}  # automaton terminals (`terminals` holds their description)
        self._terminal_by_automaton: dict[tuple[str, int], str] = {}
        self._rule_by_body: dict[tuple[tuple[str, ...], ...], str] = {}
        self._upto_memo: dict[tuple[str, int], str] = {}
        self._count = 0

    # ------------------------------------------------------------------ names

    def terminal(self, regex: str, hint: str = "T", priority: int = 0) -> str:
        """The terminal for `regex` (Python syntax) at `priority`: named `<hint>_<n>` the first time."""
        name = self._terminal_by_regex.get((regex, priority))
        if name is None:
            name = f"{hint}_{len(self.terminals)}"
            self.terminals[name] = (regex, priority)
            self._terminal_by_regex[(regex, priority)] = name
        return name

    def automaton_terminal(self, automaton: TerminalAutomaton, hint: str = "T", priority: int = 0) -> str:
        """The terminal for the language of `automaton` at `priority`, named like `terminal`'s, one name per
        distinct automaton; `terminals` maps it to the automaton's description, never a regex."""
        key = (automaton.digest, priority)
        name = self._terminal_by_automaton.get(key)
        if name is None:
            name = f"{hint}_{len(self.terminals)}"
            self.terminals[name] = (automaton.describe(), priority)
            self._automata[name] = automaton
            self._terminal_by_automaton[key] = name
        return name

    def automaton(self, name: str) -> TerminalAutomaton | None:
        """The automaton of terminal `name` when it was given as one (`automaton_terminal`), else None."""
        return self._automata.get(name)

    def fixed_terminal(self, name: str, regex: str) -> str:
        """A terminal with a name of the caller's choosing (`WS`, `REGEX`), written after the numbered
        ones and taken as given: never lazy (a front end that matches whole texts means the greedy
        reading of a lazy quantifier)."""
        self._fixed_terminals[name] = regex
        return name

    def optional(self, symbol: str) -> str:
        """The symbol for "`symbol` or nothing": the rule `x_opt` (`X?` in Lark text). Spelled as the IR
        spells it from the start, so `ir` copies alternatives without renaming a symbol."""
        name = symbol.lower() + "_opt"
        self._optional_rules[name] = symbol
        return name

    def rule(self, alts: Alternatives) -> str | None:
        """A rule with these alternatives (deduplicated by content); None if there are none."""
        key = (tuple(alts[0]),) if len(alts) == 1 else tuple(dict.fromkeys(map(tuple, alts)))
        if not key:
            return None
        if len(key) == 1 and len(key[0]) == 1 and key[0][0].islower() and key[0][0] not in self._optional_rules:
            return key[0][0]
        name = self._rule_by_body.get(key)
        if name is None:
            name = self.reserve()
            self.rules[name] = list(key)
            self._rule_by_body[key] = name
        return name

    def reserve(self) -> str:
        """A fresh rule name with no alternatives yet (`define` gives them)."""
        name = f"r{self._count}"
        self._count += 1
        self.rules[name] = []
        return name

    def define(self, name: str, alts: Alternatives) -> None:
        """The alternatives of a reserved rule."""
        self.rules[name] = alts

    def discard(self, name: str) -> None:
        """Forget a reserved rule that turned out to have no alternatives."""
        del self.rules[name]

    # ------------------------------------------------------------- repetition

    def repeat(self, item: str, lo: int, hi: int | None) -> list[str]:
        """Symbols for `item` repeated lo..hi times (hi None: unbounded), in O(log) rules (unambiguous)."""
        seq = self.exactly(item, lo) if lo else []
        if hi is None:
            star = self.reserve()
            self.rules[star] = [[], [item, star]]
            return seq + [star]
        if hi > lo:
            seq.append(self.upto(item, hi - lo))
        return seq

    def exactly(self, item: str, k: int) -> list[str]:
        """Symbols for `item` exactly k times: halves shared as one rule."""
        if k == 0:
            return []
        if k == 1:
            return [item]
        half = self.rule([self.exactly(item, k // 2)]) or ""
        return [half, half] + ([item] if k % 2 else [])

    def upto(self, item: str, n: int) -> str:
        """item{0,n}: odd n = item? (item item){0,(n-1)/2}; even n = (item item){0,n/2} | item (item item){0,n/2-1}.

        Memoised: both alternatives of an even n recurse, so without it the calls
        number O(n), not O(log n) (`maxLength: 2**31` took minutes).
        """
        name = self._upto_memo.get((item, n))
        if name is None:
            name = self._upto_memo[(item, n)] = self._upto(item, n)
        return name

    def _upto(self, item: str, n: int) -> str:
        if n == 0:
            return self.rule([[]]) or ""
        if n == 1:
            return self.rule([[], [item]]) or ""
        pair = self.rule([[item, item]]) or ""
        if n % 2:
            return self.rule([[self.upto(pair, (n - 1) // 2)], [item, self.upto(pair, (n - 1) // 2)]]) or ""
        return self.rule([[self.upto(pair, n // 2)], [item, self.upto(pair, n // 2 - 1)]]) or ""

    # ----------------------------------------------------------------- output

    def ir(self, start: Alternatives, *, source: str | None = None, name: str = "start") -> GrammarIR:
        """The grammar with a start rule `name` of these alternatives: what is reachable from it, in naming order.

        `name` must not be a name the builder hands out (GBNF keeps its `root`)."""
        rules: dict[str, Alternatives] = {name: start, **self.rules}
        rules.update({opt: [(), (sym,)] for opt, sym in self._optional_rules.items()})
        used = _used_symbols(rules, name)
        rows = [(lhs, tuple(alt), None) for lhs, alts in rules.items() if lhs in used or lhs == name for alt in alts]
        automata = self._automata
        # A regex terminal's fields by position (name, pattern, flags, priority, literal, lazy): ~30% cheaper a call
        # than by keyword, one per terminal of every grammar built.
        terminals = [TerminalDef(t, regex, priority=priority, automaton=automata[t]) if t in automata
                     else TerminalDef(t, regex, "", priority, False, _is_lazy(regex))
                     for t, (regex, priority) in self.terminals.items() if t in used]
        terminals += [TerminalDef(t, regex) for t, regex in self._fixed_terminals.items() if t in used]
        return GrammarIR.from_rows(tuple(terminals), rows, name, source=source)

    def lark(self, start: Sequence[str], *, name: str = "start") -> str:
        """The same grammar as Lark text (every rule and terminal, reachable or not); `start` one alternative
        of the start rule `name`."""
        lark_symbol = {opt: f"{sym}?" for opt, sym in self._optional_rules.items()}
        lines = [f"{name}: {' '.join(lark_symbol.get(s, s) for s in start)}"]
        for lhs, alts in self.rules.items():
            lines.append(f"{lhs}: " + "\n    | ".join(" ".join(lark_symbol.get(s, s) for s in a) for a in alts))
        for t, (regex, priority) in self.terminals.items():
            if t in self._automata:
                regex = _automaton_regex(t, self._automata[t])
            lines.append(f"{t}{f'.{priority}' if priority else ''}: {lark_regex(regex)}")
        for t, regex in self._fixed_terminals.items():
            lines.append(f"{t}: /{regex}/")
        return "\n".join(lines) + "\n"


def _used_symbols(rules: dict[str, Alternatives], start: str) -> set[str]:
    """The symbols in the rules reachable from `start`: a rule is reachable when it is `start` or one
    of these. Depth first, each symbol looked up once in the set so far (a rule is pushed when its
    name is first met): no set is built per rule or per layer."""
    used: set[str] = set()
    stack = [start]
    while stack:
        for alt in rules[stack.pop()]:
            for sym in alt:
                if sym not in used:
                    used.add(sym)
                    if sym in rules and sym != start:
                        stack.append(sym)
    return used


# `_is_lazy` remembers regexes up to this many characters (the ones that recur across grammars: JSON
# punctuation, white space, keys), 4,096 of them: at most ~4 MiB however long a server runs.
LAZY_MEMO_MAX_CHARS = 1024


def _is_lazy(regex: str) -> bool:
    """Whether a terminal's regex is lazy (`_lazy_quantified`), remembered for short regexes."""
    return _lazy_memo(regex) if len(regex) <= LAZY_MEMO_MAX_CHARS else _lazy_quantified(regex)


@functools.lru_cache(maxsize=4096)
def _lazy_memo(regex: str) -> bool:
    """`_lazy_quantified`, memoised (bounded by `LAZY_MEMO_MAX_CHARS`)."""
    return _lazy_quantified(regex)


def _lazy_quantified(regex: str) -> bool:
    """Whether a regex has a lazy quantifier; parsed only when a quantifier character (after an even run
    of backslashes: `\\+?`, an optional plus sign in every JSON number regex, is not one) is followed by `?`."""
    for found in _MAYBE_LAZY.finditer(regex):
        at = found.start()
        if (at - len(regex[:at].rstrip("\\"))) % 2 == 0:
            return has_lazy_quantifier(regex, "")
    return False


def _automaton_regex(name: str, a: TerminalAutomaton) -> str:
    """The automaton's language as one regex, by state elimination (cheapest state first: fewest
    paths through it); `GrammarError` once the regex passes `MAX_LARK_AUTOMATON_REGEX` characters."""
    start, final = a.n_states, a.n_states + 1
    paths: dict[int, dict[int, str]] = {q: {} for q in range(a.n_states + 2)}  # paths[i][j]: regex of i -> j
    incoming: dict[int, set[int]] = {q: set() for q in range(a.n_states + 2)}

    def add(i: int, j: int, text: str) -> None:
        prev = paths[i].get(j)
        paths[i][j] = text if prev is None or prev == text else f"(?:{prev}|{text})"
        if len(paths[i][j]) > MAX_LARK_AUTOMATON_REGEX:
            raise GrammarError(f"terminal {name} is an automaton whose regex is longer than "
                               f"{MAX_LARK_AUTOMATON_REGEX} characters: it has no Lark text (use the grammar IR)")
        incoming[j].add(i)

    add(start, a.start, "")
    for q in a.accept:
        add(q, final, "")
    for q, label, r in a.edges:
        add(q, r, label if _ATOM.fullmatch(label) else f"(?:{label})")

    def cost(x: int) -> int:
        return (len(incoming[x]) - (x in incoming[x])) * len(paths[x])

    pending = set(range(a.n_states))
    heap = [(cost(x), x) for x in pending]
    heapq.heapify(heap)
    while pending:
        c, k = heapq.heappop(heap)
        if k not in pending or c != cost(k):
            continue
        pending.discard(k)
        loop = paths[k].pop(k, None)
        incoming[k].discard(k)
        star = "" if not loop else f"{loop}*" if _ATOM.fullmatch(loop) else f"(?:{loop})*"
        outs = paths.pop(k)
        for j in outs:
            incoming[j].discard(k)
        ins = incoming.pop(k)
        for i in ins:
            into = paths[i].pop(k)
            for j, out in outs.items():
                add(i, j, into + star + out)
        for x in {*outs, *ins} & pending:
            heapq.heappush(heap, (cost(x), x))
    return paths[start].get(final, NEVER)
