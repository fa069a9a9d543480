"""Per-category coverage and agreement of the JSON Schema front end on JSONSchemaBench.

For each schema: does it compile (lowered to a grammar and loaded by pda, within
a time limit), and for each compiled schema does the grammar accept every valid
instance and reject every invalid one, serialised compactly (compact grammar)
and pretty-printed (flexible grammar). Grammars are JSON Schema's language
(`exact=True`), or with `--generation` the generation default (`exact=False`,
what `Grammar.from_json_schema` and `bench/json_schema_bench.py` compile). A wrong
verdict on a schema whose lowering warned that it approximates a keyword
(`JsonSchemaWarning`: uniqueItems, overlapping oneOf, ...) counts as a documented
relaxation. A valid instance refused at the start of a key where only keys could
come, or at the comma before a key where only the object's end could come (a
declared property out of schema order in an object with more than
`MAX_ANY_ORDER_PROPERTIES` declared properties, or in any object with
`--property-order schema`: the documented restriction) counts as "order", and so
does a valid instance refused elsewhere that the schema accepts once objects of up
to 10 declared properties take any order (an out-of-order member taken by another
`anyOf` branch, refused at the object's end). Under `--generation` the documented
defaults explain more: a valid instance refused as "undeclared", a key the schema
does not declare where `additionalProperties` is absent (the instance is accepted
once the schema says `additionalProperties: true` there, `open_objects`, which is
JSON Schema's meaning of its absence; order is then judged on that schema), or
"spelling", a number constant written otherwise than the shortest way (`0.0` for
`0`: accepted with its integral numbers written as integers); an invalid instance
accepted as "default" where `exact=True` refuses it (a date-time without an offset).
The rest are bugs.
Failures are grouped by cause (the unsupported keyword, a limit, a timeout).

Run: `python bench/json_schema_coverage.py [--sample N] [--category C] [--relaxed] [--generation]`.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import signal
import statistics
import sys
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pda.errors import PdaError  # noqa: E402
from pda.grammar.json_schema import JsonSchemaWarning  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus" / "jsonschemabench" / "schemas"


def _grammar(grammar_text: str) -> Any:
    """A pda Grammar for Lark text with its recogniser built now (this is the compile)."""
    import pda

    g = pda.Grammar.from_lark(grammar_text)
    g.recognizer  # noqa: B018 - build it here, so compile errors count against coverage
    return g


def compile_schema(schema: Any, *, strict: bool, whitespace: str, property_order: str, exact: bool = True) -> Any:
    """pda's Grammar for a schema (lowered straight to the IR), recogniser built now; by default
    exact=True, JSON Schema's language, which the labelled instances follow."""
    import pda

    g = pda.Grammar.from_json_schema(schema, on_unsupported="raise" if strict else "relax", exact=exact,
                                     whitespace=whitespace, property_order=property_order)
    g.recognizer  # noqa: B018 - build it here, so compile errors count against coverage
    return g


def compile_wider(schema: Any, *, strict: bool, whitespace: str, exact: bool = True, limit: int = 10) -> Any:
    """The schema compiled with any property order for objects of up to `limit` declared properties."""
    from pda.grammar.json_schema import limits

    saved = limits.MAX_ANY_ORDER_PROPERTIES
    limits.MAX_ANY_ORDER_PROPERTIES = limit
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the first compile has recorded them
            return compile_schema(schema, strict=strict, whitespace=whitespace, property_order="any", exact=exact)
    finally:
        limits.MAX_ANY_ORDER_PROPERTIES = saved


# Keywords whose values are instances, not subschemas; keywords whose values map names to subschemas.
_INSTANCE_KEYWORDS = ("enum", "const", "default", "examples", "example")
_SCHEMA_MAPS = ("properties", "patternProperties", "dependentSchemas", "dependencies", "definitions", "$defs")


