"""Do two languages agree? Fuzz-test a grammar against a grammar or a real parser.

Each side is a grammar (any front end: `.lark`, `.gbnf`, `.json` schema, a
shipped grammar's name, or `grammar:NAME` to force one) or an external
recogniser: `json` (Python's json module, strict RFC 8259: no NaN/Infinity),
`sqlite` (SQLite's own parser through `EXPLAIN`; only syntax errors reject),
`postgres` (pglast, optional), `python` (`ast.parse`), or
`python:module:function` (a callable str -> bool).

From every grammar side we draw sentences (checked on the other side) and
near-misses (checked on both). Every disagreement is shrunk by delta debugging,
first over lexemes, then over characters, keeping the direction of the
difference, and the shortest per direction are reported.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
import sqlite3
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pda.errors import GrammarError
from pda.testing.sampler import GrammarSampler, RandomChoices, ReferenceRecognizer, grammar_ir

# -- external recognisers ----------------------------------------------------------


def json_accepts(text: str) -> bool:
    """RFC 8259 JSON by Python's parser (which alone would also take NaN and Infinity)."""

    def no_constants(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    try:
        json.loads(text, parse_constant=no_constants)
    except (ValueError, RecursionError):
        return False
    return True


_SQLITE_SYNTAX = ("syntax error", "incomplete input", "unrecognized token")


def sqlite_accepts(text: str) -> bool:
    """SQLite's parser: `EXPLAIN` the statement; only a syntax error rejects it
    (a missing table or column is a semantic error, so the text is accepted)."""
    connection = sqlite3.connect(":memory:")
    try:
        connection.execute("EXPLAIN " + text)
    except sqlite3.Warning:
        return True  # more than one statement: not a syntax error
    except sqlite3.Error as exc:
        return not any(marker in str(exc) for marker in _SQLITE_SYNTAX)
    except ValueError:  # embedded NUL
        return False
    finally:
        connection.close()
    return True


def postgres_accepts(text: str) -> bool:
    """PostgreSQL's parser through pglast."""
    try:
        import pglast
    except ImportError:
        raise GrammarError("the postgres recogniser needs pglast (pip install pglast)") from None
    try:
        pglast.parse_sql(text)
    except pglast.parser.ParseError:
        return False
    return True


def python_accepts(text: str) -> bool:
    """Python source by `ast.parse`."""
    try:
        with warnings.catch_warnings():  # invalid escapes warn; they are not errors
            warnings.simplefilter("ignore")
            ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return True


BUILTIN_RECOGNISERS: dict[str, Callable[[str], bool]] = {
    "json": json_accepts,
    "sqlite": sqlite_accepts,
    "postgres": postgres_accepts,
    "python": python_accepts,
}

# -- sides ---------------------------------------------------------------------------


@dataclass
class Side:
    """One side of the comparison: a name, a membership test, and a sampler if it is a grammar."""

    name: str
    accepts: Callable[[str], bool]
    sampler: GrammarSampler | None = None


def load_side(spec: str, *, max_depth: int = 40, max_lexemes: int = 60) -> Side:
    """A side from its command-line spelling (see the module docstring)."""
    if spec in BUILTIN_RECOGNISERS:
        return Side(spec, BUILTIN_RECOGNISERS[spec])
    if spec.startswith("python:"):
        module_name, _, function_name = spec[len("python:") :].rpartition(":")
        if not module_name or not function_name:
            raise GrammarError(f"recogniser {spec!r} must be python:module:function")
        try:
            function = getattr(importlib.import_module(module_name), function_name)
        except (ImportError, AttributeError) as exc:
            raise GrammarError(f"cannot load recogniser {spec!r}: {exc}") from None
        return Side(spec, lambda text: bool(function(text)))
    from pda.grammar.grammar import Grammar

    grammar = Grammar.load(spec.removeprefix("grammar:"))
    return grammar_side(spec, grammar, max_depth=max_depth, max_lexemes=max_lexemes)


def grammar_side(name: str, grammar: Any, *, max_depth: int = 40, max_lexemes: int = 60) -> Side:
    """A side for a `pda.Grammar` (membership by the engine) or a bare `GrammarIR`
    (membership by the reference recogniser)."""
    if hasattr(grammar, "accepts"):
        accepts = grammar.accepts
    else:
        accepts = ReferenceRecognizer(grammar_ir(grammar)).accepts
    # Samples are verified by the side's own membership test: fast with the engine; the
    # independent reference check of the engine is the property tests' job.
    sampler = GrammarSampler(grammar, max_depth=max_depth, max_lexemes=max_lexemes, verify=accepts)
    return Side(name, accepts, sampler)


# -- comparison ----------------------------------------------------------------------

_SHAPE = re.compile(r"[0-9]|[^\W\d_]")


@dataclass
class Direction:
    """Sentences drawn from one side, checked on the other."""

    source: str
    target: str
    drawn: int = 0
    accepted: int = 0
    self_rejected: int = 0  # the source's own membership test rejected its sample

    @property
    def agreement(self) -> float:
        return self.accepted / self.drawn if self.drawn else 1.0


@dataclass
class Report:
    """The outcome of `compare`."""

    a: str
    b: str
    directions: list[Direction] = field(default_factory=list)
    near_misses: int = 0
    near_miss_disagreements: int = 0
    counterexamples: dict[str, list[str]] = field(default_factory=dict)  # "in A not in B" -> shortest first
    elapsed: float = 0.0

    @property
    def differs(self) -> bool:
        return bool(self.counterexamples) or any(d.self_rejected for d in self.directions)

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "differs": self.differs,
            "directions": [
                {
                    "from": d.source,
                    "to": d.target,
                    "drawn": d.drawn,
                    "accepted": d.accepted,
                    "agreement": d.agreement,
                    "self_rejected": d.self_rejected,
                }
                for d in self.directions
            ],
            "near_misses": self.near_misses,
            "near_miss_disagreements": self.near_miss_disagreements,
            "counterexamples": self.counterexamples,
            "elapsed_s": round(self.elapsed, 3),
        }

    def to_text(self) -> str:
        lines = [f"A = {self.a}", f"B = {self.b}"]
        for d in self.directions:
            line = f"sampled from {d.source}: {d.accepted}/{d.drawn} accepted by {d.target} ({100 * d.agreement:.2f}%)"
            if d.self_rejected:
                line += f"; {d.self_rejected} rejected by {d.source} itself (sampler/engine disagreement)"
            lines.append(line)
        lines.append(f"near-misses: {self.near_misses}, disagreements: {self.near_miss_disagreements}")
        for kind, examples in self.counterexamples.items():
            for example in examples:
                lines.append(f"{kind}: {example!r}")
        lines.append("DIFFERENT" if self.differs else "no difference found")
        return "\n".join(lines)


