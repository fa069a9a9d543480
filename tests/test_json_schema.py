"""JSON Schema, regex and choices front ends: accept/reject tables, errors, corpus sample, properties."""

from __future__ import annotations

import json
import random
import re
import sys
import warnings
from pathlib import Path

import pytest

import pda

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from json_schema_coverage import recogniser  # noqa: E402

from pda.errors import GrammarError, PdaError  # noqa: E402
from pda.grammar import ecma_regex as er  # noqa: E402
from pda.grammar.json_schema import JsonSchemaWarning, json_schema_to_lark  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus" / "jsonschemabench" / "schemas"


class Raw(str):
    """Instance text given verbatim instead of being serialised."""


def _text(x: object) -> str:
    return str(x) if isinstance(x, Raw) else json.dumps(x, separators=(",", ":"), ensure_ascii=False)


CASES = [
    ({"type": "object", "properties": {"a": {"type": "integer", "minimum": 3, "maximum": 120},
                                       "b": {"type": "string", "maxLength": 3}}, "required": ["a"]},
     [{"a": 3}, {"a": 120, "b": "xyz"}, {"a": 5, "c": [1, {"d": None}]}, Raw('{"a":5.0}'), Raw('{"\\u0061":4}')],
     [{"a": 2}, {"b": "x"}, {"a": 3, "b": "abcd"}, {"a": 121}, {}, Raw('{"a":3,"a":5}')]),
    ({"type": "array", "prefixItems": [{"type": "string"}, {"type": "boolean"}], "items": {"type": "null"},
      "minItems": 1, "maxItems": 5},
     [["x"], ["x", True], ["x", False, None, None, None]], [[], [1], ["x", None], ["x", True, None, None, None, None]]),
    ({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 7},
     [[1, 2], [1, 2, 3, 4, 5, 6, 7]], [[1], [1] * 8, []]),
    ({"$defs": {"n": {"type": "object", "additionalProperties": False, "properties": {
        "v": {"type": "number", "exclusiveMinimum": 0.5, "maximum": 10},
        "kids": {"type": "array", "items": {"$ref": "#/$defs/n"}}}}}, "$ref": "#/$defs/n"},
     [{"v": 0.6, "kids": [{"v": 10}, {"kids": []}]}, {}], [{"v": 0.5}, {"v": 10.1}, {"x": 1}, {"kids": [{"v": 0}]}]),
    ({"type": "string", "pattern": "^[a-z]{2,}$", "maxLength": 5}, ["ab", "abcde"], ["abcdef", "a", "aB"]),
    ({"type": "string", "pattern": "b"}, ["abc", "b", Raw('"\\u0062"')], ["ac", ""]),
    ({"type": "string", "pattern": "^\\d+$"}, ["123"], ["١٢٣", "12a"]),
    ({"type": "string", "format": "date-time"}, ["2020-02-29T10:00:00Z", "2021-01-31t23:59:59.5+01:00"],
     ["2021-02-29T10:00:00Z", "2020-13-01T00:00:00Z", "2020-04-31T00:00:00Z"]),
    ({"type": "string", "format": "ipv4"}, ["192.168.0.1"], ["256.1.1.1", "01.1.1.1"]),
    ({"type": "string", "minLength": 2, "maxLength": 3}, ["ab", "😀é", "a\nb"], ["a", "abcd", Raw('"\\ud800x"')]),
    ({"enum": ["a", 1, None, {"x": [1]}]}, ["a", 1, None, {"x": [1]}, Raw("1.0")], ["b", 2, {"x": [2]}, True]),
    ({"anyOf": [{"type": "string"}, {"type": "integer", "minimum": -5, "maximum": -2}]},
     ["s", -3, -5, -2], [-1, -6, 1.5]),
    ({"type": "object", "properties": {"a": {"type": "integer"}, "b": {}}, "minProperties": 1, "maxProperties": 2},
     [{"a": 1}, {"b": "x"}, {"a": 1, "zz": 2}], [{}, {"a": 1, "b": 2, "c": 3}]),
    ({"type": "number", "minimum": -1.5, "exclusiveMaximum": 2.25},
     [-1.5, -1, 0, 2.2, 2.249, Raw("-0.0")], [-1.6, 2.25, 2.3, 3]),
    ({"type": "object", "patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": False},
     [{}, {"x-a": 1}], [{"y": 1}, {"x-a": "s"}]),
    ({"type": ["integer", "null"], "multipleOf": 5, "minimum": 0, "maximum": 20}, [0, 15, None], [3, 25, "x"]),
    ({"type": "array", "contains": {"const": 3}}, [[3], [1, 3, 2]], [[], [1, 2]]),
    ({"oneOf": [{"type": "string"}, {"type": "boolean"}]}, ["x", True], [1]),
    (True, [1, "x", {"a": [None]}], [Raw("{"), Raw("01")]),
]


