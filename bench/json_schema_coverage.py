"""Per-category coverage and agreement of the JSON Schema front end on JSONSchemaBench.

For each schema: does it compile (strict and relaxed), and for each compiled
schema does the grammar accept every valid instance and reject every invalid
one, serialised compactly (compact grammar) and pretty-printed (flexible
grammar). Run: `python bench/json_schema_coverage.py [--limit N] [--category C]`.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pda.errors import PdaError  # noqa: E402
from pda.grammar.json_schema import json_schema_to_lark  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus" / "jsonschemabench" / "schemas"


def recogniser(grammar_text: str):
    """A whole-text recogniser for Lark grammar text: pda's when available, else Lark's Earley.

    The Lark stand-in uses leftmost-longest (POSIX) regex matching so that each
    terminal's match is its longest, as in pda's DFA lexer.
    """
    import pda

    if hasattr(pda, "Grammar"):
        g = pda.Grammar.from_lark(grammar_text)
        return g.accepts
    import lark

    text = re.sub(r"^([A-Z][A-Z0-9_]*): /", r"\1: /(?p)", grammar_text, flags=re.M)
    parser = lark.Lark(text, parser="earley", lexer="dynamic", regex=True)

    def accepts(s: str) -> bool:
        try:
            parser.parse(s)
            return True
        except lark.exceptions.LarkError:
            return False

    return accepts


def run(categories: list[str], limit: int | None, strict: bool, check: bool) -> dict[str, dict[str, float]]:
    table = {}
    for cat in categories:
        rows = [json.loads(line) for line in (CORPUS / f"{cat}.jsonl").open()]
        if limit:
            rows = rows[:limit]
        n_ok = agree = disagree = 0
        times = []
        bugs: list[str] = []
        for row in rows:
            t0 = time.perf_counter()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    compact = json_schema_to_lark(row["schema"], strict=strict)
                    flexible = json_schema_to_lark(row["schema"], strict=strict, whitespace="flexible")
            except (PdaError, RecursionError):
                continue
            times.append(time.perf_counter() - t0)
            n_ok += 1
            if not check or not row["tests"]:
                continue
            try:
                acc_c, acc_f = recogniser(compact), recogniser(flexible)
            except Exception as exc:  # a grammar our recogniser cannot load is a bug: count it
                disagree += 2 * len(row["tests"])
                bugs.append(f"{row['id']}: load {type(exc).__name__}")
                continue
            for test in row["tests"]:
                for acc, text in ((acc_c, json.dumps(test["data"], separators=(",", ":"), ensure_ascii=False)),
                                  (acc_f, json.dumps(test["data"], indent=2, ensure_ascii=False))):
                    if acc(text) == test["valid"]:
                        agree += 1
                    else:
                        disagree += 1
                        bugs.append(f"{row['id']}: valid={test['valid']} {text[:80]!r}")
        table[cat] = {
            "schemas": len(rows), "compiled": n_ok, "coverage": n_ok / max(len(rows), 1),
            "agree": agree, "disagree": disagree,
            "p50_ms": 1000 * statistics.median(times) if times else 0.0,
            "max_ms": 1000 * max(times) if times else 0.0,
        }
        if bugs:
            table[cat]["examples"] = bugs[:5]  # type: ignore[assignment]
    return table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--category", action="append")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--relaxed", action="store_true", help="compile with strict=False")
    ap.add_argument("--no-check", action="store_true", help="only measure coverage")
    args = ap.parse_args()
    cats = args.category or sorted(p.stem for p in CORPUS.glob("*.jsonl"))
    table = run(cats, args.limit, not args.relaxed, not args.no_check)
    print(f"{'category':16} {'schemas':>7} {'compiled':>8} {'coverage':>8} {'agree':>6} {'disagree':>8} "
          f"{'p50 ms':>7} {'max ms':>7}")
    tot = [0, 0, 0, 0]
    for cat, r in table.items():
        print(f"{cat:16} {r['schemas']:7} {r['compiled']:8} {r['coverage']:8.1%} {r['agree']:6} "
              f"{r['disagree']:8} {r['p50_ms']:7.1f} {r['max_ms']:7.1f}")
        for ex in r.get("examples", []):  # type: ignore[union-attr]
            print("    ", ex)
        tot = [tot[0] + r["schemas"], tot[1] + r["compiled"], tot[2] + r["agree"], tot[3] + r["disagree"]]
    print(f"{'total':16} {tot[0]:7} {tot[1]:8} {tot[1] / max(tot[0], 1):8.1%} {tot[2]:6} {tot[3]:8}")


if __name__ == "__main__":
    main()
