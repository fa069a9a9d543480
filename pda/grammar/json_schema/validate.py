"""Checks a schema document before lowering, so a malformed one fails with a `GrammarError` naming the place.

`validate` checks every keyword value the lowering reads against the JSON Schema
meta-schema's types and ranges (`minLength` a non-negative integer, `enum` an
array, `multipleOf` above 0...), so a malformed schema fails with a GrammarError
naming the keyword's JSON pointer instead of being misread or raising a raw Python
error half-way through the lowering. After it, the lowering may assume every
keyword it reads is well-formed and every number finite and within
`MAX_NUMBER_DIGITS` digits.
"""

from __future__ import annotations

import math
import reprlib
from typing import Any

from pda.errors import GrammarError
from pda.grammar.json_schema import limits
from pda.grammar.json_schema.keywords import TYPES, is_number, pointer

def _is_count(v: Any) -> bool:
    """A non-negative integer as the meta-schema means it (`2.0` is an integer)."""
    return is_number(v) and v >= 0 and (isinstance(v, int) or v.is_integer())


def _is_type(v: Any) -> bool:
    if isinstance(v, list):
        return bool(v) and all(isinstance(t, str) and t in TYPES for t in v)
    return isinstance(v, str) and v in TYPES


def _is_string_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _is_schema(v: Any) -> bool:
    return isinstance(v, (dict, bool))


# How a keyword's value holds subschemas: as itself, as the items of an array, as the
# values of an object; "items" may be either a schema or an array of them (draft <= 2019-09).
_SCHEMA, _SCHEMA_LIST, _SCHEMA_MAP, _SCHEMA_OR_LIST, _DEPENDENCIES = range(5)

_COUNT = (_is_count, "a non-negative integer", None)
_KEYWORD_RULES: dict[str, tuple[Any, str, int | None]] = {
    "type": (_is_type, f"a type name or a non-empty array of type names ({', '.join(TYPES)})", None),
    "enum": (lambda v: isinstance(v, list), "an array", None),
    "required": (_is_string_list, "an array of strings", None),
    **{k: _COUNT for k in ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties",
                           "minContains", "maxContains")},
    "minimum": (is_number, "a number", None),
    "maximum": (is_number, "a number", None),
    "exclusiveMinimum": (lambda v: is_number(v) or isinstance(v, bool), "a number (a boolean in draft 4)", None),
    "exclusiveMaximum": (lambda v: is_number(v) or isinstance(v, bool), "a number (a boolean in draft 4)", None),
    "multipleOf": (lambda v: is_number(v) and v > 0, "a number greater than 0", None),
    **{k: (lambda v: isinstance(v, str), "a string", None) for k in ("pattern", "format", "$ref", "$schema",
                                                                      "$anchor", "$id", "$dynamicRef")},
    **{k: (lambda v: isinstance(v, bool), "a boolean", None) for k in ("uniqueItems", "nullable")},
    **{k: (_is_schema, "a schema (an object or a boolean)", _SCHEMA)
       for k in ("additionalProperties", "propertyNames", "contains", "not", "if", "then", "else",
                 "additionalItems", "unevaluatedItems", "unevaluatedProperties")},
    "items": (lambda v: _is_schema(v) or isinstance(v, list), "a schema or an array of schemas", _SCHEMA_OR_LIST),
    **{k: (lambda v: isinstance(v, list) and bool(v), "a non-empty array of schemas", _SCHEMA_LIST)
       for k in ("allOf", "anyOf", "oneOf", "prefixItems")},
    **{k: (lambda v: isinstance(v, dict), "an object whose values are schemas", _SCHEMA_MAP)
       for k in ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")},
    "dependentRequired": (lambda v: isinstance(v, dict) and all(map(_is_string_list, v.values())),
                          "an object whose values are arrays of strings", None),
    "dependencies": (lambda v: isinstance(v, dict) and all(_is_schema(d) or _is_string_list(d) for d in v.values()),
                     "an object whose values are schemas or arrays of strings", _DEPENDENCIES),
}
_NAMING = frozenset({"$id", "id", "$anchor"})  # keywords that name a subschema for `$ref` (`refs`)
_COUNT_KEYWORDS = {k for k, rule in _KEYWORD_RULES.items() if rule is _COUNT}
_TOO_MANY_DIGITS = 10**limits.MAX_NUMBER_DIGITS


def _show(v: Any) -> str:
    """A short rendering of a bad value for an error message."""
    try:
        return reprlib.repr(v)
    except ValueError:  # an int past Python's int-to-text limit somewhere inside
        return f"a {type(v).__name__}"


def _pointer(where: Any) -> str:
    """The JSON pointer of a place in the walk: None at the root, else (the parent's place, a key or
    an index). Spelled only for an error: no node pays for a path."""
    parts = []
    while where is not None:
        where, key = where
        parts.append(str(key))
    return pointer(tuple(reversed(parts)))


