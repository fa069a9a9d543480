"""JSON Schema → pda grammar (IR, or Lark text), for pda's contextual greedy lexer.

Layout of the output: JSON structure (objects, arrays, members, repetition) is
rules; every scalar (a string with its pattern/format/length, a number with its
bounds, a property name, a literal) is one terminal. Each string terminal spans a
whole JSON string lexeme, quotes included, and matches the allowed values in every
spelling a serialiser writes (printable ASCII raw; other characters raw, as short
escapes, ``\\uXXXX`` in either case or surrogate pairs), so greedy longest-match
lexing of a valid instance always ends a string terminal at its closing quote.
Property-name terminals are exact (declared names, patterns minus names, the
rest) and unranked, so a key never hides an equal key of another `anyOf` branch;
only where that is not built (`propertyNames`, automata limits) do they carry
priorities (declared > pattern > additional), and pda's lexer then hands the
parser only the top-priority candidates matching a lexeme. Long strings are
counted in chunk terminals, string enums are one literal-set terminal for the
finite-set engine, and small objects take their properties in any order.
`json_schema_to_ir` builds pda's IR directly (Lark's loader is slow on large
generated grammars); `json_schema_to_lark` writes the same grammar as text.

`not`, `if`/`then`/`else` and dependencies are rewritten into `anyOf`s of positive
schemas (`desugar`, `negate`) before lowering, so the rest only sees unions.

Semantics that differ from a full validator are listed in docs/json_schema.md;
each one either raises `GrammarError` (``on_unsupported="raise"``) or warns with
`JsonSchemaWarning` (``on_unsupported="relax"``) naming the keyword and the JSON path.
The defaults are made for generation; ``exact=True`` is JSON Schema's language
(`resolve_options`, docs/json_schema.md "Defaults").
"""

from __future__ import annotations

import dataclasses
import decimal
import json
import math
import re
import reprlib
import sys
import warnings
from decimal import Decimal
from typing import Any
from urllib.parse import unquote

from pda.errors import GrammarError, PdaError, RegexError
from pda.grammar import ecma_regex as er
from pda.grammar.ir import GrammarIR, Rule, TerminalDef
from pda.grammar.multiples import MAX_MULTIPLE_REGEX, MultiplesTooLarge, multiples_regex
from pda.regex import has_lazy_quantifier

MAX_WHITESPACE_RUN = 65
"""Default longest run of JSON white space between two tokens with ``whitespace="flexible"``
(``max_whitespace``): a newline and 64 spaces, what ``json.dumps(indent=4)`` writes before a
value at depth 16 (indent 2 needs 33 there). A bound, so a model cannot loop on spaces."""

MAX_NUMBER_INTEGER_DIGITS = 20
"""Generation default (``exact=False``): most digits of a ``number``'s integer part (the
mantissa's, in exponent notation), enough for any 64-bit integer."""

MAX_NUMBER_EXPONENT = 308 - MAX_NUMBER_INTEGER_DIGITS
"""Generation default: largest positive exponent of a ``number``, so that every number is
below 10^20 x 10^288 = 10^308, under the largest double (1.797e308): ``float()`` of any
generated number is finite. Negative exponents have at most 3 digits (they underflow to 0.0
at worst, still finite)."""

VALID_WHITESPACE = ("flexible", "compact", "any")
VALID_ON_UNSUPPORTED = ("raise", "relax")

MAX_ENUMERATED_MULTIPLES = 1000
"""A `multipleOf` whose regex is over `multiples`' limits is enumerated on a bounded range
of up to this many multiples."""

MAX_COUNTED_PROPERTIES = 64
"""Largest `minProperties`/`maxProperties` bound tracked (rules grow with bound x properties)."""

MAX_BRANCHES = 64
"""Most `anyOf` branches one merge may multiply out (conditionals and dependencies add some)."""

MAX_DEPENDENCIES = 4
"""Most property dependencies lowered per object: each doubles the object's alternatives."""

MAX_EXACT_KEY_NAMES = 16
"""Most declared names an object with `patternProperties` may have for its key terminals to be
built exactly (patterns minus names, through automata) instead of ranked by priority."""

MAX_EXACT_KEY_PATTERNS = 200
"""Longest total source of one object's `patternProperties` patterns tried for exact keys
(BCP 47-style patterns of 300 characters cost ~0.3 s each and end over `MAX_EXACT_KEY_REGEX`)."""

MAX_EXACT_KEY_REGEX = 20_000
"""Largest total regex of one object's exact key terminals; past it keys are ranked."""

MAX_ANY_ORDER_PROPERTIES = 6
"""Objects with at most this many declared properties accept them in any order
(``property_order="any"``): the grammar has 2^n states for n properties."""

MAX_TRACKED_REQUIRED = 8
"""Under ``exact=True`` an object with more declared properties than `MAX_ANY_ORDER_PROPERTIES`
still takes them in any order when at most this many are required: 2^r states track the
required ones, and an optional one may repeat (a duplicate key, which no parsed instance
holds, is accepted under a warning). Past it, the declared properties come in schema order."""

LONG_STRING_UNITS = 256
"""Strings whose length bounds exceed this are counted in chunks (`_Compiler.long_string`)."""

STRING_CHUNK = 64
"""Code points per chunk terminal of a long string."""

MAX_LITERAL_SPELLINGS = 8
"""Most spellings (`/` or `\\/`) a string enum value may have to join the finite-set terminal."""

MAX_SUBSCHEMAS = 10_000
"""Distinct subschemas one lowering may visit: `anyOf`s under `allOf` multiply out."""

MAX_JSON_DEPTH = 128
"""Deepest nesting of arrays and objects in a schema document (`_validate` checks it first):
the lowering and `json.dumps` recurse on the document, and Python's stack is bounded."""

MAX_NESTING = 64
"""Deepest nesting of subschemas the lowering follows (`_Compiler.nest`; through `$ref`s
too, which the document depth does not bound). Measured: a level costs at most 7 Python
frames, so 64 levels stay far below Python's default recursion limit of 1,000 with room
for the caller and the leaves; without the limit 175 nested arrays raised RecursionError."""

MAX_STEPS = 200_000
"""Most subschemas one lowering may enter (`_Compiler.nest`, summed over the whole lowering):
negation and `anyOf` products grow exponentially with nesting (six nested
`{"not": {"properties": {"a": S, "b": S}}}` ran for minutes). Measured on 360 corpus
schemas: those that compile enter at most 3,476; 200,000 take about 5 s."""

MAX_SCHEMA_NODES = 1_000_000
"""Most values in a schema document (`_validate`); a Python dict that shares subschemas can
hold exponentially many."""

MAX_COUNT = 2**128
"""Largest length, item or property count (`minLength`, `maxItems`...): repetitions are
rules of depth log2(count)."""

MAX_NUMBER_DIGITS = 1000
"""Most digits of an integer anywhere in a schema (Python's int-to-text conversion stops at 4,300)."""

# Internal keywords that negation produces: numbers with a non-zero fraction, and
# strings outside a finite set.
_NON_INTEGER = "x-pda-non-integer"
_NOT_IN = "x-pda-not-in"
_NOT_PATTERN = "x-pda-not-pattern"  # the string matches none of these patterns
_PATTERNS = "x-pda-patterns"  # further patterns the string must match (from allOf)
_MORE_ANY_OF = "x-pda-more-anyOf"  # further anyOf branch lists, lowered one at a time
_OPEN = "x-pda-open"  # an object schema negation built: other keys are allowed even by default
# Sibling keywords of `enum`/`const` that `_const_satisfies` decides itself.
_SCALAR_CHECKS = {
    "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", _NOT_IN, _NOT_PATTERN, _PATTERNS, _NON_INTEGER,
}

# Keywords that only constrain values of some types (the others pass them untouched).
_ARRAY_KEYWORDS = ("items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems", "contains",
                   "minContains", "maxContains")
_OBJECT_KEYWORDS = ("properties", "required", "additionalProperties", "patternProperties", "propertyNames",
                    "minProperties", "maxProperties", "dependentRequired", "dependentSchemas", "dependencies", _OPEN)
_KEYWORD_TYPE = {**{k: {"array"} for k in _ARRAY_KEYWORDS}, **{k: {"object"} for k in _OBJECT_KEYWORDS}}

_ANNOTATIONS = {
    "$schema", "$id", "id", "$comment", "$anchor", "$vocabulary", "title", "description",
    "default", "examples", "example", "deprecated", "readOnly", "writeOnly", "$defs",
    "definitions", "contentMediaType", "contentEncoding", "contentSchema",
}
_HANDLED = {
    "type", "enum", "const", "properties", "required", "additionalProperties",
    "patternProperties", "propertyNames", "minProperties", "maxProperties", "items",
    "prefixItems", "additionalItems", "minItems", "maxItems", "contains", "minLength",
    "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "anyOf", "oneOf", "allOf", "$ref", "not", "if", "then",
    "else", "uniqueItems", "minContains", "maxContains", "nullable", _NON_INTEGER, _NOT_IN,
    _NOT_PATTERN, _PATTERNS, _MORE_ANY_OF, _OPEN,
}
_UNSUPPORTED = {
    "dependentRequired", "dependentSchemas", "dependencies", "unevaluatedProperties",
    "unevaluatedItems", "$dynamicRef", "$recursiveRef",
}
_TYPES = ("null", "boolean", "object", "array", "string", "integer", "number")

_FORMATS = {
    # RFC 3339 full-date with the real month lengths and leap years.
    "date": r"(?:[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
            r"|02-(?:0[1-9]|1[0-9]|2[0-8]))|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])"
            r"|(?:[02468][048]|[13579][26])00)-02-29)",
    "time": r"(?:(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]|23:59:60)(?:\.[0-9]+)?"
            r"(?:[zZ]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])",
    "uuid": r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
    "ipv4": r"(?:(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])\.){3}"
            r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])",
    "hostname": r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*",
    "email": r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
             r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*"
             r"|\[(?:(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])\])",
    "uri": r"[A-Za-z][A-Za-z0-9+.-]*:(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9A-Fa-f]{2})*"
           r"(?:#(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9A-Fa-f]{2})*)?",
}
_H16 = r"[0-9A-Fa-f]{1,4}"
_V4 = _FORMATS["ipv4"]
_LS32 = rf"(?:{_H16}:{_H16}|{_V4})"
# RFC 4291 section 2.2 as RFC 3986's IPv6address ABNF spells it: eight groups, or fewer around one
# "::" (`[ *k( h16 ":" ) h16 ] "::"` and what may follow it), the last 32 bits possibly as IPv4.
_IPV6_AFTER_GAP = [rf"(?:{_H16}:){{4}}{_LS32}", rf"(?:{_H16}:){{3}}{_LS32}", rf"(?:{_H16}:){{2}}{_LS32}",
                   rf"{_H16}:{_LS32}", _LS32, _H16, ""]
_FORMATS["ipv6"] = "(?:" + "|".join([
    rf"(?:{_H16}:){{6}}{_LS32}", rf"::(?:{_H16}:){{5}}{_LS32}",
    *[rf"(?:(?:{_H16}:){{0,{k}}}{_H16})?::{after}" for k, after in enumerate(_IPV6_AFTER_GAP)],
]) + ")"
_FORMATS["date-time"] = _FORMATS["date"] + "[Tt]" + _FORMATS["time"]  # RFC 3339 ABNF: no space
# The generation default's dates and times: what Python's `datetime` (so Pydantic) parses and
# what Pydantic writes. RFC 3339 with the offset optional (Pydantic dumps a naive datetime as
# "2024-01-02T03:04:05"), without year 0000 and without the leap second `23:59:60`, which
# `datetime` cannot hold.
_YEAR = r"(?:[1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])"
_LEAP_YEAR = r"(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[2468][048]|[13579][26]|0[48])00)"
_GEN_DATE = (rf"(?:{_YEAR}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
             rf"|02-(?:0[1-9]|1[0-9]|2[0-8]))|{_LEAP_YEAR}-02-29)")
_GEN_TIME = r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?(?:[zZ]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])?"
# ISO 8601 duration with at least one component (and at least one after T).
_FORMATS["duration"] = (r"P(?:[0-9]+W|(?:[0-9]+Y(?:[0-9]+M)?(?:[0-9]+D)?|[0-9]+M(?:[0-9]+D)?|[0-9]+D)"
    r"(?:T(?:[0-9]+H(?:[0-9]+M)?(?:[0-9]+S)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S))?"
    r"|T(?:[0-9]+H(?:[0-9]+M)?(?:[0-9]+S)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S))")
_GENERATION_FORMATS = {**_FORMATS, "date": _GEN_DATE, "time": _GEN_TIME, "date-time": _GEN_DATE + "[Tt]" + _GEN_TIME}

# Property-name terminal priorities: when one key lexeme matches several candidate
# terminals, pda's lexer hands the parser only the highest-priority ones, so a
# declared name beats a patternProperties pattern, which beats additionalProperties.
_DECLARED_KEY, _PATTERN_KEY, _ADDITIONAL_KEY = 3, 2, 1
_OTHER_KEYS = "\x00other"  # `_exact_keys`' entry for keys that match no pattern and no name

