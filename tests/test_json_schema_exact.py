"""`exact=True` where it used to approximate: overlapping `oneOf` (as anyOf over each branch and
the others' negations) and property order, checked against the `jsonschema` package."""

from __future__ import annotations

import json
import warnings
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pda
from pda.grammar.json_schema import JsonSchemaWarning


def compile_exact(schema: Any, whitespace: str = "compact") -> tuple[Any, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = pda.Grammar.from_json_schema(schema, exact=True, whitespace=whitespace)
    return g, [str(w.message) for w in caught if issubclass(w.category, JsonSchemaWarning)]


def agree(g: Any, schema: Any, value: Any) -> None:
    want = jsonschema.Draft202012Validator(schema).is_valid(value)
    text = json.dumps(value, separators=(",", ":"))
    assert g.accepts(text) == want, (schema, text, want)


ONE_OF_SCHEMAS = [
    {"oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
    {"type": "object", "oneOf": [{"properties": {"a": {"type": "integer"}}},
                                 {"properties": {"a": {"type": "string"}}}]},
    {"oneOf": [{"type": "integer"}, {"minimum": 3}]},
    {"oneOf": [{"type": "string", "maxLength": 3}, {"type": "string", "pattern": "^a"}]},
    {"oneOf": [{"type": "integer"}, {"type": "number", "maximum": 2.5}, {"enum": [1, "x", None]}]},
    {"type": "object", "properties": {"k": {"type": "integer"}},
     "oneOf": [{"required": ["a"]}, {"required": ["b"]}, {"required": ["c"], "properties": {"c": {"const": 1}}}]},
    {"type": "array", "oneOf": [{"items": {"type": "integer"}}, {"items": {"minimum": 0}}]},
    # closed objects: "not B_j" inside a closed B_i is "one of B_i's other names is present"
    {"type": "object", "oneOf": [
        {"properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "additionalProperties": False},
        {"properties": {"a": {"type": "integer"}, "c": {"type": "integer"}}, "additionalProperties": False},
        {"properties": {"a": {"type": "integer"}, "c": {"type": "integer"}, "k": {}},
         "additionalProperties": False, "required": ["k"]}]},
]


@pytest.mark.parametrize("schema", ONE_OF_SCHEMAS)
def test_overlapping_oneof_is_exact_without_a_warning(schema: Any) -> None:
    g, warned = compile_exact(schema)
    assert not any("'oneOf'" in w for w in warned), warned
    hand = [None, True, 0, 1, 2, 2.5, 3, 3.5, -4, "", "a", "ab", "abcd", "xyzw", "x", [], [1], [1, 2], ["a", "b"],
            [1, "b"], [-1], [-1.5], [0.5, 1], {}, {"a": 1}, {"b": 1}, {"a": 1, "b": 2}, {"a": "s"}, {"a": None},
            {"c": 1}, {"c": 2}, {"a": 1, "c": 1}, {"k": 1, "b": 0}, {"k": "x", "a": 1}, {"a": 1, "b": "s"},
            {"b": "s", "c": 1}, {"k": None}, {"a": 1, "c": 2, "k": 0}]
    for v in hand:
        agree(g, schema, v)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from([2.5, 3.5, -0.5])
    | st.sampled_from(["", "a", "ab", "abc", "abcd", "x"]),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(["a", "b", "c", "k"]), inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(len(ONE_OF_SCHEMAS))), json_values)
def test_overlapping_oneof_agrees_with_jsonschema(i: int, value: Any) -> None:
    schema = ONE_OF_SCHEMAS[i]
    agree(_compiled(i), schema, value)


_COMPILED: dict[int, Any] = {}


def _compiled(i: int) -> Any:
    if i not in _COMPILED:
        _COMPILED[i] = compile_exact(ONE_OF_SCHEMAS[i])[0]
    return _COMPILED[i]


def test_oneof_that_cannot_be_negated_stays_an_approximation() -> None:
    """A branch with `uniqueItems` has no negation here: matched as anyOf, with the warning."""
    schema = {"oneOf": [{"type": "array", "uniqueItems": True}, {"type": "array", "maxItems": 2}]}
    g, warned = compile_exact(schema)
    assert any("'oneOf'" in w and "matched as anyOf" in w for w in warned), warned
    assert g.accepts("[1,2,3]") and g.accepts("[1,1]")


def test_oneof_with_an_open_branch_beside_a_closed_one_stays_an_approximation() -> None:
    """"not B_j" for a closed B_j is "some other key is present", which the lowering has no
    form for inside an open B_i: matched as anyOf, with the warning."""
    schema = {"type": "object", "oneOf": [{"properties": {"a": {"type": "integer"}}, "required": ["a"]},
                                          {"properties": {"a": {}, "b": {}}, "additionalProperties": False}]}
    g, warned = compile_exact(schema)
    assert any("'oneOf'" in w and "matched as anyOf" in w for w in warned), warned
    assert g.accepts('{"a":1}')  # valid against both: the approximation


def test_oneof_whose_exact_form_is_unsupported_falls_back_under_raise() -> None:
    """not(items: integer) is `contains` a non-integer, which the lowering does not take
    beside `minItems: 2` (unsupported): with on_unsupported="raise" the exact attempt is
    abandoned, leaving no trace, and the oneOf is matched as anyOf with its warning."""
    schema = {"type": "array", "oneOf": [{"items": {"type": "integer"}}, {"minItems": 2}]}
    g, warned = compile_exact(schema)
    assert warned == ["JSON Schema keyword 'oneOf' at #/oneOf is approximated: branches may overlap; matched as "
                      "anyOf (an instance valid against several branches is accepted)"]
    assert g.accepts("[1,2]") and g.accepts("[]") and g.accepts('["a","b"]') and not g.accepts('["a"]')


def test_generation_default_keeps_the_anyof_approximation() -> None:
    schema = {"oneOf": [{"required": ["a"]}, {"required": ["b"]}]}
    with pytest.warns(JsonSchemaWarning, match="oneOf"):
        g = pda.Grammar.from_json_schema(schema)
    assert g.accepts('{"a":1,"b":2}')


def test_a_negated_integer_type_with_bounds_is_exact() -> None:
    """`not: {type: integer}` beside bounds (what an exact oneOf of an integer and a number
    branch builds): the bounded numbers with a non-zero fraction digit."""
    schema = {"type": "number", "minimum": 0, "maximum": 10, "not": {"type": "integer"}}
    g, warned = compile_exact(schema)
    assert not warned
    for v in [0, 1, 10, 0.5, 9.75, 10.5, -0.5, 3.0]:
        agree(g, schema, v)
    assert not g.accepts("3.0") and not g.accepts("3.000") and g.accepts("3.010")
    integer = {"type": "integer", "not": {"type": "integer"}}
    with pytest.raises(pda.GrammarError, match="no JSON value"):
        compile_exact(integer)


# ------------------------------------------------------------------ property order

ORDER_SCHEMAS = [
    # property counts beside declared properties (schema order before)
    {"type": "object", "properties": {f"q{i}": {"type": "integer"} for i in range(4)}, "required": ["q0"],
     "minProperties": 2, "maxProperties": 3},
    # counts over more than MAX_ANY_ORDER_PROPERTIES declared properties, extras allowed
    {"type": "object", "properties": {f"q{i}": {"type": "integer"} for i in range(12)}, "required": ["q0", "q5"],
     "minProperties": 3, "additionalProperties": {"type": "string"}},
    # more required properties than MAX_TRACKED_REQUIRED (schema order before): counted
    {"type": "object", "properties": {f"q{i}": {"type": "integer"} for i in range(18)},
     "required": [f"q{i}" for i in range(14)], "additionalProperties": False},
]
KEYS = [f"q{i}" for i in range(18)] + ["x", "y"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(len(ORDER_SCHEMAS))), st.lists(st.sampled_from(KEYS), unique=True, max_size=20),
       st.booleans())
