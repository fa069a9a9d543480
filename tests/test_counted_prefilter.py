"""`terminals._counted` searches the pattern's text for a long enough count before reading every count: the
answer must be what reading every count gives, whatever `LAZY_MIN_COUNT` is."""

from __future__ import annotations

import random

import pytest

from pda.grammar.ir import TerminalDef
from pda.lexer import terminals
from pda.regex.lazy import has_count
from pda.regex.syntax import translate


def by_every_count(t: TerminalDef, least: int) -> bool:
    counts = (int(n) for m in terminals._COUNTS.finditer(t.pattern) for n in m.groups() if n)
    return any(n >= least for n in counts) and has_count(translate(t.pattern, t.flags, name=t.name), least)


PATTERNS = [
    "a{200}", "a{199}", "a{0200}", "a{2,300}", "a{300,}", "a{2,}", "(?:ab){1,199}c", "x,300y{3}", "a{,250}",
    r"\{300\}", "[0-9]{1000,2000}", "a{99}b{100}", '"(?:[^"\\\\]|\\\\.){0,255}"', "a{20}b{2000}",
]


@pytest.mark.parametrize("least", [1, 9, 10, 100, 199, 200, 201, 1000, 10**9])
def test_prefilter_agrees_with_every_count(monkeypatch: pytest.MonkeyPatch, least: int) -> None:
    monkeypatch.setattr(terminals, "LAZY_MIN_COUNT", least)
    rng = random.Random(least)
    patterns = PATTERNS + [f"(?:a|b){{{rng.randrange(0, 3 * least + 2)},{rng.choice(['', str(3 * least + 5)])}}}c"
                           for _ in range(20)]
    for pattern in patterns:
        t = TerminalDef(name="T", pattern=pattern)
        assert terminals._counted(t) == by_every_count(t, least), pattern