def open_objects(schema: Any) -> Any:
    """The same JSON Schema with `additionalProperties: true` written out wherever an object
    schema declares `properties` or `patternProperties` without `additionalProperties` (or
    `unevaluatedProperties`): JSON Schema's meaning of the absence, which the generation default
    reads as "no other key". Every dictionary outside instance values is visited, so subschemas
    that a `$ref` reaches under any container (`definitions/a/b`) are opened too."""
    if isinstance(schema, list):
        return [open_objects(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: v if k in _INSTANCE_KEYWORDS
           else {n: open_objects(s) for n, s in v.items()} if k in _SCHEMA_MAPS and isinstance(v, dict)
           else open_objects(v) for k, v in schema.items()}
    if ("properties" in schema or "patternProperties" in schema) and not (
            {"additionalProperties", "unevaluatedProperties"} & schema.keys()):
        out["additionalProperties"] = True
    return out


def integral_as_int(value: Any) -> Any:
    """An instance with every integral float written as an integer (`0.0` → `0`): the same JSON
    Schema value, in the spelling the generation default gives number constants."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: integral_as_int(v) for k, v in value.items()}
    if isinstance(value, list):
        return [integral_as_int(v) for v in value]
    return value


def serialise(value: Any, whitespace: str) -> str:
    """An instance as the grammar for `whitespace` reads it: compact, or `indent=2`."""
    if whitespace == "compact":
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return json.dumps(value, indent=2, ensure_ascii=False)


def recogniser(grammar_text: str) -> Callable[[str], bool]:
    """pda's whole-text recogniser for Lark grammar text, built now (this is the compile)."""
    return _grammar(grammar_text).accepts


class _Timeout(Exception):
    pass


def _alarm(_signum: int, _frame: Any) -> None:
    raise _Timeout


def load_rows(category: str, sample: int | None, limit: int | None) -> list[dict[str, Any]]:
    """A category's schemas: all, the first `limit`, or a seeded sample of `sample`."""
    rows = [json.loads(line) for line in (CORPUS / f"{category}.jsonl").open()]
    if sample is not None:
        rows = random.Random(f"pda:{category}").sample(rows, min(sample, len(rows)))
    return rows[:limit] if limit else rows


def cause(exc: BaseException) -> str:
    """A short failure cause: the unsupported keyword, else the error class and gist."""
    if isinstance(exc, _Timeout):
        return "timeout"
    text = str(exc)
    m = re.search(r"keyword '([^']+)'", text)
    if m:
        return f"unsupported {m.group(1)}"
    m = re.search(r"(look-around|back-reference|anchor \w+ inside|remote references|no JSON value)", text)
    if m:
        return m.group(1)
    return type(exc).__name__ + ": " + re.sub(r"'[^']*'|\d+|#/\S*", "_", text)[:60]


_KEY = re.compile(r'"((?:[^"\\]|\\.)*)"\s*:')


_NEXT_KEY = re.compile(r'\s*,\s*"((?:[^"\\]|\\.)*)"\s*:')


def out_of_order(grammar: Any, text: str) -> bool:
    """Whether pda refuses `text` at the start of a key where it expected only keys,
    or at the comma before a key where it expected only the end of the object."""
    from pda.errors import ParseError

    try:
        grammar.check(text)
    except ParseError as exc:
        offset = len(text.encode("utf-8")[: exc.offset].decode("utf-8", errors="ignore"))  # bytes → characters
        if exc.expected and all(e.startswith(("LIT", "WS")) for e in exc.expected) and _NEXT_KEY.match(text, offset):
            return True
        if not all(e.startswith("KEY") for e in exc.expected):
            return False
        for start in (offset, text.rfind('"', 0, offset)):
            m = _KEY.match(text, start) if start >= 0 else None
            if m:
                return True
    return False


class WrongVerdictCauses:
    """Why one schema's grammars refuse a valid instance or accept an invalid one, when a documented
    restriction or default says so: grammars with the restriction lifted, or JSON Schema's own
    (`exact=True`), compiled when first asked for."""

    def __init__(self, schema: Any, *, strict: bool, property_order: str, exact: bool,
                 grammars: dict[str, Any]) -> None:
        self.schema, self.strict, self.property_order, self.exact = schema, strict, property_order, exact
        self.grammars = grammars  # by white space: the grammars under test
        self.opened: dict[str, Any] = {}
        self.wider: dict[str, Any] = {}
        self.exact_grammars: dict[str, Any] = {}

    def _open(self, ws: str) -> Any:
        """The grammar of the schema with `additionalProperties: true` written out (`open_objects`);
        under exact=True the grammar under test, which already reads the absence so."""
        if self.exact:
            return self.grammars[ws]
        if ws not in self.opened:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the first compile has recorded them
                self.opened[ws] = compile_schema(open_objects(self.schema), strict=self.strict, whitespace=ws,
                                                 property_order=self.property_order, exact=False)
        return self.opened[ws]

    def _wider(self, ws: str) -> Any:
        """`_open`'s schema with objects of up to 10 declared properties in any order."""
        if ws not in self.wider:
            schema = self.schema if self.exact else open_objects(self.schema)
            self.wider[ws] = compile_wider(schema, strict=self.strict, whitespace=ws, exact=self.exact)
        return self.wider[ws]

    def of_acceptance(self, instance: Any, ws: str) -> str | None:
        """"default" when the generation default accepts this invalid instance and `exact=True`
        refuses it (the default's wider date-times), else None (a relaxation or a bug)."""
        if self.exact:
            return None
        if ws not in self.exact_grammars:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the first compile has recorded them
                self.exact_grammars[ws] = compile_schema(self.schema, strict=self.strict, whitespace=ws,
                                                         property_order=self.property_order)
        return None if self.exact_grammars[ws].accepts(serialise(instance, ws)) else "default"

    def of_refusal(self, instance: Any, ws: str) -> str | None:
        """The documented restriction that refuses this valid instance, or None (a bug)."""
        text = serialise(instance, ws)
        if not self.exact:
            if self._open(ws).accepts(text):
                return "undeclared"
            integral = serialise(integral_as_int(instance), ws)
            if integral != text and self.grammars[ws].accepts(integral):
                return "spelling"
        if out_of_order(self._open(ws), text):
            return "order"
        # Refused later than at a key (an out-of-order member taken by another anyOf branch):
        # order, if more objects taking any order accept it.
        if self.property_order == "any" and self._wider(ws).accepts(text):
            return "order"
        return None


def run_schema(row: dict[str, Any], strict: bool, timeout_s: int, property_order: str = "any",
               exact: bool = True) -> dict[str, Any]:
    """Compile one schema (compact and flexible) and check its instances."""
    out: dict[str, Any] = {"id": row["id"], "tests": len(row["tests"])}
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout_s)
    t0 = time.perf_counter()
    try:
        grammars: dict[str, Any] = {}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            grammars["compact"] = compile_schema(row["schema"], strict=strict, whitespace="compact",
                                                 property_order=property_order, exact=exact)
            out["compile_s"] = time.perf_counter() - t0
            grammars["flexible"] = compile_schema(row["schema"], strict=strict, whitespace="flexible",
                                                  property_order=property_order, exact=exact)
        out["approximated"] = sorted({str(w.message)[:120] for w in caught
                                      if issubclass(w.category, JsonSchemaWarning)})
        causes = WrongVerdictCauses(row["schema"], strict=strict, property_order=property_order, exact=exact,
                                    grammars=grammars)
        wrong = []
        for test in row["tests"]:
            for ws, g in grammars.items():
                text = serialise(test["data"], ws)
                if g.accepts(text) != test["valid"]:
                    why = causes.of_refusal if test["valid"] else causes.of_acceptance
                    wrong.append({"valid": test["valid"], "cause": why(test["data"], ws), "text": text[:160]})
        out["wrong"] = wrong
    except (PdaError, RecursionError, _Timeout) as exc:
        out["error"] = cause(exc)
    finally:
        signal.alarm(0)
    return out


