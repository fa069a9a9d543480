"""Malformed JSON Schemas fail with GrammarError naming the keyword's JSON pointer;
deep nesting, many properties and huge numbers never escape as raw Python errors."""

from __future__ import annotations

import json
import sys
import time

import jsonschema
import pytest

import pda
from pda.errors import GrammarError
from pda.grammar.json_schema import MAX_JSON_DEPTH, MAX_NESTING

# (schema, pointer of the offending keyword, words of the message). Each is invalid
# against the draft 2020-12 meta-schema (checked below with `jsonschema`).
MALFORMED = [
    ({"type": 123}, "#/type", "must be a type name"),
    ({"type": "strin"}, "#/type", "must be a type name"),
    ({"type": []}, "#/type", "non-empty array of type names"),
    ({"type": ["string", 5]}, "#/type", "must be a type name"),
    ({"properties": [1]}, "#/properties", "an object whose values are schemas"),
    ({"properties": {"a": 1}}, "#/properties/a", "must be a schema"),
    ({"$ref": 5}, "#/$ref", "must be a string"),
    ({"enum": "abc"}, "#/enum", "must be an array"),
    ({"required": "a"}, "#/required", "an array of strings"),
    ({"required": [1]}, "#/required", "an array of strings"),
    ({"properties": {"a": {"minLength": -3}}}, "#/properties/a/minLength", "must be a non-negative integer, got -3"),
    ({"minItems": -1}, "#/minItems", "must be a non-negative integer"),
    ({"maxItems": 1.5}, "#/maxItems", "must be a non-negative integer"),
    ({"minProperties": "x"}, "#/minProperties", "must be a non-negative integer, got 'x'"),
    ({"maxLength": True}, "#/maxLength", "must be a non-negative integer"),
    ({"multipleOf": 0}, "#/multipleOf", "greater than 0"),
    ({"multipleOf": -2}, "#/multipleOf", "greater than 0"),
    ({"minimum": "3"}, "#/minimum", "must be a number"),
    ({"maximum": None}, "#/maximum", "must be a number"),
    ({"exclusiveMinimum": "x"}, "#/exclusiveMinimum", "must be a number"),
    ({"pattern": 5}, "#/pattern", "must be a string"),
    ({"format": ["date"]}, "#/format", "must be a string"),
    ({"uniqueItems": "yes"}, "#/uniqueItems", "must be a boolean"),
    ({"items": 5}, "#/items", "a schema or an array of schemas"),
    ({"items": [{}, 3]}, "#/items/1", "must be a schema"),
    ({"anyOf": []}, "#/anyOf", "a non-empty array of schemas"),
    ({"allOf": {}}, "#/allOf", "a non-empty array of schemas"),
    ({"oneOf": [True, "x"]}, "#/oneOf/1", "must be a schema"),
    ({"not": 3}, "#/not", "must be a schema"),
    ({"additionalProperties": "no"}, "#/additionalProperties", "must be a schema"),
    ({"$defs": {"a": 3}}, "#/$defs/a", "must be a schema"),
    ({"dependentRequired": {"a": "b"}}, "#/dependentRequired", "arrays of strings"),
    ({"dependentSchemas": {"a": []}}, "#/dependentSchemas/a", "must be a schema"),
    ({"properties": {"a/b": {"items": {"maxItems": -5}}}}, "#/properties/a~1b/items/maxItems", "non-negative"),
    (5, "#", "must be a schema"),
    ([{"type": "string"}], "#", "must be a schema"),
]


@pytest.mark.parametrize(("schema", "pointer", "words"), MALFORMED, ids=[json.dumps(c[0])[:40] for c in MALFORMED])
def test_malformed_keyword_names_its_pointer(schema: object, pointer: str, words: str) -> None:
    with pytest.raises(jsonschema.SchemaError):
        jsonschema.Draft202012Validator.check_schema(schema)
    with pytest.raises(GrammarError) as info:
        pda.Grammar.from_json_schema(schema)  # type: ignore[arg-type]
    assert str(info.value).startswith(pointer + ": "), str(info.value)
    assert words in str(info.value)


