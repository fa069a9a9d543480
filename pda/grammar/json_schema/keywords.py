"""The JSON Schema vocabulary the lowering works in: keyword sets, types, and the internal keywords.

A schema stays a JSON object (dict) through normalisation; where normalisation
must say something JSON Schema has no keyword for (a negated string enum, a
number that is not an integer, a pattern a string must not match, an object
that negation or a dependency built and that stays open, anyOf lists pending),
it writes one of the internal `x-pda-*` keywords below, which only this package
reads and every part treats like a keyword (`HANDLED`): merging, negation and
the memos handle them alike. The type lowerings read them only through their
typed views (`typed`), as fields that say what they mean; `checks` decides a
constant against them keyword by keyword, and the lowering's union step takes
the pending anyOf lists (`MORE_ANY_OF`). Also here: the few helpers every part
uses on schema values (`canon`, a value's canonical JSON; `schema_key`, the memo key of a
schema; `json_type`; `pointer`, a path as a JSON pointer for messages).
"""

from __future__ import annotations

import json
from marshal import dumps as _marshal
from decimal import Decimal
from typing import Any

# Internal keywords that normalisation writes (never read from a user's schema as such).
NON_INTEGER = "x-pda-non-integer"  # a number with a non-zero fraction (a negated integer type)
NOT_IN = "x-pda-not-in"  # a string outside this finite set (a negated string enum)
NOT_PATTERN = "x-pda-not-pattern"  # the string matches none of these patterns
PATTERNS = "x-pda-patterns"  # further patterns the string must match (from allOf)
MORE_ANY_OF = "x-pda-more-anyOf"  # further anyOf branch lists, lowered one at a time
OPEN = "x-pda-open"  # an object schema negation or a dependency built: other keys allowed even by default
# Sibling keywords of `enum`/`const` that `checks.const_satisfies` decides on the value itself.
SCALAR_CHECKS = {
    "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", NOT_IN, NOT_PATTERN, PATTERNS, NON_INTEGER,
}

# Keywords that only constrain values of some types (the others pass them untouched).
ARRAY_KEYWORDS = ("items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems", "contains",
                  "minContains", "maxContains")
OBJECT_KEYWORDS = ("properties", "required", "additionalProperties", "patternProperties", "propertyNames",
                   "minProperties", "maxProperties", "dependentRequired", "dependentSchemas", "dependencies", OPEN)
KEYWORD_TYPE = {**{k: {"array"} for k in ARRAY_KEYWORDS}, **{k: {"object"} for k in OBJECT_KEYWORDS}}

ANNOTATIONS = {
    "$schema", "$id", "id", "$comment", "$anchor", "$vocabulary", "title", "description",
    "default", "examples", "example", "deprecated", "readOnly", "writeOnly", "$defs",
    "definitions", "contentMediaType", "contentEncoding", "contentSchema",
}
HANDLED = {
    "type", "enum", "const", "properties", "required", "additionalProperties",
    "patternProperties", "propertyNames", "minProperties", "maxProperties", "items",
    "prefixItems", "additionalItems", "minItems", "maxItems", "contains", "minLength",
    "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "anyOf", "oneOf", "allOf", "$ref", "not", "if", "then",
    "else", "uniqueItems", "minContains", "maxContains", "nullable", NON_INTEGER, NOT_IN,
    NOT_PATTERN, PATTERNS, MORE_ANY_OF, OPEN,
}
UNSUPPORTED = {
    "dependentRequired", "dependentSchemas", "dependencies", "unevaluatedProperties",
    "unevaluatedItems", "$dynamicRef", "$recursiveRef",
}
TYPES = ("null", "boolean", "object", "array", "string", "integer", "number")


def pointer(path: tuple[str, ...]) -> str:
    """A path of keys as a JSON pointer fragment (`#/properties/a~1b`), for messages."""
    return "#" + "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in path)


# The C encoder `json.dumps(sort_keys=True)` runs, made once: `JSONEncoder.encode` makes one per call,
# half the time of keying a small subschema (and every subschema lowered is keyed). A schema is a JSON
# document (`validate`): never circular, so no markers.
_CANON_CHUNKS = json.encoder.c_make_encoder(  # type: ignore[attr-defined]
    None, json.JSONEncoder().default, json.encoder.encode_basestring_ascii, None, ": ", ", ", True, False, True)


def canon(value: Any) -> str:
    """A JSON value's canonical JSON (`json.dumps` with sorted keys): equal values, equal texts."""
    return "".join(_CANON_CHUNKS(value, 0))


def schema_key(schema: Any) -> bytes | str:
    """The key of every memo over schemas: what the schema says, as bytes.

    A schema dict's items without its own annotations (which no instance depends on: a root's
    `$defs` can be most of the document), sorted by keyword, written by `marshal` (format 0: no
    back-references and no interning flags, so the bytes depend on the values, their types and the
    order of the keys inside them alone). Equal bytes are equal schemas, so a memo never merges two
    languages. The keywords are sorted (their order means nothing); the values are written as they
    are: a `properties` map keeps its order, which is the members' order when objects are bound to
    schema order (`property_order="schema"`, or past `MAX_ANY_ORDER_PROPERTIES`), so two objects
    that declare the same members in another order are two languages and get two keys (sorted JSON,
    the key before, merged them). Other equal values written in another order only cost a second
    lowering of the same language. Twice as cheap as sorted JSON over the common schemas (every
    subschema lowered is keyed, re-encoding its subtree). A schema holding a value `marshal` does
    not take (a `dict` subclass inside it) and one that is not a dict are keyed by `canon`, a `str`,
    never equal to bytes."""
    if isinstance(schema, dict):
        items = sorted(schema.items() if ANNOTATIONS.isdisjoint(schema)
                       else [kv for kv in schema.items() if kv[0] not in ANNOTATIONS])
        try:
            return _marshal(items, 0)
        except ValueError:
            pass
    return canon(schema)


def json_type(v: Any) -> str:
    """The JSON Schema type of a JSON value (`3.0` is an integer)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "integer" if v.is_integer() else "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object"


def is_number(v: Any) -> bool:
    """A JSON number (not a boolean)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def is_positive_int(v: Any) -> bool:
    """A positive integer (`3` or `3.0`); ints too large for a float included."""
    return is_number(v) and v > 0 and (isinstance(v, int) or v.is_integer())


def json_number(d: Decimal) -> int | float:
    """A decimal as the JSON number a schema keyword holds."""
    return int(d) if d == d.to_integral_value() else float(d)