def test_exact_mode_takes_any_property_order(i: int, keys: list[str], strings: bool) -> None:
    """Valid instances are accepted in every key order (with property counts, and with more
    required properties than MAX_TRACKED_REQUIRED); invalid ones refused."""
    schema = ORDER_SCHEMAS[i]
    instance = {k: ("s" if strings and k in ("x", "y") else 1) for k in keys}
    if i not in _ORDER_COMPILED:
        _ORDER_COMPILED[i] = compile_exact(schema)[0]
    agree(_ORDER_COMPILED[i], schema, instance)


_ORDER_COMPILED: dict[int, Any] = {}


def test_every_order_of_a_counted_object() -> None:
    import itertools

    schema = ORDER_SCHEMAS[0]
    g, warned = compile_exact(schema)
    assert not warned
    for keys in itertools.permutations(["q0", "q1", "q2", "x"], 3):
        agree(g, schema, {k: 1 for k in keys})
    for keys in itertools.permutations(["q0", "q1", "q2", "q3"]):
        assert not g.accepts(json.dumps({k: 1 for k in keys}))  # 4 > maxProperties


def test_counts_past_max_object_states_are_dropped_with_a_warning() -> None:
    from pda.grammar.json_schema import MAX_OBJECT_STATES

    props = {f"q{i}": {"type": "integer"} for i in range(6)}
    schema = {"type": "object", "properties": props, "minProperties": 2, "maxProperties": 60}
    assert 2 * 2**6 * 61 > MAX_OBJECT_STATES
    g, warned = compile_exact(schema)
    assert any("'minProperties/maxProperties'" in w and "not enforced" in w for w in warned), warned
    assert g.accepts('{"q5":1,"q0":2}') and g.accepts('{"q5":1}')  # the dropped minimum accepts more


