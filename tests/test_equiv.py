"""`pda equiv`: the comparison, the shrinker, the external recognisers, the CLI."""

from __future__ import annotations

import json

import pytest

import pda
from pda.testing.equiv import (
    compare,
    ddmin,
    equiv_main,
    grammar_side,
    json_accepts,
    load_side,
    python_accepts,
    sqlite_accepts,
)
from tests.conftest import GRAMMARS, corpus_path

JSON_LARK = (GRAMMARS / "json.lark").read_text(encoding="utf-8")
ARRAY_RULE = 'array: "[" [value ("," value)*] "]"'


def broken_json() -> pda.Grammar:
    """json.lark with a trailing comma allowed in arrays."""
    assert ARRAY_RULE in JSON_LARK
    return pda.Grammar.from_lark(JSON_LARK.replace(ARRAY_RULE, 'array: "[" [value ("," value)* ","?] "]"'))


def test_json_lark_agrees_with_python_json() -> None:
    report = compare(grammar_side("json.lark", pda.Grammar.from_lark(JSON_LARK)), load_side("json"), samples=400)
    assert not report.differs, report.to_text()
    assert report.directions[0].drawn == 400 and report.near_misses == 400


@pytest.mark.slow
def test_json_lark_agrees_with_python_json_10000() -> None:
    report = compare(grammar_side("json.lark", pda.Grammar.from_lark(JSON_LARK)), load_side("json"), samples=10_000)
    assert not report.differs, report.to_text()


def test_broken_copy_is_caught_with_a_short_counterexample() -> None:
    report = compare(grammar_side("broken", broken_json()), load_side("json"), samples=400, seed=1)
    assert report.differs
    shortest = report.counterexamples["in A not in B"][0]
    assert len(shortest) <= 5 and shortest.endswith(",]"), report.to_text()
    assert "in B not in A" not in report.counterexamples


def test_llama_cpp_json_gbnf_differences_are_real() -> None:
    gbnf = pda.Grammar.load(str(corpus_path("grammars", "llama_cpp_gbnf", "json.gbnf")))
    lark = pda.Grammar.from_lark(JSON_LARK)
    report = compare(grammar_side("json.gbnf", gbnf), grammar_side("json.lark", lark), samples=150, keep=10)
    # Everything json.gbnf generates is JSON (no false alarm from the GBNF front end) ...
    assert report.directions[0].accepted == report.directions[0].drawn
    assert report.counterexamples["in B not in A"]
    assert "in A not in B" not in report.counterexamples
    for example in report.counterexamples["in B not in A"]:
        assert json_accepts(example)
    # ... and each restriction of json.gbnf is real: JSON that it rejects.
    restrictions = {
        "0": "the root must be an object",
        ' {"a":1}': "no whitespace before the root",
        '{"a":1e10}': "exponent digits after the first must be 1-9",
        '{"a":12345678901234567}': "at most 16 integer digits",
        '{"a":  1}': "at most one space (or a newline and 20 tabs/spaces)",
        '{"a":1}\r\n': "no carriage return as whitespace",
        '{"a":"\\/"}': "no \\/ escape",
        '{"a":"\x7f"}': "no raw DEL in strings",
    }
    for text, why in restrictions.items():
        assert json_accepts(text) and lark.accepts(text), why
        assert not gbnf.accepts(text), why


def test_ddmin_finds_a_minimal_sublist() -> None:
    units = list("xx[ab,cd,]yy")
    result = ddmin(units, lambda s: "[" in s and ",]" in s)
    assert "".join(result) == "[,]"
    assert ddmin(list("abc"), lambda s: True) == []


def test_recognisers() -> None:
    assert json_accepts('{"a": [1, 2.5e3]}') and not json_accepts("NaN") and not json_accepts("[1,]")
    assert sqlite_accepts("SELECT a FROM missing_table")  # a semantic error is not a syntax error
    assert not sqlite_accepts("SELECT FROM WHERE")
    assert python_accepts("x = [i for i in y]\n") and not python_accepts("x = = 1")


def test_python_function_recogniser() -> None:
    side = load_side("python:json:loads")
    assert side.accepts("[1]")


def test_cli_exit_status_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert equiv_main([str(GRAMMARS / "json.lark"), "json", "--samples", "100", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["differs"] is False and out["directions"][0]["drawn"] == 100
    assert equiv_main([str(GRAMMARS / "json.lark"), "python", "--samples", "100", "--seed", "2"]) == 1
    assert "DIFFERENT" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        equiv_main(["--help"])


def test_two_recognisers_cannot_be_compared(capsys: pytest.CaptureFixture[str]) -> None:
    assert equiv_main(["json", "python"]) == 2
    assert "must be a grammar" in capsys.readouterr().err
