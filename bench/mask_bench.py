"""Mask benchmark: replay real documents token by token through each engine.

For every (workload, engine) pair the document tokens (Qwen2 tokenizer) are fed to a
fresh matcher one at a time. Per step only the mask computation is timed, then the
token's bit is checked (untimed) and the token is accepted (timed separately as
"advance"). At the end of a document the mask must allow EOS. Reported: vocabulary
setup, compile, first mask, per-step mean/p50/p99/max, advance mean, peak memory,
documents accepted, and each engine's ratio to pda (or `--baseline`) from the same run.
Where an engine refused some documents, a line below the table also compares every
engine on the documents all of them accepted (the same texts, so the same steps).

Each pair runs in its own subprocess, so compile is cold, peak memory belongs to
that engine alone, and a crashing engine costs one row, not the run.

    python bench/mask_bench.py                       # every workload, every engine
    python bench/mask_bench.py --workload json --engines pda,xgrammar --docs 10
    python bench/mask_bench.py --quick               # small smoke run
    python bench/mask_bench.py --workload postgresql --engines pda,llguidance-lark --budget 300
    python bench/mask_bench.py --write-readme        # also update bench/README.md
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (  # noqa: E402
    QWEN2_LOGITS_SIZE,
    REPO_ROOT,
    PeakMemory,
    load_qwen2_tokenizer,
    machine_description,
    now_ns,
    summarize,
)
from bench.workloads import WORKLOADS, Workload, build_workload, tokenize  # noqa: E402

README = REPO_ROOT / "bench" / "README.md"
RESULTS_START = "<!-- results:start -->"
RESULTS_END = "<!-- results:end -->"
MAX_FAILURES_KEPT = 5


def _failure(tokenizer: Any, doc: Any, index: int, what: str) -> dict[str, Any]:
    """Where a replay stopped: the document, the token, and the text just before it."""
    before = tokenizer.decode(doc.tokens[max(0, index - 8) : index])[-40:]
    token = tokenizer.decode(doc.tokens[index : index + 1]) if index < len(doc.tokens) else "<EOS>"
    return {"doc": doc.name, "index": index, "what": what, "before": before, "token": token}


def replay(engine: Any, compiled: Any, workload: Workload, tokenizer: Any, budget_s: float) -> dict[str, Any]:
    """Replay every document; time each mask and each advance.

    The first mask of the run is reported on its own (it pays any lazy compile
    work); every later mask, including each document's first and the final EOS
    check, is a step. Stops once `budget_s` is spent (a document cut short by
    the budget counts as not accepted, and says so in the failures).
    """
    eos = tokenizer.eos_token_id
    first_mask_ns: int | None = None
    mask_ns: list[int] = []
    advance_ns: list[int] = []
    failures: list[dict[str, Any]] = []
    ok_masks: dict[str, list[int]] = {}  # per accepted document, its steps (as in `mask`)
    docs_ok = docs_run = n_failed = 0
    deadline = now_ns() + int(budget_s * 1e9)
    gc.collect()
    for doc in workload.documents:
        if docs_run and now_ns() > deadline:
            break
        docs_run += 1
        session = engine.session(compiled)
        fill, advance, allows = session.fill, session.advance, session.allows
        problem = None
        first_step = len(mask_ns)
        for index, token in enumerate(doc.tokens):
            t0 = now_ns()
            fill()
            t1 = now_ns()
            if first_mask_ns is None:
                first_mask_ns = t1 - t0
            else:
                mask_ns.append(t1 - t0)
            if not allows(token):
                problem = (index, "mask disallows the next token")
                break
            t0 = now_ns()
            accepted = advance(token)
            advance_ns.append(now_ns() - t0)
            if not accepted:
                problem = (index, "advance rejects a token the mask allowed")
                break
            if now_ns() > deadline:
                problem = (index + 1, "time budget spent inside the document")
                break
        else:
            t0 = now_ns()
            fill()
            mask_ns.append(now_ns() - t0)
            if not allows(eos):
                problem = (len(doc.tokens), "EOS not allowed at the end of the document")
        if problem is None:
            docs_ok += 1
            ok_masks[doc.name] = mask_ns[first_step:]
        else:
            n_failed += 1
            if len(failures) < MAX_FAILURES_KEPT:
                failures.append(_failure(tokenizer, doc, *problem))
    return {
        "first_mask_ms": None if first_mask_ns is None else first_mask_ns / 1e6,
        "mask": summarize(mask_ns).as_dict(),
        "advance": summarize(advance_ns).as_dict(),
        "docs_total": len(workload.documents),
        "docs_run": docs_run,
        "docs_ok": docs_ok,
        "docs_failed": n_failed,
        "failures": failures,
        "ok_masks_ns": ok_masks,
    }


def run_worker(engine_name: str, workload_file: Path, budget_s: float) -> dict[str, Any]:
    """Measure one engine on one workload in this process."""
    from bench.peers import Unsupported, make_engine

    result: dict[str, Any] = {"engine": engine_name}
    engine = make_engine(engine_name)
    reason = engine.import_error()
    if reason:
        return {**result, "skipped": reason}
    workload = Workload.from_json(workload_file.read_text(encoding="utf-8"))
    result["workload"] = workload.name
    tokenizer = load_qwen2_tokenizer()
    with PeakMemory() as vocab_memory:
        t0 = now_ns()
        engine.load_vocab(tokenizer, QWEN2_LOGITS_SIZE)
        result["vocab_s"] = (now_ns() - t0) / 1e9
    result["vocab_mib"] = vocab_memory.growth_mib
    with PeakMemory() as memory:
        t0 = now_ns()
        try:
            compiled, used = engine.compile(workload.grammar)
        except Unsupported as e:
            return {**result, "skipped": str(e)}
        result["compile_ms"] = (now_ns() - t0) / 1e6
        result["grammar"] = used
        result.update(replay(engine, compiled, workload, tokenizer, budget_s))
    result["peak_mib"] = memory.growth_mib
    return result


def run_isolated(engine: str, workload_file: Path, budget_s: float) -> dict[str, Any]:
    """Run `run_worker` in a fresh interpreter with an empty `PDA_CACHE_DIR` (deleted afterwards) and
    return its result: pda compiles and visits every state cold, whatever earlier runs left on disk."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = Path(f.name)
    cache_dir = tempfile.mkdtemp(prefix="pda-bench-cache-")
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--worker",
        "--engines",
        engine,
        "--workload-file",
        str(workload_file),
        "--result-file",
        str(out),
        "--budget",
        str(budget_s),
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
           "PDA_CACHE_DIR": cache_dir}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=budget_s * 3 + 600)
        if proc.returncode != 0 or out.stat().st_size == 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            return {"engine": engine, "error": f"exit {proc.returncode}: {' | '.join(tail)}"}
        return json.loads(out.read_text(encoding="utf-8"))
    except subprocess.TimeoutExpired:
        return {"engine": engine, "error": "timed out"}
    finally:
        out.unlink(missing_ok=True)
        shutil.rmtree(cache_dir, ignore_errors=True)