def _not_a_schema(node: Any, where: Any) -> GrammarError:
    """The error for a value where a subschema must stand."""
    return GrammarError(f"{_pointer(where)}: must be a schema (an object or a boolean), got {_show(node)}")


def validate(root: Any) -> bool:
    """Raise GrammarError, naming the JSON pointer, at the first malformed part of a schema; else
    return whether some object in it holds a string `$id`, `id` or `$anchor` (a name `References`
    must index: most documents have none, and are not walked again for them).

    The document must be JSON (objects with string keys, arrays, strings, finite
    numbers of at most `MAX_NUMBER_DIGITS` digits, booleans, null) nested at most
    `MAX_JSON_DEPTH` deep; every subschema an object or a boolean; every keyword
    in `_KEYWORD_RULES` of the type and range the meta-schema gives it. Unknown
    keywords and annotations may hold any JSON value. The walk is an explicit
    stack, so no nesting reaches Python's recursion limit here; a node's depth is
    its count of keys and indices from the root.
    """
    max_nodes, max_depth, max_count = limits.MAX_SCHEMA_NODES, limits.MAX_JSON_DEPTH, limits.MAX_COUNT
    stack: list[tuple[Any, Any, int, bool]] = [(root, None, 0, True)]  # (node, where, depth, is a schema)
    nodes = 0
    names = False
    while stack:
        node, where, depth, is_schema = stack.pop()
        nodes += 1
        if nodes > max_nodes:
            raise GrammarError(f"{_pointer(where)}: the schema holds more than MAX_SCHEMA_NODES = "
                               f"{max_nodes:,} values")
        if depth > max_depth:
            raise GrammarError(f"{_pointer(where)}: the schema nests deeper than MAX_JSON_DEPTH = "
                               f"{max_depth} arrays and objects")
        if node.__class__ is str:  # most nodes are strings: nothing more to check, nothing to walk
            if is_schema:
                raise _not_a_schema(node, where)
            continue
        if node.__class__ is dict:  # most other nodes: JSON when their keys are exact strings
            for key in node:
                if key.__class__ is not str:
                    _check_json(node, where)
                    break
        else:
            _check_json(node, where)
            if is_schema and not _is_schema(node):
                raise _not_a_schema(node, where)
            if isinstance(node, list):
                stack.extend((v, (where, i), depth + 1, False) for i, v in enumerate(node))
                continue
            if not isinstance(node, dict):
                continue
        if not names and not _NAMING.isdisjoint(node):
            names = any(isinstance(node.get(k), str) for k in _NAMING)
        depth += 1
        for key, v in node.items():
            rule = _KEYWORD_RULES.get(key) if is_schema else None
            at = (where, key)
            if rule is None:
                stack.append((v, at, depth, False))
                continue
            ok, expected, holds = rule
            if v.__class__ is not str:
                _check_json(v, at)  # a list or map of subschemas is not walked as a node itself
            if not ok(v):
                raise GrammarError(f"{_pointer(at)}: must be {expected}, got {_show(v)}")
            if key in _COUNT_KEYWORDS and v > max_count:
                raise GrammarError(f"{_pointer(at)}: {_show(v)} is above the largest supported count, "
                                   f"MAX_COUNT = 2**{max_count.bit_length() - 1}")
            if holds == _SCHEMA or holds == _SCHEMA_OR_LIST and _is_schema(v):
                stack.append((v, at, depth, True))
            elif holds in (_SCHEMA_LIST, _SCHEMA_OR_LIST):
                stack.extend((x, (at, i), depth + 1, True) for i, x in enumerate(v))
            elif holds == _SCHEMA_MAP:
                stack.extend((x, (at, name), depth + 1, True) for name, x in v.items())
            elif holds == _DEPENDENCIES:
                stack.extend((x, (at, name), depth + 1, _is_schema(x)) for name, x in v.items())
            else:
                stack.append((v, at, depth, False))
    return names


def _check_json(v: Any, where: Any) -> None:
    """One node of the document is JSON: no NaN, no infinity, no non-string key, no foreign type.
    Strings first: most nodes are."""
    if isinstance(v, str) or v is None:
        return
    if isinstance(v, dict):
        for key in v:
            if not isinstance(key, str):
                raise GrammarError(f"{_pointer(where)}: object keys must be strings, got {_show(key)}")
    elif isinstance(v, float):
        if not math.isfinite(v):
            raise GrammarError(f"{_pointer(where)}: {v!r} is not a JSON number")
    elif isinstance(v, int):
        if not isinstance(v, bool) and abs(v) >= _TOO_MANY_DIGITS:
            raise GrammarError(f"{_pointer(where)}: an integer of more than MAX_NUMBER_DIGITS = "
                               f"{limits.MAX_NUMBER_DIGITS} digits is not supported")
    elif not isinstance(v, list):
        raise GrammarError(f"{_pointer(where)}: {type(v).__name__} is not a JSON value")