def ddmin(units: list[str], still_differs: Callable[[str], bool]) -> list[str]:
    """Delta debugging: a 1-minimal sublist of `units` whose join still differs."""
    n = 2
    while len(units) >= 2:
        chunk = max(1, len(units) // n)
        reduced = False
        for start in range(0, len(units), chunk):
            candidate = units[:start] + units[start + chunk :]
            if still_differs("".join(candidate)):
                units = candidate
                n = max(n - 1, 2)
                reduced = True
                break
        if not reduced:
            if chunk == 1:
                break
            n = min(len(units), n * 2)
    if len(units) == 1 and still_differs(""):
        return []
    return units


def shrink(text: str, lexemes: list[str] | None, still_differs: Callable[[str], bool]) -> str:
    """Shrink over lexemes (when known), then over characters."""
    if lexemes and "".join(lexemes) == text:
        text = "".join(ddmin(lexemes, still_differs))
    return "".join(ddmin(list(text), still_differs))


def compare(
    a: Side,
    b: Side,
    *,
    samples: int = 1000,
    seed: int = 0,
    time_limit: float | None = None,
    keep: int = 5,
) -> Report:
    """Sample each grammar side `samples` times (plus as many near-misses) and compare."""
    if a.sampler is None and b.sampler is None:
        raise GrammarError("at least one side of a comparison must be a grammar to sample from")
    started = time.monotonic()
    report = Report(a.name, b.name)
    choices = RandomChoices(seed)
    raw: dict[str, list[tuple[str, list[str] | None, bool, bool]]] = {}

    def out_of_time() -> bool:
        return time_limit is not None and time.monotonic() - started > time_limit

    def record(text: str, in_a: bool, in_b: bool, lexemes: list[str] | None) -> None:
        kind = "in A not in B" if in_a else "in B not in A"
        raw.setdefault(kind, []).append((text, lexemes, in_a, in_b))

    for source, target in ((a, b), (b, a)):
        if source.sampler is None:
            continue
        direction = Direction(source.name, target.name)
        report.directions.append(direction)
        for _ in range(samples):
            if out_of_time():
                break
            lexemes = [x.text for x in source.sampler.sample_lexemes(choices)]
            text = "".join(lexemes)
            direction.drawn += 1
            in_target = target.accepts(text)
            direction.accepted += in_target
            in_source = source.accepts(text)
            if not in_source:
                direction.self_rejected += 1
            if in_source != in_target:
                in_a, in_b = (in_source, in_target) if source is a else (in_target, in_source)
                record(text, in_a, in_b, lexemes)
            if out_of_time():
                break
            miss = source.sampler.near_miss(choices)
            report.near_misses += 1
            in_a, in_b = a.accepts(miss), b.accepts(miss)
            if in_a != in_b:
                report.near_miss_disagreements += 1
                record(miss, in_a, in_b, None)
    # Shrinking costs many membership tests: shrink a few cases spread over the lengths found,
    # and keep one example per shape (digits and letters folded) so that distinct causes show.
    for kind, cases in sorted(raw.items()):
        cases.sort(key=lambda c: len(c[0]))
        step = max(1, len(cases) // (3 * keep))
        shapes: dict[str, str] = {}
        for text, lexemes, in_a, in_b in cases[::step][: 3 * keep]:

            def same_difference(candidate: str, in_a: bool = in_a, in_b: bool = in_b) -> bool:
                return a.accepts(candidate) == in_a and b.accepts(candidate) == in_b

            example = shrink(text, lexemes, same_difference)
            shape = _SHAPE.sub(lambda m: "0" if m.group().isdigit() else "a", example)
            if shape not in shapes or len(example) < len(shapes[shape]):
                shapes[shape] = example
        report.counterexamples[kind] = sorted(shapes.values(), key=lambda s: (len(s), s))[:keep]
    report.elapsed = time.monotonic() - started
    return report


# -- command line --------------------------------------------------------------------


def equiv_main(argv: list[str] | None = None) -> int:
    """`pda equiv A B`: exit 0 when no difference was found, 1 when one was, 2 on errors."""
    from pda.cli import (add_grammar_options, command_parser, load_grammar, non_negative_float, positive_int,
                         run_command)

    parser = command_parser(
        "pda equiv",
        "Fuzz-test whether two grammars (or a grammar and a real parser) accept the same language. "
        "Exit status 0 when no difference was found, 1 when one was, 2 on an error.",
        epilog="A side is a grammar (.lark/.gbnf/.json file, shipped name, grammar:NAME) or a recogniser: "
        + ", ".join(BUILTIN_RECOGNISERS)
        + ", python:module:function. The grammar options apply to every grammar side.",
    )
    parser.add_argument("a", help="first grammar or recogniser")
    parser.add_argument("b", help="second grammar or recogniser")
    parser.add_argument("--samples", type=positive_int, default=1000,
                        help="sentences drawn from each grammar side (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--time-limit", type=non_negative_float, default=None,
                        help="stop sampling after this many seconds")
    parser.add_argument("--max-depth", type=positive_int, default=40, help="derivation depth budget (default 40)")
    parser.add_argument("--max-lexemes", type=positive_int, default=60, help="lexeme budget per sentence (default 60)")
    parser.add_argument("--keep", type=positive_int, default=5, help="counterexamples kept per direction (default 5)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    add_grammar_options(parser)
    args = parser.parse_args(argv)

    def side(spec: str) -> Side:
        budgets = {"max_depth": args.max_depth, "max_lexemes": args.max_lexemes}
        if spec in BUILTIN_RECOGNISERS or spec.startswith("python:"):
            return load_side(spec, **budgets)
        return grammar_side(spec, load_grammar(spec.removeprefix("grammar:"), args), **budgets)

    def run() -> int:
        report = compare(side(args.a), side(args.b), samples=args.samples, seed=args.seed,
                         time_limit=args.time_limit, keep=args.keep)
        print(json.dumps(report.to_json(), indent=2, ensure_ascii=False) if args.json else report.to_text())
        return 1 if report.differs else 0

    return run_command(parser.prog, run)


__all__ = [
    "BUILTIN_RECOGNISERS",
    "Direction",
    "Report",
    "Side",
    "compare",
    "ddmin",
    "equiv_main",
    "grammar_side",
    "json_accepts",
    "load_side",
    "postgres_accepts",
    "python_accepts",
    "shrink",
    "sqlite_accepts",
]