# ------------------------------------------------------------------ uniqueItems

UNIQUE_SCHEMAS = [
    {"type": "array", "uniqueItems": True, "items": {"enum": ["GET", "POST", "PATCH", "PUT", "DELETE"]}},
    {"type": "array", "uniqueItems": True, "minItems": 2, "maxItems": 3, "items": {"enum": ["a", "b", 1, 1.0, 2.5]}},
    {"type": "array", "uniqueItems": True, "items": {"type": ["boolean", "null"]}},
    {"type": "array", "uniqueItems": True, "minItems": 3, "items": {"type": "string", "enum": ["a", "b", "c", 4]}},
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(len(UNIQUE_SCHEMAS))),
       st.lists(st.sampled_from(["GET", "POST", "PUT", "a", "b", "c", 1, 1.0, 2.5, 4, True, False, None]),
                max_size=5))
def test_unique_items_over_a_few_values_is_exact(i: int, items: list[Any]) -> None:
    """uniqueItems over at most MAX_UNIQUE_VALUES possible item values: exact, no warning
    (1 and 1.0 are the same value)."""
    if i not in _UNIQUE_COMPILED:
        g, warned = compile_exact(UNIQUE_SCHEMAS[i])
        assert not warned, warned
        _UNIQUE_COMPILED[i] = g
    agree(_UNIQUE_COMPILED[i], UNIQUE_SCHEMAS[i], items)


_UNIQUE_COMPILED: dict[int, Any] = {}


def test_unique_items_over_many_values_keeps_the_warning() -> None:
    from pda.grammar.json_schema import MAX_UNIQUE_VALUES

    for items in ({"type": "string"}, {"enum": list(range(MAX_UNIQUE_VALUES + 1))}):
        g, warned = compile_exact({"type": "array", "uniqueItems": True, "items": items})
        assert any("'uniqueItems'" in w and "duplicate items are accepted" in w for w in warned), warned
        assert g.accepts("[1,1]") or g.accepts('["a","a"]')


# ------------------------------------------------------------------ propertyNames

NAMES_SCHEMAS = [
    # a listed set of names beside patternProperties (pattern keys ignored propertyNames before)
    {"type": "object", "propertyNames": {"enum": ["asm", "bools", "copy", "k1"]},
     "patternProperties": {"^.*$": {"type": "object"}}},
    {"type": "object", "propertyNames": {"enum": ["a", "b", "k1", "zz"], "maxLength": 2},
     "properties": {"a": {"type": "integer"}, "x": {"type": "integer"}},
     "patternProperties": {"^k": {"type": "string"}}, "additionalProperties": {"type": "boolean"}},
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(len(NAMES_SCHEMAS))),
       st.dictionaries(st.sampled_from(["asm", "bools", "copy", "k1", "k2", "a", "b", "x", "zz", "other"]),
                       st.sampled_from([1, "s", True, {}]), max_size=4))
def test_property_names_listed_are_exact(i: int, instance: dict[str, Any]) -> None:
    if i not in _NAMES_COMPILED:
        g, warned = compile_exact(NAMES_SCHEMAS[i])
        assert not warned, warned
        _NAMES_COMPILED[i] = g
    agree(_NAMES_COMPILED[i], NAMES_SCHEMAS[i], instance)


_NAMES_COMPILED: dict[int, Any] = {}


