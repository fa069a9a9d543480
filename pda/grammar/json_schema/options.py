"""The options of a JSON Schema lowering, checked once at the public entry points.

`resolve_options` turns the keyword arguments of `json_schema_to_ir`,
`json_schema_to_lark` and `Grammar.from_json_schema` into an `Options`: every
default applied (white space follows `exact`), every value checked (a bad one is a
`GrammarError` naming it), the deprecated `strict` translated. Past this point the
lowering never sees an unchecked option.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

from pda.errors import GrammarError
from pda.grammar.json_schema import limits

VALID_WHITESPACE = ("flexible", "compact", "any")
VALID_ON_UNSUPPORTED = ("raise", "relax")
VALID_PROPERTY_ORDER = ("any", "schema")


@dataclasses.dataclass(frozen=True)
class Options:
    """The lowering's options, checked (`resolve_options`)."""

    whitespace: str
    max_whitespace: int
    on_unsupported: str
    property_order: str
    exact: bool


# The default of `strict`: not given (an explicit None is still the deprecated keyword).
UNSET: Any = object()


def resolve_options(*, whitespace: str | None, max_whitespace: int | None, on_unsupported: str | None,
                    property_order: str, exact: bool, strict: Any = UNSET, stacklevel: int = 3) -> Options:
    """The options of the public entry points, with their defaults and the deprecated `strict`.

    `strict` (the previous name: True = raise on unsupported keywords) read like XGrammar's
    `strict_mode` (no undeclared properties); it is still accepted, with a warning.
    """
    if strict is not UNSET:
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
        max_whitespace = limits.MAX_WHITESPACE_RUN
    if isinstance(max_whitespace, bool) or not isinstance(max_whitespace, int) or max_whitespace < 1:
        raise GrammarError(f"max_whitespace must be a positive integer, not {max_whitespace!r}")
    if on_unsupported is None:
        on_unsupported = "raise"
    if on_unsupported not in VALID_ON_UNSUPPORTED:
        raise GrammarError(f"on_unsupported must be 'raise' or 'relax', not {on_unsupported!r}")
    if property_order not in VALID_PROPERTY_ORDER:
        raise GrammarError(f"property_order must be 'any' or 'schema', not {property_order!r}")
    if not isinstance(exact, bool):
        raise GrammarError(f"exact must be True or False, not {exact!r}")
    return Options(whitespace, max_whitespace, on_unsupported, property_order, exact)
