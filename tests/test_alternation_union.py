"""A terminal written as an alternation of whole patterns is built as the union of the parts' DFAs.

`pda.regex.literals.alternation_parts` reads `(?:(?:P1)|(?:P2)|...)` back into its parts, and
`pda.lexer.terminals` builds such a terminal from the parts' terminal DFAs (`pda.regex.dfa.union_dfa`) without
parsing the whole pattern. The DFA must be the regex path's own up to the numbering of states (compared
canonically, as `tests/test_compose.py` does), accept what `re.fullmatch` accepts, and every pattern the union
path cannot take (a part that fails to build, a lazy part, too many states) must come out as before.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import replace

import pytest

from pda import cache
from pda.errors import LimitExceeded, RegexError
from pda.grammar.ir import TerminalDef
from pda.lexer import terminals
from pda.lru import ByteLRU
from pda.regex import LazyDFA, compile_regex
from pda.regex import dfa as dfa_module
from pda.regex.literals import alternation_parts, literal_alternatives, patterns_alternation


from tests.test_compose import canonical
from tests.test_regex_union import BRANCHES, TEXTS

# Parts whose text holds what a naive reading of groups would get wrong: parentheses in classes and escapes,
# comments, look-aheads, nested alternations.
TRICKY = [r"[)(]+", r"\(x\)", r"a(?#)(b)", r"(?:a|b)(?:c)", r"[\]()]z", r"(?=ab)a+b?", r"x|(?:y|z)", r"\\\)?"]


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Empty terminal memos and no disk cache; the list counts the unions `union_dfa` builds."""
    monkeypatch.setattr(terminals, "_memory", ByteLRU(terminals.TERMINAL_DFAS_MAX_BYTES))
    monkeypatch.setattr(dfa_module, "_leaves", ByteLRU(dfa_module.LEAF_DFAS_MAX_BYTES))
    calls: list[int] = []
    union = terminals.union_dfa
    monkeypatch.setattr(terminals, "union_dfa", lambda dfas, **kw: calls.append(len(dfas)) or union(dfas, **kw))
    cache.set_enabled(False)
    yield calls
    cache.set_enabled(None)


