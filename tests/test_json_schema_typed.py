"""The typed views of a normalised schema (`pda.grammar.json_schema.typed`): read once, defaults applied,
draft forms and the internal `x-pda-*` keywords folded into fields; and the container lowerings that
read them keep their language (the same draft's two spellings of one array give one grammar)."""

from __future__ import annotations

from decimal import Decimal

import pda
from pda.grammar.json_schema import json_schema_to_ir
from pda.grammar.json_schema.keywords import OPEN
from pda.grammar.json_schema.typed import ArraySchema, NumberSchema, ObjectSchema


def test_array_defaults() -> None:
    a = ArraySchema.of({"type": "array"})
    assert a == ArraySchema(prefix_items=(), items=True, min_items=0, max_items=None, contains=None,
                            min_contains=1, max_contains=None, unique_items=False)


def test_array_tuple_forms_fold_to_prefix_items() -> None:
    draft7 = ArraySchema.of({"items": [{"type": "string"}, {"type": "integer"}], "additionalItems": False,
                             "prefixItems": [{"type": "null"}]})
    draft2020 = ArraySchema.of({"prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False,
                                "additionalItems": {"type": "null"}})
    assert draft7.prefix_items == draft2020.prefix_items == ({"type": "string"}, {"type": "integer"})
    assert draft7.items is False and draft2020.items is False
    # Draft 4-7 tuple items without additionalItems: any further item.
    assert ArraySchema.of({"items": [{"type": "string"}]}).items is True


def test_array_counts() -> None:
    a = ArraySchema.of({"minItems": 2.0, "maxItems": 5, "contains": {"const": 1}, "minContains": 2,
                        "maxContains": 3.0, "uniqueItems": True})
    assert (a.min_items, a.max_items, a.min_contains, a.max_contains) == (2, 5, 2, 3)
    assert all(type(n) is int for n in (a.min_items, a.max_items, a.min_contains, a.max_contains))
    assert a.contains == {"const": 1} and a.unique_items
    assert not ArraySchema.of({"uniqueItems": False}).unique_items


def test_object_defaults_and_required() -> None:
    o = ObjectSchema.of({"type": "object", "required": ["a", "b"], "maxProperties": 4.0})
    assert o.properties == {} and o.pattern_properties == {}
    assert o.required == ("a", "b") and o.additional_properties is True and o.property_names is True
    assert (o.min_properties, o.max_properties) == (0, 4)
    assert not o.closed_by_default  # declares no properties: a map stays open


def test_object_closed_by_default() -> None:
    assert ObjectSchema.of({"properties": {"a": {}}}).closed_by_default
    assert ObjectSchema.of({"patternProperties": {"^x": {}}}).closed_by_default
    # An explicit additionalProperties (even `true`) says what other keys may be.
    assert not ObjectSchema.of({"properties": {"a": {}}, "additionalProperties": True}).closed_by_default
    assert not ObjectSchema.of({"properties": {"a": {}}, "unevaluatedProperties": {}}).closed_by_default
    assert ObjectSchema.of({"properties": {"a": {}}, "unevaluatedProperties": False}).closed_by_default
    # An object that normalisation built to stay open (a negated `required`, a dependency).
    assert not ObjectSchema.of({"properties": {"a": False}, OPEN: True}).closed_by_default


def test_views_do_not_change_the_schema() -> None:
    schema = {"properties": {"a": {}}, "required": ["a"], "patternProperties": {"^x": {}}}
    before = repr(schema)
    o = ObjectSchema.of(schema)
    assert repr(schema) == before and o.properties is not schema["properties"]
    assert NumberSchema.of({"minimum": 1, "exclusiveMinimum": True}).lo == Decimal(1)


def test_tuple_items_spellings_lower_alike() -> None:
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "array",
              "items": [{"type": "string"}, {"type": "integer"}], "additionalItems": False}
    draft2020 = {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False}
    for exact in (False, True):
        assert json_schema_to_ir(draft7, exact=exact).content_hash == json_schema_to_ir(
            draft2020, exact=exact).content_hash
    g = pda.Grammar.from_json_schema(draft7)
    assert g.accepts('["a", 1]') and g.accepts('["a"]') and not g.accepts('["a", 1, 2]')


def test_dependency_branch_keeps_other_keys() -> None:
    # The "a absent" branch of a dependency is an object normalisation builds open: without it the
    # generation default would close `{"b": 1}`, which declares no `a`.
    g = pda.Grammar.from_json_schema({"type": "object", "dependentRequired": {"a": ["b"]}})
    assert g.accepts('{"b": 1}') and g.accepts('{"a": 1, "b": 2}') and not g.accepts('{"a": 1}')
