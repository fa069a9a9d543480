"""Recognition throughput: pda vs Lark (Earley, LALR) vs Python's json, in one run.

    .venv/bin/python bench/parse_bench.py [--mb 1.0] [--repeat 3]

Builds >= 1 MB of JSON (corpus instances, pretty and compact) and of SQL-like text
(corpus statements joined by ';'), then times whole-text recognition. Prints MB/s
(median of the repeats) and the ratio to pda.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import lark

import pda

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus"


def json_text(min_bytes: int) -> str:
    docs = []
    for path in sorted((CORPUS / "jsonschemabench" / "schemas").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            docs.append(row["schema"])
            docs.extend(t["data"] for t in row.get("tests", []) if t.get("valid"))
    out, size, i = [], 0, 0
    while size < min_bytes:
        doc = docs[i % len(docs)]
        text = json.dumps(doc, indent=2 if i % 2 else None, ensure_ascii=False)
        out.append(text)
        size += len(text.encode()) + 2
        i += 1
    return "[" + ",\n".join(out) + "]"


def sql_text(min_bytes: int, grammar: pda.Grammar) -> str:
    """Corpus statements the grammar accepts one by one, joined into a statement list."""
    rows = [json.loads(line)["sql"] for line in (CORPUS / "sql_sqlite" / "valid.jsonl").read_text().splitlines()]
    rows = [r for r in rows if grammar.accepts(r + ";")]
    out, size, i = [], 0, 0
    while size < min_bytes:
        out.append(rows[i % len(rows)])
        size += len(rows[i % len(rows)]) + 2
        i += 1
    return ";\n".join(out) + ";"


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    n = int(args.mb * 1_000_000)
    workloads = []
    jtext = json_text(n)
    jgrammar = (REPO / "pda" / "grammars" / "json.lark").read_text()
    workloads.append(("json", [jtext], jgrammar, "start", lambda: json.loads(jtext)))
    sqlite = REPO / "pda" / "grammars" / "sqlite.lark"
    if sqlite.exists():
        stext = sql_text(n, pda.Grammar.load(str(sqlite)))
        workloads.append(("sqlite", [stext], sqlite.read_text(), "start", None))
    ibis = CORPUS / "grammars" / "sql_to_ibis" / "sql.lark"
    if ibis.exists():
        itext = ibis.read_text()
        rows = [json.loads(line)["sql"] for line in (CORPUS / "sql_sqlite" / "valid.jsonl").read_text().splitlines()]
        ig = pda.Grammar.from_lark(itext, import_paths=(str(ibis.parent),))
        rows = [r for r in rows if ig.accepts(r)]
        docs, size = [], 0
        while size < n:
            docs.append(rows[len(docs) % len(rows)])
            size += len(docs[-1])
        workloads.append(("sql-ibis", docs, itext, "start", None))
    print(f"{'workload':<8} {'engine':<22} {'MB/s':>8} {'vs pda':>8}")  # noqa: E501
    for name, texts, gtext, start, floor in workloads:
        data = [t.encode() for t in texts]
        mb = sum(map(len, data)) / 1e6
        g = pda.Grammar.from_lark(gtext, start=start)
        assert all(g.accepts(d) for d in data), f"pda rejects the {name} workload"
        results = [("pda", timed(lambda: [g.accepts(d) for d in data], args.repeat))]
        for parser, lexer in (("lalr", "contextual"), ("earley", "basic"), ("earley", "dynamic")):
            label = f"lark-{parser}-{lexer}"
            try:
                lk = lark.Lark(gtext, parser=parser, lexer=lexer, start=start)
            except lark.exceptions.LarkError as exc:
                print(f"{name:<8} {label:<22} {'n/a':>8}  ({type(exc).__name__}: grammar not supported)")
                continue
            try:
                results.append((label, timed(lambda: [lk.parse(t) for t in texts], 1 if parser == "earley" else args.repeat)))
            except lark.exceptions.LarkError as exc:
                print(f"{name:<8} {label:<22} {'n/a':>8}  (rejects the text: {str(exc).splitlines()[0][:60]})")
        if floor is not None:
            results.append(("python json (floor)", timed(floor, args.repeat)))
        base = results[0][1]
        for engine, seconds in results:
            print(f"{name:<8} {engine:<22} {mb / seconds:>8.2f} {base / seconds:>7.2f}x")
    print(f"({args.mb} MB per workload, median of {args.repeat}; 'vs pda' > 1 means faster than pda)")


if __name__ == "__main__":
    main()