def regex_path(pattern: str, flags: str = "") -> dfa_module.LexerDFA:
    """The pattern's DFA through the regex path (no union of terminals built before, no composition)."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(dfa_module, "_leaves", ByteLRU(dfa_module.LEAF_DFAS_MAX_BYTES))
        m.setattr(dfa_module, "_known_union", lambda node, branches, names, max_states: None)
        m.setattr(dfa_module.compose, "worth_composing", lambda node: False)
        return compile_regex(pattern, flags)


@pytest.mark.parametrize("parts", [["a", "b"], TRICKY, TRICKY[::-1], ["(?:)", "x"], [BRANCHES[0], BRANCHES[2]]])
def test_the_parts_are_read_back(parts: list[str]) -> None:
    assert alternation_parts(patterns_alternation(parts)) == parts


def test_random_parts_are_read_back() -> None:
    rng = random.Random(5)
    for _ in range(200):
        parts = rng.sample(TRICKY + BRANCHES, rng.randint(2, 5))
        assert alternation_parts(patterns_alternation(parts)) == parts


@pytest.mark.parametrize("pattern", [
    "(?:(?:a))",  # one part: no union
    "(?:(?:a)|(?:b)c)", "(?:(?:a)(?:b))", "(?:(?:a)|b)", "(?:a|(?:b))",  # not the form
    "(?:(?:[a)|(?:b))", "(?:(?:a\\)|(?:b))",  # an unclosed class or an escaped `)`: not parts
    "(?:(?:(?i)a)|(?:b))",  # global flags inside a part
    "(?:(?:(?P<n>a))|(?:(?P<n>b)))",  # named groups would clash
    "(?:(?:a)|(?:b)))", "((?:a)|(?:b))",
])
def test_other_patterns_have_no_parts(pattern: str) -> None:
    assert alternation_parts(pattern) is None


def test_the_verbose_flag_is_never_read() -> None:
    assert alternation_parts("(?:(?:a)|(?:b))", "x") is None
    assert alternation_parts("(?:(?:a)|(?:b))", "is") == ["a", "b"]


def check(parts: list[str], fresh: list[int], flags: str = "") -> None:
    """The alternation's terminal DFA is the union of the parts' and the regex path's DFA, and `re`'s language."""
    pattern = patterns_alternation(parts)
    before = len(fresh)
    found = terminals.terminal_dfa(TerminalDef("T", pattern, flags))
    if literal_alternatives(pattern, flags) is None:  # (literal strings take the literal-set builders)
        assert len(fresh) == before + 1, pattern  # the union path built it
    slow = regex_path(pattern, flags)
    assert found.n_states == slow.n_states, pattern
    assert canonical(found) == canonical(slow), pattern
    compiled = re.compile(pattern, re.IGNORECASE if "i" in flags else 0)
    for text in TEXTS + ["(x)", ")(", "]z", "ab", "abb", "\\)", "\\"]:
        assert bool(found.accepts(text.encode())) == (compiled.fullmatch(text) is not None), (pattern, text)


@pytest.mark.parametrize("parts", [[rf"{BRANCHES[0]}", BRANCHES[2]], TRICKY[:3], ["abc", "a(?:bc)*", "[0-9]+"]])
def test_a_union_is_the_regex_paths_dfa(parts: list[str], fresh: list[int]) -> None:
    check(parts, fresh)


def test_parts_built_before_are_reused(fresh: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    parts = [BRANCHES[0], BRANCHES[2]]
    for part in parts:
        terminals.terminal_dfa(TerminalDef("P", part))
    translated = []
    translate = dfa_module.translate
    monkeypatch.setattr(dfa_module, "translate", lambda *a, **k: translated.append(a[0]) or translate(*a, **k))
    found = terminals.terminal_dfa(TerminalDef("T", patterns_alternation(parts)))
    assert fresh == [2] and not translated  # neither the whole pattern nor a part parsed again
    assert canonical(found) == canonical(regex_path(patterns_alternation(parts)))


def test_random_unions_are_the_regex_paths_dfa(fresh: list[int]) -> None:
    rng = random.Random(41)
    for _ in range(40):
        check(rng.sample(BRANCHES + TRICKY + ["null", "true"], rng.randint(2, 4)), fresh, rng.choice(["", "i"]))


def test_a_part_that_fails_leaves_the_error_to_the_regex_path(fresh: list[int]) -> None:
    pattern = patterns_alternation(["a", r"(b)\1"])
    with pytest.raises(RegexError, match="back-reference"):
        terminals.terminal_dfa(TerminalDef("T", pattern))
    assert not fresh


def test_a_lazy_terminal_or_a_lazy_part_takes_the_regex_path(fresh: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    pattern = patterns_alternation([BRANCHES[0], "x{300}"])
    assert isinstance(terminals.terminal_dfa(TerminalDef("T", pattern)), LazyDFA)  # counted: lazy as a whole
    eager = terminals.terminal_dfa(TerminalDef("T", pattern), lazy=False)
    assert canonical(eager) == canonical(regex_path(pattern))
    found = terminals.terminal_dfa(TerminalDef("T", patterns_alternation(["ab", "a"]), lazy=True))
    assert found.accepts(b"a") and not found.accepts(b"ab")  # first match: the regex path's FirstMatch
    assert not fresh


def test_the_state_limit_holds(fresh: list[int]) -> None:
    pattern = patterns_alternation([BRANCHES[0], BRANCHES[2]])  # parts of fewer than 20 states, their union of 24
    with pytest.raises(LimitExceeded, match="max_states=20"):
        terminals.terminal_dfa(TerminalDef("T", pattern), max_states=20, lazy=False)
    assert isinstance(terminals.terminal_dfa(TerminalDef("T", pattern), max_states=20), LazyDFA)
    found = terminals.terminal_dfa(TerminalDef("T", pattern), max_states=30)
    assert len(fresh) == 3 and canonical(found) == canonical(regex_path(pattern))
    assert found is terminals.terminal_dfa(replace(TerminalDef("T", pattern), name="U"), max_states=30)  # memoised
