"""The lowering's memo key (`keywords.schema_key`): equal schemas share a key, different languages never do.

The key is the schema's keywords, sorted, with their values as written (`marshal` bytes): a memo hit
reuses a subschema's rule, so two schemas whose instances differ must never share a key. A
`properties` map's order is part of the language where objects are bound to schema order, so it is
part of the key; the sorted JSON key before merged two such objects (the second one took the first
one's member order).
"""

from __future__ import annotations

from collections import OrderedDict

import pytest

import pda
from pda.grammar.json_schema.keywords import canon, schema_key


def test_keyword_order_and_own_annotations_do_not_change_the_key() -> None:
    a = {"type": "string", "minLength": 1, "title": "A", "description": "x"}
    b = {"minLength": 1, "description": "y", "type": "string"}
    assert schema_key(a) == schema_key(b)
    assert schema_key({"type": "string"}) == schema_key({"type": "string", "$comment": "c"})


@pytest.mark.parametrize("a, b", [
    ({"type": "integer", "minimum": 1}, {"type": "integer", "minimum": 1.0}),
    ({"const": True}, {"const": 1}),
    ({"const": 0.0}, {"const": -0.0}),
    ({"enum": ["a", "b"]}, {"enum": ["b", "a"]}),
    ({"type": "string"}, {"type": ["string"]}),
    ({"properties": {"a": {}, "b": {}}}, {"properties": {"b": {}, "a": {}}}),
    ({"items": {"type": "string", "title": "t"}}, {"items": {"type": "string"}}),
])
def test_values_that_differ_get_different_keys(a: dict, b: dict) -> None:
    """Values are keyed as written: different types, spellings or orders are different keys (at worst
    the same language is lowered twice), and a nested annotation is part of its value."""
    assert schema_key(a) != schema_key(b)


def test_a_dict_subclass_inside_and_a_boolean_are_keyed_by_canonical_json() -> None:
    ordered = {"items": OrderedDict([("type", "string"), ("maxLength", 3)])}
    assert schema_key(ordered) == canon(ordered)
    assert schema_key(True) == canon(True)
    plain = {"items": {"type": "string", "maxLength": 3}}
    assert isinstance(schema_key(plain), bytes)  # str and bytes never meet in a memo


def test_equal_subschemas_share_one_rule() -> None:
    """Two equal subschemas written with their keywords in another order are lowered once."""
    item = {"type": "string", "minLength": 2, "maxLength": 5}
    same = {"maxLength": 5, "type": "string", "minLength": 2}
    both = pda.Grammar.from_json_schema({"type": "array", "prefixItems": [item, same], "items": False},
                                        whitespace="compact")
    once = pda.Grammar.from_json_schema({"type": "array", "prefixItems": [item, item], "items": False},
                                        whitespace="compact")
    assert both.ir.content_hash == once.ir.content_hash


def test_objects_bound_to_schema_order_keep_their_own_member_order() -> None:
    """Two objects with the same members declared in another order, under `property_order="schema"`:
    each takes its own members in its own order (one memo key for both accepted `y` only in `x`'s)."""
    a_first = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
               "required": ["a", "b"], "additionalProperties": False}
    b_first = {"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "integer"}},
               "required": ["a", "b"], "additionalProperties": False}
    schema = {"type": "object", "properties": {"x": a_first, "y": b_first}, "required": ["x", "y"],
              "additionalProperties": False}
    g = pda.Grammar.from_json_schema(schema, whitespace="compact", property_order="schema")
    assert g.accepts('{"x":{"a":1,"b":2},"y":{"b":1,"a":2}}')
    assert not g.accepts('{"x":{"a":1,"b":2},"y":{"a":1,"b":2}}')
    assert not g.accepts('{"x":{"b":1,"a":2},"y":{"b":1,"a":2}}')
