"""A normalised scalar schema read once per type: the keywords its lowering needs, as typed fields.

Normalisation keeps a schema a JSON object (its canonical JSON keys every memo, and
merging works keyword by keyword), and writes what JSON Schema has no keyword for as
the internal `x-pda-*` keywords: a negated integer type, a negated string enum,
patterns a string must and must not match. The number and string lowerings do not
read that dictionary: `NumberSchema.of` and `StringSchema.of` read it once, defaults
applied (a missing `minLength` is 0), draft 4's boolean exclusives folded into the
bounds, the internal keywords turned into fields with names that say what they mean.
A view never changes the schema.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pda.grammar.json_schema.formats import FORMATS
from pda.grammar.json_schema.keywords import NON_INTEGER, NOT_IN, NOT_PATTERN, PATTERNS


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
