"""JSON Schema benchmark: compile time per schema and per-step mask time, pda beside its peers.

A seeded sample of JSONSchemaBench schemas per category (those with valid
instances) is compiled by each engine against the Qwen2 vocabulary; then each
schema's valid instances, pretty-printed (`indent=2`) and tokenised canonically,
are replayed token by token: every mask is timed, the document's token must be
allowed, and EOS must be allowed at the end. Every engine gets flexible
whitespace (pda `whitespace="flexible"`, XGrammar `any_whitespace=True`,
llguidance's default), since pretty-printed text needs it.

Reported per engine: schemas compiled, compile time p50/p95/max (grammar load
plus the token-level compile, per schema; the first mask is reported apart since
engines defer different amounts of work to it), per-step mask mean/p50/p99/max,
documents accepted, and each number's ratio to pda's from the same run; then the
cost per request (compile + the first document's masks and token advances: what a
server pays for a new schema; the advances are timed apart from the masks, so the step
figures stay masks alone) on the schemas every engine compiled and accepted, with each engine's
peak RSS. Each engine runs in its own subprocess; before the sample it loads the
vocabulary and compiles one trivial schema (both timed and reported apart: work a
server pays once per process and vocabulary, such as pda's byte trie, which pda
builds on the first compile and the peers when they load the tokenizer).

    python bench/json_schema_bench.py                         # 4 schemas per category
    python bench/json_schema_bench.py --sample 10 --engines pda,xgrammar

Each worker gets an empty `PDA_CACHE_DIR` (deleted afterwards), so pda's compiles
are cold: its disk cache would otherwise hold each schema's DFAs and walks from an
earlier run. `pda-cached` measures the other case: the same run a second time, in a
new process, over the disk cache the first one filled (in-memory caches empty).
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import resource
import signal
import statistics
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import QWEN2_LOGITS_SIZE, REPO_ROOT, load_qwen2_tokenizer, machine_description, now_ns  # noqa: E402
from bench.common import json_file, percentile, run_cold_worker  # noqa: E402
from bench.workloads import GrammarSpec  # noqa: E402

CORPUS = REPO_ROOT.parent / "shared" / "corpus" / "jsonschemabench" / "schemas"
ENGINES = ("pda", "pda-warmup", "pda-cached", "xgrammar", "llguidance")


class _Timeout(Exception):
    pass


def _alarm(_signum: int, _frame: Any) -> None:
    raise _Timeout


def sample_schemas(sample: int, categories: list[str] | None, docs_per_schema: int) -> list[dict[str, Any]]:
    """Per category, a seeded sample of schemas with valid instances, and those instances' text."""
    cats = categories or sorted(p.stem for p in CORPUS.glob("*.jsonl"))
    out = []
    for cat in cats:
        rows = [json.loads(line) for line in (CORPUS / f"{cat}.jsonl").open()]
        rows = [r for r in rows if any(t["valid"] for t in r["tests"])]
        for r in random.Random(f"pda-bench:{cat}").sample(rows, min(sample, len(rows))):
            docs = [json.dumps(t["data"], indent=2, ensure_ascii=False) for t in r["tests"] if t["valid"]]
            out.append({"id": r["id"], "category": cat, "schema": r["schema"], "docs": docs[:docs_per_schema]})
    return out


def _engine(name: str) -> Any:
    from bench.peers import PdaEngine, make_engine

    if name not in ("pda", "pda-warmup", "pda-cached"):
        return make_engine(name)

    class PdaFlexible(PdaEngine):
        """pda with flexible whitespace (the peers' JSON Schema paths are flexible too).

        `pda` is the default (no compile-time warm-up: every mask is computed when a
        step first needs it, as llguidance defers its work); `pda-warmup` spends a second
        of warm-up at compile (`Limits.warmup_seconds=1.0`); `pda-cached` is the default
        in a second process that finds the disk cache a first one filled.
        """

        def compile(self, spec: GrammarSpec) -> tuple[Any, str]:
            import pda
            grammar = pda.Grammar.from_json_schema(spec.schema, whitespace="flexible")
            limits = pda.Limits(warmup_seconds=1.0) if name == "pda-warmup" else pda.Limits()
            return pda.compile(grammar, self.vocab, limits=limits), "JSON Schema (flexible)"

    return PdaFlexible()


