"""Deciding a constant against scalar keywords directly, without building a grammar for it.

An `enum`/`const` beside other keywords (`{"enum": [...], "maxLength": 3}`), or a
declared property name against `propertyNames`, needs a verdict per value; for
the keywords that only constrain strings and numbers (`SCALAR_CHECKS`) it is
computed here on the value itself. The other keywords need the value parsed with
a lowering of the schema (`Lowering.values_verdicts`).
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from pda.grammar import ecma_regex as er
from pda.grammar.json_schema.formats import FORMATS
from pda.grammar.json_schema.keywords import NON_INTEGER, NOT_IN, NOT_PATTERN, PATTERNS


def const_satisfies(v: Any, rest: dict[str, Any], formats: dict[str, str]) -> bool:
    """Whether a constant passes its sibling keywords that constrain scalars (`SCALAR_CHECKS`; the
    others pass it); `formats` are the format regexes in force. A pattern Python cannot read passes."""
    if isinstance(v, str):
        if len(v) < rest.get("minLength", 0) or len(v) > rest.get("maxLength", len(v)):
            return False
        if v in rest.get(NOT_IN, ()):
            return False
        try:
            if any(er.python_search_regex(p).search(v) for p in rest.get(NOT_PATTERN, ())) or \
                    not all(er.python_search_regex(p).search(v) for p in rest.get(PATTERNS, ())):
                return False
        except re.error:
            pass
        fmt = rest.get("format")
        if fmt in FORMATS and re.fullmatch(formats[fmt], v) is None:
            return False
        if isinstance(rest.get("pattern"), str):
            try:
                return er.python_search_regex(rest["pattern"]).search(v) is not None
            except re.error:
                return True
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        d = Decimal(str(v))
        if rest.get(NON_INTEGER) and d == d.to_integral_value():
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