_JSON_NUMBER = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
# In front of a `multipleOf` regex of an integer type (generation default): no fraction, no "-0".
_INTEGER_LITERAL_GUARD = r"(?!-?[0-9]+\.|-0)"


class JsonSchemaWarning(UserWarning):
    """A schema keyword was relaxed (``on_unsupported="relax"``) or approximated; the message says how."""


def _pointer(path: tuple[str, ...]) -> str:
    return "#" + "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in path)


def _canon(schema: Any) -> str:
    return json.dumps(schema, sort_keys=True, ensure_ascii=True)


def _json_type(v: Any) -> str:
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


# ------------------------------------------------------------ schema validation
#
# Before lowering, `_validate` checks every keyword value the lowering reads against
# the JSON Schema meta-schema's types and ranges (`minLength` a non-negative integer,
# `enum` an array, `multipleOf` above 0...), so a malformed schema fails with a
# GrammarError naming the keyword's JSON pointer instead of being misread or raising
# a raw Python error half-way through the lowering.


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_count(v: Any) -> bool:
    """A non-negative integer as the meta-schema means it (`2.0` is an integer)."""
    return _is_number(v) and v >= 0 and (isinstance(v, int) or v.is_integer())


def _is_type(v: Any) -> bool:
    if isinstance(v, list):
        return bool(v) and all(isinstance(t, str) and t in _TYPES for t in v)
    return isinstance(v, str) and v in _TYPES


def _is_string_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _is_schema(v: Any) -> bool:
    return isinstance(v, (dict, bool))


# How a keyword's value holds subschemas: as itself, as the items of an array, as the
# values of an object; "items" may be either a schema or an array of them (draft <= 2019-09).
_SCHEMA, _SCHEMA_LIST, _SCHEMA_MAP, _SCHEMA_OR_LIST, _DEPENDENCIES = range(5)

_COUNT = (_is_count, "a non-negative integer", None)
_KEYWORD_RULES: dict[str, tuple[Any, str, int | None]] = {
    "type": (_is_type, f"a type name or a non-empty array of type names ({', '.join(_TYPES)})", None),
    "enum": (lambda v: isinstance(v, list), "an array", None),
    "required": (_is_string_list, "an array of strings", None),
    **{k: _COUNT for k in ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties",
                           "minContains", "maxContains")},
    "minimum": (_is_number, "a number", None),
    "maximum": (_is_number, "a number", None),
    "exclusiveMinimum": (lambda v: _is_number(v) or isinstance(v, bool), "a number (a boolean in draft 4)", None),
    "exclusiveMaximum": (lambda v: _is_number(v) or isinstance(v, bool), "a number (a boolean in draft 4)", None),
    "multipleOf": (lambda v: _is_number(v) and v > 0, "a number greater than 0", None),
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
_COUNT_KEYWORDS = {k for k, rule in _KEYWORD_RULES.items() if rule is _COUNT}
_TOO_MANY_DIGITS = 10**MAX_NUMBER_DIGITS


def _show(v: Any) -> str:
    """A short rendering of a bad value for an error message."""
    try:
        return reprlib.repr(v)
    except ValueError:  # an int past Python's int-to-text limit somewhere inside
        return f"a {type(v).__name__}"


def _validate(root: Any) -> None:
    """Raise GrammarError, naming the JSON pointer, at the first malformed part of a schema.

    The document must be JSON (objects with string keys, arrays, strings, finite
    numbers of at most `MAX_NUMBER_DIGITS` digits, booleans, null) nested at most
    `MAX_JSON_DEPTH` deep; every subschema an object or a boolean; every keyword
    in `_KEYWORD_RULES` of the type and range the meta-schema gives it. Unknown
    keywords and annotations may hold any JSON value. The walk is an explicit
    stack, so no nesting reaches Python's recursion limit here.
    """
    stack: list[tuple[Any, tuple[str, ...], bool]] = [(root, (), True)]
    nodes = 0
    while stack:
        node, path, is_schema = stack.pop()
        nodes += 1
        if nodes > MAX_SCHEMA_NODES:
            raise GrammarError(f"{_pointer(path)}: the schema holds more than MAX_SCHEMA_NODES = "
                               f"{MAX_SCHEMA_NODES:,} values")
        if len(path) > MAX_JSON_DEPTH:
            raise GrammarError(f"{_pointer(path)}: the schema nests deeper than MAX_JSON_DEPTH = "
                               f"{MAX_JSON_DEPTH} arrays and objects")
        _check_json(node, path)
        if is_schema and not _is_schema(node):
            raise GrammarError(f"{_pointer(path)}: must be a schema (an object or a boolean), got {_show(node)}")
        if isinstance(node, list):
            stack.extend((v, path + (str(i),), False) for i, v in enumerate(node))
            continue
        if not isinstance(node, dict):
            continue
        for key, v in node.items():
            rule = _KEYWORD_RULES.get(key) if is_schema else None
            where = path + (key,)
            if rule is None:
                stack.append((v, where, False))
                continue
            ok, expected, holds = rule
            _check_json(v, where)  # a list or map of subschemas is not walked as a node itself
            if not ok(v):
                raise GrammarError(f"{_pointer(where)}: must be {expected}, got {_show(v)}")
            if key in _COUNT_KEYWORDS and v > MAX_COUNT:
                raise GrammarError(f"{_pointer(where)}: {_show(v)} is above the largest supported count, "
                                   f"MAX_COUNT = 2**{MAX_COUNT.bit_length() - 1}")
            if holds == _SCHEMA or holds == _SCHEMA_OR_LIST and _is_schema(v):
                stack.append((v, where, True))
            elif holds in (_SCHEMA_LIST, _SCHEMA_OR_LIST):
                stack.extend((x, where + (str(i),), True) for i, x in enumerate(v))
            elif holds == _SCHEMA_MAP:
                stack.extend((x, where + (name,), True) for name, x in v.items())
            elif holds == _DEPENDENCIES:
                stack.extend((x, where + (name,), _is_schema(x)) for name, x in v.items())
            else:
                stack.append((v, where, False))


def _check_json(v: Any, path: tuple[str, ...]) -> None:
    """One node of the document is JSON: no NaN, no infinity, no non-string key, no foreign type."""
    if isinstance(v, float) and not math.isfinite(v):
        raise GrammarError(f"{_pointer(path)}: {v!r} is not a JSON number")
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= _TOO_MANY_DIGITS:
        raise GrammarError(f"{_pointer(path)}: an integer of more than MAX_NUMBER_DIGITS = "
                           f"{MAX_NUMBER_DIGITS} digits is not supported")
    if isinstance(v, dict):
        for key in v:
            if not isinstance(key, str):
                raise GrammarError(f"{_pointer(path)}: object keys must be strings, got {_show(key)}")
    elif v is not None and not isinstance(v, (str, int, float, list)):
        raise GrammarError(f"{_pointer(path)}: {type(v).__name__} is not a JSON value")


