"""Completeness/precision of the shipped SQL grammars against the SQL corpora.

Prints, per dialect, the share of `valid.jsonl` statements the grammar accepts (SQLite:
semantic-only rows counted apart), and the share of `invalid.jsonl` rows it rejects by
kind (natural / mutation); `truncate` mutations are viable prefixes and must instead be
accepted by `accepts_prefix`; PostgreSQL's `parser_action` rows are left out (a
context-free grammar is not expected to reject them).

    python bench/sql_corpus_check.py [--dialect sqlite|postgresql] [--sample N] [--failures K]
    python bench/sql_corpus_check.py --name-regex sqlite   # regenerate a grammar's NAME terminal
"""
from __future__ import annotations

import argparse
import json
import random
import re
import string
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
GRAMMARS = ROOT / "pda" / "grammars"
DIALECTS = {"sqlite": "sql_sqlite", "postgresql": "sql_postgres"}

# ------------------------------------------------------------------ NAME terminal
# A bare identifier that is not a keyword is a regular language (the complement of a
# finite set within the identifier language); pda's DFAs cannot express look-ahead, so
# the grammars spell that complement out as a trie-shaped regex generated here.

_NON_ASCII = "\\x80-\\U0010ffff"
_KEYWORD_LITERAL = re.compile(r'"([a-z_][a-z0-9_]*)"i')
_RULE = re.compile(r"^(\w+):(.*?)(?=^\S|\Z)", re.S | re.M)


def _ranges(chars: Iterable[str]) -> str:
    """Render a set of ASCII characters as character-class ranges."""
    cs = sorted(set(chars))
    out, i = [], 0
    while i < len(cs):
        j = i
        while j + 1 < len(cs) and ord(cs[j + 1]) == ord(cs[j]) + 1:
            j += 1
        out.append(cs[i] if i == j else cs[i] + cs[j] if j == i + 1 else f"{cs[i]}-{cs[j]}")
        i = j + 1
    return "".join(out).replace("$", "\\$")


def identifier_complement_regex(keywords: Iterable[str], start_extra: str = "_", cont_extra: str = "_$") -> str:
    """A regex for bare identifiers (letters, `start_extra`, non-ASCII; then also digits and
    `cont_extra`) that are not one of `keywords`, ASCII letters matched in either case."""
    trie: dict[str, dict] = {}
    for word in sorted({k.lower() for k in keywords}):
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}
    letters = string.ascii_lowercase
    rest = f"[{_ranges(string.digits + letters + letters.upper() + cont_extra)}{_NON_ASCII}]*"

    def other(children: set[str], depth: int) -> str:
        free = [c for c in letters if c not in children]
        chars = free + [c.upper() for c in free] + [c for c in (start_extra if depth == 0 else cont_extra) if c not in children]
        if depth:
            chars += list(string.digits)
        return f"[{_ranges(chars)}{_NON_ASCII}]"

    def walk(node: dict[str, dict], depth: int) -> str:
        children = sorted(k for k in node if k)
        alts = [other(set(children), depth) + rest]
        alts += [(f"[{c}{c.upper()}]" if c.isalpha() else c) + walk(node[c], depth + 1) for c in children]
        body = "(?:" + "|".join(alts) + ")"
        # Ending here is allowed unless the prefix so far is itself a keyword.
        return body if depth == 0 or "" in node else body + "?"

    return walk(trie, 0)


# PostgreSQL keyword classes that NAME excludes: gram.y's reserved, type/function-name
# and column-name keywords (IDENT and the unreserved keywords remain).
_PG_EXCLUDED_RULES = ("reserved_keyword", "type_func_name_keyword", "col_name_keyword", "bare_col_name_keyword")


def excluded_keywords(dialect: str, grammar_text: str) -> set[str]:
    """The words NAME must not match: for SQLite every keyword the grammar uses (the
    fallback ones come back through the rule `fallback_keyword`); for PostgreSQL the
    reserved, type/function-name and column-name keywords (they come back through
    `col_id`, `type_function_name` and `col_label` where gram.y allows them)."""
    if dialect == "sqlite":
        return set(_KEYWORD_LITERAL.findall(grammar_text))
    rules = {m.group(1): m.group(2) for m in _RULE.finditer(grammar_text)}
    return set(_KEYWORD_LITERAL.findall("".join(rules[r] for r in _PG_EXCLUDED_RULES)))


