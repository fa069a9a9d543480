"""The NFA builder's copies of fragments (`pda.regex.automaton.NFA._copied`) against building every copy afresh.

A node built a second time (a counted repeat's copies, an automaton terminal's edges
that share a label) is added as a copy of its first build. The oracle is the same
builder with copying switched off: every build of every terminal here must give the
same NFA, state for state and edge for edge (so the same DFA, and the same limits).
Deterministic composition and the union of terminals built before are switched off, so that counted repeats
and alternations reach the NFA.
"""

from __future__ import annotations

import copy

import pytest

import pda
from pda.errors import LimitExceeded
from pda.grammar.ir import TerminalAutomaton, TerminalDef
from pda.regex import automaton, build_lexer_dfa, compose, dfa
from tests.test_regex import CASES
from tests.test_subsets_kernel import EXTRA, SHIPPED

REPEATS = [
    r'"(?:[^"\\]|\\.){0,40}"',
    r"(?:ab|c[d-f]{2,5}){3,7}x*",
    r"(?:(?:a|b){2}c){4,}",
    r"(?:(?:[0-9]{1,3}\.){3}[0-9]{1,3}){1,4}",
    r"(?=ab)(?:[a-c]{2}|x){3,5}",  # repeats inside a guarded sub-automaton
    r"(?:x(?:\w|é){2,3}y?){5}",
    r"((a)(b(c)){2}){3}",
]
AUTOMATA = [
    TerminalAutomaton(3, 0, (2,), ((0, "ab|a", 1), (0, "a", 2), (1, "b*", 2), (1, "c", 1), (2, "(?:xy)+", 2),
                                   (0, "ab|a", 2), (2, "ab|a", 1))),
    TerminalAutomaton(4, 0, (3,), tuple((q, label, r) for q in range(3) for r in range(q + 1, 4)
                                        for label in (r"[0-9]{2,3}", r"\.", r'(?:[^"\\]|\\u[0-9a-f]{4}){1,3}'))),
]


class _Fresh(automaton.NFA):
    """The builder with copying switched off: every node built afresh."""

    def _copied(self, node: object, s: int, e: int) -> bool:
        return False


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every `NFA.build` also runs in a fresh builder from the same state; the two must agree. Yields NFA sizes."""
    seen: list[int] = []

    class Checked(automaton.NFA):
        def build(self, node, s, e):
            oracle = _Fresh(self.alphabet, self.max_states)
            oracle.subdfa = self.subdfa
            oracle.eps, oracle.edges = copy.deepcopy(self.eps), copy.deepcopy(self.edges)
            super().build(node, s, e)
            oracle.build(node, s, e)
            assert self.eps == oracle.eps and self.edges == oracle.edges
            seen.append(len(self.eps))

    monkeypatch.setattr(dfa, "NFA", Checked)
    monkeypatch.setattr(compose, "worth_composing", lambda node: False)
    monkeypatch.setattr(dfa, "_known_union", lambda node, branches, names, max_states: None)
    return seen


@pytest.mark.parametrize("pattern", [p for p, _ in CASES] + [p for p, _ in EXTRA] + REPEATS)
def test_regex_cases(pattern: str, checked: list[int]) -> None:
    lazy = dict(EXTRA).get(pattern, False)
    build_lexer_dfa([TerminalDef("T", pattern, lazy=lazy)])
    assert checked


@pytest.mark.parametrize("index", range(len(AUTOMATA)))
def test_automaton_terminals(index: int, checked: list[int]) -> None:
    build_lexer_dfa([TerminalDef("T", "<automaton>", automaton=AUTOMATA[index])])
    assert checked


@pytest.mark.parametrize("name", SHIPPED)
def test_every_terminal_of_the_shipped_grammars(name: str, checked: list[int]) -> None:
    for t in pda.Grammar.load(name).recognizer.lexer_ir.terminals:
        if t.pattern is not None and not t.literal:
            build_lexer_dfa([t])
    assert sum(checked) > 0


def test_a_copy_past_the_nfa_limit_is_a_limit_error() -> None:
    nfa = automaton.NFA(dfa.cs.Alphabet([((97, 97),)]), max_states=40)
    nfa.subdfa = None
    node = dfa.translate("(?:aa){30}")
    s, e = nfa.state(), nfa.state()
    with pytest.raises(LimitExceeded, match="more than 40 states"):
        nfa.build(node, s, e)
