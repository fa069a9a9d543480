"""JSON Schema → pda grammar (IR, or Lark text), for pda's contextual greedy lexer.

Layout of the output: JSON structure (objects, arrays, members, repetition) is
rules; every scalar (a string with its pattern/format/length, a number with its
bounds, a property name, a literal) is one terminal. Each string terminal spans a
whole JSON string lexeme, quotes included, and matches the allowed values in every
spelling a serialiser writes, so greedy longest-match lexing of a valid instance
always ends a string terminal at its closing quote. Property-name terminals are
exact (declared names, patterns minus names, the rest) and unranked, so a key
never hides an equal key of another `anyOf` branch; only where that is not built
(`propertyNames`, automata limits) do they carry priorities (declared > pattern >
additional), and pda's lexer then hands the parser only the top-priority
candidates matching a lexeme. Long strings are counted in chunk terminals, string
enums are one literal-set terminal for the finite-set engine, and small objects
take their properties in any order. `json_schema_to_ir` builds pda's IR directly
(Lark's loader is slow on large generated grammars); `json_schema_to_lark` writes
the same grammar as text.

The package, in the order its modules import each other:

- `limits`: every default and bound, one constant each; `options`: the checked options.
- `keywords`: the vocabulary (keyword sets, types, the internal `x-pda-*` keywords);
  `formats`: the `format` regexes; `validate`: the document checked before lowering.
- `context`: what a lowering's parts share (settings, the `GrammarBuilder`, budgets, warnings).
- `refs`: `$ref` resolution; `normalise`: `$ref`/`allOf` inlined, `not`/`if`/dependencies
  rewritten as unions (`negate`); `checks`: constants decided against scalar keywords;
  `instances`: values decided against structural keywords without building a grammar.
- `typed`: a normalised schema read once per type (`NumberSchema`, `StringSchema`,
  `ArraySchema`, `ObjectSchema`); `numbers`, `strings`, `containers`: the lowering of
  each type, from its view.
- `lowering`: the recursion over subschemas that ties them together, and the output.

References → normalisation → typed views → lowering by type. Normalisation works on
JSON dicts: merging two schemas (`allOf`, `$ref` siblings, negations conjoined) goes
keyword by keyword, and a schema's content (`keywords.schema_key`) keys the memos, so a subschema
met twice is lowered once. What it must say that JSON Schema has no keyword for it writes
as internal `x-pda-*` keywords (`keywords`), which merge, negate and key memos like
any other: a negated integer type, a negated string enum, patterns a string must and
must not match, an object built to stay open, and anyOf lists pending one at a time
(which the lowering's union step takes). The type lowerings never read the dict:
each reads its typed view once (`typed`), where defaults, draft spellings and those
internal keywords are folded into named fields. `checks`, which decides a constant
against its sibling keywords one keyword at a time, reads the dict.

Semantics that differ from a full validator are listed in docs/json_schema.md;
each one either raises `GrammarError` (``on_unsupported="raise"``) or warns with
`JsonSchemaWarning` (``on_unsupported="relax"``) naming the keyword and the JSON path.
The defaults are made for generation; ``exact=True`` is JSON Schema's language
(`resolve_options`, docs/json_schema.md "Defaults").

The limits are re-exported here for reading; the lowering reads them from `limits`,
where a test or a benchmark changes one (`json_schema.limits.MAX_ANY_ORDER_PROPERTIES`).
"""

from __future__ import annotations

from typing import Any

from pda.grammar.ir import GrammarIR
from pda.grammar.json_schema.context import JsonSchemaWarning
from pda.grammar.json_schema.limits import (
    LONG_STRING_UNITS, MAX_ANY_ORDER_PROPERTIES, MAX_BRANCHES, MAX_COUNT, MAX_COUNTED_PROPERTIES, MAX_DEPENDENCIES,
    MAX_ENUMERATED_MULTIPLES, MAX_EXACT_KEY_NAMES, MAX_EXACT_KEY_PATTERNS, MAX_EXACT_KEY_STATES, MAX_JSON_DEPTH,
    MAX_LITERAL_SPELLINGS, MAX_NESTING, MAX_NUMBER_DIGITS, MAX_NUMBER_EXPONENT, MAX_NUMBER_INTEGER_DIGITS,
    MAX_OBJECT_STATES, MAX_PROPERTY_NAMES, MAX_SCHEMA_NODES, MAX_STEPS, MAX_SUBSCHEMAS, MAX_TRACKED_REQUIRED,
    MAX_UNIQUE_VALUES, MAX_WHITESPACE_RUN, STRING_CHUNK,
)
from pda.grammar.json_schema.lowering import lower
from pda.grammar.json_schema.options import UNSET, VALID_ON_UNSUPPORTED, VALID_WHITESPACE, Options, resolve_options

__all__ = [
    "JsonSchemaWarning", "json_schema_to_ir", "json_schema_to_lark", "lowered_ir", "pydantic_to_schema",
    "resolve_options", "Options", "VALID_WHITESPACE", "VALID_ON_UNSUPPORTED", "LONG_STRING_UNITS",
    "MAX_ANY_ORDER_PROPERTIES", "MAX_BRANCHES", "MAX_COUNT", "MAX_COUNTED_PROPERTIES", "MAX_DEPENDENCIES",
    "MAX_ENUMERATED_MULTIPLES", "MAX_EXACT_KEY_NAMES", "MAX_EXACT_KEY_PATTERNS", "MAX_EXACT_KEY_STATES",
    "MAX_JSON_DEPTH", "MAX_LITERAL_SPELLINGS", "MAX_NESTING", "MAX_NUMBER_DIGITS", "MAX_NUMBER_EXPONENT",
    "MAX_NUMBER_INTEGER_DIGITS", "MAX_OBJECT_STATES", "MAX_PROPERTY_NAMES", "MAX_SCHEMA_NODES", "MAX_STEPS",
    "MAX_SUBSCHEMAS", "MAX_TRACKED_REQUIRED", "MAX_UNIQUE_VALUES", "MAX_WHITESPACE_RUN", "STRING_CHUNK",
]


def json_schema_to_lark(schema: dict[str, Any] | bool | str, *, whitespace: str | None = None,
                        max_whitespace: int | None = None, exact: bool = False, on_unsupported: str | None = None,
                        property_order: str = "any", strict: Any = UNSET) -> str:
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
    return lower(schema, options).lark()


def json_schema_to_ir(schema: dict[str, Any] | bool | str, *, whitespace: str | None = None,
                      max_whitespace: int | None = None, exact: bool = False, on_unsupported: str | None = None,
                      property_order: str = "any", strict: Any = UNSET) -> GrammarIR:
    """The same lowering as `json_schema_to_lark`, as pda's grammar IR (no Lark loader)."""
    options = resolve_options(whitespace=whitespace, max_whitespace=max_whitespace, on_unsupported=on_unsupported,
                              property_order=property_order, exact=exact, strict=strict)
    return lowered_ir(schema, options)


def lowered_ir(schema: dict[str, Any] | bool | str, options: Options) -> GrammarIR:
    """`json_schema_to_ir` with options already resolved (`resolve_options`)."""
    return lower(schema, options).ir()


def pydantic_to_schema(model: Any) -> dict[str, Any]:
    """A Pydantic v2 model class (or TypeAdapter-able type) as a JSON Schema dict."""
    if hasattr(model, "model_json_schema"):
        return model.model_json_schema()
    from pydantic import TypeAdapter

    return TypeAdapter(model).json_schema()
