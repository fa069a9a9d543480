"""Soundness of the shipped SQL grammars by sampling (issue 7).

Statements drawn from `pda/grammars/sqlite.lark` (one `cmdx`) and `pda/grammars/postgresql.lark`
(one `stmt`) with `pda.testing.GrammarSampler` (depth- and lexeme-bounded) must be
accepted by the real parsers: SQLite through `sqlite3`, preparing `EXPLAIN <statement>`
on an in-memory database, where only a syntax error counts as rejection ("no such
table/column/function" and the like are semantic); PostgreSQL through `pglast.parse_sql`
(libpg_query, PostgreSQL's own parser). Prints the acceptance rate and the rejected
statements (those still rejected with a space between every two lexemes; the others are
counted as "glued") shrunk by delta debugging over lexemes (`pda.testing.equiv.ddmin`), one per
shape. Shrinking keeps a space after every lexeme: with the separators gone, a keyword
could run into the next word (`do N''` → `doN''`), and every example would shrink to
that one cause. (Both grammars use the basic lexer mode, under which such text is one
identifier for pda too and the "glued" count is zero; under the contextual mode it
counted the rejections that only a keyword split from the next word explained.)

    python bench/sql_fuzz.py [--dialect sqlite|postgresql] [-n 5000] [--seed 0] [--max-depth 20]

Separators: the sampler puts an `%ignore` string between lexemes where the greedy lexer
would otherwise merge them. Only whitespace and line comments are used: the depth-4
nested block-comment regex draws strings of many kilobytes that dominate the run and
test nothing but that one terminal, which the corpus check covers.
"""
from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import pda  # noqa: E402
from pda.testing import GrammarSampler, RandomChoices  # noqa: E402
from pda.testing.equiv import ddmin, postgres_accepts  # noqa: E402

GRAMMARS = ROOT / "pda" / "grammars"
# Per dialect: the start symbol of one statement.
STARTS = {"sqlite": "cmdx", "postgresql": "stmt"}
SEPARATORS = ("WS", "LINE_COMMENT")

_SQLITE_SYNTAX = ("syntax error", "incomplete input", "unrecognized token")
_LEADING_EXPLAIN = re.compile(r"(?:\s|--[^\n]*(?:\n|$)|/\*.*?\*/)*explain(?![\w$])", re.I | re.S)
_SHAPE = re.compile(r"[0-9]+|[A-Za-z_]+")


def sqlite_accepts(sql: str) -> bool:
    """SQLite's parser on one statement: prepared under `EXPLAIN` (so nothing runs), or as
    is when it is itself an EXPLAIN; only syntax errors reject."""
    db = sqlite3.connect(":memory:")
    try:
        db.execute(sql if _LEADING_EXPLAIN.match(sql) else "EXPLAIN " + sql)
    except sqlite3.Warning:
        return True  # more than one statement: the first parsed
    except sqlite3.Error as exc:
        return not any(marker in str(exc) for marker in _SQLITE_SYNTAX)
    except ValueError:  # an embedded NUL: the C API never sees the text
        return False
    finally:
        db.close()
    return True


REAL_PARSERS: dict[str, Callable[[str], bool]] = {"sqlite": sqlite_accepts, "postgresql": postgres_accepts}


@dataclass
class FuzzReport:
    """Sampled statements, how many the real parser accepted, and shrunk rejections."""

    dialect: str
    samples: int = 0
    accepted: int = 0
    # Rejected as sampled but accepted with a space between every two lexemes: a keyword
    # glued to the next word, which only a contextual lexer splits (docs/sql.md).
    glued: int = 0
    seconds: float = 0.0
    rejected: list[str] = field(default_factory=list)
    counterexamples: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.accepted / self.samples if self.samples else 1.0

    def to_text(self) -> str:
        lines = [
            f"{self.dialect}: {self.accepted}/{self.samples} sampled statements accepted by the real parser "
            f"({100 * self.rate:.2f}%), {self.seconds:.0f} s; rejected only with lexemes glued together: {self.glued}"
        ]
        lines += [f"  rejected (shrunk): {example!r}" for example in self.counterexamples]
        return "\n".join(lines)


