"""`multipleOf` exact on any range: the grammar's verdicts against `jsonschema` (integer
steps) and exact decimal arithmetic (fractional steps), on windows around every bound,
0 and large random values; steps past `multiples`' limits (`MAX_MULTIPLE_MODULUS`,
`MAX_MULTIPLE_STATES`) are exact on small bounded ranges (enumerated) and otherwise a
warned superset."""

from __future__ import annotations

import functools
import json
import random
import warnings
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import pda
from pda.errors import GrammarError
from pda.grammar.json_schema import MAX_ENUMERATED_MULTIPLES, JsonSchemaWarning
from pda.grammar.multiples import MAX_MULTIPLE_MODULUS, MultiplesTooLarge, multiples_automaton

jsonschema = pytest.importorskip("jsonschema")

# Every step is exact on every range; 9, 11, 13, 33, 77 and 97 were approximated while the
# multiples had to be one regex.
STEPS = (1, 2, 3, 7, 9, 10, 11, 12, 13, 25, 33, 77, 97, 100)
# A prime over MAX_MULTIPLE_MODULUS: enumerated on small bounded ranges, approximated elsewhere.
TOO_LARGE = 100_003
assert TOO_LARGE > MAX_MULTIPLE_MODULUS
RANGES: list[dict[str, Any]] = [
    {},
    {"minimum": 5},
    {"maximum": 40},
    {"minimum": -30},
    {"maximum": -8},
    {"exclusiveMinimum": 14, "exclusiveMaximum": 70},
    {"minimum": 1.5, "maximum": 99.5},
    {"exclusiveMinimum": -1.5, "exclusiveMaximum": 2.5},
    {"minimum": -500, "maximum": -100},
    {"minimum": -77, "maximum": 91},
    {"minimum": 0, "maximum": 0},
    {"minimum": 0, "maximum": 10**12},
    {"minimum": -(10**12), "exclusiveMaximum": 10**12},
    {"minimum": 10**15 + 3},
    {"minimum": 8, "maximum": 9},
]


class _Nothing:
    """The grammar of a schema that accepts no value (pda refuses to build one)."""

    def accepts(self, text: str) -> bool:
        return False