@pytest.mark.parametrize(("schema", "pointer"), [
    ({"const": float("nan")}, "#/const"),
    ({"maximum": float("inf")}, "#/maximum"),
    ({"enum": [1, float("-inf")]}, "#/enum/1"),
    ({"default": {"x": float("nan")}}, "#/default/x"),
    ({"properties": {1: {}}}, "#/properties"),
    ({"enum": [b"x"]}, "#/enum/0"),
    ({"const": {1, 2}}, "#/const"),
    ({"type": "integer", "maximum": 10**5000}, "#/maximum"),
])
def test_non_json_values_are_grammar_errors(schema: dict, pointer: str) -> None:
    with pytest.raises(GrammarError) as info:
        pda.Grammar.from_json_schema(schema)
    assert str(info.value).startswith(pointer + ": "), str(info.value)


def test_nan_in_schema_text_is_an_error() -> None:
    with pytest.raises(GrammarError, match="not a JSON number"):
        pda.Grammar.from_json_schema('{"const": NaN}')


def test_old_draft_keyword_forms_still_validate() -> None:
    """Draft 4's boolean exclusiveMaximum, `items` as an array and integral floats pass."""
    g = pda.Grammar.from_json_schema({"type": "array", "items": [{"type": "integer", "maximum": 5,
                                                                  "exclusiveMaximum": True}],
                                      "minItems": 1.0})
    assert g.accepts("[4]") and not g.accepts("[5]") and not g.accepts("[]")


def _nested_arrays(depth: int) -> dict:
    schema: dict = {"type": "integer"}
    for _ in range(depth):
        schema = {"type": "array", "items": schema}
    return schema


def test_deep_nesting_is_a_grammar_error_with_the_pointer() -> None:
    limit = sys.getrecursionlimit()
    with pytest.raises(GrammarError, match="MAX_JSON_DEPTH") as info:
        pda.Grammar.from_json_schema(_nested_arrays(300))
    assert str(info.value).startswith("#/items/items/")
    with pytest.raises(GrammarError, match="MAX_JSON_DEPTH"):
        pda.Grammar.from_json_schema({"const": json.loads("[" * 500 + "]" * 500)})
    with pytest.raises(GrammarError, match="MAX_JSON_DEPTH"):
        pda.Grammar.from_json_schema("[" * 100_000 + "]" * 100_000)
    assert sys.getrecursionlimit() == limit


def test_nesting_up_to_the_limit_compiles() -> None:
    depth = MAX_NESTING - 2
    assert 2 * depth <= MAX_JSON_DEPTH
    g = pda.Grammar.from_json_schema(_nested_arrays(depth))
    assert g.accepts("[" * depth + "1" + "]" * depth)
    assert not g.accepts("[" * depth + '"x"' + "]" * depth)
    with pytest.raises(GrammarError, match="MAX_NESTING"):
        pda.Grammar.from_json_schema(_nested_arrays(MAX_NESTING + 1))


def test_ref_chains_are_bounded_without_recursion_errors() -> None:
    """`$ref` chains are flat in the document but nest in the lowering."""
    defs = {f"a{i}": {"type": "array", "items": {"$ref": f"#/$defs/a{i + 1}"}} for i in range(600)}
    defs["a600"] = {"type": "null"}
    with pytest.raises(GrammarError, match="MAX_NESTING"):
        pda.Grammar.from_json_schema({"$defs": defs, "$ref": "#/$defs/a0"})
    aliases = {f"a{i}": {"$ref": f"#/$defs/a{i + 1}"} for i in range(600)}
    aliases["a600"] = {"type": "null"}
    with pytest.raises(GrammarError, match="MAX_NESTING"):
        pda.Grammar.from_json_schema({"$defs": aliases, "$ref": "#/$defs/a0"})
    short = {f"a{i}": {"type": "array", "items": {"$ref": f"#/$defs/a{i + 1}"}} for i in range(20)}
    short["a20"] = {"type": "null"}
    g = pda.Grammar.from_json_schema({"$defs": short, "$ref": "#/$defs/a0"})
    assert g.accepts("[" * 20 + "null" + "]" * 20)


