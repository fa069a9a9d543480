"""The grammar sampler, its reference recogniser and the hypothesis strategies.

Differential throughout: sampled sentences must be accepted by pda's engine
(and by Python's json for JSON); near-misses must get the same verdict from the
engine and from the sampler's independent reference recogniser."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, find, given, settings

import pda
from pda.errors import GrammarError, LimitExceeded
from pda.grammar.ir import TerminalDef
from pda.testing import GrammarSampler, RandomChoices, ReferenceRecognizer, from_grammar, near_misses
from pda.testing.sampler import TerminalGenerator
from tests.conftest import GRAMMARS, corpus_path


# Large grammars: the reference recogniser needs ~1 s a sentence there.
LARGE = {"sqlite.lark", "postgresql.lark", "python.lark"}


def shipped() -> list[object]:
    return [
        pytest.param(p.name, marks=pytest.mark.slow) if p.name in LARGE else p.name
        for p in sorted(GRAMMARS.glob("*.lark"))
    ]


def load(name: str) -> pda.Grammar:
    grammar = pda.Grammar.load(str(GRAMMARS / name))
    if GrammarSampler(grammar).shape.terminals != grammar.ir.terminal_names:
        pytest.skip(f"{name} has terminals only a post-lexer (indenter) produces; the reference does not model it")
    return grammar


@pytest.fixture(scope="module")
def json_grammar() -> pda.Grammar:
    return pda.Grammar.load(str(GRAMMARS / "json.lark"))


@pytest.fixture(scope="module")
def json_sampler(json_grammar: pda.Grammar) -> GrammarSampler:
    return GrammarSampler(json_grammar)


@pytest.mark.parametrize("name", shipped())
def test_sampled_sentences_of_shipped_grammars_are_accepted(name: str) -> None:
    grammar = load(name)
    sampler = GrammarSampler(grammar, max_lexemes=40)
    sentences = list(sampler.samples(25, seed=1))
    assert [s for s in sentences if not grammar.accepts(s)] == []


@pytest.mark.parametrize("name", shipped())
def test_near_misses_engine_agrees_with_reference(name: str) -> None:
    grammar = load(name)
    sampler = GrammarSampler(grammar, max_lexemes=40)
    choices = RandomChoices(2)
    misses = [sampler.near_miss(choices) for _ in range(25)]
    assert [m for m in misses if grammar.accepts(m) != sampler.reference.accepts(m)] == []


def test_gbnf_corpus_samples_accepted() -> None:
    folder = corpus_path("grammars", "llama_cpp_gbnf")
    for path in sorted(folder.glob("*.gbnf")):
        if path.name == "json_arr.gbnf":
            continue  # same shape as json.gbnf and 4x slower in the reference recogniser
        grammar = pda.Grammar.load(str(path))
        sampler = GrammarSampler(grammar, max_lexemes=30)
        sentences = list(sampler.samples(10, seed=3))
        assert [s for s in sentences if not grammar.accepts(s)] == [], path.name


def test_json_samples_are_json(json_sampler: GrammarSampler) -> None:
    sentences = list(json_sampler.samples(400, seed=4))
    for s in sentences:
        json.loads(s)
    lengths = sorted(len(s) for s in sentences)
    assert lengths[0] <= 2 and lengths[-1] >= 100  # short and long sentences both occur
    assert any(s.count("[") + s.count("{") >= 5 for s in sentences)  # nesting occurs
    assert any(ord(c) > 0x7F for s in sentences for c in s)  # non-ASCII drawn
    assert any("\\" in s for s in sentences)  # escapes drawn


def test_seeded_and_reproducible(json_sampler: GrammarSampler) -> None:
    assert list(json_sampler.samples(30, seed=7)) == list(json_sampler.samples(30, seed=7))
    assert list(json_sampler.samples(30, seed=7)) != list(json_sampler.samples(30, seed=8))


def test_near_misses_mostly_leave_the_language(json_sampler: GrammarSampler) -> None:
    choices = RandomChoices(5)
    misses = [json_sampler.near_miss(choices) for _ in range(300)]
    inside = sum(json_sampler.reference.accepts(m) for m in misses)
    assert 0 < inside < 150
    for m in misses:  # the reference agrees with Python's parser on every mutant
        try:
            json.loads(m)
            ok = True
        except ValueError:
            ok = False
        assert json_sampler.reference.accepts(m) == ok, m


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=from_grammar(GrammarSampler(pda.Grammar.load(str(GRAMMARS / "json.lark")))))
def test_strategy_sentences_accepted(data: str) -> None:
    assert pda.Grammar.load(str(GRAMMARS / "json.lark")).accepts(data)
    json.loads(data)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=near_misses(GrammarSampler(pda.Grammar.load(str(GRAMMARS / "json.lark")))))
def test_strategy_near_misses_confirmed(data: str) -> None:
    grammar = pda.Grammar.load(str(GRAMMARS / "json.lark"))
    reference = ReferenceRecognizer(grammar.ir)
    assert grammar.accepts(data) == reference.accepts(data)


def test_strategy_shrinks_to_short_sentences(json_sampler: GrammarSampler) -> None:
    # Derandomized (as Hypothesis's CI profile runs it): from a random start the shrinker may stop at '"["'.
    found = find(from_grammar(json_sampler), lambda s: "[" in s, settings=settings(derandomize=True, database=None))
    assert found == "[]"


@pytest.mark.parametrize(
    "pattern",
    [
        r"[a-z_][a-z0-9_]*",
        r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"',
        r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?",
        r"(?i:select|from)",
        r"[^\n]+",
        r"\d{2,4}\s\w+\W",
        r"/\*(.|\n)*?\*/",
        r"(a|b)\1",
        r"[\u3041-\u309f]+|[\U0001F600-\U0001F64F]",
    ],
)
def test_terminal_strings_fullmatch(pattern: str) -> None:
    term = TerminalDef("T", pattern, lazy="*?" in pattern)
    gen = TerminalGenerator(term)
    choices = RandomChoices(9)
    compiled = re.compile(pattern)
    drawn = {gen.generate(choices) for _ in range(200)}
    assert all(compiled.fullmatch(s) for s in drawn)
    assert len(drawn) > 1
    if term.lazy:  # ends at its first match
        assert not any(compiled.fullmatch(s[:k]) for s in drawn for k in range(1, len(s)))


@pytest.mark.parametrize(
    ("grammar", "accept", "reject"),
    [
        # Greedy, no backtracking: two adjacent names need a separator.
        ('start: NAME NAME\nNAME: /[a-z]+/\n%ignore " "', ["ab cd", " a b "], ["abcd", "a"]),
        # Keyword and name tie: the parser gets both and uses whichever fits.
        ('start: "if" NAME | NAME "=" NAME\nNAME: /[a-z]+/\n%ignore " "', ["if x", "if = x", "a = b"], ["if", "x x"]),
        # A lexeme extends while any candidate can still match: "ab" then "c" dies.
        ('start: A C | AB\nA: "a"\nAB: "abc"\nC: "bd"', ["abc"], ["abd"]),
        # Priority breaks ties of equal length.
        ('start: X | Y Y\nX.2: /ab/\nY: /ab|a|b/', ["ab"], ["aba"]),
        # A lazy terminal ends at its first match.
        ('start: C C?\nC: /\\/\\*(.|\\n)*?\\*\\//', ["/* a */", "/**//**/"], ["/* */ */"]),
    ],
)
def test_reference_recognizer_semantics_match_engine(grammar: str, accept: list[str], reject: list[str]) -> None:
    g = pda.Grammar.from_lark(grammar)
    reference = ReferenceRecognizer(g.ir)
    for s in accept:
        assert reference.accepts(s) and g.accepts(s), s
    for s in reject:
        assert not reference.accepts(s) and not g.accepts(s), s


def test_sampler_inserts_ignored_text_where_lexemes_would_merge() -> None:
    grammar = pda.Grammar.from_lark('start: NAME+\nNAME: /[a-z]+/\n%ignore " "')
    sentences = list(GrammarSampler(grammar).samples(100, seed=0))
    assert all(grammar.accepts(s) for s in sentences)
    assert any(len(s.split()) >= 3 for s in sentences)


def test_unproductive_start_is_an_error() -> None:
    with pytest.raises(GrammarError, match="derives no sentence"):
        GrammarSampler(pda.Grammar.from_lark('start: "a" start'))


def test_sample_cli(capsys: pytest.CaptureFixture[str]) -> None:
    from pda.testing.sampler import sample_main

    assert sample_main([str(GRAMMARS / "json.lark"), "-n", "5", "--seed", "3", "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 5
    for line in lines:
        json.loads(json.loads(line))
    with pytest.raises(SystemExit):
        sample_main(["--help"])


def random_grammar_cases(count: int, seed: int) -> list[str]:
    """Disagreements between the engine and the reference on random grammars."""
    import random

    from fuzz.random_grammars import random_grammar

    rng = random.Random(seed)
    found = []
    unsampled = 0
    for i in range(count):
        text = random_grammar(rng)
        grammar = pda.Grammar.from_lark(text)
        sampler = GrammarSampler(grammar, max_lexemes=12)
        choices = RandomChoices(i)
        for _ in range(10):
            try:
                sentence = sampler.sample(choices)
                miss = sampler.near_miss(choices)
            except LimitExceeded:
                # Greedy lexing can make a grammar's language (nearly) empty: a/a+ always merge.
                unsampled += 1
                break
            if not grammar.accepts(sentence):
                found.append(f"sample {sentence!r} rejected by\n{text}")
            if grammar.accepts(miss) != sampler.reference.accepts(miss):
                found.append(f"near-miss {miss!r}: engine {grammar.accepts(miss)} in\n{text}")
    assert unsampled < count // 4
    return found


def test_random_grammars_engine_agrees_with_reference() -> None:
    assert random_grammar_cases(40, seed=11) == []


@pytest.mark.slow
def test_random_grammars_engine_agrees_with_reference_long() -> None:
    assert random_grammar_cases(1000, seed=12) == []