def test_a_negated_string_enum_beside_other_string_keywords_is_exact() -> None:
    """`not: {enum: [...]}` beside minLength/pattern (what negating a oneOf branch builds): the
    values are subtracted as literal patterns; it was ignored with a warning before."""
    schema = {"type": "string", "minLength": 1, "pattern": "^[a-z.]+$", "not": {"enum": ["u", "a.b", "é"]}}
    g, warned = compile_exact(schema)
    assert not warned, warned
    for v in ["u", "v", "", "a.b", "axb", "é", "uu", "A"]:
        agree(g, schema, v)
    assert not g.accepts(json.dumps(["x"]))


def test_large_property_counts_without_declared_properties_are_exact() -> None:
    """maxProperties over MAX_COUNTED_PROPERTIES on a map (no declared properties): a repetition
    of extra members, exact, where it was not enforced before."""
    schema = {"type": "object", "additionalProperties": {"type": "integer"}, "minProperties": 2,
              "maxProperties": 100}
    g, warned = compile_exact(schema)
    assert not warned, warned
    for n in (0, 1, 2, 50, 100, 101, 150):
        agree(g, schema, {f"k{i}": i for i in range(n)})


def test_uri_reference_format_is_checked() -> None:
    """`format: uri-reference` (RFC 3986, the character sets of "uri"): a URI or a relative
    reference whose first segment holds no colon; it was silently unchecked before."""
    g, warned = compile_exact({"type": "string", "format": "uri-reference"})
    assert not warned
    for ok in ["#", "#frag", "/abc", "abc", "http://example.com/a?b#c", "", "a/b:c", "?q=1", "//host/p", "%41"]:
        assert g.accepts(json.dumps(ok)), ok
    for bad in ["1a:b", "!not a uri-reference!", "\\\\WINDOWS\\fileshare", "#frag\\ment", "%4"]:
        assert not g.accepts(json.dumps(bad)), bad


def test_anchored_alternatives_with_lengths_compile_exactly() -> None:
    """`^$|^[^/].*$` with minLength: the automata take anchors only at the edges, so every-
    alternative-anchored patterns are grouped as `^(?:|[^/].*)$` first; relaxed with a warning
    before."""
    from pda.grammar.json_schema.strings import anchored_group

    assert anchored_group("^$|^[^/].*$") == "^(?:|[^/].*)$"
    assert anchored_group("^a$|b") == "^a$|b" and anchored_group("^a\\$|^b$") == "^a\\$|^b$"
    assert anchored_group("^[|]$|^(x|y)$") == "^(?:[|]|(x|y))$"
    schema = {"type": "string", "minLength": 1, "pattern": "^$|^[^/].*$"}
    g, warned = compile_exact(schema)
    assert not warned, warned
    for v in ["", "a", "/a", "a/b", "a\nb"]:
        agree(g, schema, v)
    negated = {"type": "string", "maxLength": 3, "not": {"pattern": "^\\*$|^$|^[a-z][a-z0-9A-Z]*$"}}
    g, warned = compile_exact(negated)
    assert not warned, warned
    for v in ["", "*", "ab", "Ab", "a*", "**", "abcd"]:
        agree(g, negated, v)


def test_pattern_keys_past_the_regex_limits_exclude_names_by_look_ahead() -> None:
    """A pattern minus a declared name whose automaton is too large to write back as a regex
    (a 0..48 counter): the name is excluded by a leading negative look-ahead instead of key
    priorities, which let "docker" through as a pattern key (with a warning) before."""
    pattern = "^[a-z0-9]([-a-z0-9]{0,48}[a-z0-9])?$"
    closed = {"type": "object", "patternProperties": {pattern: {"type": "string"}},
              "not": {"required": ["docker"]}, "additionalProperties": False}
    both = {"type": "object", "properties": {"docker": {"type": "integer"}, "Up": {"type": "null"}},
            "patternProperties": {pattern: {"type": "string"}}, "additionalProperties": {"type": "boolean"}}
    for schema in (closed, both):
        g, warned = compile_exact(schema)
        assert not warned, warned
        for v in [{"docker": "x"}, {"docker": 1}, {"dock": "x"}, {"dock": 1}, {"Dock": True}, {"Dock": "x"},
                  {"Up": None}, {"Up": True}, {"a-b": "s", "Dock": False}]:
            agree(g, schema, v)
