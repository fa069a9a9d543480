"""The JSON Schema front end's defaults, made for generation, against `exact=True`, JSON Schema's
language: integer literals, finite numbers, no undeclared keys unless allowed, bounded white
space, dates and times as Python's `datetime` reads them (docs/json_schema.md, "Defaults")."""

from __future__ import annotations

import json
import random
import re

import pytest

import pda
from pda.errors import GrammarError
from pda.grammar.json_schema import MAX_NUMBER_EXPONENT, MAX_NUMBER_INTEGER_DIGITS, MAX_WHITESPACE_RUN

G = pda.Grammar


def both(schema: object) -> tuple[G, G]:
    return G.from_json_schema(schema), G.from_json_schema(schema, exact=True)


@pytest.mark.parametrize("schema", [
    {"type": "integer"},
    {"type": "integer", "minimum": -20, "maximum": 20},
    {"type": "integer", "minimum": -20},
    {"type": "integer", "maximum": 20},
    {"type": "integer", "multipleOf": 7},
    {"type": "integer", "multipleOf": 7, "minimum": -20, "maximum": 20},
    {"type": "integer", "multipleOf": 97, "minimum": -200, "maximum": 200},  # enumerated
    {"enum": [-14, 0, 7, 14]},
    {"type": "integer", "enum": [-14, 0, 7.0, 14]},
])
def test_integers_are_integer_literals_by_default(schema: dict) -> None:
    """`14.0`, `-0` and `1e1` are integers in JSON Schema (exact=True) but not integer literals."""
    default, exact = both(schema)
    valid = [n for n in (0, 14, -14, 7) if exact.accepts(str(n))]
    assert valid and all(default.accepts(str(n)) for n in valid), schema
    for n in valid:
        assert exact.accepts(f"{n}.0") and not default.accepts(f"{n}.0"), (schema, n)
    assert exact.accepts("-0") == (0 in valid) and exact.accepts("0.00") == (0 in valid)
    for text in ("14.0", "-14.00", "-0", "0.0", "7e0", "1.4e1"):
        assert not default.accepts(text), (schema, text)
    if schema == {"type": "integer"}:
        assert exact.accepts("1e5") and not default.accepts("1e5")


@pytest.mark.parametrize("step", [1, 2, 100_003])  # 100,003: over the automaton's modulus, enumerated
def test_a_number_with_an_integer_step_keeps_its_plain_spellings_by_default(step: int) -> None:
    """Only `integer` is written as integer literals by default: a `number` whose `multipleOf` is an
    integer takes `6.0` and `-0` like any other number (`multipleOf: 1` took only integer literals,
    and the enumerated steps only the shortest spelling; Github_ultra---o46322 writes `6000.0`)."""
    bounds = {"minimum": -10 * step, "maximum": 50 * step}
    default, exact = both({"type": "number", "multipleOf": step, **bounds})
    integer, _ = both({"type": "integer", "multipleOf": step, **bounds})
    v = 3 * step
    for text in (str(v), f"{v}.0", f"{v}.00", f"-{v}.0", "0", "-0", "0.0"):
        assert default.accepts(text) and exact.accepts(text), (step, text)
        assert integer.accepts(text) == bool(re.fullmatch(r"0|-?[1-9][0-9]*", text)), (step, text)
    for text in (f"{v}.5", str(60 * step), f"{v}e0", *([str(v + 1)] if step > 1 else [])):
        assert not default.accepts(text) and not exact.accepts(text), (step, text)


def test_a_plain_integer_in_range_is_accepted_exactly_as_before() -> None:
    default, exact = both({"type": "integer", "minimum": -5, "maximum": 300, "multipleOf": 3})
    for n in range(-10, 310):
        assert default.accepts(str(n)) == exact.accepts(str(n)) == (-5 <= n <= 300 and n % 3 == 0), n


def test_numbers_are_finite_doubles_by_default() -> None:
    default, exact = both({"type": "number"})
    top = "9" * MAX_NUMBER_INTEGER_DIGITS + "." + "9" * 30 + f"e{MAX_NUMBER_EXPONENT}"
    assert default.accepts(top) and float(top) < float("inf")
    for text in ("0", "-0", "0.5", "-2.25", "1E+3", "12e-400", "1.5e-999", "9" * MAX_NUMBER_INTEGER_DIGITS):
        assert default.accepts(text) and exact.accepts(text), text
    over = ("1e999", "1" * 400, "1" * (MAX_NUMBER_INTEGER_DIGITS + 1), f"1e{MAX_NUMBER_EXPONENT + 1}",
            "1e0000", "1e-1000")
    for text in over:
        assert not default.accepts(text) and exact.accepts(text), text


