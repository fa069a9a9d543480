"""The subset construction kernel (`pda.kernels.subsets`) against its plain-Python oracle (`pda.reference.reference_subsets`).

Every determinisation that compiling a regex through the NFA makes (its
sub-automata for look-arounds and first matches included) is run through both, and
the results must be equal state for state: the same numbering, transitions and
accept rows. Deterministic composition (and the union of terminals built before) is switched off here, as it builds most
patterns from memoised parts with no determinisation (`tests/test_compose.py`
checks it against this NFA path).
"""

from __future__ import annotations

import numpy as np
import pytest

import pda
from pda.errors import LimitExceeded
from pda.grammar.ir import TerminalDef
from pda.kernels import subsets
from pda.reference import reference_subsets
from pda.regex import build_lexer_dfa, compose
from pda.regex import dfa as dfa_module
from tests.test_regex import CASES

SHIPPED = ["json", "sqlite", "python", "lua", "postgresql"]
EXTRA = [
    (r"/\*(.|\n)*?\*/", True),  # a lazy terminal: first match
    (r"(?:x|yz)*?q", True),
    (r'"(?!"").*?(?<!\\)(\\\\)*?"', False),  # the escaped-string idiom: look-arounds
    (r"(?i:select|sel|selection)", False),
    (r"(?!ab)[a-z]{2,4}", False),  # a look-ahead: a guarded sub-automaton
    (r'"(?:[^"\\]|\\.){0,40}"', False),
    # sets and targets wider than the kernel's insertion sort (`SORT_INSERTION_MAX`), met in no sorted order
    ("(?:" + "|".join(f"{'ab'[i % 2]}{i}[x-z]?" for i in range(80)) + ")(?:"
     + "|".join(f"c{79 - i}" for i in range(60)) + ")?", False),
]


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Patches the kernel so that each call is compared with the reference; yields the state counts seen."""
    kernel = subsets.determinise
    seen: list[int] = []

    def both(nfa, start, n_atoms, n_terms, max_states):
        got = kernel(nfa, start, n_atoms, n_terms, max_states)
        trans, accept = reference_subsets(nfa, start, n_atoms, n_terms)
        assert got is not None
        assert np.array_equal(got[0], trans) and np.array_equal(got[1], accept)
        seen.append(len(trans))
        return got

    monkeypatch.setattr(subsets, "determinise", both)
    monkeypatch.setattr(compose, "worth_composing", lambda node: False)
    monkeypatch.setattr(dfa_module, "_known_union", lambda node, branches, names, max_states: None)
    return seen


@pytest.mark.parametrize("pattern", [p for p, _ in CASES] + [p for p, _ in EXTRA])
def test_regex_cases(pattern: str, checked: list[int]) -> None:
    lazy = dict(EXTRA).get(pattern, False)
    build_lexer_dfa([TerminalDef("T", pattern, lazy=lazy)])
    assert checked


@pytest.mark.parametrize("name", SHIPPED)
def test_every_terminal_of_the_shipped_grammars(name: str, checked: list[int]) -> None:
    terminals = pda.Grammar.load(name).recognizer.lexer_ir.terminals
    for t in terminals:
        if t.pattern is not None and not t.literal:
            build_lexer_dfa([t])
    assert sum(checked) > 0


def test_several_terminals_in_one_construction(checked: list[int]) -> None:
    dfa = build_lexer_dfa([TerminalDef("A", r"[a-z]+"), TerminalDef("B", r"select"), TerminalDef("C", r"\d+")])
    assert dfa.accepts(b"select", 0) and dfa.accepts(b"select", 1) and not dfa.accepts(b"select", 2)


def test_the_state_limit_is_a_limit_error() -> None:
    with pytest.raises(LimitExceeded, match="max_states=50"):
        build_lexer_dfa([TerminalDef("T", r"(?:a|b)*a(?:a|b){8}")], max_states=50)


def test_bad_input_raises_value_error() -> None:
    one = np.zeros(1, dtype=np.int64)
    nfa = subsets.NFAArrays(
        eps_ptr=np.array([0, 1]), eps_dst=np.array([5]), edge_ptr=np.array([0, 0]), atom_ptr=np.array([0]),
        atoms=np.zeros(0, np.int64), edge_dst=np.zeros(0, np.int64), final_term=one - 1, owner=one - 1,
        lazy=np.zeros(0, bool),
    )
    with pytest.raises(ValueError, match="eps_dst"):
        subsets.determinise(nfa, 0, 1, 0, 100)
    with pytest.raises(ValueError):
        subsets.determinise(nfa._replace(eps_dst=np.array([0])), 3, 1, 0, 100)  # no such start