class _Compiler:
    """One schema's lowering: rules and terminals accumulate as subschemas are visited."""

    def __init__(self, root: Any, options: "_Options") -> None:
        self.root = root
        self.options = options
        self.exact = options.exact
        self.raise_unsupported = options.on_unsupported == "raise"
        self.ws: list[str] = [] if options.whitespace == "compact" else ["WS?"]
        self.ws_regex = r"[ \t\n\r]+" if options.whitespace == "any" else rf"[ \t\n\r]{{1,{options.max_whitespace}}}"
        self.formats = _FORMATS if options.exact else _GENERATION_FORMATS
        self.rules: dict[str, list[list[str]]] = {}
        self.rule_by_body: dict[str, str] = {}
        self.terminals: dict[str, tuple[str, int]] = {}
        self.terminal_by_regex: dict[tuple[str, int], str] = {}
        self.upto_memo: dict[tuple[str, int], str] = {}
        self.memo: dict[str, str | None] = {}
        self.negating: set[str] = set()
        # Exact lowerings of subschemas that enum values are checked against, by schema.
        self.checkers: dict[str, tuple[Any, bool] | None] = {}
        self.count = 0
        # Subschemas being lowered, flattened or negated inside one another, and entered
        # in all (`nest`).
        self.depth = 0
        self.steps = 0
        self.used: set[str] = set()
        self._any: str | None = None
        self.chunking = True
        self.any_order = options.property_order == "any"
        self.heads: set[str] = set()
        self.chunked: set[str] = set()
        self.top: str | None = None
        # Whether some object only takes its declared properties in schema order.
        self.order_bound = False
        schema_uri = root.get("$schema", "") if isinstance(root, dict) else ""
        self.old_draft = any(d in schema_uri for d in ("draft-03", "draft-04", "draft-06", "draft-07"))
        self.anchors: dict[str, Any] = {}
        self._scan_ids(root)

    # ----------------------------------------------------------- bookkeeping

    def _scan_ids(self, node: Any) -> None:
        if isinstance(node, dict):
            for key in ("$id", "id"):
                v = node.get(key)
                if isinstance(v, str):
                    self.anchors.setdefault(v, node)
                    if "#" in v and not v.endswith("#"):
                        self.anchors.setdefault("#" + v.split("#", 1)[1], node)
            if isinstance(node.get("$anchor"), str):
                self.anchors.setdefault("#" + node["$anchor"], node)
            for k, v in node.items():
                if k not in ("enum", "const", "default", "examples"):
                    self._scan_ids(v)
        elif isinstance(node, list):
            for v in node:
                self._scan_ids(v)

    def nest(self, path: tuple[str, ...]) -> None:
        """Enter one more level of subschema nesting: the lowering recurses per level, and
        `$ref` chains can nest far deeper than the document (`MAX_NESTING`)."""
        self.depth += 1
        self.steps += 1
        if self.depth > MAX_NESTING:
            raise GrammarError(f"{_pointer(path)}: the schema nests deeper than MAX_NESTING = {MAX_NESTING} "
                               "subschemas (counting through $ref)")
        if self.steps > MAX_STEPS:
            raise GrammarError(f"{_pointer(path)}: the lowering entered more than MAX_STEPS = {MAX_STEPS:,} "
                               "subschemas (nested not/anyOf multiply out); the schema is too complex")

    def unsupported(self, keyword: str, path: tuple[str, ...], relaxation: str) -> None:
        msg = f"JSON Schema keyword {keyword!r} at {_pointer(path)} is not supported"
        if self.raise_unsupported:
            raise GrammarError(f"{msg}; with on_unsupported='relax' it is relaxed: {relaxation}")
        warnings.warn(f"{msg}; relaxed: {relaxation}", JsonSchemaWarning, stacklevel=4)

    def approximate(self, keyword: str, path: tuple[str, ...], how: str) -> None:
        warnings.warn(f"JSON Schema keyword {keyword!r} at {_pointer(path)} is approximated: {how}",
                      JsonSchemaWarning, stacklevel=4)

    def terminal(self, regex: str, hint: str = "T", priority: int = 0) -> str:
        """A terminal for `regex`; `priority` only matters among property-name terminals."""
        name = self.terminal_by_regex.get((regex, priority))
        if name is None:
            name = f"{hint}_{len(self.terminals)}"
            self.terminals[name] = (regex, priority)
            self.terminal_by_regex[(regex, priority)] = name
        return name

    def literal(self, text: str) -> str:
        return self.terminal("".join(er.py_char(ord(c)) for c in text), "LIT")

    def rule(self, alts: list[list[str]]) -> str | None:
        """A rule with these alternatives (deduplicated by content); None if there are none."""
        uniq: list[list[str]] = []
        for a in alts:
            if a not in uniq:
                uniq.append(a)
        if not uniq:
            return None
        if len(uniq) == 1 and len(uniq[0]) == 1 and uniq[0][0].islower():
            return uniq[0][0]
        key = _canon(uniq)
        name = self.rule_by_body.get(key)
        if name is None:
            name = self.reserve()
            self.rules[name] = uniq
            self.rule_by_body[key] = name
        return name

    def reserve(self) -> str:
        name = f"r{self.count}"
        self.count += 1
        self.rules[name] = []
        return name

    # -------------------------------------------------------------- refs/merge

    def resolve(self, ref: str, path: tuple[str, ...]) -> Any:
        if ref in self.anchors:
            return self.anchors[ref]
        if not ref.startswith("#"):
            base = ref.split("#", 1)
            if base[0] in self.anchors:
                node = self.anchors[base[0]]
                return self._walk(node, base[1] if len(base) > 1 else "", ref, path)
            raise GrammarError(f"$ref {ref!r} at {_pointer(path)}: remote references are not supported")
        return self._walk(self.root, ref[1:], ref, path)

    def _walk(self, node: Any, pointer: str, ref: str, path: tuple[str, ...]) -> Any:
        if pointer and not pointer.startswith("/"):
            if "#" + pointer in self.anchors:
                return self.anchors["#" + pointer]
            raise GrammarError(f"$ref {ref!r} at {_pointer(path)}: unknown anchor")
        for part in pointer.split("/")[1:]:
            part = unquote(part).replace("~1", "/").replace("~0", "~")
            try:
                node = node[int(part)] if isinstance(node, list) else node[part]
            except (KeyError, IndexError, ValueError, TypeError):
                raise GrammarError(f"$ref {ref!r} at {_pointer(path)} does not resolve") from None
        return node

    def merge(self, a: Any, b: Any, path: tuple[str, ...]) -> Any:
        """allOf of two schemas as one schema (exact for the keywords merged here)."""
        if a is True or a == {}:
            return b
        if b is True or b == {}:
            return a
        if a is False or b is False:
            return False
        out = dict(a)
        skip: set[str] = set()
        open_a = a.get("additionalProperties", True) in (True, {})
        open_b = b.get("additionalProperties", True) in (True, {})
        with_patterns = [side for side in (a, b) if "patternProperties" in side]
        one_sided = len(with_patterns) == 1
        if ({"properties", "additionalProperties"} & (a.keys() | b.keys())
                and (not with_patterns or one_sided or open_a and open_b)):
            # A name declared on one side only must also pass the other side's
            # additionalProperties, or its patterns that the name matches (kept below);
            # names declared on neither side pass both.
            pa, pb = a.get("properties") or {}, b.get("properties") or {}
            aa, ab = a.get("additionalProperties", True), b.get("additionalProperties", True)
            matched = self._pattern_matched_names(a, b, path) if one_sided else set()
            props = {n: _conj(pa.get(n, True if n in matched else aa), pb.get(n, True if n in matched else ab))
                     for n in [*pa, *(n for n in pb if n not in pa)]}
            out.pop("properties", None)
            out.pop("additionalProperties", None)
            if props:
                out["properties"] = props
            addl = _conj(aa, ab)
            if addl not in (True, {}) or any(x.get("additionalProperties") in (True, {}) for x in (a, b)):
                # An explicit `true` stays: the generation default closes objects without one.
                out["additionalProperties"] = addl
            skip = {"properties", "additionalProperties"}
            if one_sided:
                # A key that matches a pattern of one side is additional on the other side,
                # which has no patterns: it passes that pattern's schema and the other side's
                # additionalProperties. Unless the other side declares a name that matches the
                # pattern: that name passes the pattern alone, so the pattern stays as it is.
                rest = ab if with_patterns[0] is a else aa
                patterns = with_patterns[0]["patternProperties"]
                if matched and rest not in (True, {}):
                    self.approximate("allOf/patternProperties", path,
                                     f"property {sorted(matched)[0]!r} is declared in one branch and matches "
                                     "another branch's patternProperties: keys matching those patterns are not "
                                     "checked against the additionalProperties of the branch without patterns")
                    rest = True
                out["patternProperties"] = {pat: _conj(ps, rest) for pat, ps in patterns.items()}
                skip.add("patternProperties")
        for k, v in b.items():
            if k in skip:
                continue
            if k not in out or out[k] == v or k in _ANNOTATIONS or (k not in _HANDLED and k not in _UNSUPPORTED):
                out.setdefault(k, v)
                continue
            w = out[k]
            if k == "type":
                ta = {w} if isinstance(w, str) else set(w)
                tb = {v} if isinstance(v, str) else set(v)
                both = {t for t in ta if t in tb or (t == "integer" and "number" in tb)}
                both |= {t for t in tb if t == "integer" and "number" in ta}
                out[k] = sorted(both)
            elif k == "required":
                out[k] = list(dict.fromkeys(list(w) + list(v)))
            elif k in ("minimum", "minLength", "minItems", "minProperties", "exclusiveMinimum") \
                    and not isinstance(v, bool) and not isinstance(w, bool):
                out[k] = max(w, v)
            elif k in ("maximum", "maxLength", "maxItems", "maxProperties", "exclusiveMaximum") \
                    and not isinstance(v, bool) and not isinstance(w, bool):
                out[k] = min(w, v)
            elif k == "enum":
                out[k] = [x for x in w if any(_canon(x) == _canon(y) for y in v)]
            elif k in (_NOT_IN, _NOT_PATTERN, _PATTERNS):
                out[k] = sorted(set(w) | set(v))
            elif k == "pattern":
                out[_PATTERNS] = sorted({*out.get(_PATTERNS, []), v})
            elif k == "const":
                if _canon(w) != _canon(v) and not (_json_type(w) in ("integer", "number") and
                                                   _json_type(v) in ("integer", "number") and
                                                   Decimal(str(w)) == Decimal(str(v))):
                    return False
            elif k == "multipleOf" and _is_int(w) and _is_int(v):
                out[k] = math.lcm(int(w), int(v))
            elif k == "patternProperties" and open_a and open_b:
                # With no additionalProperties on either side, a key must pass every pattern
                # of both sides that it matches: the union of the patterns.
                pats = dict(w)
                for pat, ps in v.items():
                    pats[pat] = _conj(pats[pat], ps) if pat in pats else ps
                out[k] = pats
            elif k == "not":
                out[k] = {"anyOf": [w, v]}
            elif k == "allOf":
                out[k] = list(w) + list(v)
            elif k in ("anyOf", "oneOf") and len(w) * len(v) <= MAX_BRANCHES:
                # anyOf(A) and anyOf(B) = anyOf over pairs; likewise for oneOf (exactly one
                # pair matches iff exactly one branch of each side does).
                out[k] = [{"allOf": [x, y]} for x in w for y in v]
            elif k == "anyOf":
                # Too many pairs to spell out here: `_value` lowers one anyOf at a time, the
                # others pending in each branch, so unsatisfiable pairs drop out early.
                out[_MORE_ANY_OF] = [*out.get(_MORE_ANY_OF, []), list(v)]
            elif k == _MORE_ANY_OF:
                out[k] = list(w) + list(v)
            elif k in ("items", "propertyNames", "contains") \
                    and isinstance(v, (dict, bool)) and isinstance(w, (dict, bool)):
                out[k] = _conj(w, v)
            else:
                self.unsupported(f"allOf/{k}", path, f"the first value of {k!r} is kept")
        if _OPEN in out and any(("properties" in x or "patternProperties" in x) and not x.get(_OPEN) for x in (a, b)):
            del out[_OPEN]
        return out

    def _pattern_matched_names(self, a: dict[str, Any], b: dict[str, Any], path: tuple[str, ...]) -> set[str]:
        """Of two `merge` sides, one with patternProperties: the names the other side declares (and the
        patterned side does not) that match one of its patterns."""
        with_patterns, other = (a, b) if "patternProperties" in a else (b, a)
        declared = with_patterns.get("properties") or {}
        return {name for name in other.get("properties") or {} if name not in declared
                and any(self._search(pat, name, path) for pat in with_patterns["patternProperties"])}

    def flatten(self, schema: Any, path: tuple[str, ...], seen: frozenset[str] = frozenset()) -> Any:
        """Inline `$ref` (with its siblings) and `allOf` into one schema, one level deep."""
        if not isinstance(schema, dict):
            return schema
        self.nest(path)
        try:
            return self._flatten(schema, path, seen)
        finally:
            self.depth -= 1

    def _flatten(self, schema: dict[str, Any], path: tuple[str, ...], seen: frozenset[str]) -> Any:
        if "$ref" in schema and isinstance(schema["$ref"], str):
            ref = schema["$ref"]
            if ref in seen:
                raise GrammarError(f"$ref {ref!r} at {_pointer(path)} refers to itself without consuming input")
            target = self.resolve(ref, path)
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            if self.old_draft:
                rest = {k: v for k, v in rest.items() if k in ("definitions", "$defs")}
            schema = self.merge(self.flatten(target, path, seen | {ref}), rest, path)
            return self.flatten(schema, path, seen | {ref})
        if "allOf" in schema:
            merged: Any = {k: v for k, v in schema.items() if k != "allOf"}
            for i, sub in enumerate(schema["allOf"]):
                merged = self.merge(merged, self.flatten(sub, path + ("allOf", str(i)), seen), path)
                if merged is False:
                    return False
            return self.flatten(merged, path, seen)
        return self.desugar(schema, path)

    # ------------------------------------------------------------- logic

    def desugar(self, schema: dict[str, Any], path: tuple[str, ...]) -> Any:
        """Rewrite `not`, `if`/`then`/`else` and dependencies as `anyOf` conjuncts.

        `not S` becomes the positive schema `negate(S)`; `if/then/else` becomes
        `(if ∧ then) ∨ (¬if ∧ else)`; a dependency of property `a` becomes
        `(a absent) ∨ (a present ∧ what it requires)`. Each is merged into the
        schema like an `allOf` member, so the rest of the lowering only sees
        `anyOf`. What cannot be negated stays and is reported by `_value`.
        """
        out = dict(schema)
        conjuncts: list[Any] = []
        if "not" in out:
            neg = self.negate(out["not"], path + ("not",))
            if neg is not None:
                del out["not"]
                conjuncts.append(neg)
            elif "enum" in out or "const" in out:
                values = self.values_outside(out, out["not"], path + ("not",))
                if values is not None:
                    del out["not"]
                    out.pop("const", None)
                    out["enum"] = values
        if "if" in out:
            cond, then, else_ = out["if"], out.get("then", True), out.get("else", True)
            # (if ∧ then) ∨ (¬if ∧ else); with `then` absent that is just `if ∨ else`.
            neg_if = self.negate(cond, path + ("if",)) if then not in (True, {}) else True
            if neg_if is not None:
                for k in ("if", "then", "else"):
                    out.pop(k, None)
                if then in (True, {}) and else_ not in (True, {}):
                    conjuncts.append({"anyOf": [cond, else_]})
                elif then not in (True, {}):
                    conjuncts.append({"anyOf": [{"allOf": [cond, then]}, {"allOf": [neg_if, else_]}]})
        else:
            out.pop("then", None)
            out.pop("else", None)
        deps: dict[str, Any] = {}
        for key in ("dependencies", "dependentRequired", "dependentSchemas"):
            if isinstance(out.get(key), dict):
                deps.update({name: dep for name, dep in out[key].items() if dep not in ([], True, {})})
        if len(deps) <= MAX_DEPENDENCIES:
            for key in ("dependencies", "dependentRequired", "dependentSchemas"):
                out.pop(key, None)
            for name, dep in deps.items():
                then = {"required": [name, *dep]} if isinstance(dep, list) else {"allOf": [{"required": [name]}, dep]}
                conjuncts.append({"anyOf": [{"properties": {name: False}, _OPEN: True}, then]})
        for c in conjuncts:
            out = self.merge(out, self.flatten(c, path), path)
            if out is False:
                return False
        return out

    def values_verdicts(self, values: list[Any], schema: Any, path: tuple[str, ...]) -> list[bool] | None:
        """Whether each value is an instance of `schema`, decided by parsing it with the
        schema's own exact lowering (memoised per schema); None when that lowering
        approximates something, or refuses a value where the refusal may be the
        documented property-order restriction."""
        key = _canon(schema)
        if key not in self.checkers:
            checker = _Compiler(self.root, _Options("compact", 1, "raise", "any", exact=True))
            checker.checkers = self.checkers
            checker.depth, checker.steps = self.depth, self.steps
            found: tuple[Any, bool] | None = None
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("error", JsonSchemaWarning)
                    checker.top = checker.value(schema, path)
                from pda.grammar.grammar import Grammar

                found = (None if checker.top is None else Grammar(checker.ir()), checker.order_bound)
            except (PdaError, JsonSchemaWarning):
                pass
            self.steps = checker.steps
            self.checkers[key] = found
        found = self.checkers[key]
        if found is None:
            return None
        grammar, order_bound = found
        if grammar is None:
            return [False] * len(values)
        try:
            verdicts = [grammar.accepts(json.dumps(v, separators=(",", ":"), ensure_ascii=False)) for v in values]
        except PdaError:
            return None
        return None if order_bound and not all(verdicts) else verdicts

    def values_outside(self, schema: dict[str, Any], excluded: Any, path: tuple[str, ...]) -> list[Any] | None:
        """The enum/const values of `schema` that are not instances of `excluded` (a `not`
        over a finite set needs no negated schema); None when undecided."""
        values = [schema["const"]] if "const" in schema else list(schema["enum"])
        verdicts = self.values_verdicts(values, excluded, path)
        return None if verdicts is None else [v for v, hit in zip(values, verdicts) if not hit]

    def negate(self, schema: Any, path: tuple[str, ...]) -> Any:
        """A positive schema for the instances `schema` rejects, or None when there is none here.

        A schema is the conjunction of its keywords, so its negation is the union
        of each keyword's negation; a keyword only constrains its own type, so its
        negation is "that type, and the constraint fails" (other types are covered
        by the negation of `type`). Exact for type, enum/const, bounds on lengths,
        counts and numbers, required, properties, items, contains, anyOf/oneOf of
        negatable schemas and double negation; None for the rest (patterns,
        formats, multipleOf, uniqueItems, additionalProperties...).
        """
        key = _canon(schema)
        if key in self.negating:
            return None  # a recursive schema's negation would be an infinite schema
        self.negating.add(key)
        self.nest(path)
        try:
            return self._negate(self.flatten(schema, path), path)
        finally:
            self.negating.discard(key)
            self.depth -= 1

    def _negate(self, schema: Any, path: tuple[str, ...]) -> Any:
        if schema is True or schema == {}:
            return False
        if schema is False:
            return True
        if not isinstance(schema, dict):
            return None
        t = schema.get("type")
        types = set(_TYPES) if t is None else ({t} if isinstance(t, str) else set(t))
        if schema.get("nullable") is True:
            types.add("null")
        if "number" in types:
            types.add("integer")
        branches: list[Any] = []
        others = [x for x in _TYPES if x not in types and not (x == "number" and "integer" in types)]
        if others:
            branches.append({"type": others})
        if "integer" in types and "number" not in types:
            branches.append({"type": "number", _NON_INTEGER: True})

        def typed(ty: str, **kw: Any) -> None:
            if ty in types or (ty == "number" and "integer" in types):
                branches.append({"type": ty if ty != "number" or "number" in types else "integer", **kw})

        for k, v in schema.items():
            if k in ("type", "nullable") or k in _ANNOTATIONS or (k not in _HANDLED and k not in _UNSUPPORTED):
                continue
            if k in ("enum", "const"):
                values = [v] if k == "const" else list(v)
                negs = self._negate_values(values, types)
                if negs is None:
                    return None
                branches += negs
                continue
            num = isinstance(v, (int, float)) and not isinstance(v, bool)
            flip = {"minLength": ("string", "maxLength", -1), "maxLength": ("string", "minLength", 1),
                    "minItems": ("array", "maxItems", -1), "maxItems": ("array", "minItems", 1),
                    "minProperties": ("object", "maxProperties", -1),
                    "maxProperties": ("object", "minProperties", 1),
                    "minimum": ("number", "exclusiveMaximum", 0), "maximum": ("number", "exclusiveMinimum", 0),
                    "exclusiveMinimum": ("number", "maximum", 0), "exclusiveMaximum": ("number", "minimum", 0)}
            if k in flip and num:
                ty, other, step = flip[k]
                if step < 0 and v <= 0:
                    continue  # minLength: 0 and the like reject nothing
                typed(ty, **{other: v + step})
            elif k == "required" and isinstance(v, list):
                for name in v:
                    typed("object", properties={name: False}, **{_OPEN: True})
            elif k == "properties" and isinstance(v, dict):
                for name, sub in v.items():
                    neg = self.negate(sub, path + ("properties", name))
                    if neg is None:
                        return None
                    if neg is not False:
                        typed("object", required=[name], properties={name: neg}, **{_OPEN: True})
            elif k == "items" and isinstance(v, (dict, bool)) and "prefixItems" not in schema:
                neg = self.negate(v, path + ("items",))
                if neg is None:
                    return None
                if neg is not False:
                    typed("array", contains=neg)
            elif k == "contains" and "minContains" not in schema and "maxContains" not in schema:
                neg = self.negate(v, path + ("contains",))
                if neg is None:
                    return None
                typed("array", items=neg)
            elif k in ("anyOf", "oneOf") and isinstance(v, list):
                if k == "oneOf" and not self.disjoint([self.flatten(b, path) for b in v]):
                    return None
                negs = [self.negate(b, path + (k, str(i))) for i, b in enumerate(v)]
                if any(n is None for n in negs):
                    return None
                branches.append({"allOf": negs})
            elif k == "not":
                branches.append(v)
            elif k == _MORE_ANY_OF:
                for group in v:
                    negs = [self.negate(b, path) for b in group]
                    if any(n is None for n in negs):
                        return None
                    branches.append({"allOf": negs})
            elif k == _NOT_IN:
                typed("string", enum=list(v))
            elif k == "pattern" and isinstance(v, str):
                typed("string", **{_NOT_PATTERN: [v]})
            elif k == "format" and v in _FORMATS:
                typed("string", **{_NOT_PATTERN: [_format_pattern(self.formats[v])]})
            elif k == _NOT_PATTERN or k == _PATTERNS:
                for p in v:
                    typed("string", **({"pattern": p} if k == _NOT_PATTERN else {_NOT_PATTERN: [p]}))
            elif k == _NON_INTEGER:
                typed("integer")
            elif k == _OPEN:
                continue
            elif k == "uniqueItems" and v is False or k == "format":
                continue
            elif k in ("minContains", "maxContains", "additionalItems") and "contains" not in schema:
                continue
            else:
                return None
        return {"anyOf": branches} if branches else False

    def _negate_values(self, values: list[Any], types: set[str]) -> list[Any] | None:
        """Instances of `types` that are none of `values` (objects and arrays: not negatable)."""
        out: list[Any] = []
        canon = {_canon(v) for v in values}
        if "null" in types and None not in values:
            out.append({"type": "null"})
        if "boolean" in types:
            left = [b for b in (True, False) if _canon(b) not in canon]
            if left:
                out.append({"enum": left})
        if "string" in types:
            out.append({"type": "string", _NOT_IN: sorted({v for v in values if isinstance(v, str)})})
        nums = sorted({Decimal(str(v)) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)})
        if "integer" in types or "number" in types:
            ty = "number" if "number" in types else "integer"
            bounds = [None, *nums, None]
            for lo, hi in zip(bounds, bounds[1:]):
                b: dict[str, Any] = {"type": ty}
                if lo is not None:
                    b["exclusiveMinimum"] = _num(lo)
                if hi is not None:
                    b["exclusiveMaximum"] = _num(hi)
                out.append(b)
        for ty in ("object", "array"):
            if ty in types:
                if any(_json_type(v) == ty for v in values):
                    return None
                out.append({"type": ty})
        return out

    # ---------------------------------------------------------------- values

    def value(self, schema: Any, path: tuple[str, ...]) -> str | None:
        """The rule for instances of `schema`; None when no instance exists."""
        self.nest(path)
        try:
            return self._memo_value(schema, path)
        finally:
            self.depth -= 1

    def _memo_value(self, schema: Any, path: tuple[str, ...]) -> str | None:
        if schema is True or schema == {}:
            return self.any_value()
        if schema is False:
            return None
        if not isinstance(schema, dict):
            raise GrammarError(f"schema at {_pointer(path)} must be an object or a boolean")
        key = _canon(schema)
        if key in self.memo:
            name = self.memo[key]
            if name is not None and not self.rules.get(name):
                self.used.add(name)  # a recursive use of a schema still being lowered
            return name
        if len(self.memo) >= MAX_SUBSCHEMAS:
            raise GrammarError(f"schema at {_pointer(path)}: the lowering reached {MAX_SUBSCHEMAS} distinct "
                               "subschemas (combinations of anyOf branches under allOf); it is too large")
        # Reserve the rule first so recursive schemas terminate.
        name = self.reserve()
        self.memo[key] = name
        if "$ref" in schema and set(schema) <= {"$ref"} | _ANNOTATIONS:
            body = self.value(self.flatten(self.resolve(schema["$ref"], path), path), path)
        else:
            body = self._value(self.flatten(schema, path), path)
        if body is None:
            if name in self.used:
                raise GrammarError(f"schema at {_pointer(path)} is recursive and unsatisfiable")
            del self.rules[name]
            self.memo[key] = None
            return None
        self.rules[name] = [[body]]
        return name

    def _value(self, schema: Any, path: tuple[str, ...]) -> str | None:
        if not isinstance(schema, dict):
            return self.value(schema, path)
        for k in schema:
            if k in _UNSUPPORTED:
                self.unsupported(k, path + (k,), f"{k!r} is ignored (the grammar accepts more)")
        # `flatten` has rewritten every `not`, `if` and dependency it could negate.
        if "not" in schema:
            self.unsupported("not", path + ("not",), "'not' is ignored (the grammar accepts more)")
        if "if" in schema:
            self.unsupported("if", path + ("if",), "'if'/'then'/'else' are ignored (the grammar accepts more)")
        if schema.get("uniqueItems") is True:
            self.approximate("uniqueItems", path + ("uniqueItems",),
                             "not expressible by a grammar; duplicate items are accepted")
        if "anyOf" not in schema and "oneOf" not in schema and schema.get(_MORE_ANY_OF):
            first, *pending = schema[_MORE_ANY_OF]
            schema = {k: v for k, v in schema.items() if k != _MORE_ANY_OF} | {"anyOf": first}
            if pending:
                schema[_MORE_ANY_OF] = pending
        base = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf", "not", "if", "then", "else")}
        for comb in ("anyOf", "oneOf"):
            if comb in schema:
                rest = {k: v for k, v in schema.items() if k != comb}
                branches = [self.flatten(self.merge(rest, self.flatten(b, path + (comb, str(i))), path),
                                         path + (comb, str(i)))
                            for i, b in enumerate(schema[comb])]
                if comb == "oneOf" and not self.disjoint(branches):
                    self.approximate("oneOf", path + ("oneOf",),
                                     "branches may overlap; matched as anyOf (an instance valid "
                                     "against several branches is accepted)")
                alts = [self.value(b, path + (comb, str(i))) for i, b in enumerate(branches)]
                return self.rule([[a] for a in alts if a is not None])
        return self.typed(base, path)

    def disjoint(self, branches: list[Any]) -> bool:
        """True when no instance can satisfy two branches (checked on types, consts, enums)."""
        def types(b: Any) -> set[str]:
            if not isinstance(b, dict):
                return set(_TYPES) if b is not False else set()
            if "const" in b:
                return {_json_type(b["const"])}
            if "enum" in b:
                return {_json_type(v) for v in b["enum"]}
            t = b.get("type")
            if t is None:
                return set(_TYPES)
            ts = {t} if isinstance(t, str) else set(t)
            return ts | ({"integer"} if "number" in ts else set())

        def values(b: Any) -> set[str] | None:
            if isinstance(b, dict) and "const" in b:
                return {_canon(b["const"])}
            if isinstance(b, dict) and "enum" in b:
                return {_canon(v) for v in b["enum"]}
            return None

        def tag(b: Any) -> dict[str, set[str]]:
            """Required properties whose value is fixed (discriminators)."""
            out = {}
            if isinstance(b, dict):
                for name, s in (b.get("properties") or {}).items():
                    if name in (b.get("required") or []):
                        s = self.flatten(s, ())
                        v = values(s)
                        if v is not None:
                            out[name] = v
            return out

        for i in range(len(branches)):
            for j in range(i + 1, len(branches)):
                a, b = branches[i], branches[j]
                shared = types(a) & types(b)
                if "number" in shared and not ({"number", "integer"} <= types(a) & types(b)):
                    shared.discard("number")
                if not shared:
                    continue
                va, vb = values(a), values(b)
                if va is not None and vb is not None and not (va & vb):
                    continue
                ta, tb = tag(a), tag(b)
                if shared <= {"object"} and any(not (ta[n] & tb[n]) for n in ta.keys() & tb.keys()):
                    continue
                return False
        return True

    def typed(self, schema: dict[str, Any], path: tuple[str, ...]) -> str | None:
        t = schema.get("type")
        types = set(_TYPES) if t is None else ({t} if isinstance(t, str) else set(t))
        if schema.get("nullable") is True:
            types.add("null")
        for x in types:
            if x not in _TYPES:
                raise GrammarError(f"unknown type {x!r} at {_pointer(path + ('type',))}")
        if "const" in schema or "enum" in schema:
            return self.enum(schema, types, path)
        if "number" in types:
            types.discard("integer")
        alts: list[list[str]] = []
        for ty in _TYPES:
            if ty not in types:
                continue
            sym: str | None
            if ty == "null":
                sym = self.literal("null")
            elif ty == "boolean":
                sym = self.rule([[self.literal("true")], [self.literal("false")]])
            elif ty in ("integer", "number"):
                sym = self.number(schema, ty == "integer", path)
            elif ty == "string":
                sym = self.string(schema, path)
            elif ty == "array":
                sym = self.array(schema, path)
            else:
                sym = self.object(schema, path)
            if sym is not None:
                alts.append([sym])
        return self.rule(alts)

    # ---------------------------------------------------------------- enum

    def enum(self, schema: dict[str, Any], types: set[str], path: tuple[str, ...]) -> str | None:
        values = [schema["const"]] if "const" in schema else list(schema["enum"])
        if "const" in schema and "enum" in schema:
            values = [v for v in values if any(_canon(v) == _canon(e) for e in schema["enum"])]
        rest = {k: v for k, v in schema.items() if k not in ("const", "enum", "type", "nullable") and k not in _ANNOTATIONS}
        values = [v for v in values if _json_type(v) in types or (_json_type(v) == "integer" and "number" in types)]
        present = {_json_type(v) for v in values}
        rest = {k: v for k, v in rest.items() if k not in _KEYWORD_TYPE or _KEYWORD_TYPE[k] & present}
        if set(rest) - _SCALAR_CHECKS:
            # Keywords the scalar check does not read (items, properties, multipleOf, format...):
            # each value is parsed with the sibling keywords' own lowering.
            verdicts = self.values_verdicts(values, rest, path)
            if verdicts is None:
                self.unsupported("enum", path + ("enum" if "enum" in schema else "const",),
                                 "the sibling keywords of 'enum'/'const' are not all checked")
            else:
                values, rest = [v for v, ok in zip(values, verdicts) if ok], {}
        alts = []
        strings: list[str] = []
        for v in values:
            if rest and not self._const_satisfies(v, rest, path):
                continue
            if isinstance(v, str):
                strings.append(v)
            else:
                alts.append([self.const(v)])
        if strings:
            alts.append([self.string_set(strings)])
        return self.rule(alts)

    def string_set(self, values: list[str]) -> str:
        """One terminal for a set of string values.

        Values whose every JSON spelling is short to list become quoted literals of
        one `(?:"a"|"b"|...)` alternation, the shape the finite-set engine
        (`pda.trie`) compiles as a trie; values with many spellings (non-ASCII,
        control characters, several `/`) are added as their general regex, which
        keeps the terminal on the general DFA path.
        """
        literals: list[str] = []
        general: list[str] = []
        for v in dict.fromkeys(values):
            spellings = _literal_spellings(v)
            if spellings is None:
                general.append(er.literal_string_regex(v))
            else:
                literals += [re.escape('"' + s + '"') for s in spellings]
        if general:
            return self.terminal("(?:" + "|".join(literals + general) + ")", "STR")
        return self.terminal("(?:" + "|".join(sorted(literals)) + ")", "ENUM")

    def _const_satisfies(self, v: Any, rest: dict[str, Any], path: tuple[str, ...]) -> bool:
        """Check a constant against its sibling keywords (those that matter for scalars)."""
        if isinstance(v, str):
            if len(v) < rest.get("minLength", 0) or len(v) > rest.get("maxLength", len(v)):
                return False
            if v in rest.get(_NOT_IN, ()):
                return False
            try:
                if any(re.search(er.ecma_to_python(p), v) for p in rest.get(_NOT_PATTERN, ())) or \
                        not all(re.search(er.ecma_to_python(p), v) for p in rest.get(_PATTERNS, ())):
                    return False
            except re.error:
                pass
            fmt = rest.get("format")
            if fmt in _FORMATS and re.fullmatch(self.formats[fmt], v) is None:
                return False
            if isinstance(rest.get("pattern"), str):
                try:
                    return re.search(er.ecma_to_python(rest["pattern"]), v) is not None
                except re.error:
                    return True
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            d = Decimal(str(v))
            if rest.get(_NON_INTEGER) and d == d.to_integral_value():
                return False
            for k, ok in (("minimum", lambda b: d >= b), ("maximum", lambda b: d <= b),
                          ("exclusiveMinimum", lambda b: d > b), ("exclusiveMaximum", lambda b: d < b)):
                b = rest.get(k)
                if isinstance(b, (int, float)) and not isinstance(b, bool) and not ok(Decimal(str(b))):
                    return False
            step = rest.get("multipleOf")
            if isinstance(step, (int, float)) and not isinstance(step, bool) and step > 0 \
                    and d % Decimal(str(step)) != 0:
                return False
        return True

    def const(self, v: Any) -> str:
        if v is None or isinstance(v, bool):
            return self.literal(json.dumps(v))
        if isinstance(v, (int, float)):
            return self.terminal(_number_literal_regex(Decimal(str(v)), self.exact), "NUM")
        if isinstance(v, str):
            return self.terminal(er.literal_string_regex(v), "STR")
        ws = self.ws
        if isinstance(v, list):
            if not v:
                return self.rule([[self.literal("["), *ws, self.literal("]")]]) or ""
            seq = [self.literal("["), *ws]
            for i, x in enumerate(v):
                if i:
                    seq += [*ws, self.literal(","), *ws]
                seq.append(self.const(x))
            return self.rule([seq + [*ws, self.literal("]")]]) or ""
        if not v:
            return self.rule([[self.literal("{"), *ws, self.literal("}")]]) or ""
        seq = [self.literal("{"), *ws]
        for i, (k, x) in enumerate(v.items()):
            if i:
                seq += [*ws, self.literal(","), *ws]
            seq += [self.terminal(er.literal_string_regex(k), "KEY"), *ws, self.literal(":"), *ws, self.const(x)]
        return self.rule([seq + [*ws, self.literal("}")]]) or ""

    # --------------------------------------------------------------- numbers

    def number(self, schema: dict[str, Any], integer: bool, path: tuple[str, ...]) -> str | None:
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
        m = schema.get("multipleOf")
        if schema.get(_NON_INTEGER):
            if integer or m is not None or lo is not None or hi is not None:
                self.unsupported("not", path, "a negated integer type with other numeric keywords is ignored")
            else:
                digits = "*" if self.exact else f"{{0,{MAX_NUMBER_INTEGER_DIGITS - 1}}}"
                return self.terminal(rf"-?(?:0|[1-9][0-9]{digits})\.[0-9]*[1-9][0-9]*", "NUM")
        int_type = integer
        if not integer and not self.exact and (lo is not None or hi is not None or m is not None):
            # A plain decimal (no exponent with bounds or steps): its integer part is capped as
            # in `_number_regex` so it stays a finite double, unless a bound is already larger.
            cap = Decimal(10) ** MAX_NUMBER_INTEGER_DIGITS
            if hi is None:
                hi, hi_ex = (cap, True) if lo is None or lo < cap else (Decimal(10) ** 308, True)
            if lo is None:
                lo, lo_ex = (-cap, True) if hi > -cap else (-Decimal(10) ** 308, True)
        if isinstance(m, (int, float)) and not isinstance(m, bool) and m > 0:
            # The step as p/10^scale: its multiples are the numbers whose value times 10^scale is an
            # integer multiple of p. Among integers those are the multiples of p/gcd(p, 10^scale).
            md = Decimal(str(m))
            exponent = md.normalize().as_tuple().exponent
            assert isinstance(exponent, int)  # a finite number (validated)
            scale = max(-exponent, 0)
            p = int(md.scaleb(scale))
            if scale == 0 or integer:
                p, scale, integer = p // math.gcd(p, 10**scale), 0, True
            if p != 1 or scale:
                nlo, nhi = _scaled(lo, lo_ex, scale, True), _scaled(hi, hi_ex, scale, False)
                if nlo is not None and nhi is not None and nlo > nhi:
                    return None
                try:
                    regex = multiples_regex(p, scale, nlo, nhi)
                    if regex is not None and int_type and not self.exact:
                        regex = _INTEGER_LITERAL_GUARD + regex
                    return None if regex is None else self.terminal(regex, "INT" if integer else "NUM")
                except MultiplesTooLarge:
                    # (An empty range returned None above, before any regex was built.)
                    if nlo is not None and nhi is not None and (nhi - nlo) // p <= MAX_ENUMERATED_MULTIPLES:
                        first = -(-nlo // p) * p
                        vals = [_number_literal_regex(Decimal(n).scaleb(-scale), self.exact)
                                for n in range(first, nhi + 1, p)]
                        return self.terminal("(?:" + "|".join(vals) + ")", "INT" if integer else "NUM")
                    self.approximate("multipleOf", path + ("multipleOf",),
                                     f"the multiples of {m} need a regex over {MAX_MULTIPLE_REGEX} characters and "
                                     f"the range is unbounded or holds over {MAX_ENUMERATED_MULTIPLES}; it is ignored")
        if integer:
            ilo, ihi = _scaled(lo, lo_ex, 0, True), _scaled(hi, hi_ex, 0, False)
            if ilo is not None and ihi is not None and ilo > ihi:
                return None
            if ilo is None and ihi is None:
                return self.terminal(r"-?(?:0|[1-9][0-9]*)(?:\.0+)?(?:[eE]\+?[0-9]+)?" if self.exact
                                     else r"(?:0|-?[1-9][0-9]*)", "INT")
            return self.terminal(self.int_regex(ilo, ihi), "INT")
        if lo is None and hi is None:
            return self.terminal(self.any_number_regex(), "NUM")
        if lo is not None and hi is not None and (lo > hi or (lo == hi and (lo_ex or hi_ex))):
            return None
        if lo is not None and lo == hi:
            return self.terminal(_number_literal_regex(lo, self.exact), "NUM")
        regex = self.number_regex(lo, lo_ex, hi, hi_ex, path)
        return None if regex is None else self.terminal(regex, "NUM")

    def any_number_regex(self) -> str:
        """Every JSON number (`exact`), or the generation default's finite doubles: at most
        `MAX_NUMBER_INTEGER_DIGITS` integer digits, exponents up to `MAX_NUMBER_EXPONENT`."""
        if self.exact:
            return _JSON_NUMBER
        exponent = er.decimal_range_regex(0, MAX_NUMBER_EXPONENT)
        return (rf"-?(?:0|[1-9][0-9]{{0,{MAX_NUMBER_INTEGER_DIGITS - 1}}})(?:\.[0-9]+)?"
                rf"(?:[eE](?:\+?{exponent}|-[0-9]{{1,3}}))?")

    def int_regex(self, lo: int | None, hi: int | None) -> str:
        """Integers in lo..hi (None = unbounded), plain decimal; `exact` also with a zero
        fraction and `-0`."""
        alts = []
        if hi is None or hi >= 0:
            alts.append(er.decimal_range_regex(max(lo or 0, 0), hi))
        least = 0 if hi is None else max(-hi, 0)
        if not self.exact:
            least = max(least, 1)  # no "-0"
        if lo is None or -lo >= least:
            alts.append("-" + er.decimal_range_regex(least, None if lo is None else -lo))
        return "(?:" + "|".join(alts) + ")" + (r"(?:\.0+)?" if self.exact else "")

    def number_regex(self, lo: Decimal | None, lo_ex: bool, hi: Decimal | None, hi_ex: bool,
                     path: tuple[str, ...]) -> str | None:
        """Plain-decimal JSON numbers in the interval (exponent notation is not accepted here);
        None when the interval holds none."""
        alts = []
        if hi is None or hi >= 0:
            a, a_ex = (Decimal(0), False) if lo is None or lo < 0 else (lo, lo_ex)
            alts.append(self.magnitude(a, a_ex, hi, hi_ex, path))
        if lo is None or lo <= 0:
            a, a_ex = (Decimal(0), False) if hi is None or hi > 0 else (-hi, hi_ex)
            alts.append("-" + self.magnitude(a, a_ex, None if lo is None else -lo, lo_ex, path))
        alts = [x for x in alts if x != "-" and "(?!)" not in x]  # (?!): an empty side, e.g. 0 < x < 0
        return "(?:" + "|".join(alts) + ")" if alts else None

    def magnitude(self, a: Decimal, a_ex: bool, b: Decimal | None, b_ex: bool, path: tuple[str, ...]) -> str:
        """Unsigned plain decimals `I(.F)?` with a <= value <= b (strict where *_ex)."""
        ia, fa = _split(a)
        alts = []
        if b is None:
            alts.append(er.decimal_range_regex(ia + 1, None) + r"(?:\.[0-9]+)?")
            alts.append(str(ia) + _frac_ge(fa, a_ex))
        else:
            ib, fb = _split(b)
            if ia == ib:
                if fa and fb or a_ex and fb:
                    self.unsupported("minimum/maximum", path,
                                     "bounds with fractions inside one integer are widened to that integer")
                    return str(ia) + r"(?:\.[0-9]+)?"
                return str(ia) + (_frac_le(fb, b_ex) if not fa and not a_ex else _frac_ge(fa, a_ex) if not fb
                                  and not b_ex else r"(?:\.0+)?")
            if ib - ia >= 2:
                alts.append(er.decimal_range_regex(ia + 1, ib - 1) + r"(?:\.[0-9]+)?")
            alts.append(str(ia) + _frac_ge(fa, a_ex))
            alts.append(str(ib) + _frac_le(fb, b_ex))
        alts = [x for x in alts if x is not None and "(?!)" not in x]
        return "(?:" + "|".join(alts) + ")"

    # --------------------------------------------------------------- strings

    def string(self, schema: dict[str, Any], path: tuple[str, ...]) -> str | None:
        lo = int(schema.get("minLength", 0))
        hi = schema.get("maxLength")
        hi = None if hi is None else int(hi)
        if hi is not None and hi < lo:
            return None
        excluded = schema.get(_NOT_IN)
        if excluded is not None:
            if "pattern" in schema or schema.get("format") in _FORMATS or (lo, hi) != (0, None):
                self.unsupported("not", path, "a negated string enum with other string keywords is ignored")
            else:
                return self.terminal('"' + _not_in_set(list(excluded)) + '"', "STR")
        pattern = schema.get("pattern")
        positive = ([pattern] if isinstance(pattern, str) else []) + list(schema.get(_PATTERNS, []))
        negative = list(schema.get(_NOT_PATTERN, []))
        fmt = schema.get("format")
        if isinstance(fmt, str) and fmt in _FORMATS:
            positive.append(_format_pattern(self.formats[fmt]))
        for p in list(positive):
            split = er.split_leading_lookahead(p)
            if split is not None:
                positive.remove(p)
                positive += split[0]
                negative += split[1]
        if not positive and not negative:
            return self.any_string(lo, hi)
        where = path + ("pattern" if isinstance(pattern, str) else "format" if positive else "not",)
        try:
            info: er.PatternInfo | None = None
            if len(positive) == 1 and not negative:
                info = er.ecma_pattern_body(positive[0])
                if info is None:
                    return None
                fits = info.min_len >= lo and (hi is None or (info.max_len is not None and info.max_len <= hi))
                if not fits:
                    if (info.max_len is not None and info.max_len < lo) or (hi is not None and info.min_len > hi):
                        return None
                    info = er.ecma_pattern_body(positive[0], min_len=lo, max_len=hi)
            if info is None:
                # Several patterns, negated ones, or lengths the pattern's shape cannot absorb:
                # through automata (intersection, complement, a length counter) and back.
                info = er.pattern_set_body(positive, negative, min_len=lo, max_len=hi)
                if info is None:
                    return None
                if info.body == er.ANY_STRING_BODY:
                    return self.any_string(lo, hi)
        except RegexError as exc:
            if self.raise_unsupported:
                raise GrammarError(f"{exc} (at {_pointer(where)})") from None
            warnings.warn(f"{exc} at {_pointer(where)}; relaxed: 'pattern', 'format' and their lengths are "
                          "ignored", JsonSchemaWarning, stacklevel=3)
            return self.terminal(f'"(?:{er.ANY_UNIT})*"', "STR")
        return self.terminal(f'"{info.body}"', "STR")

    def any_string(self, lo: int, hi: int | None) -> str | None:
        """Any string of lo..hi code points: one terminal, or chunks when the count is long."""
        if self.chunking and max(lo, hi or 0) > LONG_STRING_UNITS:
            return self.long_string(lo, hi)
        count = "*" if (lo, hi) == (0, None) else f"{{{lo},}}" if hi is None else f"{{{lo},{hi}}}"
        return self.terminal(f'"(?:{er.ANY_UNIT}){count}"', "STR")

    def long_string(self, lo: int, hi: int | None) -> str | None:
        """A string of lo..hi code points as chunks of `STRING_CHUNK` units and a tail.

        A count of thousands inside one terminal makes a DFA of thousands of states
        per unit; here the count is split: a head terminal (the opening quote and
        one chunk), chunk terminals, and a tail of 0..STRING_CHUNK-1 units with the
        closing quote, repeated by O(log) rules. Lexing stays unambiguous: a chunk
        holds exactly STRING_CHUNK units and no quote, a tail ends at the first
        quote, so exactly one of them matches at each point. A string of fewer
        than STRING_CHUNK units is one short terminal. (`lark` checks that no other
        string terminal competes with a head at the same position.)
        """
        b = STRING_CHUNK
        unit = f"(?:{er.ANY_UNIT})"
        head = self.terminal(f'"{unit}{{{b}}}', "HEAD")
        chunk = self.terminal(f"{unit}{{{b}}}", "CHUNK")
        self.heads.add(head)
        self.chunked.update({head, chunk})

        def tail(x: int, y: int, opening: bool) -> str:
            name = self.terminal(('"' if opening else "") + f'{unit}{{{x},{y}}}"', "TAIL")
            self.chunked.add(name)
            return name

        def pieces(c_lo: int, c_hi: int | None, t_lo: int, t_hi: int) -> list[str] | None:
            """Strings of c_lo..c_hi whole chunks followed by t_lo..t_hi more units."""
            if c_hi is not None and c_hi < c_lo:
                return None
            if c_lo == 0 and c_hi == 0:
                return [tail(t_lo, t_hi, True)]
            if c_lo == 0:
                more = self.rule([[head, *self.repeat(chunk, 0, None if c_hi is None else c_hi - 1),
                                   tail(0, t_hi, False)]])
                return [self.rule([[tail(t_lo, t_hi, True)], [more or ""]]) or ""]
            return [head, *self.repeat(chunk, c_lo - 1, None if c_hi is None else c_hi - 1),
                    tail(t_lo, t_hi, False)]

        c_lo, r_lo = divmod(lo, b)
        alts: list[list[str]] = []
        if hi is None:
            options = [pieces(c_lo, c_lo, r_lo, b - 1), pieces(c_lo + 1, None, 0, b - 1)]
        else:
            c_hi, r_hi = divmod(hi, b)
            if c_lo == c_hi:
                options = [pieces(c_lo, c_lo, r_lo, r_hi)]
            else:
                options = [pieces(c_lo, c_lo, r_lo, b - 1), pieces(c_lo + 1, c_hi - 1, 0, b - 1),
                           pieces(c_hi, c_hi, 0, r_hi)]
        alts = [o for o in options if o is not None]
        return self.rule(alts)

    def competing_heads(self) -> bool:
        """Whether a chunk head can be a lexer candidate beside another string terminal
        that is still alive after a chunk (greedy lexing would then follow that one).

        Checked on LL(1)-style start sets (FIRST of each rule suffix, FOLLOW of its
        left side when the suffix is nullable), which over-approximate the
        candidates at every parser position. Only heads and string terminals are
        asked about, so the sets hold just those, as bits of an int.
        """
        if not self.heads:
            return False
        strings = {t for t, (regex, _) in self.terminals.items() if t not in self.chunked and regex.startswith('"')}
        bit = {t: 1 << i for i, t in enumerate(sorted(self.heads | strings))}
        heads = sum(bit[t] for t in self.heads)
        rules = dict(self.rules)
        rules["start"] = [[*self.ws, self.top or "", *self.ws]]
        nullable: set[str] = {"WS?"}
        first: dict[str, int] = {n: 0 for n in rules}
        first["WS?"] = bit.get("WS", 0)

        def first_of(seq: list[str]) -> tuple[int, bool]:
            out = 0
            for sym in seq:
                out |= first[sym] if sym in first else bit.get(sym, 0)
                if sym not in nullable:
                    return out, False
            return out, True

        changed = True
        while changed:
            changed = False
            for n, alts in rules.items():
                for a in alts:
                    f, null = first_of(a)
                    if f | first[n] != first[n] or (null and n not in nullable):
                        first[n] |= f
                        if null:
                            nullable.add(n)
                        changed = True

        def suffixes(seq: list[str]) -> list[tuple[int, bool]]:
            """`first_of(seq[i:])` for every i (0..len), in one pass from the right."""
            out = [(0, True)] * (len(seq) + 1)
            f, null = 0, True
            for i in range(len(seq) - 1, -1, -1):
                sym = seq[i]
                g = first[sym] if sym in first else bit.get(sym, 0)
                f, null = (f | g, null) if sym in nullable else (g, False)
                out[i] = (f, null)
            return out

        follow: dict[str, int] = {n: 0 for n in rules}
        alt_suffixes = [(n, a, suffixes(a)) for n, alts in rules.items() for a in alts]
        changed = True
        while changed:
            changed = False
            for n, a, after in alt_suffixes:
                for i, sym in enumerate(a):
                    if sym in follow:
                        f, null = after[i + 1]
                        if null:
                            f |= follow[n]
                        if f | follow[sym] != follow[sym]:
                            follow[sym] |= f
                            changed = True
        rival: dict[str, bool] = {}
        for n, a, after in alt_suffixes:
            for f, null in after[:-1]:
                if null:
                    f |= follow[n]
                if f & heads:
                    for t in strings:
                        if f & bit[t]:
                            if t not in rival:
                                rival[t] = _max_width(self.terminals[t][0]) > STRING_CHUNK
                            if rival[t]:
                                return True
        return False

    # ---------------------------------------------------------------- arrays

    def repeat(self, item: str, lo: int, hi: int | None) -> list[str]:
        """Symbols for `item` repeated lo..hi times, in O(log) rules (unambiguous)."""
        seq = self.exactly(item, lo) if lo else []
        if hi is None:
            star = self.reserve()
            self.rules[star] = [[], [item, star]]
            return seq + [star]
        if hi > lo:
            seq.append(self.upto(item, hi - lo))
        return seq

    def exactly(self, item: str, k: int) -> list[str]:
        if k == 0:
            return []
        if k == 1:
            return [item]
        half = self.rule([self.exactly(item, k // 2)]) or ""
        return [half, half] + ([item] if k % 2 else [])

    def upto(self, item: str, n: int) -> str:
        """item{0,n}: odd n = item? (item item){0,(n-1)/2}; even n = (item item){0,n/2} | item (item item){0,n/2-1}.

        Memoised: both alternatives of an even n recurse, so without it the calls
        number O(n), not O(log n) (`maxLength: 2**31` took minutes).
        """
        name = self.upto_memo.get((item, n))
        if name is None:
            name = self.upto_memo[(item, n)] = self._upto(item, n)
        return name

    def _upto(self, item: str, n: int) -> str:
        if n == 0:
            return self.rule([[]]) or ""
        if n == 1:
            return self.rule([[], [item]]) or ""
        pair = self.rule([[item, item]]) or ""
        if n % 2:
            return self.rule([[self.upto(pair, (n - 1) // 2)], [item, self.upto(pair, (n - 1) // 2)]]) or ""
        return self.rule([[self.upto(pair, n // 2)], [item, self.upto(pair, n // 2 - 1)]]) or ""

    def array(self, schema: dict[str, Any], path: tuple[str, ...]) -> str | None:
        prefix = schema.get("prefixItems")
        items = schema.get("items", True)
        if isinstance(items, list):
            prefix, items = items, schema.get("additionalItems", True)
        prefix = list(prefix or [])
        lo = int(schema.get("minItems", 0))
        hi = schema.get("maxItems")
        hi = None if hi is None else int(hi)
        contains = schema.get("contains")
        ws, comma = self.ws, self.literal(",")
        open_, close = self.literal("["), self.literal("]")
        psyms = [self.value(p, path + ("prefixItems", str(i))) for i, p in enumerate(prefix)]
        rest = self.value(items, path + ("items",))
        if contains is not None:
            if prefix or lo > 1 or hi is not None or schema.get("minContains", 1) != 1 or "maxContains" in schema:
                self.unsupported("contains", path + ("contains",),
                                 "'contains' is ignored with prefixItems, item counts or min/maxContains")
            else:
                hit = self.value(self.merge(self.flatten(items, path), self.flatten(contains, path), path),
                                 path + ("contains",))
                if hit is None:
                    return None
                sep_rest = self.rule([[*ws, comma, *ws, rest]]) if rest else None
                sep_hit = self.rule([[*ws, comma, *ws, hit]]) or ""
                before = [rest, *self.repeat(sep_rest, 0, None)] if sep_rest and rest else None
                after = self.repeat(sep_rest, 0, None) if sep_rest else []
                alts = [[hit, *after]]
                if before:
                    alts.append([*before, sep_hit, *after])
                body = self.rule(alts)
                return self.rule([[open_, *ws, body or "", *ws, close]])
        # chain(j): what may follow once j >= 1 items are written.
        k = len(prefix)
        sep_rest = self.rule([[*ws, comma, *ws, rest]]) if rest is not None else None
        chain: str | None = None
        if k:
            if sep_rest is not None and (hi is None or hi > k):
                chain = self.rule([self.repeat(sep_rest, max(lo - k, 0), None if hi is None else hi - k)])
            elif lo <= k:
                chain = self.rule([[]])
            for j in range(k - 1, 0, -1):
                options: list[list[str]] = []
                if lo <= j:
                    options.append([])
                if psyms[j] is not None and chain is not None and (hi is None or j + 1 <= hi):
                    options.append([*ws, comma, *ws, psyms[j], chain])
                chain = self.rule(options)
            body = self.rule([[psyms[0], chain]]) if psyms[0] is not None and chain is not None else None
        elif rest is not None and sep_rest is not None and (hi is None or hi >= 1):
            body = self.rule([[rest, *self.repeat(sep_rest, max(lo - 1, 0), None if hi is None else hi - 1)]])
        else:
            body = None
        if hi is not None and hi == 0:
            body = None
        alts: list[list[str]] = []
        if lo == 0:
            alts.append([open_, *ws, close])
        if body is not None:
            alts.append([open_, *ws, body, *ws, close])
        return self.rule(alts)

    # --------------------------------------------------------------- objects

    def object(self, schema: dict[str, Any], path: tuple[str, ...]) -> str | None:
        props: dict[str, Any] = dict(schema.get("properties") or {})
        required = [r for r in schema.get("required") or [] if isinstance(r, str)]
        addl = schema.get("additionalProperties", True)
        # Keys outside `properties`/`patternProperties`/`required`: the generation default
        # allows them only where the schema says so (`_closed_by_default`).
        extra_schema = False if self._closed_by_default(schema) else addl
        patterns: dict[str, Any] = dict(schema.get("patternProperties") or {})
        names_schema = schema.get("propertyNames", True)
        min_p = int(schema.get("minProperties", 0))
        max_p = schema.get("maxProperties")
        max_p = None if max_p is None else int(max_p)
        ws, comma, colon = self.ws, self.literal(","), self.literal(":")
        # Required names without a declared schema are declared with the extras' schema.
        for r in required:
            if r not in props:
                matching = [s for p, s in patterns.items() if self._search(p, r, path)]
                props[r] = matching[0] if len(matching) == 1 else {"allOf": matching} if matching else addl
        names = list(props)
        if names_schema not in (True, {}):
            ns = self.flatten(names_schema, path + ("propertyNames",))
            for n in names:
                if not self._name_ok(n, ns, path):
                    props[n] = False
        trivial = extra_schema in (True, {}) and all(self.flatten(ps, path) in (True, {}) for ps in patterns.values())
        # Priorities rank key terminals only where their languages overlap (pattern and
        # propertyNames keys); elsewhere the additional key excludes the declared names
        # exactly, and unranked keys never shadow a key of another anyOf branch.
        exact: dict[str, er.PatternInfo | None] | None = None
        if patterns and not trivial and names_schema in (True, {}):
            exact = self._exact_keys(list(patterns), names)
        ranked = bool(patterns) and not trivial and exact is None or names_schema not in (True, {})
        member_syms: list[str | None] = []
        for n in names:
            s = props[n]
            for p, ps in patterns.items():
                if self._search(p, n, path):
                    s = self.merge(self.flatten(s, path), self.flatten(ps, path), path)
            v = self.value(s, path + ("properties", n))
            if v is None:
                member_syms.append(None)
                continue
            key = self.terminal(er.literal_string_regex(n), "KEY", _DECLARED_KEY if ranked else 0)
            member_syms.append(self.rule([[key, *ws, colon, *ws, v]]))
        # Extra members: keys outside `properties`.
        extras: list[str] = []
        if patterns and not trivial:
            # A key matching a pattern lexes as that pattern's terminal only: its priority
            # is above the additional-key terminal's, so additionalProperties never applies.
            if len(patterns) > 1 and len({_canon(v) for v in patterns.values()}) > 1:
                self.approximate("patternProperties", path + ("patternProperties",),
                                 "a key matching several patterns needs only one of their schemas")
            for p, ps in patterns.items():
                if exact is not None:
                    info = exact[p]
                else:
                    if any(self._search(p, n, path) for n in names):
                        self.approximate("patternProperties", path + ("patternProperties", p),
                                         "a declared property name that matches this pattern, repeated or "
                                         "out of schema order, is accepted with the pattern's schema alone")
                    try:
                        info = er.ecma_pattern_body(p)
                    except RegexError as exc:
                        raise GrammarError(f"{exc} (at {_pointer(path + ('patternProperties',))})") from None
                v = self.value(ps, path + ("patternProperties", p))
                if info is not None and v is not None:
                    key = self.terminal(f'"{info.body}"', "KEY", _PATTERN_KEY if ranked else 0)
                    extras.append(self.rule([[key, *ws, colon, *ws, v]]) or "")
        if extra_schema is not False:
            v = self.value(extra_schema, path + ("additionalProperties",))
            if v is not None:
                key_sym: str | None
                if names_schema not in (True, {}):
                    ns = self.merge(self.flatten(names_schema, path), {"type": "string"}, path)
                    key_sym = self.value(ns, path + ("propertyNames",))
                    if names:
                        self.approximate("propertyNames", path + ("propertyNames",),
                                         "a declared property name, repeated or out of schema order, is "
                                         "accepted with the additionalProperties schema")
                elif exact is not None:
                    rest = exact[_OTHER_KEYS]
                    key_sym = None if rest is None else self.terminal(f'"{rest.body}"', "KEY")
                else:
                    key_sym = self.terminal('"' + _not_in_set(names) + '"', "KEY", _ADDITIONAL_KEY if ranked else 0)
                if key_sym is not None:
                    extras.append(self.rule([[key_sym, *ws, colon, *ws, v]]) or "")
        extra = self.rule([[e] for e in extras if e])
        req = set(required)
        if any(member_syms[i] is None and n in req for i, n in enumerate(names)):
            return None
        # body(i, count, started): members from property i on; `count` saturates above the bounds.
        track = min_p > 0 or max_p is not None
        cap = max(min_p, max_p if max_p is not None else 0) + 1
        if track and cap > MAX_COUNTED_PROPERTIES + 1:
            self.unsupported("minProperties/maxProperties", path,
                             f"property counts above {MAX_COUNTED_PROPERTIES} are not enforced")
            track, min_p, max_p = False, 0, None
        memo: dict[tuple[int, int, bool], str | None] = {}
        sep_extra = self.rule([[*ws, comma, *ws, extra]]) if extra else None

        def reads(key: tuple[int, int, bool]) -> list[tuple[bool, tuple[int, int, bool]]]:
            """The states `build(key)` continues with: (True, after writing property i),
            (False, after skipping it)."""
            i, c, started = key
            if i == len(names):
                return []
            out = []
            if member_syms[i] is not None and (max_p is None or c + 1 <= max_p):
                out.append((True, (i + 1, min(c + 1, cap) if track else 0, True)))
            if names[i] not in req:
                out.append((False, (i + 1, c, started)))
            return out

        def build(key: tuple[int, int, bool]) -> str | None:
            """The rule of members from property i on, its successors already in `memo`."""
            i, c, started = key
            alts: list[list[str]] = []
            if i < len(names):
                for wrote, after in reads(key):
                    nxt = memo[after]
                    if nxt is not None and wrote:
                        alts.append(([*ws, comma, *ws] if started else []) + [member_syms[i] or "", nxt])
                    elif nxt is not None:
                        alts.append([nxt])
            else:
                need = max(min_p - c, 0) if track else 0
                room = None if max_p is None else max_p - c
                if started and need == 0:
                    alts.append([])
                if extra is not None and sep_extra is not None and (room is None or room > 0):
                    if started:
                        alts.append(self.repeat(sep_extra, max(need, 1), room))
                    else:
                        alts.append([extra, *self.repeat(sep_extra, max(need - 1, 0),
                                                         None if room is None else room - 1)])
            return self.rule(alts)

        def body(start: tuple[int, int, bool]) -> str | None:
            """`build` over every state reachable from `start`, successors first, on an explicit
            stack: an object of 1,000 properties must not recurse 1,000 deep. States are
            built in the order a depth-first recursion would build them."""
            stack = [start]
            while stack:
                key = stack[-1]
                if key in memo:
                    stack.pop()
                    continue
                todo = [after for _, after in reads(key) if after not in memo]
                if todo:
                    stack.extend(reversed(todo))
                else:
                    memo[stack.pop()] = build(key)
            return memo[start]

        if self.any_order and not track and 0 < len(names) <= MAX_ANY_ORDER_PROPERTIES:
            first = self.members_any_order(member_syms, [n in req for n in names], extra)
        elif (self.exact and self.any_order and not track and len(names) > MAX_ANY_ORDER_PROPERTIES
              and len(req) <= MAX_TRACKED_REQUIRED):
            self.approximate("properties", path + ("properties",),
                             f"an object of more than {MAX_ANY_ORDER_PROPERTIES} declared properties takes them in "
                             "any order with its required ones tracked; an optional one may repeat")
            first = self.members_required_tracked(member_syms, [n in req for n in names], extra)
        else:
            self.order_bound |= len(names) > 1
            first = body((0, 0, False))
        open_, close = self.literal("{"), self.literal("}")
        alts = []
        if not req and min_p == 0:
            alts.append([open_, *ws, close])
        if first is not None:
            alts.append([open_, *ws, first, *ws, close])
        return self.rule(alts)

    def _closed_by_default(self, schema: dict[str, Any]) -> bool:
        """Whether undeclared keys are refused though `additionalProperties` is absent: the
        generation default (not `exact`) for an object that declares properties (`properties`
        or `patternProperties`), as XGrammar's `strict_mode`. An object that declares none
        (`{"type": "object"}`, a map) stays open, as there; so do objects with an
        `unevaluatedProperties` that allows keys, and the object schemas negation builds
        (`_OPEN`), whose absent `additionalProperties` means "any other key"."""
        if self.exact or "additionalProperties" in schema or schema.get(_OPEN):
            return False
        if schema.get("unevaluatedProperties", False) is not False:
            return False
        return "properties" in schema or "patternProperties" in schema

    def _exact_keys(self, patterns: list[str], names: list[str]) -> dict[str, er.PatternInfo | None] | None:
        """Key bodies that need no priorities: each pattern minus the declared names, and
        (under `_OTHER_KEYS`) the keys matching no pattern and no name; None when the
        automata are over their limits (then priorities rank the keys).

        Unranked keys never hide an equal key of another `anyOf` branch lexed at the
        same position, which ranked ones do.
        """
        if len(names) > MAX_EXACT_KEY_NAMES or sum(map(len, patterns)) > MAX_EXACT_KEY_PATTERNS:
            return None
        literals = ["^" + _ecma_escape(n) + "$" for n in names]
        try:
            out = {p: er.pattern_set_body([p], literals) for p in patterns}
            out[_OTHER_KEYS] = er.pattern_set_body([], [*patterns, *literals])
        except RegexError:
            return None
        if sum(len(info.body) for info in out.values() if info is not None) > MAX_EXACT_KEY_REGEX:
            return None  # a lexer DFA that size costs more than priorities' rare hazard
        return out

    def members_any_order(self, members: list[str | None], required: list[bool], extra: str | None) -> str | None:
        """An object's members with declared properties in any order, each at most once.

        One rule per (set of declared properties already written, started): 2^n
        states for n declared properties, so only small objects
        (`MAX_ANY_ORDER_PROPERTIES`) take this form. Extra members may come
        anywhere; the object may close once every required property is written.
        """
        ws, comma = self.ws, self.literal(",")
        need = sum(1 << i for i, r in enumerate(required) if r)
        states: dict[tuple[int, bool], str] = {}

        def state(seen: int, started: bool) -> str:
            if (seen, started) in states:
                return states[(seen, started)]
            name = states[(seen, started)] = self.reserve()
            sep = [*ws, comma, *ws] if started else []
            alts: list[list[str]] = []
            for i, m in enumerate(members):
                if m is not None and not seen >> i & 1:
                    alts.append([*sep, m, state(seen | 1 << i, True)])
            if extra is not None:
                alts.append([*sep, extra, state(seen, True)])
            if started and seen & need == need:
                alts.append([])
            self.rules[name] = alts
            return name

        if extra is None and all(m is None for m in members):
            return None
        return state(0, False)

    def members_required_tracked(self, members: list[str | None], required: list[bool],
                                 extra: str | None) -> str | None:
        """An object's members in any order, tracking only which required properties are written
        (`MAX_TRACKED_REQUIRED`: 2^r states): `members_any_order` over the required ones, with the
        optional and extra members as its repeatable extra (an optional one may come twice)."""
        needed = [m for m, r in zip(members, required) if r]
        free = self.rule([[m] for m, r in zip(members, required) if not r and m is not None]
                         + ([[extra]] if extra is not None else []))
        return self.members_any_order(needed, [True] * len(needed), free)

    def _search(self, pattern: str, name: str, path: tuple[str, ...]) -> bool:
        try:
            return re.search(er.ecma_to_python(pattern), name) is not None
        except (re.error, RegexError) as exc:
            raise GrammarError(f"pattern {pattern!r} at {_pointer(path)}: {exc}") from None

    def _name_ok(self, name: str, ns: Any, path: tuple[str, ...]) -> bool:
        if ns is False:
            return False
        if not isinstance(ns, dict):
            return True
        if "enum" in ns and name not in ns["enum"]:
            return False
        if "const" in ns and name != ns["const"]:
            return False
        return self._const_satisfies(name, ns, path)

    # ------------------------------------------------------------- any value

    def any_value(self) -> str:
        if self._any is not None:
            return self._any
        name = self._any = self.reserve()
        ws, comma, colon = self.ws, self.literal(","), self.literal(":")
        string = self.terminal(f'"(?:{er.ANY_UNIT})*"', "STR")
        member = self.rule([[string, *ws, colon, *ws, name]]) or ""
        sep_member = self.rule([[*ws, comma, *ws, member]]) or ""
        sep_value = self.rule([[*ws, comma, *ws, name]]) or ""
        obj = self.rule([[self.literal("{"), *ws, self.literal("}")],
                         [self.literal("{"), *ws, member, *self.repeat(sep_member, 0, None), *ws, self.literal("}")]])
        arr = self.rule([[self.literal("["), *ws, self.literal("]")],
                         [self.literal("["), *ws, name, *self.repeat(sep_value, 0, None), *ws, self.literal("]")]])
        self.rules[name] = [[self.literal("null")], [self.literal("true")], [self.literal("false")],
                            [self.terminal(self.any_number_regex(), "NUM")], [string], [obj or ""], [arr or ""]]
        return name

    # ----------------------------------------------------------------- output

    def build(self) -> None:
        """Lower the root schema (rules and terminals accumulate on the compiler)."""
        top = self.top = self.value(self.root, ())
        if top is None:
            raise GrammarError("the schema accepts no JSON value")
        for name, alts in self.rules.items():
            if not alts:
                raise GrammarError(f"internal: rule {name} has no alternatives")

    def lark(self) -> str:
        """The lowered grammar as Lark text."""
        lines = [f"start: {' '.join(self.ws)} {self.top} {' '.join(self.ws)}".replace("  ", " ")]
        for name, alts in self.rules.items():
            lines.append(f"{name}: " + "\n    | ".join(" ".join(a) for a in alts))
        for name, (regex, priority) in self.terminals.items():
            lines.append(f"{name}{f'.{priority}' if priority else ''}: {er.lark_regex(regex)}")
        if self.ws:
            lines.append(f"WS: /{self.ws_regex}/")
        return "\n".join(lines) + "\n"

    def ir(self) -> GrammarIR:
        """The lowered grammar as pda's IR, built directly: Lark's grammar loader spends
        seconds parsing the generated text of a large schema (and ~50 s on a
        100,000-value enum terminal)."""
        ws_opt = "ws_opt"
        rules: dict[str, list[list[str]]] = {"start": [[*self.ws, self.top or "", *self.ws]], **self.rules}
        if self.ws:
            rules[ws_opt] = [[], ["WS"]]
        reachable, todo = {"start"}, ["start"]
        while todo:
            for alt in rules[todo.pop()]:
                for sym in alt:
                    sym = ws_opt if sym == "WS?" else sym
                    if sym in rules and sym not in reachable:
                        reachable.add(sym)
                        todo.append(sym)
        ir_rules = [Rule(name, tuple(ws_opt if sym == "WS?" else sym for sym in alt))
                    for name, alts in rules.items() if name in reachable for alt in alts]
        used = {sym for r in ir_rules for sym in r.rhs}
        terminals = [TerminalDef(name, regex, priority=priority, lazy=bool(_MAYBE_LAZY.search(regex)) and has_lazy_quantifier(regex, ""))
                     for name, (regex, priority) in self.terminals.items() if name in used]
        if self.ws:
            terminals.append(TerminalDef("WS", self.ws_regex))
        return GrammarIR(terminals=tuple(terminals), rules=tuple(ir_rules), start="start", source="<json-schema>")


# Strings of characters with one JSON spelling (themselves) and `/`.
_SINGLE_OR_SLASH = re.compile("[" + "".join(f"{er.py_char(a)}-{er.py_char(b)}" for a, b in er.SINGLE_SPELLING)
                              + "/]*")
# Only a pattern with a lazy quantifier can make a lazy terminal; most have none.
_MAYBE_LAZY = re.compile(r"[*+?}]\?")


def _ecma_escape(text: str) -> str:
    """`text` as an ECMA-262 (u flag) pattern matching it literally."""
    return "".join("\\" + c if c in "^$\\.*+?()[]{}|/" else c for c in text)


def _literal_spellings(text: str) -> list[str] | None:
    """Every JSON spelling of `text` (raw, and `\\/` for each `/`), or None when there
    are more than `MAX_LITERAL_SPELLINGS` or a character has escaped spellings."""
    if not _SINGLE_OR_SLASH.fullmatch(text) or 2 ** text.count("/") > MAX_LITERAL_SPELLINGS:
        return None
    first, *rest = text.split("/")
    out = [first]
    for piece in rest:
        out = [s + sep + piece for s in out for sep in ("/", "\\/")]
    return out


def _max_width(regex: str) -> int:
    """The most characters `regex` can match (a large number when unbounded)."""
    try:
        return re._parser.parse(regex).getwidth()[1]  # type: ignore[attr-defined]
    except (re.error, OverflowError, RecursionError):
        return sys.maxsize


def _format_pattern(regex: str) -> str:
    """A `format`'s regex as an anchored pattern (its syntax means the same in ECMA and Python)."""
    return f"^(?:{regex})$"


def _conj(a: Any, b: Any) -> Any:
    """Both schemas, as an `allOf` lowered (and memoised) when it is used: merging
    eagerly would not terminate on recursive schemas."""
    if a is True or a == {} or _canon(a) == _canon(b):
        return b
    if b is True or b == {}:
        return a
    if a is False or b is False:
        return False
    return {"allOf": [a, b]}


def _number_literal_regex(d: Decimal, exact: bool = True) -> str:
    """Plain-decimal spellings of the number `d`: with `exact` all of them (`2.6`, `2.60`;
    `3`, `3.0`; `-0`), else the shortest (`2.6`; `3`; `0`), which is an integer literal
    wherever one can be."""
    i, frac = _split(abs(d))
    if not exact:
        return ("-" if d < 0 else "") + str(i) + (rf"\.{frac}" if frac else "")
    sign = "-?" if d == 0 else "-" if d < 0 else ""
    return sign + str(i) + (rf"\.{frac}0*" if frac else r"(?:\.0+)?")


def _is_int(v: Any) -> bool:
    """A positive integer (`3` or `3.0`); ints too large for a float included."""
    return _is_number(v) and v > 0 and (isinstance(v, int) or v.is_integer())


def _num(d: Decimal) -> int | float:
    """A decimal as the JSON number a schema keyword holds."""
    return int(d) if d == d.to_integral_value() else float(d)


def _scaled(bound: Decimal | None, strict: bool, scale: int, lower: bool) -> int | None:
    """The integer bound on value * 10^scale, rounded inward: ceil for a lower bound, floor
    for an upper one (Decimal's `//` truncates toward zero, which took `minimum: 1.5` for 1
    and `maximum: -1.5` for -1), one step further when a strict bound falls on an integer."""
    if bound is None:
        return None
    b = bound.scaleb(scale)
    if strict and b == b.to_integral_value():
        return int(b) + (1 if lower else -1)
    return math.ceil(b) if lower else math.floor(b)


def _split(d: Decimal) -> tuple[int, str]:
    """Integer part and fraction digits (no trailing zeros) of a non-negative decimal."""
    i = int(d)
    f = format(d - i, "f")
    frac = f.split(".", 1)[1].rstrip("0") if "." in f else ""
    return i, frac


def _frac_ge(f: str, strict: bool) -> str:
    """`(\\.D+)?` suffixes whose fraction value is >= 0.f (> when strict)."""
    if not f:
        return r"\.0*[1-9][0-9]*" if strict else r"(?:\.[0-9]+)?"
    alts = [f[:i] + f"[{int(f[i]) + 1}-9][0-9]*" for i in range(len(f)) if f[i] != "9"]
    alts.append(f + "0*[1-9][0-9]*")
    if not strict:
        alts.append(f + "0*")
    return r"\.(?:" + "|".join(alts) + ")"


def _frac_le(f: str, strict: bool) -> str:
    """`(\\.D+)?` suffixes whose fraction value is <= 0.f (< when strict)."""
    if not f:
        return "(?!)" if strict else r"(?:\.0+)?"
    alts = [f[:i] + f"[0-{int(f[i]) - 1}][0-9]*" for i in range(len(f)) if f[i] != "0"]
    alts += [f[:i] + "0*" for i in range(1, len(f))]
    alts.append("0+")
    if not strict:
        alts.append(f + "0*")
    return r"(?:\.(?:" + "|".join(alts) + "))?"


def _not_in_set(names: list[str]) -> str:
    """Lexeme-body regex for strings not in `names`: a negative look-ahead for any spelling
    of a name followed by the closing quote, then any string body.

    Exact because a body holds no raw quote: the look-ahead's quote is the lexeme's
    last character. pda's DFA builder intersects the two (a trie of the names
    against the unit loop), which is far cheaper than writing the complement of a
    few hundred names out as one regex.
    """
    anything = f"(?:{er.ANY_UNIT})*"
    if not names:
        return anything
    spellings = "|".join(er.literal_body_regex(n) for n in sorted(set(names)))
    return f'(?!(?:{spellings})")' + anything


@dataclasses.dataclass(frozen=True)
class _Options:
    """The lowering's options, checked (`resolve_options`)."""

    whitespace: str
    max_whitespace: int
    on_unsupported: str
    property_order: str
    exact: bool


_UNSET: Any = object()


def resolve_options(*, whitespace: str | None, max_whitespace: int | None, on_unsupported: str | None,
                    property_order: str, exact: bool, strict: Any = _UNSET, stacklevel: int = 3) -> _Options:
    """The options of the public entry points, with their defaults and the deprecated `strict`.

    `strict` (the previous name: True = raise on unsupported keywords) read like XGrammar's
    `strict_mode` (no undeclared properties); it is still accepted, with a warning.
    """
    if strict is not _UNSET:
        if on_unsupported is not None:
            raise TypeError("pass on_unsupported only: strict is its deprecated name")
        warnings.warn("strict= is deprecated: use on_unsupported='raise' (strict=True) or on_unsupported='relax' "
                      "(strict=False); undeclared properties are governed by exact=", DeprecationWarning,
                      stacklevel=stacklevel)
        on_unsupported = "raise" if strict else "relax"
    if whitespace is None:
        whitespace = "any" if exact else "flexible"
    if whitespace not in VALID_WHITESPACE:
        raise GrammarError(f"whitespace must be one of {', '.join(map(repr, VALID_WHITESPACE))}, not {whitespace!r}")
    if max_whitespace is None:
        max_whitespace = MAX_WHITESPACE_RUN
    if isinstance(max_whitespace, bool) or not isinstance(max_whitespace, int) or max_whitespace < 1:
        raise GrammarError(f"max_whitespace must be a positive integer, not {max_whitespace!r}")
    if on_unsupported is None:
        on_unsupported = "raise"
    if on_unsupported not in VALID_ON_UNSUPPORTED:
        raise GrammarError(f"on_unsupported must be 'raise' or 'relax', not {on_unsupported!r}")
    if property_order not in ("any", "schema"):
        raise GrammarError(f"property_order must be 'any' or 'schema', not {property_order!r}")
    if not isinstance(exact, bool):
        raise GrammarError(f"exact must be True or False, not {exact!r}")
    return _Options(whitespace, max_whitespace, on_unsupported, property_order, exact)


def _lower(schema: dict[str, Any] | bool | str, options: _Options) -> _Compiler:
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as exc:
            raise GrammarError(f"schema is not valid JSON: {exc.msg}", line=exc.lineno, column=exc.colno) from None
        except RecursionError:
            raise GrammarError(f"schema text nests deeper than MAX_JSON_DEPTH = {MAX_JSON_DEPTH}") from None
    _validate(schema)
    # Bounds and multiples are exact decimals: enough precision for every integer a schema
    # may hold (`MAX_NUMBER_DIGITS`) divided by the smallest float.
    with decimal.localcontext(decimal.Context(prec=4 * MAX_NUMBER_DIGITS)):
        return _lower_valid(schema, options)


def _lower_valid(schema: Any, options: _Options) -> _Compiler:
    compiler = _Compiler(schema, options)
    compiler.build()
    if compiler.heads and compiler.competing_heads():
        # Another string can be lexed where a long one starts: count in one terminal.
        compiler = _Compiler(schema, options)
        compiler.chunking = False
        compiler.build()
    return compiler


def json_schema_to_lark(schema: dict[str, Any] | bool | str, *, whitespace: str | None = None,
                        max_whitespace: int | None = None, exact: bool = False, on_unsupported: str | None = None,
                        property_order: str = "any", strict: Any = _UNSET) -> str:
    """Lower a JSON Schema (a dict, a boolean, or JSON text) to Lark grammar text for pda.

    Defaults are made for generation (docs/json_schema.md, "Defaults"): integers are
    integer literals, numbers stay finite doubles, objects that declare properties take
    no other keys unless the schema allows them, dates and times are what Pydantic
    writes and reads, and `whitespace="flexible"` allows runs of up to
    `max_whitespace` (`MAX_WHITESPACE_RUN`) JSON white-space characters between
    tokens and around the value. `exact=True` is JSON Schema's language on those
    points (and `whitespace="any"`, unbounded runs, unless given); `"compact"`
    allows no white space. Unsupported keywords raise `GrammarError` with their
    JSON path, or with `on_unsupported="relax"` warn (`JsonSchemaWarning`) and
    apply the relaxation the message names. `property_order="any"` accepts the
    declared properties of objects with at most `MAX_ANY_ORDER_PROPERTIES` of them
    in any order; `"schema"` (and larger objects) only in the order the schema
    declares them. `strict` is the deprecated name of `on_unsupported`.
    """
    options = resolve_options(whitespace=whitespace, max_whitespace=max_whitespace, on_unsupported=on_unsupported,
                              property_order=property_order, exact=exact, strict=strict)
    return _lower(schema, options).lark()


def json_schema_to_ir(schema: dict[str, Any] | bool | str, *, whitespace: str | None = None,
                      max_whitespace: int | None = None, exact: bool = False, on_unsupported: str | None = None,
                      property_order: str = "any", strict: Any = _UNSET) -> GrammarIR:
    """The same lowering as `json_schema_to_lark`, as pda's grammar IR (no Lark loader)."""
    options = resolve_options(whitespace=whitespace, max_whitespace=max_whitespace, on_unsupported=on_unsupported,
                              property_order=property_order, exact=exact, strict=strict)
    return lowered_ir(schema, options)


def lowered_ir(schema: dict[str, Any] | bool | str, options: _Options) -> GrammarIR:
    """`json_schema_to_ir` with options already resolved (`resolve_options`)."""
    return _lower(schema, options).ir()


def pydantic_to_schema(model: Any) -> dict[str, Any]:
    """A Pydantic v2 model class (or TypeAdapter-able type) as a JSON Schema dict."""
    if hasattr(model, "model_json_schema"):
        return model.model_json_schema()
    from pydantic import TypeAdapter

    return TypeAdapter(model).json_schema()