def test_every_default_number_parses_to_a_finite_float() -> None:
    """Random texts of the number's alphabet: each one the default accepts is a finite float,
    and the exact grammar accepts it too."""
    default, exact = both({"type": "number"})
    rng = random.Random(5)
    accepted = 0
    for _ in range(3000):
        mantissa = rng.choice(["0", "-0"]) if rng.random() < 0.1 else \
            rng.choice(["", "-"]) + str(rng.randint(1, 9)) + "".join(rng.choices("0123456789", k=rng.randint(0, 24)))
        text = mantissa + rng.choice(["", "." + "".join(rng.choices("0123456789", k=rng.randint(1, 5)))]) + \
            rng.choice(["", f"e{rng.randint(0, 400)}", f"E+{rng.randint(0, 400)}", f"e-{rng.randint(0, 1200)}"])
        if default.accepts(text):
            accepted += 1
            assert exact.accepts(text) and float(text) not in (float("inf"), float("-inf")), text
    assert accepted > 1000


@pytest.mark.parametrize("schema", [
    {"type": "number", "minimum": 0},
    {"type": "number", "exclusiveMaximum": 0},
    {"type": "number", "multipleOf": 0.25},
    {"type": "number", "multipleOf": 5, "minimum": 1},
])
def test_one_sided_and_stepped_numbers_stay_finite(schema: dict) -> None:
    """Plain decimals (no exponent) of at most MAX_NUMBER_INTEGER_DIGITS integer digits by default."""
    default, exact = both(schema)
    sign = "-" if "exclusiveMaximum" in schema else ""
    wide = sign + "5" * (MAX_NUMBER_INTEGER_DIGITS + 1) + "0"
    assert exact.accepts(wide) and not default.accepts(wide)
    fits = sign + "5" * (MAX_NUMBER_INTEGER_DIGITS - 1) + "0"
    assert default.accepts(fits) and default.accepts(sign + "10")


def test_a_bound_beyond_the_cap_is_kept() -> None:
    """`minimum: 1e25` is still satisfiable: the cap never empties a range."""
    default = G.from_json_schema({"type": "number", "minimum": 10**25})
    assert default.accepts(str(10**25)) and default.accepts(str(10**30)) and not default.accepts("5")


def test_number_constants_are_written_the_shortest_way_by_default() -> None:
    default, exact = both({"enum": [2.5, 3, -0.0, 10**21]})
    for text in ("2.5", "3", "0", str(10**21)):
        assert default.accepts(text) and exact.accepts(text), text
    for text in ("2.50", "3.0", "-0", "-0.0"):
        assert not default.accepts(text) and exact.accepts(text), text


OBJECT = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["a"]}


@pytest.mark.parametrize("schema,extra_allowed", [
    (OBJECT, False),
    ({**OBJECT, "additionalProperties": True}, True),
    ({**OBJECT, "additionalProperties": {}}, True),
    ({**OBJECT, "additionalProperties": {"type": "integer"}}, True),
    ({**OBJECT, "additionalProperties": False}, False),
    ({"type": "object"}, True),  # declares no property: a map, as XGrammar's strict_mode
    ({"type": "object", "minProperties": 1}, True),
    ({"type": "object", "properties": {}}, False),
    ({"allOf": [{"properties": {"a": {}}}, {"properties": {"b": {}}}]}, False),
    ({"allOf": [{"properties": {"a": {}}}, {"additionalProperties": True}]}, True),
    ({"anyOf": [OBJECT, {"type": "null"}]}, False),
    ({"type": "object", "properties": {"a": {}}, "dependentRequired": {"b": ["a"]}}, False),
    ({"type": "object", "properties": {"a": {}}, "patternProperties": {"^x": {}}}, False),
    (True, True),
    ({}, True),
])
def test_undeclared_keys_only_where_the_schema_allows_them(schema: object, extra_allowed: bool) -> None:
    default, exact = both(schema)
    assert exact.accepts('{"a":1,"zz":2}') or schema == {**OBJECT, "additionalProperties": False}
    assert default.accepts('{"a":1,"zz":2}') == extra_allowed, schema


