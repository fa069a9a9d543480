"""Lowering `integer` and `number` schemas: one terminal whose language is the set of allowed spellings.

A number schema becomes one terminal: bounds (`minimum`, `exclusiveMaximum`...,
draft 4's boolean exclusives too) as a decimal-range regex over plain decimals,
`multipleOf` as an automaton terminal built by `pda.grammar.multiples` with the bounds
multiplied in (exact on any range; only a step past that module's limits is enumerated
on a small bounded range or approximated), a negated integer type as "has a non-zero
fraction". Bounds are exact
decimals (`Decimal`), never floats. `exact=True` accepts every JSON spelling of
an allowed value (`3.0`, `-0`, exponents where unbounded); the generation default
writes integers as integer literals and keeps numbers finite doubles
(`MAX_NUMBER_INTEGER_DIGITS`, `MAX_NUMBER_EXPONENT`).
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from pda.grammar import ecma_regex as er
from pda.grammar.json_schema import limits
from pda.grammar.json_schema.context import Context
from pda.grammar.json_schema.typed import NumberSchema
from pda.grammar.multiples import MultiplesTooLarge, multiples_automaton
from pda.regex import ranges

_JSON_NUMBER = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
# The look-ahead a `multipleOf` of an integer type starts with (generation default): no fraction, no "-0".
_INTEGER_LITERAL_GUARD = r"(?!-?[0-9]+\.|-0)"


def lower_number(ctx: Context, schema: dict[str, Any], integer: bool, path: tuple[str, ...]) -> str | None:
    """The terminal for `integer`/`number` instances of `schema` (bounds, `multipleOf`, a negated integer
    type); None when there are none."""
    number = NumberSchema.of(schema)
    lo, lo_ex, hi, hi_ex, m = number.lo, number.lo_exclusive, number.hi, number.hi_exclusive, number.multiple_of
    non_integer = False
    if number.non_integer:
        if integer:
            return None  # an integer that is not an integer
        if m is not None:
            ctx.unsupported("not", path, "a negated integer type with 'multipleOf' is ignored")
        elif lo is not None or hi is not None:
            non_integer = True  # the bounded plain decimals below, behind a non-zero fraction digit
        else:
            digits = "*" if ctx.exact else f"{{0,{limits.MAX_NUMBER_INTEGER_DIGITS - 1}}}"
            return ctx.builder.terminal(rf"-?(?:0|[1-9][0-9]{digits})\.[0-9]*[1-9][0-9]*", "NUM")
    int_type = integer
    # Every plain-decimal spelling of an allowed value (`3.0`, `-0`), or only the integer
    # literal: the generation default writes an `integer` so, and a `number` whose step makes
    # it integer-valued (`multipleOf: 1`) still takes every spelling, as any other step's do.
    every_spelling = ctx.exact or not int_type
    if not integer and not ctx.exact and (lo is not None or hi is not None or m is not None):
        # A plain decimal (no exponent with bounds or steps): its integer part is capped as
        # in `_number_regex` so it stays a finite double, unless a bound is already larger.
        cap = Decimal(10) ** limits.MAX_NUMBER_INTEGER_DIGITS
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
            guard = _INTEGER_LITERAL_GUARD if int_type and not ctx.exact else ""
            try:
                automaton = multiples_automaton(p, scale, nlo, nhi, guard)
                if automaton is None:
                    return None
                return ctx.builder.automaton_terminal(automaton, "INT" if integer else "NUM")
            except MultiplesTooLarge as exc:
                # (An empty range returned None above, before any automaton was built.)
                if nlo is not None and nhi is not None and (nhi - nlo) // p <= limits.MAX_ENUMERATED_MULTIPLES:
                    first = -(-nlo // p) * p
                    vals = [number_literal_regex(Decimal(n).scaleb(-scale), every_spelling)
                            for n in range(first, nhi + 1, p)]
                    return ctx.builder.terminal("(?:" + "|".join(vals) + ")", "INT" if integer else "NUM")
                ctx.approximate("multipleOf", path + ("multipleOf",),
                                f"{exc}, and the range is unbounded or holds over "
                                f"{limits.MAX_ENUMERATED_MULTIPLES}; it is ignored")
    if integer:
        ilo, ihi = _scaled(lo, lo_ex, 0, True), _scaled(hi, hi_ex, 0, False)
        if ilo is not None and ihi is not None and ilo > ihi:
            return None
        if ilo is None and ihi is None:
            return ctx.builder.terminal(r"-?(?:0|[1-9][0-9]*)(?:\.0+)?(?:[eE]\+?[0-9]+)?" if ctx.exact
                                        else r"(?:0|-?[1-9][0-9]*)", "INT")
        regex = int_regex(ilo, ihi, every_spelling)
        ranges.remember(regex, ranges.DecimalRange(None if ilo is None else Decimal(ilo), False,
                                                   None if ihi is None else Decimal(ihi), False, integer=True,
                                                   zero_fraction=every_spelling, negative_zero=every_spelling))
        return ctx.builder.terminal(regex, "INT")
    if lo is None and hi is None:
        return ctx.builder.terminal(any_number_regex(ctx.exact), "NUM")
    if lo is not None and hi is not None and (lo > hi or (lo == hi and (lo_ex or hi_ex))):
        return None
    if lo is not None and lo == hi and not non_integer:
        return ctx.builder.terminal(number_literal_regex(lo, ctx.exact), "NUM")
    regex = number_regex(ctx, lo, lo_ex, hi, hi_ex, path)
    if regex is not None and not non_integer and not _widened(lo, lo_ex, hi, hi_ex):
        ranges.remember(regex, ranges.DecimalRange(lo, lo_ex, hi, hi_ex))  # its DFA built digit by digit
    if regex is not None and non_integer:
        # Plain decimals (no exponent) with a non-zero fraction digit: `(?=look)body` is
        # body ∩ look·Σ*, and a numeral with such a digit never loses it when extended.
        regex = r"(?=-?[0-9]+\.[0-9]*[1-9])" + regex
    return None if regex is None else ctx.builder.terminal(regex, "NUM")

def any_number_regex(exact: bool) -> str:
    """Every JSON number (`exact`), or the generation default's finite doubles: at most
    `MAX_NUMBER_INTEGER_DIGITS` integer digits, exponents up to `MAX_NUMBER_EXPONENT`."""
    if exact:
        return _JSON_NUMBER
    exponent = er.decimal_range_regex(0, limits.MAX_NUMBER_EXPONENT)
    return (rf"-?(?:0|[1-9][0-9]{{0,{limits.MAX_NUMBER_INTEGER_DIGITS - 1}}})(?:\.[0-9]+)?"
            rf"(?:[eE](?:\+?{exponent}|-[0-9]{{1,3}}))?")

def int_regex(lo: int | None, hi: int | None, exact: bool) -> str:
    """Integers in lo..hi (None = unbounded), plain decimal; `exact` also with a zero
    fraction and `-0`."""
    alts = []
    if hi is None or hi >= 0:
        alts.append(er.decimal_range_regex(max(lo or 0, 0), hi))
    least = 0 if hi is None else max(-hi, 0)
    if not exact:
        least = max(least, 1)  # no "-0"
    if lo is None or -lo >= least:
        alts.append("-" + er.decimal_range_regex(least, None if lo is None else -lo))
    return "(?:" + "|".join(alts) + ")" + (r"(?:\.0+)?" if exact else "")

def number_regex(ctx: Context, lo: Decimal | None, lo_ex: bool, hi: Decimal | None, hi_ex: bool,
                 path: tuple[str, ...]) -> str | None:
    """Plain-decimal JSON numbers in the interval (exponent notation is not accepted here);
    None when the interval holds none."""
    alts = []
    if hi is None or hi >= 0:
        a, a_ex = (Decimal(0), False) if lo is None or lo < 0 else (lo, lo_ex)
        alts.append(magnitude(ctx, a, a_ex, hi, hi_ex, path))
    if lo is None or lo <= 0:
        a, a_ex = (Decimal(0), False) if hi is None or hi > 0 else (-hi, hi_ex)
        alts.append("-" + magnitude(ctx, a, a_ex, None if lo is None else -lo, lo_ex, path))
    alts = [x for x in alts if x != "-" and "(?!)" not in x]  # (?!): an empty side, e.g. 0 < x < 0
    return "(?:" + "|".join(alts) + ")" if alts else None

def magnitude(ctx: Context, a: Decimal, a_ex: bool, b: Decimal | None, b_ex: bool, path: tuple[str, ...]) -> str:
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
                ctx.unsupported("minimum/maximum", path,
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

def _widened(lo: Decimal | None, lo_ex: bool, hi: Decimal | None, hi_ex: bool) -> bool:
    """Whether `number_regex` widens a side (`magnitude`: bounds with fractions inside one integer), so that its
    language is not the interval's plain decimals."""
    sides = []
    if hi is None or hi >= 0:
        sides.append(((Decimal(0), False) if lo is None or lo < 0 else (lo, lo_ex), hi))
    if lo is None or lo <= 0:
        sides.append(((Decimal(0), False) if hi is None or hi > 0 else (-hi, hi_ex), None if lo is None else -lo))
    for (a, a_ex), b in sides:
        if b is not None:
            (ia, fa), (ib, fb) = _split(a), _split(b)
            if ia == ib and (fa and fb or a_ex and fb):
                return True
    return False

# --------------------------------------------------------------- strings

def number_literal_regex(d: Decimal, exact: bool = True) -> str:
    """Plain-decimal spellings of the number `d`: with `exact` all of them (`2.6`, `2.60`;
    `3`, `3.0`; `-0`), else the shortest (`2.6`; `3`; `0`), which is an integer literal
    wherever one can be."""
    i, frac = _split(abs(d))
    if not exact:
        return ("-" if d < 0 else "") + str(i) + (rf"\.{frac}" if frac else "")
    sign = "-?" if d == 0 else "-" if d < 0 else ""
    return sign + str(i) + (rf"\.{frac}0*" if frac else r"(?:\.0+)?")


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