def load_grammar(dialect: str) -> pda.Grammar:
    """The dialect's grammar with one statement as the start symbol."""
    return pda.Grammar.from_lark((GRAMMARS / f"{dialect}.lark").read_text(), start=STARTS[dialect])


def make_sampler(grammar: pda.Grammar, *, max_depth: int = 20, max_lexemes: int = 60) -> GrammarSampler:
    """A sampler verified by the engine itself (the reference recogniser is ~1 s a
    sentence on these grammars) that separates lexemes with whitespace or line comments."""
    sampler = GrammarSampler(grammar, max_depth=max_depth, max_lexemes=max_lexemes, verify=grammar.accepts)
    sampler.ignore = [name for name in sampler.ignore if name in SEPARATORS]
    return sampler


def fuzz(
    dialect: str,
    n: int = 5000,
    *,
    seed: int = 0,
    max_depth: int = 20,
    max_lexemes: int = 60,
    keep: int = 25,
    grammar: pda.Grammar | None = None,
) -> FuzzReport:
    """Sample `n` statements of `dialect`, check each with the real parser, shrink the
    rejected ones (keeping "grammar accepts, parser rejects") and keep one per shape."""
    started = time.monotonic()
    grammar = grammar or load_grammar(dialect)
    real = REAL_PARSERS[dialect]
    sampler = make_sampler(grammar, max_depth=max_depth, max_lexemes=max_lexemes)
    choices = RandomChoices(seed)
    report = FuzzReport(dialect)
    failing: list[tuple[str, list[str]]] = []
    for _ in range(n):
        lexemes = sampler.sample_lexemes(choices)
        text = "".join(x.text for x in lexemes)
        report.samples += 1
        if real(text):
            report.accepted += 1
        else:
            report.rejected.append(text)
            units = [x.text + " " for x in lexemes if x.terminal not in SEPARATORS]
            if real("".join(units)):
                report.glued += 1
            else:
                failing.append((text, units))

    def over_accepted(candidate: str) -> bool:
        return grammar.accepts(candidate) and not real(candidate)

    # Shrinking costs many parses: shrink a spread of the failures, shortest first.
    failing.sort(key=lambda case: len(case[0]))
    step = max(1, len(failing) // max(1, 3 * keep))
    shapes: dict[str, str] = {}
    for _, units in failing[::step][: 3 * keep]:
        example = "".join(ddmin(units, over_accepted)).strip()
        shape = _SHAPE.sub(lambda m: "0" if m.group()[0].isdigit() else "a", example.lower())
        if shape not in shapes or len(example) < len(shapes[shape]):
            shapes[shape] = example
    report.counterexamples = sorted(shapes.values(), key=lambda s: (len(s), s))[:keep]
    report.seconds = time.monotonic() - started
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dialect", choices=sorted(STARTS), action="append")
    parser.add_argument("-n", type=int, default=5000, help="statements per dialect (default 5000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-depth", type=int, default=20, help="derivation depth budget (default 20)")
    parser.add_argument("--max-lexemes", type=int, default=60, help="lexeme budget (default 60)")
    parser.add_argument("--keep", type=int, default=25, help="shrunk counterexamples to print")
    parser.add_argument("--json", action="store_true", help="one JSON object per dialect")
    args = parser.parse_args(argv)
    for dialect in args.dialect or sorted(STARTS):
        report = fuzz(dialect, args.n, seed=args.seed, max_depth=args.max_depth,
                      max_lexemes=args.max_lexemes, keep=args.keep)
        if args.json:
            print(json.dumps({"dialect": dialect, "samples": report.samples, "accepted": report.accepted,
                              "rate": report.rate, "counterexamples": report.counterexamples}))
        else:
            print(report.to_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