def _fmt(value: float | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:,.{digits}f}"


def _ratio(value: float | None, base: float | None) -> str:
    if value is None or base is None or base == 0 or math.isnan(value) or math.isnan(base):
        return "–"
    return f"{value / base:.2f}×"


def format_table(results: dict[str, list[dict[str, Any]]], baseline: str) -> str:
    """Markdown table of every (workload, engine) result, ratios against `baseline`."""
    head = (
        "| workload | engine | vocab s | compile ms | 1st mask ms | mask mean µs | p50 µs | p99 µs "
        f"| max µs | advance µs | peak MiB | docs ok | mean vs {baseline} | p99 vs {baseline} |"
    )
    lines = [head, "|" + "---|" * 14]
    notes = []
    for workload, rows in results.items():
        base = next((r for r in rows if r.get("engine") == baseline and "mask" in r), None)
        for r in rows:
            engine = r["engine"]
            if "mask" not in r:
                why = r.get("skipped") or r.get("error") or "no result"
                lines.append(f"| {workload} | {engine} | " + "| " * 11 + f"skipped: {why} |")
                continue
            mask, adv = r["mask"], r["advance"]
            docs = f"{r['docs_ok']}/{r['docs_run']}"
            if r["docs_run"] < r["docs_total"]:
                docs += f" (of {r['docs_total']}, time budget)"
            lines.append(
                f"| {workload} | {engine} | {_fmt(r['vocab_s'], 2)} | {_fmt(r['compile_ms'])} "
                f"| {_fmt(r['first_mask_ms'], 2)} | {_fmt(mask['mean_us'])} | {_fmt(mask['p50_us'])} "
                f"| {_fmt(mask['p99_us'])} | {_fmt(mask['max_us'])} | {_fmt(adv['mean_us'])} "
                f"| {_fmt(r['peak_mib'], 0)} | {docs} "
                f"| {_ratio(mask['mean_us'], base['mask']['mean_us'] if base else None)} "
                f"| {_ratio(mask['p99_us'], base['mask']['p99_us'] if base else None)} |"
            )
            notes.append(f"- {workload} / {engine}: grammar = {r['grammar']}")
            for f in r["failures"]:
                notes.append(
                    f"  - failed {f['doc']} at token {f['index']} ({f['what']}): "
                    f"…{f['before']!r} then {f['token']!r}"
                )
    return "\n".join(lines) + "\n\n" + "\n".join(notes) + "\n" + format_common(results, baseline)


