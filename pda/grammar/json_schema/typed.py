"""A normalised schema read once per type: the keywords each type's lowering needs, as typed fields.

Normalisation keeps a schema a JSON object (its canonical JSON keys every memo, and
merging works keyword by keyword), and writes what JSON Schema has no keyword for as
the internal `x-pda-*` keywords: a negated integer type, a negated string enum,
patterns a string must and must not match, an object built to stay open. The
lowerings of numbers, strings, arrays and objects do not read that dictionary:
`NumberSchema.of`, `StringSchema.of`, `ArraySchema.of` and `ObjectSchema.of` read it
once, defaults applied (a missing `minLength` is 0, a missing `items` any value),
draft differences folded (draft 4's boolean exclusives into the bounds, draft 4-7's
array form of `items` and `additionalItems` into 2020-12's `prefixItems` and
`items`), the internal keywords turned into fields with names that say what they
mean. A view never changes the schema; subschemas in it (items, property values)
stay raw, for the lowering's recursion to normalise when it reaches them. No view
holds dependencies: normalisation rewrites all three spellings (draft 4-7's
`dependencies`, `dependentRequired`, `dependentSchemas`) as unions, and the lowering
reports the ones past `MAX_DEPENDENCIES` by keyword before any view is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pda.grammar.json_schema.formats import FORMATS
from pda.grammar.json_schema.keywords import NON_INTEGER, NOT_IN, NOT_PATTERN, OPEN, PATTERNS


@dataclass(frozen=True)
class NumberSchema:
    """Bounds and step of an `integer`/`number` schema: the tightest of `minimum`/`exclusiveMinimum`
    (and of the maxima), exclusive where the bound is; `non_integer` when negation asks for
    numbers with a non-zero fraction."""

    lo: Decimal | None
    lo_exclusive: bool
    hi: Decimal | None
    hi_exclusive: bool
    multiple_of: Any
    non_integer: bool

    @classmethod
    def of(cls, schema: dict[str, Any]) -> NumberSchema:
        lo, lo_ex, hi, hi_ex = None, False, None, False
        for k in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
            b = schema.get(k)
            if b is None or isinstance(b, bool) or not isinstance(b, (int, float)):
                continue
            d = Decimal(str(b))
            if k.endswith("inimum"):
                ex = k.startswith("exclusive") or schema.get("exclusiveMinimum") is True
                if lo is None or d > lo or (d == lo and ex):
                    lo, lo_ex = d, ex
            else:
                ex = k.startswith("exclusive") or schema.get("exclusiveMaximum") is True
                if hi is None or d < hi or (d == hi and ex):
                    hi, hi_ex = d, ex
        return cls(lo, lo_ex, hi, hi_ex, schema.get("multipleOf"), bool(schema.get(NON_INTEGER)))


@dataclass(frozen=True)
class StringSchema:
    """Lengths (code points), patterns and format of a `string` schema. `patterns` are further
    patterns it must match (from `allOf`), `not_patterns` patterns it must not match and
    `not_in` values it must not be (from `not`); `format` only when it is one the lowering knows."""

    min_length: int
    max_length: int | None
    pattern: str | None
    patterns: tuple[str, ...]
    not_patterns: tuple[str, ...]
    not_in: tuple[str, ...] | None
    format: str | None

    @classmethod
    def of(cls, schema: dict[str, Any]) -> StringSchema:
        hi = schema.get("maxLength")
        pattern = schema.get("pattern")
        fmt = schema.get("format")
        not_in = schema.get(NOT_IN)
        return cls(int(schema.get("minLength", 0)), None if hi is None else int(hi),
                   pattern if isinstance(pattern, str) else None, tuple(schema.get(PATTERNS, ())),
                   tuple(schema.get(NOT_PATTERN, ())), None if not_in is None else tuple(not_in),
                   fmt if isinstance(fmt, str) and fmt in FORMATS else None)


@dataclass(frozen=True)
class ArraySchema:
    """Items and counts of an `array` schema: `prefix_items` the schemas of the first items
    (2020-12's `prefixItems`, or draft 4-7's `items` as an array), `items` the schema of every
    item after them (2020-12's `items`, or then `additionalItems`); `contains` None when absent."""

    prefix_items: tuple[Any, ...]
    items: Any
    min_items: int
    max_items: int | None
    contains: Any
    min_contains: int
    max_contains: int | None
    unique_items: bool

    @classmethod
    def of(cls, schema: dict[str, Any]) -> ArraySchema:
        prefix = schema.get("prefixItems")
        items = schema.get("items", True)
        if isinstance(items, list):
            prefix, items = items, schema.get("additionalItems", True)
        return cls(tuple(prefix or ()), items, int(schema.get("minItems", 0)), _count(schema, "maxItems"),
                   schema.get("contains"), int(schema.get("minContains", 1)), _count(schema, "maxContains"),
                   schema.get("uniqueItems") is True)


@dataclass(frozen=True)
class ObjectSchema:
    """Members and counts of an `object` schema. `additional_properties` is the schema of
    undeclared keys (absent: any value); `closed_by_default` says the generation default
    (not `exact`) refuses them though `additionalProperties` is absent: the object declares
    properties (`properties` or `patternProperties`), as XGrammar's `strict_mode`, no
    `unevaluatedProperties` allows other keys, and normalisation did not build it to stay
    open (`x-pda-open`: a negated `required` or property, a dependency's "absent" branch,
    whose absent `additionalProperties` means "any other key"). An object that declares
    nothing (`{"type": "object"}`, a map) stays open."""

    properties: Mapping[str, Any]
    required: tuple[str, ...]
    additional_properties: Any
    pattern_properties: Mapping[str, Any]
    property_names: Any
    min_properties: int
    max_properties: int | None
    closed_by_default: bool

    @classmethod
    def of(cls, schema: dict[str, Any]) -> ObjectSchema:
        closed = ("additionalProperties" not in schema and not schema.get(OPEN)
                  and schema.get("unevaluatedProperties", False) is False
                  and ("properties" in schema or "patternProperties" in schema))
        return cls(dict(schema.get("properties") or {}),
                   tuple(r for r in schema.get("required") or () if isinstance(r, str)),
                   schema.get("additionalProperties", True), dict(schema.get("patternProperties") or {}),
                   schema.get("propertyNames", True), int(schema.get("minProperties", 0)),
                   _count(schema, "maxProperties"), closed)


def _count(schema: dict[str, Any], keyword: str) -> int | None:
    """A count keyword's value (`maxItems`...) as an int; None when absent."""
    value = schema.get(keyword)
    return None if value is None else int(value)