def test_declared_names_stay_accepted() -> None:
    """Names in `properties`, in `required` only, matching `patternProperties`, or declared by
    another `allOf` branch are declared."""
    required_only = G.from_json_schema({"type": "object", "properties": {"a": {}}, "required": ["a", "c"]})
    assert required_only.accepts('{"a":1,"c":[2]}') and not required_only.accepts('{"a":1,"c":2,"d":3}')
    patterned = G.from_json_schema({"type": "object", "properties": {"a": {}}, "patternProperties": {"^x": {}}})
    assert patterned.accepts('{"a":1,"x1":2}') and not patterned.accepts('{"a":1,"y":2}')
    merged = G.from_json_schema({"allOf": [{"properties": {"a": {}}}, {"properties": {"b": {}}}]})
    assert merged.accepts('{"a":1,"b":2}') and not merged.accepts('{"c":1}')


def test_negation_keeps_its_meaning() -> None:
    """`not: {required: [a]}` is any object without `a` (the object schemas negation builds
    stay open), and a dependency still lets the object's own keys through."""
    default, exact = both({"not": {"required": ["a"]}})
    for text in ('{"x":1}', "{}"):
        assert default.accepts(text) and exact.accepts(text), text
    assert not default.accepts('{"a":1}')
    dependent = G.from_json_schema({"type": "object", "properties": {"a": {}, "b": {}}, "dependentRequired": {"a": ["b"]}})
    assert dependent.accepts('{"a":1,"b":2}') and not dependent.accepts('{"a":1}') and dependent.accepts('{"b":2}')


def test_unevaluated_properties_that_allow_keys_open_the_object() -> None:
    schema = {**OBJECT, "unevaluatedProperties": {"type": "integer"}}
    with pytest.warns(Warning):
        relaxed = G.from_json_schema(schema, on_unsupported="relax")
    assert relaxed.accepts('{"a":1,"zz":2}')
    with pytest.warns(Warning):
        closed = G.from_json_schema({**OBJECT, "unevaluatedProperties": False}, on_unsupported="relax")
    assert not closed.accepts('{"a":1,"zz":2}')


def _nested(depth: int) -> object:
    value: object = 1
    for i in range(depth):
        value = {"k": value} if i % 2 else [value, 2]
    return value


@pytest.mark.parametrize("indent", [2, 4])
def test_pretty_printing_to_depth_16_and_a_trailing_newline(indent: int) -> None:
    default = G.from_json_schema(True)
    text = json.dumps(_nested(16), indent=indent)
    assert default.accepts(text) and default.accepts(text + "\n") and default.accepts(json.dumps({"a": 1}))
    assert max(len(run) for run in re.findall(r"\s+", text)) == 1 + 16 * indent  # 65 for indent 4


def test_whitespace_runs_are_bounded_unless_exact() -> None:
    default, exact = both({"type": "array", "items": {"type": "integer"}})
    assert default.accepts("[" + " " * MAX_WHITESPACE_RUN + "1]")
    assert not default.accepts("[" + " " * (MAX_WHITESPACE_RUN + 1) + "1]")
    assert exact.accepts("[" + " \n\t\r" * 1000 + "1]")
    compact = G.from_json_schema({"type": "array"}, whitespace="compact")
    assert compact.accepts("[1,2]") and not compact.accepts("[1, 2]") and not compact.accepts("[1]\n")
    bounded_exact = G.from_json_schema({"type": "array"}, exact=True, whitespace="flexible", max_whitespace=3)
    assert bounded_exact.accepts("[1,   2.0]") and not bounded_exact.accepts("[1,    2]")
    assert G.from_json_schema({"type": "array"}, whitespace="any").accepts("[" + " " * 500 + "]")


def test_dates_and_times_as_pydantic_writes_and_reads_them() -> None:
    """Pydantic dumps a naive datetime without an offset; Python's `datetime` has no year 0 and
    no leap second. exact=True keeps RFC 3339 (an offset required, year 0000, 23:59:60)."""
    default, exact = both({"type": "string", "format": "date-time"})
    for text in ("2024-01-02T03:04:05", "2024-01-02T03:04:05.123456", "0001-01-01t00:00:00"):
        assert default.accepts(f'"{text}"') and not exact.accepts(f'"{text}"'), text
    for text in ("2024-01-02T03:04:05Z", "2024-02-29T03:04:05.5+01:00", "2000-02-29T00:00:00z"):
        assert default.accepts(f'"{text}"') and exact.accepts(f'"{text}"'), text
    for text in ("0000-01-01T00:00:00Z", "2016-12-31T23:59:60Z"):
        assert exact.accepts(f'"{text}"') and not default.accepts(f'"{text}"'), text
    for text in ("1900-02-29T00:00:00", "2024-01-02 03:04:05", "2024-13-01T00:00:00"):
        assert not default.accepts(f'"{text}"') and not exact.accepts(f'"{text}"'), text
    time_default, time_exact = both({"type": "string", "format": "time"})
    assert time_default.accepts('"03:04:05"') and not time_exact.accepts('"03:04:05"')
    date_default, date_exact = both({"type": "string", "format": "date"})
    assert date_exact.accepts('"0000-02-29"') and not date_default.accepts('"0000-02-29"')
    assert date_default.accepts('"0400-02-29"') and date_default.accepts('"0004-02-29"')