def test_a_thousand_properties_compile() -> None:
    props = {f"p{i}": {"type": "integer"} for i in range(1000)}
    g = pda.Grammar.from_json_schema({"type": "object", "properties": props, "required": ["p0", "p999"],
                                      "additionalProperties": False})
    assert g.accepts('{"p0":1,"p500":2,"p999":3}')
    assert not g.accepts('{"p0":1}')
    assert not g.accepts('{"p0":1,"p999":3,"q":1}')


def test_large_integer_bounds_are_exact() -> None:
    big = 10**28
    g = pda.Grammar.from_json_schema({"type": "integer", "minimum": -big, "maximum": big})
    assert g.accepts(str(big)) and g.accepts(str(-big)) and g.accepts("0")
    assert not g.accepts(str(big + 1)) and not g.accepts(str(-big - 1))
    huge = 10**400
    g = pda.Grammar.from_json_schema({"type": "integer", "minimum": 0, "exclusiveMaximum": huge, "multipleOf": 10**399})
    assert g.accepts(str(9 * 10**399)) and not g.accepts(str(huge))
    g = pda.Grammar.from_json_schema({"type": "number", "minimum": 1e308, "maximum": 1.5e308})
    assert g.accepts("1" + "0" * 308) and not g.accepts("9" * 308)
    g = pda.Grammar.from_json_schema({"enum": [10**300, 7], "multipleOf": 7})
    assert g.accepts("7") and not g.accepts(str(10**300))


def test_huge_counts_are_fast_or_rejected() -> None:
    """`maxLength: 2**31` took minutes (repetition rules recursed O(n) times); counts past
    MAX_COUNT are errors."""
    start = time.monotonic()
    g = pda.Grammar.from_json_schema({"type": "string", "maxLength": 2**31, "minLength": 1})
    assert g.accepts('"ab"') and not g.accepts('""')
    g = pda.Grammar.from_json_schema({"type": "array", "maxItems": 10**28})
    assert g.accepts("[1,2]")
    assert time.monotonic() - start < 20
    with pytest.raises(GrammarError, match=r"#/maxItems: .*MAX_COUNT"):
        pda.Grammar.from_json_schema({"type": "array", "maxItems": 10**300})


def test_exponential_negation_is_bounded() -> None:
    """Six nested `not`s of two properties ran for minutes; MAX_STEPS stops them in seconds."""
    schema: dict = {"type": "integer"}
    for _ in range(7):
        schema = {"not": {"properties": {"a": schema, "b": schema}}}
    start = time.monotonic()
    with pytest.raises(GrammarError, match="MAX_STEPS|MAX_NESTING"):
        pda.Grammar.from_json_schema(schema)
    assert time.monotonic() - start < 30


def test_shared_subschemas_are_bounded() -> None:
    """A Python dict can share a subschema: 40 levels of two references are 2**40 values."""
    schema: dict = {"type": "integer"}
    for _ in range(40):
        schema = {"type": "array", "prefixItems": [schema, schema]}
    with pytest.raises(GrammarError, match="MAX_SCHEMA_NODES"):
        pda.Grammar.from_json_schema(schema)


def test_bad_value_holding_a_huge_integer() -> None:
    with pytest.raises(GrammarError, match="^#/type: must be a type name .*got a list"):
        pda.Grammar.from_json_schema({"type": [10**5000]})
    with pytest.raises(GrammarError, match="MAX_NUMBER_DIGITS"):
        pda.Grammar.from_json_schema({"type": 10**5000})