def name_regex(dialect: str, grammar_text: str) -> str:
    """The NAME regex the grammar of `dialect` must carry."""
    return identifier_complement_regex(excluded_keywords(dialect, grammar_text))


def grammar_text(dialect: str) -> str:
    return (GRAMMARS / f"{dialect}.lark").read_text()


# ------------------------------------------------------------------ corpus
@dataclass
class Tally:
    """Pass/total per category, with the failing rows kept for the report."""

    passed: Counter = field(default_factory=Counter)
    total: Counter = field(default_factory=Counter)
    failures: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def add(self, category: str, ok: bool, row: dict[str, Any]) -> None:
        self.total[category] += 1
        if ok:
            self.passed[category] += 1
        else:
            self.failures.setdefault(category, []).append(row)

    def rate(self, category: str) -> float:
        return self.passed[category] / self.total[category] if self.total[category] else 1.0


def load_rows(dialect: str, name: str) -> list[dict[str, Any]]:
    path = CORPUS / DIALECTS[dialect] / f"{name}.jsonl"
    with path.open() as f:
        return [json.loads(line) for line in f if line.strip()]


def sample_rows(rows: list[dict[str, Any]], n: int | None, seed: str) -> list[dict[str, Any]]:
    """A deterministic sample of `n` rows (all rows when `n` is None)."""
    if n is None or n >= len(rows):
        return rows
    return random.Random(seed).sample(rows, n)


def valid_category(dialect: str, row: dict[str, Any]) -> str:
    if dialect == "sqlite" and row.get("check") == "semantic_error_only":
        return "valid (semantic-only)"
    return "valid"


def invalid_category(row: dict[str, Any]) -> str | None:
    """The tally a row of invalid.jsonl counts in, or None when it is left out."""
    if row.get("error_class") == "parser_action":
        return None
    if row["kind"] == "natural":
        return "invalid natural (rejected)"
    if row.get("mutation") == "truncate":
        return "truncate (accepted as prefix)"
    return "invalid mutation (rejected)"


def evaluate(dialect: str, accepts: Callable[[str], bool], accepts_prefix: Callable[[str], bool],
             sample: int | None = None) -> Tally:
    """Run a grammar's recognisers over the corpus of `dialect`."""
    tally = Tally()
    for row in sample_rows(load_rows(dialect, "valid"), sample, f"{dialect}:valid"):
        tally.add(valid_category(dialect, row), accepts(row["sql"]), row)
    for row in sample_rows(load_rows(dialect, "invalid"), sample, f"{dialect}:invalid"):
        category = invalid_category(row)
        if category is None:
            continue
        if category.startswith("truncate"):
            tally.add(category, accepts_prefix(row["sql"]), row)
        else:
            tally.add(category, not accepts(row["sql"]), row)
    return tally


FLOORS = {
    "valid": 0.98,
    "valid (semantic-only)": 0.98,
    "invalid natural (rejected)": 0.95,
    "invalid mutation (rejected)": 0.98,
    "truncate (accepted as prefix)": 1.0,
}


def print_table(dialect: str, tally: Tally, failures: int) -> None:
    print(f"\n{dialect}")
    print(f"  {'category':34} {'passed':>7} {'total':>6} {'rate':>8} {'floor':>6}")
    for category in FLOORS:
        if tally.total[category]:
            print(f"  {category:34} {tally.passed[category]:7d} {tally.total[category]:6d} "
                  f"{100 * tally.rate(category):7.2f}% {100 * FLOORS[category]:5.0f}%")
    for category, rows in tally.failures.items():
        for row in rows[:failures]:
            detail = f" [{row.get('mutation')}]" if row.get("mutation") else ""
            print(f"    FAIL {category}{detail} {row['id']}: {row['sql'][:150]!r}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dialect", choices=sorted(DIALECTS), action="append")
    parser.add_argument("--sample", type=int, default=None, help="rows per file (default: all)")
    parser.add_argument("--failures", type=int, default=0, help="failing rows to print per category")
    parser.add_argument("--name-regex", choices=sorted(DIALECTS), help="print the NAME regex for a grammar")
    args = parser.parse_args(argv)
    if args.name_regex:
        print(name_regex(args.name_regex, grammar_text(args.name_regex)))
        return 0
    import pda

    for dialect in args.dialect or sorted(DIALECTS):
        grammar = pda.Grammar.from_lark(grammar_text(dialect), start="start")
        tally = evaluate(dialect, grammar.accepts, grammar.accepts_prefix, args.sample)
        print_table(dialect, tally, args.failures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
