"""The indenter with terminals given as automata (`TerminalDef.automaton`).

An `%ignore` terminal given as an automaton counts as white space when its automaton
spells a space (`indent._matches`); a newline/indent/dedent terminal given as one becomes
unlexable like any other (its automaton dropped with its pattern).
"""

from __future__ import annotations

from pda.grammar.ir import NEVER, GrammarIR, IndentConfig, Rule, TerminalAutomaton, TerminalDef
from pda.parser import indent

SPACES = TerminalAutomaton(2, 0, (1,), ((0, " ", 1), (1, " ", 1)))
TABS_THEN_X = TerminalAutomaton(3, 0, (2,), ((0, "\\t*", 1), (1, "x", 2)))


def _auto(name: str, a: TerminalAutomaton) -> TerminalDef:
    return TerminalDef(name, a.describe(), automaton=a)


def test_matches_reads_the_automaton() -> None:
    assert indent._matches(_auto("WS", SPACES), " ") and indent._matches(_auto("WS", SPACES), "   ")
    assert not indent._matches(_auto("WS", SPACES), "") and not indent._matches(_auto("WS", SPACES), "\t")
    assert indent._matches(_auto("T", TABS_THEN_X), "x") and indent._matches(_auto("T", TABS_THEN_X), "\t\tx")
    assert not indent._matches(_auto("T", TABS_THEN_X), " ")


def test_expand_ir_drops_the_automata_of_indenter_outputs() -> None:
    config = IndentConfig()
    terminals = (_auto("_NEWLINE", SPACES), TerminalDef("_INDENT", "<INDENT>"), TerminalDef("_DEDENT", "<DEDENT>"),
                 TerminalDef("NAME", "[a-z]+"), TerminalDef("WS", SPACES.describe(), priority=2, automaton=SPACES))
    ir = GrammarIR(terminals=terminals, rules=(Rule("start", ("NAME", "_NEWLINE")),), start="start",
                   ignore=("WS",))
    out = {t.name: t for t in indent.expand_ir(ir, config).terminals}
    assert out["_NEWLINE"].pattern == NEVER and out["_NEWLINE"].automaton is None
    assert out["WS"].automaton == SPACES
    # The ignored automaton spells a space, so the leading-indentation terminal takes its priority.
    assert out[indent.leading_terminal(config)].priority == 2
