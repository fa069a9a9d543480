"""`instances.direct_verdicts`: a value decided against a schema of structural keywords without a grammar
gives the verdict of parsing it with the schema's exact lowering, and leaves the rest undecided."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

import pda
from pda.errors import PdaError
from pda.grammar.json_schema.instances import decidable_schema, direct_verdicts

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT.parent / "shared" / "corpus" / "json_schema_test_suite" / "tests"

CASES: list[tuple[Any, list[Any]]] = [
    ({"type": "integer", "minimum": 3, "exclusiveMaximum": 10}, [2, 3, 9, 10, "4", True, None]),
    ({"type": ["string", "null"]}, ["", "x", None, 0, [], {}]),
    ({"type": "number", "maximum": 2.5}, [2, 3, -7, False]),
    ({"properties": {"a": {"type": "integer"}, "b": False}, "required": ["a"]},
     [{"a": 1}, {"a": "1"}, {"a": 1, "b": 2}, {"c": 1}, {}, [1], "a"]),
    ({"additionalProperties": {"type": "boolean"}, "minProperties": 1, "maxProperties": 2},
     [{}, {"x": True}, {"x": True, "y": 1}, {"x": True, "y": False, "z": True}]),
    ({"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2},
     [[], ["a"], ["a", 1], ["a", "b", "c"]]),
    ({"anyOf": [{"type": "integer", "minimum": 10}, {"type": "string"}]}, [5, 10, "s", None]),
    ({"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0}]}, [-1, 1, {}]),
    ({"allOf": [{"type": "object"}, {"required": ["k"]}]}, [{"k": 0}, {"j": 0}, 3]),
    ({"not": {"type": "object", "required": ["k"]}}, [{"k": 0}, {"j": 0}, 3]),
    ({"if": {"type": "integer"}, "then": {"minimum": 5}, "else": {"type": "string"}}, [4, 5, "x", None]),
    ({"properties": {"é\n": {"type": "string"}}, "additionalProperties": False}, [{"é\n": "\u0001\"\\"}, {"e": "x"}]),
    (True, [1, None]),
]


def parse_verdicts(schema: Any, values: list[Any]) -> list[bool]:
    """The verdicts `Lowering.values_verdicts` took from a grammar: the compact text parsed with the exact lowering."""
    grammar = pda.Grammar.from_json_schema(schema, exact=True, whitespace="compact")
    return [grammar.accepts(json.dumps(v, separators=(",", ":"), ensure_ascii=False)) for v in values]


@pytest.mark.parametrize(("schema", "values"), CASES)
def test_direct_verdicts_are_the_exact_parse(schema: Any, values: list[Any]) -> None:
    assert direct_verdicts(values, schema) == parse_verdicts(schema, values)


def test_false_refuses_everything() -> None:
    """`false` has no grammar to parse with (`values_verdicts` refuses every value without one)."""
    assert direct_verdicts([1, None, {}], False) == [False, False, False]


@pytest.mark.parametrize(("schema", "values"), [
    ({"type": "string", "pattern": "^a"}, ["a"]),  # a pattern builds a terminal the schema sizes
    ({"type": "string", "maxLength": 3}, ["a"]),
    ({"enum": [1, 2]}, [1]),
    ({"$ref": "#/$defs/x", "$defs": {"x": True}}, [1]),
    ({"properties": {"a": {"format": "date"}}}, [{"a": "x"}]),
    ({"type": "number"}, [1.5]),  # 1.0 and 1e16 are integers: floats are left to the parse
    ({"type": "string"}, ["\ud800"]),
    ({"items": [{"type": "integer"}]}, [[1]]),  # the array form of items
    ({"exclusiveMinimum": True, "minimum": 1}, [1]),  # draft 4's boolean exclusives
])
def test_undecided(schema: Any, values: list[Any]) -> None:
    assert direct_verdicts(values, schema) is None


def test_enum_beside_structural_keywords() -> None:
    """The lowering keeps exactly the enum values that are instances of the sibling keywords."""
    schema = {"enum": [{"a": 1}, {"a": "x"}, {"b": 2}, 3], "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    grammar = pda.Grammar.from_json_schema(schema, whitespace="compact")
    assert [grammar.accepts(t) for t in ('{"a":1}', '{"a":"x"}', '{"b":2}', "3")] == [True, False, False, True]


def test_suite_schemas_agree_with_the_parse() -> None:
    """Every JSON-Schema-Test-Suite schema decided here gets, on its tests' data, the exact parse's verdicts."""
    if not SUITE.is_dir():
        pytest.skip(f"JSON-Schema-Test-Suite corpus not found at {SUITE}")
    compared = 0
    for path in sorted(SUITE.glob("draft*/*.json")):
        for group in json.loads(path.read_text()):
            schema, values = group["schema"], [t["data"] for t in group["tests"]]
            direct = direct_verdicts(values, schema) if decidable_schema(schema) else None
            if direct is None:
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("error")
                    parsed = parse_verdicts(schema, values)
            except (PdaError, Warning):
                continue  # the lowering itself is not exact here: values_verdicts never asks
            assert direct == parsed, (path.name, group["description"])
            compared += 1
    assert compared > 50