def test_pydantic_datetimes_round_trip() -> None:
    import datetime

    from pydantic import BaseModel

    class Stamp(BaseModel):
        at: datetime.datetime
        day: datetime.date
        time: datetime.time

    grammar = G.from_pydantic(Stamp)
    for value in (Stamp(at=datetime.datetime(2024, 1, 2, 3, 4, 5), day=datetime.date(1, 1, 1), time=datetime.time(0)),
                  Stamp(at=datetime.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=datetime.timezone.utc),
                        day=datetime.date(9999, 12, 31), time=datetime.time(23, 59, 59, 999999))):
        text = value.model_dump_json()
        assert grammar.accepts(text), text
        assert Stamp.model_validate_json(text) == value


def test_options_are_checked() -> None:
    for kwargs, message in (({"whitespace": "loose"}, "whitespace must be one of"),
                            ({"max_whitespace": 0}, "max_whitespace must be a positive integer"),
                            ({"max_whitespace": True}, "max_whitespace must be a positive integer"),
                            ({"exact": "yes"}, "exact must be True or False"),
                            ({"property_order": "sorted"}, "property_order must be")):
        with pytest.raises(GrammarError, match=message):
            G.from_json_schema({"type": "integer"}, **kwargs)


def test_every_format_is_served_in_both_modes() -> None:
    """The generation defaults know every format the exact mode knows (`duration` was missing)."""
    from pda.grammar.json_schema.formats import FORMATS

    for fmt in sorted(FORMATS):
        for exact in (False, True):
            grammar = pda.Grammar.from_json_schema({"type": "string", "format": fmt}, exact=exact)
            assert grammar.accepts_prefix('"'), (fmt, exact)


def test_exact_mode_takes_large_objects_in_any_order() -> None:
    """Over MAX_ANY_ORDER_PROPERTIES declared properties, exact=True still accepts any order (the
    required ones tracked, an optional one possibly repeated, under a warning); instances agree
    with jsonschema."""
    import jsonschema

    from pda.grammar.json_schema import MAX_ANY_ORDER_PROPERTIES, MAX_TRACKED_REQUIRED, JsonSchemaWarning

    props = {f"p{i}": {"type": "integer"} for i in range(MAX_ANY_ORDER_PROPERTIES + 40)}
    schema = {"type": "object", "properties": props, "required": ["p0", "p5", "p30"], "additionalProperties": False}
    with pytest.warns(JsonSchemaWarning, match="any order"):
        grammar = pda.Grammar.from_json_schema(schema, exact=True)
    validator = jsonschema.Draft202012Validator(schema)
    rng = random.Random(3)
    for _ in range(300):
        keys = rng.sample([*props, "zz"], rng.randint(0, 12))
        if rng.random() < 0.5:
            keys += [k for k in ("p0", "p5", "p30") if k not in keys]
            rng.shuffle(keys)
        instance = {k: rng.choice([1, 2, "x"]) if rng.random() < 0.1 else 1 for k in keys}
        assert grammar.accepts(json.dumps(instance)) == validator.is_valid(instance), instance
    assert grammar.accepts('{"p30": 1, "p1": 1, "p1": 2, "p5": 3, "p0": 4}')  # the documented duplicate
    # Too many required ones to track as a set: how many are written is counted; any order still.
    many = {"type": "object", "properties": props, "required": list(props)[: MAX_TRACKED_REQUIRED + 1]}
    with pytest.warns(JsonSchemaWarning, match="counting its 9 required ones"):
        counted = pda.Grammar.from_json_schema(many, exact=True)
    first = {k: 1 for k in list(props)[: MAX_TRACKED_REQUIRED + 1]}
    assert counted.accepts(json.dumps(first)) and counted.accepts(json.dumps(dict(reversed(first.items()))))
    assert counted.accepts(json.dumps({"p40": 1, **dict(reversed(first.items())), "p20": 2}))
    assert not counted.accepts(json.dumps(dict(list(first.items())[1:])))  # one required missing
    assert counted.accepts('{"p0":1,"p0":1,"p1":1,"p2":1,"p3":1,"p4":1,"p5":1,"p6":1,"p7":1}')  # the duplicate
