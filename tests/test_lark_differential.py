"""pda vs Lark on the same grammars: sampled sentences and near-misses must get the same verdict.

Lark runs as LALR(1) with its contextual lexer, the configuration whose semantics
match pda's on grammars without keyword/identifier ties (docs/semantics.md). The
intended differences are tested explicitly at the end.
"""

from __future__ import annotations

import re

import lark
import pytest

import pda
from pda.testing.sampler import GrammarSampler, RandomChoices
from tests.conftest import CORPUS, GRAMMARS

# grammar -> (path, samples in the default run); `--long` runs 2,000 each.
def _flags(letters) -> int:
    return sum({"i": re.I, "s": re.S, "m": re.M, "x": re.X, "u": re.U}[f] for f in letters)


CASES = {
    "json": (GRAMMARS / "json.lark", 150),
    "outlines_json": (CORPUS / "grammars" / "outlines" / "json.lark", 150),
    "outlines_arithmetic": (CORPUS / "grammars" / "outlines" / "arithmetic.lark", 150),
    "sql_to_ibis": (CORPUS / "grammars" / "sql_to_ibis" / "sql.lark", 25),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_sentences_and_near_misses_agree_with_lark(name: str, request) -> None:
    path, short = CASES[name]
    if not path.exists():
        pytest.skip(f"grammar not available: {path}")
    grammar = pda.Grammar.load(str(path))
    reference = lark.Lark(path.read_text(), parser="lalr", lexer="contextual", start=grammar.ir.start,
                          import_paths=[str(path.parent)])

    identifiers = [re.compile(t.pattern.to_regexp(), _flags(t.pattern.flags))
                   for t in reference.terminals if t.pattern.type == "re"]
    literals = {t.name for t in reference.terminals if t.pattern.type == "str"}
    keyword_ties = []

    def lark_accepts(text: str) -> bool:
        try:
            reference.parse(text)
        except lark.exceptions.UnexpectedToken as exc:
            # Lark made a keyword of a word that an identifier terminal also matches;
            # pda hands both to the parser (docs/semantics.md): an intended difference.
            if exc.token.type in literals and any(r.fullmatch(exc.token.value) for r in identifiers):
                keyword_ties.append(text)
            return False
        except lark.exceptions.LarkError:
            return False
        return True

    sampler = GrammarSampler(grammar)
    choices = RandomChoices(2024)
    n = 2000 if request.config.getoption("--long") else short
    disagreements = []
    accepted = 0
    for _ in range(n):
        for text in (sampler.sample(choices), sampler.near_miss(choices)):
            verdict = grammar.accepts(text)
            accepted += verdict
            if verdict != lark_accepts(text) and not (verdict and text in keyword_ties):
                disagreements.append(text)
    assert disagreements == []
    assert accepted >= n  # every sample, and some near-misses, are sentences


def test_intended_difference_longest_match_before_priority() -> None:
    text = 'start: B | A\nA.2: "ab"\nB: /abc/\n'
    ours = pda.Grammar.from_lark(text)
    # pda: the longest lexeme wins, priority only breaks ties in length.
    assert ours.accepts("abc")
    basic = lark.Lark(text, parser="lalr", lexer="basic")
    with pytest.raises(lark.exceptions.LarkError):
        basic.parse("abc")  # Lark's basic lexer takes the higher-priority "ab" first


def test_intended_difference_keyword_tie_goes_to_the_parser() -> None:
    text = 'start: "let" NAME "=" NAME\nNAME: /[a-z]+/\n%ignore " "\n'
    ours = pda.Grammar.from_lark(text)
    assert ours.accepts("let let = let")  # both LET and NAME matched: the parser uses NAME
    basic = lark.Lark(text, parser="lalr", lexer="basic")
    with pytest.raises(lark.exceptions.LarkError):
        basic.parse("let let = let")  # the basic lexer always makes "let" the keyword