@functools.lru_cache(maxsize=None)
def _compiled(schema_json: str) -> tuple[pda.Grammar | _Nothing, bool]:
    """The grammar of a schema (exact=True: JSON Schema's language, as jsonschema decides it, with
    `14.0` and `-0` for integers) and whether it warned that multipleOf is approximated."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            grammar: pda.Grammar | _Nothing = pda.Grammar.from_json_schema(json.loads(schema_json), exact=True)
        except GrammarError as exc:
            assert "accepts no JSON value" in str(exc)
            grammar = _Nothing()
    approximated = any(issubclass(w.category, JsonSchemaWarning) and "multipleOf" in str(w.message) for w in caught)
    return grammar, approximated


def compiled(schema: dict[str, Any]) -> tuple[Any, bool]:
    return _compiled(json.dumps(schema, sort_keys=True))


def _bounds(schema: dict[str, Any]) -> list[int]:
    return [int(v) for k, v in schema.items() if k.endswith(("imum", "Minimum", "Maximum"))]


def integer_instances(schema: dict[str, Any], k: int, rng: random.Random) -> list[int]:
    """Every integer within min(2k + 3, 120) of each bound and of 0, and random large ones."""
    out: set[int] = set()
    width = min(2 * k + 3, 120)
    for centre in [0, *_bounds(schema)]:
        out.update(range(centre - width, centre + width + 1))
    for _ in range(12):
        x = rng.randrange(-(10**16), 10**16)
        out.update((x, x - x % k))
    return sorted(out)


def check_against_jsonschema(schema: dict[str, Any], texts: list[str]) -> bool:
    """The grammar's verdict on each text equals jsonschema's (or includes it, when the
    grammar warned that multipleOf is approximated); returns whether it warned."""
    grammar, approximated = compiled(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for text in texts:
        want = validator.is_valid(json.loads(text))
        got = grammar.accepts(text)
        if approximated:
            assert got or not want, (schema, text)
        else:
            assert got == want, (schema, text, want)
    return approximated


@pytest.mark.parametrize("k", STEPS)
def test_integer_steps_agree_with_jsonschema(k: int) -> None:
    rng = random.Random(k)
    for bounds in RANGES:
        for typ in ("integer", "number"):
            schema = {"type": typ, "multipleOf": k, **bounds}
            xs = integer_instances(schema, k, rng)
            # Zero fractions are integers too (`14.0`), and `-0` is 0; floats only where exact.
            texts = [json.dumps(x) for x in xs] + [f"{x}.0" for x in xs if abs(x) < 2**53][::3] + ["-0", "-0.00"]
            assert not check_against_jsonschema(schema, texts), schema


def test_steps_within_the_limit_are_exact_on_every_range() -> None:
    """The cases the brief names: 7 accepted 3 before; -14 is a multiple of 7."""
    grammar, approximated = compiled({"type": "integer", "multipleOf": 7})
    assert not approximated
    assert grammar.accepts("14") and grammar.accepts("-14") and grammar.accepts("0") and grammar.accepts("14.0")
    assert not grammar.accepts("3") and not grammar.accepts("-15") and not grammar.accepts("14.5")
    assert grammar.accepts(str(7 * 10**30)) and not grammar.accepts(str(7 * 10**30 + 1))
    big, _ = compiled({"type": "integer", "multipleOf": 12, "minimum": 0, "maximum": 10**12})
    top = 10**12 - 10**12 % 12
    assert big.accepts(str(top)) and not big.accepts(str(top + 12)) and not big.accepts(str(10**12))
    assert big.accepts(str(top - 12 * 1000)) and not big.accepts(str(top - 12 * 1000 + 6)) and not big.accepts("-12")


def test_prefixes() -> None:
    """A prefix is viable iff some multiple in range extends it."""
    grammar, _ = compiled({"type": "integer", "multipleOf": 7, "minimum": 100, "maximum": 140})
    assert grammar.accepts_prefix("1") and grammar.accepts_prefix("10") and grammar.accepts_prefix("105")
    assert grammar.accepts_prefix("105.")
    assert not grammar.accepts_prefix("100") and not grammar.accepts_prefix("2") and not grammar.accepts_prefix("-")
    assert not grammar.accepts_prefix("1050")
    negative, _ = compiled({"type": "integer", "multipleOf": 3, "maximum": -5})
    assert negative.accepts_prefix("-") and negative.accepts_prefix("-1") and not negative.accepts_prefix("1")
    assert negative.accepts("-12") and not negative.accepts("-3") and negative.accepts_prefix("-3")  # -30
    in_object = pda.Grammar.from_json_schema({"type": "object",
                                              "properties": {"a": {"type": "integer", "multipleOf": 7}}})
    assert in_object.accepts('{"a":21}') and not in_object.accepts('{"a":22}')
    assert in_object.accepts_prefix('{"a":2') and not in_object.accepts_prefix('{"a":22}')


FRACTIONAL = (Decimal("0.01"), Decimal("0.25"), Decimal("0.5"), Decimal("0.3"), Decimal("1.5"), Decimal("0.125"))
FRACTIONAL_RANGES: list[dict[str, Any]] = [
    {},
    {"minimum": 0.75},
    {"exclusiveMaximum": -1.25},
    {"minimum": -3, "maximum": 4.5},
    {"exclusiveMinimum": 1.5, "exclusiveMaximum": 3},
    {"minimum": 0.001, "maximum": 0.999},
    {"minimum": 0, "maximum": 10**12},
]


def _decimal_valid(schema: dict[str, Any], x: Decimal) -> bool:
    """The exact verdict (jsonschema divides floats: it finds 0.3 no multiple of 0.1)."""
    if schema.get("type") == "integer" and x != x.to_integral_value():
        return False
    for key, ok in (("minimum", lambda b: x >= b), ("maximum", lambda b: x <= b),
                    ("exclusiveMinimum", lambda b: x > b), ("exclusiveMaximum", lambda b: x < b)):
        if key in schema and not ok(Decimal(str(schema[key]))):
            return False
    return x % Decimal(str(schema["multipleOf"])) == 0


def decimal_texts(schema: dict[str, Any], step: Decimal, rng: random.Random) -> list[str]:
    """Decimals with up to 2 digits more than the step around each bound and 0, spelled
    plainly and with trailing zeros."""
    digits = -step.as_tuple().exponent + 2  # type: ignore[operator]
    unit = Decimal(1).scaleb(-digits)
    out: set[Decimal] = set()
    for centre in [Decimal(0), *(Decimal(str(v)) for k, v in schema.items() if k.endswith("imum"))]:
        for _ in range(150):
            out.add(centre + rng.randrange(-400, 400) * unit * rng.choice((1, 10, 100)))
    texts = []
    for x in sorted(out):
        text = format(x.normalize() if x else Decimal(0), "f")
        texts += [text, text + ("0" if "." in text else ".0"), text + ("00" if "." in text else ".00")]
    return texts


@pytest.mark.parametrize("step", FRACTIONAL, ids=str)
def test_fractional_steps_are_exact(step: Decimal) -> None:
    rng = random.Random(str(step))
    for bounds in FRACTIONAL_RANGES:
        for typ in ("number", "integer"):
            schema = {"type": typ, "multipleOf": float(step), **bounds}
            grammar, approximated = compiled(schema)
            assert not approximated, schema
            for text in decimal_texts(schema, step, rng):
                assert grammar.accepts(text) == _decimal_valid(schema, Decimal(text)), (schema, text)


def test_fractional_examples() -> None:
    cents, _ = compiled({"type": "number", "multipleOf": 0.01, "minimum": 0, "maximum": 100})
    assert cents.accepts("0.5") and cents.accepts("99.99") and cents.accepts("100.00") and cents.accepts("3.100")
    assert not cents.accepts("0.001") and not cents.accepts("100.01") and not cents.accepts("-0.01")
    quarters, _ = compiled({"type": "number", "multipleOf": 0.25})
    assert quarters.accepts("-1.75") and quarters.accepts("2") and quarters.accepts("0.250")
    assert not quarters.accepts("0.2") and not quarters.accepts("1.05")
    halves, _ = compiled({"type": "integer", "multipleOf": 2.5, "minimum": -20})
    assert halves.accepts("-20") and halves.accepts("5.0") and not halves.accepts("2.5") and not halves.accepts("-25")


def test_over_the_limit_small_ranges_are_enumerated() -> None:
    """A step over MAX_MULTIPLE_MODULUS has no automaton; a bounded range with few
    multiples is still exact, a large or open one is approximated with a warning."""
    k = TOO_LARGE
    assert 510 <= MAX_ENUMERATED_MULTIPLES  # the range below is enumerated
    with pytest.raises(MultiplesTooLarge):
        multiples_automaton(k, 0, None, None)
    grammar, approximated = compiled({"type": "integer", "multipleOf": k, "minimum": -10 * k, "maximum": 500 * k + 7})
    assert not approximated
    assert grammar.accepts(str(-10 * k)) and grammar.accepts("0") and grammar.accepts("-0")
    assert grammar.accepts(f"{499 * k}.0") and not grammar.accepts(str(k + 1)) and not grammar.accepts(str(501 * k))
    _, approximated = compiled({"type": "integer", "multipleOf": k, "minimum": 0})
    assert approximated
    assert multiples_automaton(7, 0, 1, 6) is None  # no multiple in range


def test_steps_once_over_the_regex_limit_are_exact_unbounded() -> None:
    """9, 13 and 97 (regexes of 700,000 characters and more) are exact without bounds, and no warning."""
    for k in (9, 13, 97):
        grammar, approximated = compiled({"type": "integer", "multipleOf": k})
        assert not approximated
        assert grammar.accepts(str(k * 10**25)) and grammar.accepts(str(-k * 12345)) and grammar.accepts(f"{k * 7}.00")
        assert not grammar.accepts(str(k * 10**25 + 1)) and not grammar.accepts(str(k + 1)) and not grammar.accepts("1")


def test_empty_ranges() -> None:
    for schema in ({"type": "integer", "multipleOf": 7, "minimum": 8, "maximum": 13},
                   {"type": "number", "multipleOf": 0.25, "exclusiveMinimum": 0.5, "exclusiveMaximum": 0.75}):
        grammar, _ = compiled({"type": "object", "properties": {"a": schema}})
        assert grammar.accepts("{}") and not any(grammar.accepts(f'{{"a":{x}}}') for x in ("7", "14", "0.5", "0.6"))


def _hypothesis(max_examples: int) -> Any:
    return settings(max_examples=max_examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


_bound = st.one_of(st.none(), st.integers(-(10**4), 10**4), st.integers(-(10**14), 10**14))


@st.composite
def _cases(draw: st.DrawFn) -> tuple[int, int | None, int | None, list[int]]:
    k = draw(st.sampled_from((1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 15, 16, 20, 25, 50, 125, 1000)))
    lo, hi = draw(_bound), draw(_bound)
    centres = [0] + [b for b in (lo, hi) if b is not None]
    xs = draw(st.lists(st.one_of(st.integers(-(10**15), 10**15),
                                 st.builds(lambda c, d: c + d, st.sampled_from(centres), st.integers(-50, 50))),
                       min_size=1, max_size=20))
    return k, lo, hi, xs


def _property(case: tuple[int, int | None, int | None, list[int]]) -> None:
    k, lo, hi, xs = case
    schema: dict[str, Any] = {"type": "integer", "multipleOf": k}
    if lo is not None:
        schema["minimum"] = lo
    if hi is not None:
        schema["maximum"] = hi
    assume(lo is None or hi is None or lo <= hi)
    assert not check_against_jsonschema(schema, [json.dumps(x) for x in xs]), schema


@_hypothesis(40)
@given(_cases())
def test_property_against_jsonschema(case: tuple[int, int | None, int | None, list[int]]) -> None:
    _property(case)


@pytest.mark.slow
@_hypothesis(1500)
@given(_cases())
def test_property_against_jsonschema_long(case: tuple[int, int | None, int | None, list[int]]) -> None:
    _property(case)
