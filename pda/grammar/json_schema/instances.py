"""Deciding a value against a schema of structural keywords directly, without building its recogniser.

`Lowering.values_verdicts` decides enum/const values (and the values a `not` excludes)
by parsing each with an exact lowering of the schema; building that grammar's
recogniser (every terminal's DFA, their product, the parser tables) cost ~10 ms, for a
handful of short values. For the keywords here the exact lowering is JSON Schema's own
reading and builds no terminal whose size the schema sets (no pattern, format, length,
step or literal), so checking the value against the schema gives the parse's verdict.
Anything else (those keywords, `$ref`, internal keywords but `OPEN`, a non-integral
number or a lone surrogate in the value) is undecided here and left to the parse.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pda.grammar.json_schema.keywords import ANNOTATIONS, OPEN, TYPES, is_number, json_type

_SUBSCHEMA = ("additionalProperties", "items", "not", "if", "then", "else")
_SCHEMA_LISTS = ("anyOf", "allOf", "oneOf")
_COUNTS = ("minProperties", "maxProperties", "minItems", "maxItems")
_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
# `OPEN` only opens objects the generation default closes; the exact lowering never closes them.
_KEYWORDS = {"type", "properties", "required", OPEN, *_SUBSCHEMA, *_SCHEMA_LISTS, *_COUNTS, *_BOUNDS}


def direct_verdicts(values: list[Any], schema: Any) -> list[bool] | None:
    """Whether each value is an instance of `schema`, or None when that is not decided here."""
    if not decidable_schema(schema) or not all(decidable_value(v) for v in values):
        return None
    return [is_instance(v, schema) for v in values]


def decidable_schema(schema: Any) -> bool:
    """Whether `schema` and its subschemas use only the keywords decided here, in their plain forms."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict) or any(k not in _KEYWORDS and k not in ANNOTATIONS for k in schema):
        return False
    t = schema.get("type", "null")
    if not (t in TYPES or isinstance(t, list) and all(x in TYPES for x in t)):
        return False
    if any(not _count(schema[k]) for k in _COUNTS if k in schema):
        return False
    if any(not is_number(schema[k]) for k in _BOUNDS if k in schema):
        return False
    props, required = schema.get("properties", {}), schema.get("required", [])
    if not isinstance(props, dict) or not isinstance(required, list) or \
            not all(isinstance(r, str) for r in required):
        return False
    lists = [schema[k] for k in _SCHEMA_LISTS if k in schema]
    if not all(isinstance(x, list) and x for x in lists):
        return False
    subschemas = [*props.values(), *(schema[k] for k in _SUBSCHEMA if k in schema), *(s for x in lists for s in x)]
    return all(decidable_schema(s) for s in subschemas)


def decidable_value(v: Any) -> bool:
    """Whether `v` holds only values whose one JSON spelling is decided here (no float: `1.0`
    and `1e16` are integers; no lone surrogate, which has no UTF-8)."""
    if isinstance(v, float):
        return False
    if isinstance(v, str):
        return not any("\ud800" <= c <= "\udfff" for c in v)
    if isinstance(v, list):
        return all(decidable_value(x) for x in v)
    if isinstance(v, dict):
        return all(decidable_value(k) and decidable_value(x) for k, x in v.items())
    return True


def is_instance(v: Any, schema: Any) -> bool:
    """Whether `v` is an instance of a `decidable_schema` (JSON Schema's reading of each keyword)."""
    if isinstance(schema, bool):
        return schema
    t = schema.get("type")
    if t is not None and not _has_type(v, {t} if isinstance(t, str) else set(t)):
        return False
    if any(not is_instance(v, s) for s in schema.get("allOf", ())):
        return False
    if "anyOf" in schema and not any(is_instance(v, s) for s in schema["anyOf"]):
        return False
    if "oneOf" in schema and sum(is_instance(v, s) for s in schema["oneOf"]) != 1:
        return False
    if "not" in schema and is_instance(v, schema["not"]):
        return False
    if "if" in schema and not is_instance(v, schema.get("then" if is_instance(v, schema["if"]) else "else", True)):
        return False
    if isinstance(v, dict):
        return _object_ok(v, schema)
    if isinstance(v, list):
        return _array_ok(v, schema)
    if is_number(v):
        return _bounds_ok(Decimal(v), schema)
    return True


def _has_type(v: Any, types: set[str]) -> bool:
    kind = json_type(v)
    return kind in types or (kind == "integer" and "number" in types)


def _object_ok(v: dict[str, Any], schema: dict[str, Any]) -> bool:
    props = schema.get("properties", {})
    if any(r not in v for r in schema.get("required", ())):
        return False
    if not schema.get("minProperties", 0) <= len(v) <= schema.get("maxProperties", len(v)):
        return False
    addl = schema.get("additionalProperties", True)
    return all(is_instance(x, props[k] if k in props else addl) for k, x in v.items())


def _array_ok(v: list[Any], schema: dict[str, Any]) -> bool:
    if not schema.get("minItems", 0) <= len(v) <= schema.get("maxItems", len(v)):
        return False
    items = schema.get("items", True)
    return all(is_instance(x, items) for x in v)


def _bounds_ok(d: Decimal, schema: dict[str, Any]) -> bool:
    tests = {"minimum": d.__ge__, "maximum": d.__le__, "exclusiveMinimum": d.__gt__, "exclusiveMaximum": d.__lt__}
    return all(test(Decimal(str(schema[k]))) for k, test in tests.items() if k in schema)


def _count(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0