def format_common(results: dict[str, list[dict[str, Any]]], baseline: str) -> str:
    """Per workload where some engine refused documents: every engine's masks on the documents all of them
    accepted (means over different documents compare different texts)."""
    lines = []
    for workload, rows in results.items():
        done = [r for r in rows if "mask" in r]
        if len(done) < 2 or all(r["docs_ok"] == r["docs_run"] == r["docs_total"] for r in done):
            continue
        common = set.intersection(*(set(r["ok_masks_ns"]) for r in done))
        stats = {r["engine"]: summarize(ns for name in common for ns in r["ok_masks_ns"][name]) for r in done}
        base = stats.get(baseline)
        cells = ", ".join(
            f"{engine} mean {_fmt(s.mean_us)} µs, p99 {_fmt(s.p99_us)}"
            + (f" ({_ratio(s.mean_us, base.mean_us)} / {_ratio(s.p99_us, base.p99_us)} of {baseline})"
               if base is not None and engine != baseline else "")
            for engine, s in stats.items()
        )
        lines.append(f"- {workload}, the {len(common)} documents every engine accepted: {cells}")
    return ("\n" + "\n".join(lines) + "\n") if lines else ""


def write_readme(text: str) -> None:
    """Replace the results section of bench/README.md with `text`."""
    current = README.read_text(encoding="utf-8")
    start, end = current.index(RESULTS_START), current.index(RESULTS_END)
    README.write_text(
        current[: start + len(RESULTS_START)] + "\n" + text + current[end:], encoding="utf-8"
    )


def main(argv: list[str] | None = None) -> int:
    """Command line: build the workloads once, run each engine on each, print the table."""
    from bench.peers import ENGINES

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", default="json,schema,sql", help=f"comma list of {', '.join(WORKLOADS)}, or all")
    parser.add_argument("--engines", default=",".join(ENGINES), help="comma list of engines")
    parser.add_argument("--docs", type=int, default=None, help="source documents per workload")
    parser.add_argument("--quick", action="store_true", help="few documents, short budget: a smoke run")
    parser.add_argument("--budget", type=float, default=None, help="seconds of replay per engine and workload")
    parser.add_argument("--baseline", default="pda", help="engine the ratios are taken against")
    parser.add_argument("--json", type=Path, help="also write the raw results here")
    parser.add_argument("--write-readme", action="store_true", help="put the table into bench/README.md")
    parser.add_argument("--in-process", action="store_true", help="no subprocess per engine (debugging)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--workload-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--result-file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    budget = args.budget if args.budget is not None else (15.0 if args.quick else 60.0)
    if args.worker:
        result = run_worker(args.engines, args.workload_file, budget)
        args.result_file.write_text(json.dumps(result), encoding="utf-8")
        return 0

    names = list(WORKLOADS) if args.workload == "all" else args.workload.split(",")
    engines = args.engines.split(",")
    docs = args.docs if args.docs is not None else (4 if args.quick else None)
    tokenizer = load_qwen2_tokenizer()
    results: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            workload = build_workload(name, docs)
            tokenize(workload, tokenizer)
            steps = sum(len(d.tokens) + 1 for d in workload.documents)
            print(f"# {name}: {workload.note}; {steps} mask steps", file=sys.stderr)
            path = Path(tmp) / f"{name}.json"
            path.write_text(workload.to_json(), encoding="utf-8")
            results[name] = []
            for engine in engines:
                r = run_worker(engine, path, budget) if args.in_process else run_isolated(engine, path, budget)
                status = r.get("skipped") or r.get("error") or f"mean {r['mask']['mean_us']:.1f} µs"
                print(f"#   {engine}: {status}", file=sys.stderr)
                results[name].append(r)
    when = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    table = (
        f"Run {when} on {machine_description()}; Qwen2 vocabulary "
        f"({QWEN2_LOGITS_SIZE} logits); command: `python bench/mask_bench.py "
        f"{' '.join(argv if argv is not None else sys.argv[1:])}`\n\n" + format_table(results, args.baseline)
    )
    print(table)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    if args.write_readme:
        write_readme(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
