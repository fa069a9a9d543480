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
    """pda's whole-text recogniser for Lark grammar text, built now (this is the compile)."""
    import pda

    g = pda.Grammar.from_lark(grammar_text)
    g.recognizer  # noqa: B018 - build it here, so compile errors count against coverage
    return g.accepts


def run(categories: list[str], limit: int | None, strict: bool, check: bool) -> dict[str, dict[str, float]]:
    table = {}
    for cat in categories:
        rows = [json.loads(line) for line in (CORPUS / f"{cat}.jsonl").open()]
        if limit:
            rows = rows[:limit]
        n_ok = agree = disagree = 0
        times = []
        bugs: list[str] = []
        failures: dict[str, int] = {}
        for row in rows:
            t0 = time.perf_counter()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    compact = json_schema_to_lark(row["schema"], strict=strict)
                    flexible = json_schema_to_lark(row["schema"], strict=strict, whitespace="flexible")
                    acc_c = recogniser(compact)
                    acc_f = recogniser(flexible) if check and row["tests"] else None
            except (PdaError, RecursionError) as exc:
                failures[type(exc).__name__] = failures.get(type(exc).__name__, 0) + 1
                continue
            times.append(time.perf_counter() - t0)
            n_ok += 1
            if not check or not row["tests"]:
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
            "failures": failures,
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