@pytest.mark.parametrize("schema,good,bad", CASES, ids=[str(i) for i in range(len(CASES))])
def test_accept_reject(schema: object, good: list, bad: list) -> None:
    accepts = recogniser(json_schema_to_lark(schema))
    for x in good:
        assert accepts(_text(x)), _text(x)
    for x in bad:
        assert not accepts(_text(x)), _text(x)


def test_flexible_whitespace_is_bounded() -> None:
    accepts = recogniser(json_schema_to_lark({"type": "object"}, whitespace="flexible"))
    assert accepts(json.dumps({"a": [1, {"b": None}]}, indent=2))
    assert accepts(' { "a" : 1 } ')
    assert not accepts("{" + " " * 65 + "}")
    compact = recogniser(json_schema_to_lark({"type": "object"}))
    assert not compact('{ "a":1}')


def test_unsupported_keyword_strict_and_relaxed() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "array", "uniqueItems": True}}}
    with pytest.raises(GrammarError, match=r"uniqueItems.*#/properties/a/uniqueItems"):
        json_schema_to_lark(schema)
    with pytest.warns(JsonSchemaWarning, match="uniqueItems"):
        json_schema_to_lark(schema, strict=False)


def test_unsatisfiable_and_bad_refs() -> None:
    with pytest.raises(GrammarError, match="no JSON value"):
        json_schema_to_lark(False)
    with pytest.raises(GrammarError, match="does not resolve"):
        json_schema_to_lark({"$ref": "#/$defs/missing"})
    with pytest.raises(GrammarError, match="not valid JSON"):
        json_schema_to_lark("{nope")


def test_large_counts_stay_small() -> None:
    text = json_schema_to_lark({"type": "array", "items": {"type": "string", "maxLength": 10000},
                                "maxItems": 1000})
    assert len(text) < 20000
    assert len(text.splitlines()) < 80


def test_ecma_translation() -> None:
    assert re.search(er.ecma_to_python(r"^\w+$"), "é") is None
    assert re.search(er.ecma_to_python(r"^\s$"), "\u00a0")
    assert re.search(er.ecma_to_python(r"^a.b$"), "a\nb") is None
    assert re.search(er.ecma_to_python(r"^[^]$"), "\n")
    assert re.search(er.ecma_to_python(r"^\cJ$"), "\n")
    assert re.search(er.ecma_to_python(r"^\u{1F600}$"), "😀")
    assert re.search(er.ecma_to_python(r"^a$"), "a\n") is None


@pytest.mark.parametrize("lo,hi", [(0, 0), (5, 123), (99, 1000), (7, None), (0, None)])
def test_decimal_ranges_match_re(lo: int, hi: int | None) -> None:
    r = er.decimal_range_regex(lo, hi)
    for v in range(0, 2000):
        assert bool(re.fullmatch(r, str(v))) == (v >= lo and (hi is None or v <= hi))


def test_regex_and_choices() -> None:
    accepts = recogniser(er.regex_to_lark(r"[a-c]+/\d"))
    assert accepts("ab/1") and not accepts("ab/")
    choices = pda.Grammar.from_choices(["a", "a b", "x\n", "[]"])
    assert choices.accepts("a b") and choices.accepts("x\n") and choices.accepts("[]")
    assert not choices.accepts("b") and not choices.accepts("")


def _corpus_sample(k: int) -> list[dict]:
    if not CORPUS.is_dir():
        pytest.skip(f"JSONSchemaBench corpus not found at {CORPUS}")
    rows = []
    for path in sorted(CORPUS.glob("*.jsonl")):
        cat = [json.loads(line) for line in path.open()]
        rows += random.Random(f"pda:{path.stem}").sample(cat, min(k, len(cat)))
    return rows


@pytest.mark.slow
@pytest.mark.parametrize("k", [1, 10])
def test_corpus_sample_agreement(k: int) -> None:
    """Valid instances accepted, invalid rejected, for a deterministic sample of compiled schemas."""
    disagreements = []
    for row in _corpus_sample(k):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                accepts = recogniser(json_schema_to_lark(row["schema"], strict=True))
        except PdaError:  # unsupported keyword, or a pda compile limit: not covered
            continue
        for t in row["tests"]:
            if accepts(_text(t["data"])) != t["valid"]:
                disagreements.append((row["id"], t["valid"], _text(t["data"])[:80]))
    assert not disagreements, disagreements


@pytest.mark.slow
def test_hypothesis_jsonschema_instances_accepted() -> None:
    hypothesis = pytest.importorskip("hypothesis")
    hjs = pytest.importorskip("hypothesis_jsonschema")
    for row in _corpus_sample(2):
        try:
            accepts = recogniser(json_schema_to_lark(row["schema"]))
        except PdaError:
            continue

        @hypothesis.settings(max_examples=20, deadline=None,
                             suppress_health_check=list(hypothesis.HealthCheck))
        @hypothesis.given(hjs.from_schema(row["schema"]))
        def check(instance: object) -> None:
            assert accepts(_text(instance)), (row["id"], _text(instance))

        try:
            check()
        except hypothesis.errors.InvalidArgument:
            continue