SETUP_SCHEMA = {"type": "object", "properties": {"setup": {"type": "boolean"}}}


def run_worker(engine_name: str, items: list[dict[str, Any]], timeout_s: int) -> dict[str, Any]:
    """Compile every schema and replay its documents with one engine, in this process."""
    import warnings

    warnings.simplefilter("ignore")
    engine = _engine(engine_name)
    reason = engine.import_error()
    if reason:
        return {"engine": engine_name, "skipped": reason}
    tokenizer = load_qwen2_tokenizer()
    t0 = now_ns()
    engine.load_vocab(tokenizer, QWEN2_LOGITS_SIZE)
    t1 = now_ns()
    # A server's first compile also pays work done once per process and vocabulary (imports, and
    # what an engine defers from loading the vocabulary: pda's byte trie and vocabulary hash); one
    # trivial schema pays it here, timed apart, so no sampled schema carries it.
    engine.compile(GrammarSpec(kind="json_schema", schema=SETUP_SCHEMA))
    result: dict[str, Any] = {"engine": engine_name, "vocab_s": (t1 - t0) / 1e9,
                              "setup_compile_ms": (now_ns() - t1) / 1e6, "schemas": []}
    eos = tokenizer.eos_token_id
    signal.signal(signal.SIGALRM, _alarm)
    for item in items:
        row: dict[str, Any] = {"id": item["id"], "category": item["category"]}
        result["schemas"].append(row)
        signal.alarm(timeout_s)
        try:
            t0 = now_ns()
            compiled, _ = engine.compile(GrammarSpec(kind="json_schema", schema=item["schema"]))
            row["compile_ms"] = (now_ns() - t0) / 1e6
            steps: list[float] = []
            doc0_steps = 0
            doc0_advance_ns = 0
            ok = 0
            for d, text in enumerate(item["docs"]):
                tokens = tokenizer.encode(text, add_special_tokens=False)
                session = engine.session(compiled)
                good = True
                gc.collect()
                for i, tok in enumerate([*tokens, eos]):
                    t0 = now_ns()
                    session.fill()
                    dt = (now_ns() - t0) / 1e3
                    if d == 0 and i == 0:
                        row["first_mask_ms"] = dt / 1e3
                    else:
                        steps.append(dt)
                    if d == 0:
                        doc0_steps = len(steps)
                    if not session.allows(tok):
                        good = False
                        row.setdefault("rejected", f"doc {d} token {i} {tokenizer.decode([tok])!r}")
                        break
                    if tok != eos:
                        t0 = now_ns()
                        advanced = session.advance(tok)
                        if d == 0:
                            doc0_advance_ns += now_ns() - t0
                        if not advanced:
                            good = False
                            break
                ok += good
            row["steps_us"] = steps
            row["masks_ms"] = row.get("first_mask_ms", 0.0) + sum(steps[:doc0_steps]) / 1e3
            row["advances_ms"] = doc0_advance_ns / 1e6
            row["request_ms"] = row["compile_ms"] + row["masks_ms"] + row["advances_ms"]
            row["docs"], row["docs_ok"] = len(item["docs"]), ok
        except _Timeout:
            row["error"] = f"timed out after {timeout_s} s"
        except Exception as exc:  # an engine's own refusal of a schema: recorded, not fatal
            row["error"] = f"{type(exc).__name__}: {str(exc)[:160]}"
        finally:
            signal.alarm(0)
    result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