def summarise(results: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in results if "error" not in r]
    times = sorted(r["compile_s"] for r in ok)
    checks = sum(2 * r["tests"] for r in ok)
    wrong = [(r, w) for r in ok for w in r["wrong"]]
    causes = Counter(w["cause"] for _, w in wrong if w["cause"])
    relaxed = sum(1 for r, w in wrong if r["approximated"] and not w["valid"] and not w["cause"])
    return {
        "schemas": len(results), "compiled": len(ok), "coverage": len(ok) / max(len(results), 1),
        "checks": checks, "agree": checks - len(wrong), "relaxation": relaxed, "order": causes["order"],
        "undeclared": causes["undeclared"], "spelling": causes["spelling"], "default": causes["default"],
        "bugs": len(wrong) - relaxed - sum(causes.values()),
        "p50_ms": 1000 * statistics.median(times) if times else 0.0,
        "p95_ms": 1000 * times[int(0.95 * (len(times) - 1))] if times else 0.0,
        "max_ms": 1000 * times[-1] if times else 0.0,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--category", action="append", help="only this category (repeatable)")
    ap.add_argument("--sample", type=int, help="a seeded random sample of this many schemas per category")
    ap.add_argument("--limit", type=int, help="only the first N schemas (after sampling)")
    ap.add_argument("--relaxed", action="store_true", help="compile with on_unsupported='relax'")
    ap.add_argument("--timeout", type=int, default=60, help="seconds per schema before it counts as failed")
    ap.add_argument("--property-order", default="any", choices=("any", "schema"),
                    help="the lowering's property_order option")
    ap.add_argument("--generation", action="store_true",
                    help="compile the generation default (exact=False, what Grammar.from_json_schema compiles) "
                         "instead of JSON Schema's language")
    ap.add_argument("--details", type=Path, help="write per-schema results (JSON lines) here")
    args = ap.parse_args()
    if not CORPUS.is_dir():
        sys.exit(f"corpus not found at {CORPUS}")
    cats = args.category or sorted(p.stem for p in CORPUS.glob("*.jsonl"))
    table: dict[str, dict[str, Any]] = {}
    causes: Counter[str] = Counter()
    every: list[dict[str, Any]] = []
    details = args.details.open("w") if args.details else None
    for cat in cats:
        results = []
        for row in load_rows(cat, args.sample, args.limit):
            r = run_schema(row, not args.relaxed, args.timeout, args.property_order, exact=not args.generation)
            r["category"] = cat
            results.append(r)
            if "error" in r:
                causes[r["error"]] += 1
            if details:
                details.write(json.dumps(r) + "\n")
                details.flush()
        table[cat] = summarise(results)
        every += results
    table["total"] = summarise(every)
    print(f"{'category':16} {'schemas':>7} {'compiled':>8} {'coverage':>8} {'checks':>7} {'agree':>6} "
          f"{'relaxed':>7} {'order':>5} {'undecl':>6} {'spell':>5} {'dflt':>5} {'bugs':>5} {'p50 ms':>7} "
          f"{'p95 ms':>7} {'max ms':>8}")
    for cat, r in table.items():
        print(f"{cat:16} {r['schemas']:7} {r['compiled']:8} {r['coverage']:8.1%} {r['checks']:7} {r['agree']:6} "
              f"{r['relaxation']:7} {r['order']:5} {r['undeclared']:6} {r['spelling']:5} {r['default']:5} "
              f"{r['bugs']:5} {r['p50_ms']:7.0f} {r['p95_ms']:7.0f} {r['max_ms']:8.0f}")
    print("\nfailure causes:")
    for c, n in causes.most_common():
        print(f"  {n:5}  {c}")
    bugs = [(r["id"], w) for r in every if "error" not in r for w in r["wrong"]
            if not w["cause"] and (w["valid"] or not r["approximated"])]
    if bugs:
        print("\nwrong verdicts not explained by an approximation warning:")
        for rid, w in bugs[:40]:
            print(f"  {rid}: valid={w['valid']} {w['text'][:100]!r}")


if __name__ == "__main__":
    main()
