"""An alternation of terminals built before is their DFAs' union (`pda.regex.dfa._known_union`, `compose.union`).

Each alternation here is built after its branches were built as terminals of their own (or its branches are
ASCII strings), so the union path takes it; the same pattern built through the NFA (the union and composition
switched off) must be the same automaton up to the numbering of states, and both must accept what
`re.fullmatch` accepts.
"""

from __future__ import annotations

import random
import re

import pytest

from pda.errors import LimitExceeded
from pda.grammar.ir import TerminalDef
from pda.regex import build_lexer_dfa, compose
from pda.regex import dfa as dfa_module
from pda.regex.dfa import LexerDFA

from tests.test_compose import canonical

JSON_CHAR = r'(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))'
NUMBER = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
BRANCHES = [
    rf'"{JSON_CHAR}*"', rf'"{JSON_CHAR}{{0,8}}"', NUMBER, r"-?(?:0|[1-9][0-9]{0,19})", r"[0-9]+", r"a*",
    r"ab|ac", r"(?:é|ü)+x?", r"[^a]", r"x{2,5}", r"abc", r"a(?:bc)*", r"(?:a|b)*c", r"é*", r"[a-c]{3}",
    r'"(?!(?:k|key)")[a-z]*"', r"(?:)",
]
TEXTS = ["", "a", "ab", "ac", "abc", "abcbc", "c", "bc", "x", "xx", "xxxxx", "é", "éüx", '""', '"ab"', '"k"',
         '"key"', '"\\u00e9"', "0", "-12", "1.5e3", "00", "123", "aaa", "bcd", "ééé", "q", '"x"']


def built(pattern: str, max_states: int = dfa_module.DEFAULT_MAX_DFA_STATES) -> LexerDFA:
    return build_lexer_dfa([TerminalDef("T", pattern)], max_states=max_states)


def through_the_nfa(pattern: str, monkeypatch: pytest.MonkeyPatch) -> LexerDFA:
    with monkeypatch.context() as m:
        m.setattr(dfa_module, "_known_union", lambda node, branches, names, max_states: None)
        m.setattr(compose, "worth_composing", lambda node: False)
        return built(pattern)


def by_union(pattern: str, monkeypatch: pytest.MonkeyPatch) -> tuple[LexerDFA, bool]:
    """The pattern's DFA, and whether the union path built it."""
    calls = []
    union = compose.union
    with monkeypatch.context() as m:
        m.setattr(compose, "union", lambda parts, max_states: calls.append(len(parts)) or union(parts, max_states))
        found = built(pattern)
    return found, bool(calls)


def check(branches: list[str], monkeypatch: pytest.MonkeyPatch) -> bool:
    """Whether the union path built the alternation of `branches` (`re._parser` may factor their prefixes, and
    then the alternation's branches are no terminals built before); right either way."""
    for branch in branches:
        if not re.fullmatch(r"[a-z]+", branch):  # an ASCII string needs no DFA built before
            built(branch)
    pattern = "(?:" + "|".join(f"(?:{b})" for b in branches) + ")"
    (fast, took), slow = by_union(pattern, monkeypatch), through_the_nfa(pattern, monkeypatch)
    assert fast.n_states == slow.n_states, pattern
    assert canonical(fast) == canonical(slow), pattern
    for text in TEXTS:
        assert bool(fast.accepts(text.encode())) == (re.fullmatch(pattern, text) is not None), (pattern, text)
    return took


@pytest.mark.parametrize("pair", [(rf'"{JSON_CHAR}*"', NUMBER), (rf'"{JSON_CHAR}*"', "null"), ("a*", "ab|ac"),
                                  ("[0-9]+", NUMBER), ("(?:)", "a(?:bc)*"), (r"(?:é|ü)+x?", r"é*")])
def test_a_union_of_two_terminals_is_the_nfa_paths_dfa(pair: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert check(list(pair), monkeypatch)


def test_random_unions_are_the_nfa_paths_dfa(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(31)
    took = [check(rng.sample(BRANCHES + ["null", "true", "abd"], rng.randint(2, 4)), monkeypatch) for _ in range(40)]
    assert sum(took) >= 25


def test_an_alternation_with_an_unknown_branch_takes_the_usual_path(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    monkeypatch.setattr(compose, "union", lambda parts, max_states: calls.append(parts))
    found = built(r"(?:[0-9]{3}q|(?:zz)+y)")
    assert not calls and found.accepts(b"123q") and found.accepts(b"zzzzy") and not found.accepts(b"zzy1")


def test_the_state_limit_holds_for_a_union() -> None:
    built(rf'"{JSON_CHAR}*"', max_states=40)
    built(NUMBER, max_states=40)
    with pytest.raises(LimitExceeded, match="max_states=40"):
        built(rf'(?:"{JSON_CHAR}*"|{NUMBER}|"{JSON_CHAR}{{0,30}}")', max_states=40)


@pytest.mark.parametrize("max_nodes", [1, 3, 5, 8, 4096])
def test_an_alternations_key_from_its_branches_is_its_structure_key(max_nodes: int) -> None:
    """`syntax.alternation_key` (what `_one_terminal` keys an alternation by) equals `structure_key` of the whole
    alternation, at and around the node limit (None past it)."""
    from pda.regex.syntax import Alt, alternation_key, structure_key, translate

    for pattern in ["ab|c", "ab|c*|(?:d|e)f", "(?:x{2,5}|[a-c]|é)|q", rf'"{JSON_CHAR}*"|{NUMBER}|(?:)']:
        node = translate(pattern)
        assert isinstance(node, Alt) and len(node.items) > 1
        branches = [structure_key(item, max_nodes) for item in node.items]
        assert alternation_key(branches, max_nodes) == structure_key(node, max_nodes), (pattern, max_nodes)