def run_isolated(engine: str, items_file: Path, timeout_s: int) -> dict[str, Any]:
    """`run_worker` in a fresh interpreter (cold caches, its own memory)."""
    result, failure = run_cold_worker(Path(__file__).resolve(), [
        "--worker", engine, "--items-file", str(items_file), "--timeout", str(timeout_s)],
        runs=2 if engine == "pda-cached" else 1)
    return result if result is not None else {"engine": engine, "error": failure}


def _stats(values: list[float]) -> dict[str, float]:
    v = sorted(values)
    if not v:
        return {}
    return {"n": len(v), "mean": statistics.fmean(v), "p50": percentile(v, 50), "p95": percentile(v, 95),
            "p99": percentile(v, 99), "max": v[-1]}


def _ratio(x: float | None, base: float | None) -> str:
    return f"{x / base:.2f}x" if x is not None and base else "-"


def _request_table(results: list[dict[str, Any]]) -> list[str]:
    """Cost per request: compile + every mask and every token advance of the schema's first document, on the
    schemas and documents every engine compiled and accepted (so the engines pay for the same work), with the
    means of its three parts."""
    ran = [r for r in results if "schemas" in r]
    if not ran:
        return []
    good = [{s["id"]: s for s in r["schemas"] if "request_ms" in s and s.get("docs_ok") == s.get("docs")}
            for r in ran]
    common = sorted(set.intersection(*(set(g) for g in good)))
    base = next((g for r, g in zip(ran, good) if r["engine"] == "pda"), None)
    base_mean = statistics.fmean(base[i]["request_ms"] for i in common) if base and common else None
    lines = [f"Per request (compile + the first document's masks and advances, ms) on the {len(common)} schemas "
             "every engine compiled and accepted; peak RSS of the engine's process:", "",
             "| engine | request mean | p50 | p99 | max | total s | compile mean | masks mean | advances mean | "
             "peak RSS MiB | mean vs pda |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r, g in zip(ran, good):
        st = _stats([g[i]["request_ms"] for i in common])
        parts = " | ".join(f"{statistics.fmean(g[i][k] for i in common):.2f}"
                           for k in ("compile_ms", "masks_ms", "advances_ms"))
        lines.append(
            f"| {r['engine']} | {st.get('mean', 0):.1f} | {st.get('p50', 0):.1f} | {st.get('p99', 0):.1f} | "
            f"{st.get('max', 0):.1f} | {sum(g[i]['request_ms'] for i in common) / 1e3:.2f} | {parts} | "
            f"{r.get('peak_rss_mib', 0):.0f} | {_ratio(st.get('mean'), base_mean)} |")
    return lines


def format_table(results: list[dict[str, Any]], n_schemas: int) -> str:
    """Compile and per-step tables with ratios to pda; schemas both engines compiled compare fairly."""
    lines = []
    base = next((r for r in results if r.get("engine") == "pda" and "schemas" in r), None)
    summary = {}
    for r in results:
        if "schemas" not in r:
            summary[r["engine"]] = None
            continue
        ok = [s for s in r["schemas"] if "error" not in s]
        summary[r["engine"]] = {
            "compiled": len(ok), "vocab_s": r["vocab_s"],
            "compile": _stats([s["compile_ms"] for s in ok]),
            "first": _stats([s["first_mask_ms"] for s in ok if "first_mask_ms" in s]),
            "step": _stats([x for s in ok for x in s["steps_us"]]),
            "docs": sum(s["docs"] for s in ok), "docs_ok": sum(s["docs_ok"] for s in ok),
        }
    b = summary.get("pda") if base else None
    lines.append(f"{n_schemas} schemas; compile = grammar load + token-level compile (ms); "
                 "step = one mask (us); ratios are engine / pda")
    lines.append("")
    lines.append("| engine | compiled | compile p50 | p95 | max | first mask p50 | step mean | step p50 | "
                 "step p99 | step max | docs ok | p50 vs pda | step p50 vs pda | step p99 vs pda |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        s = summary[r["engine"]]
        if s is None:
            lines.append(f"| {r['engine']} | {r.get('skipped') or r.get('error')} |" + " |" * 12)
            continue
        c, st, fm = s["compile"], s["step"], s["first"]
        lines.append(
            f"| {r['engine']} | {s['compiled']}/{n_schemas} | {c.get('p50', 0):.1f} | {c.get('p95', 0):.1f} | "
            f"{c.get('max', 0):.1f} | {fm.get('p50', 0):.2f} | {st.get('mean', 0):.1f} | {st.get('p50', 0):.1f} | "
            f"{st.get('p99', 0):.1f} | {st.get('max', 0):.1f} | {s['docs_ok']}/{s['docs']} | "
            f"{_ratio(c.get('p50'), b and b['compile'].get('p50'))} | "
            f"{_ratio(st.get('p50'), b and b['step'].get('p50'))} | "
            f"{_ratio(st.get('p99'), b and b['step'].get('p99'))} |")
    lines.append("")
    lines += _request_table(results)
    lines.append("")
    lines.append("Once per process, not in the tables above: " + "; ".join(
        f"{r['engine']} vocabulary {r['vocab_s']:.2f} s, a first trivial compile {r.get('setup_compile_ms', 0):.1f} ms"
        for r in results if "schemas" in r) + ".")
    lines.append("")
    lines.append("Compile time (ms) per category, p50 / max:")
    cats = sorted({s["category"] for r in results if "schemas" in r for s in r["schemas"]})
    lines.append("| category | " + " | ".join(r["engine"] for r in results if "schemas" in r) + " |")
    lines.append("|---|" + "---|" * sum(1 for r in results if "schemas" in r))
    for cat in cats:
        cells = []
        for r in results:
            if "schemas" not in r:
                continue
            ts = sorted(s["compile_ms"] for s in r["schemas"] if s["category"] == cat and "error" not in s)
            n = sum(1 for s in r["schemas"] if s["category"] == cat)
            cells.append(f"{statistics.median(ts):.0f} / {ts[-1]:.0f} ({len(ts)}/{n})" if ts else f"- (0/{n})")
        lines.append(f"| {cat} | " + " | ".join(cells) + " |")
    failures = [(r["engine"], s["id"], s.get("error") or s.get("rejected"))
                for r in results if "schemas" in r for s in r["schemas"]
                if "error" in s or s.get("docs_ok", 0) < s.get("docs", 0)]
    if failures:
        lines.append("")
        lines.append("Failures (compile errors, or documents the mask refused):")
        lines += [f"- {e} {i}: {why}" for e, i, why in failures[:60]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sample", type=int, default=4, help="schemas per category (seeded)")
    ap.add_argument("--category", action="append", help="only this category (repeatable)")
    ap.add_argument("--docs", type=int, default=2, help="valid instances replayed per schema")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--timeout", type=int, default=120, help="seconds per schema (compile and replay)")
    ap.add_argument("--json", type=Path, help="also write the raw results here")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--items-file", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--result-file", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        items = json.loads(args.items_file.read_text(encoding="utf-8"))
        args.result_file.write_text(json.dumps(run_worker(args.worker, items, args.timeout)), encoding="utf-8")
        return 0
    if not CORPUS.is_dir():
        print(f"corpus not found at {CORPUS}", file=sys.stderr)
        return 1
    items = sample_schemas(args.sample, args.category, args.docs)
    results = []
    with json_file(items) as items_file:
        for engine in args.engines.split(","):
            print(f"running {engine} on {len(items)} schemas...", file=sys.stderr, flush=True)
            results.append(run_isolated(engine, items_file, args.timeout))
    print(machine_description())
    print(format_table(results, len(items)))
    if args.json:
        args.json.write_text(json.dumps(results), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
