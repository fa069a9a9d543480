"""Memory when serving: many distinct JSON Schemas in one process, and terminal-heavy grammars.

Three workloads, each in its own fresh interpreter with an empty disk cache, on the
Qwen2 vocabulary:

* `schemas` — N distinct JSONSchemaBench schemas (those with a valid instance, spread
  evenly over every category) served one after another: compile, then a mask before
  every token of the first valid instance (pretty-printed) and EOS. Each compiled
  grammar and matcher is dropped before the next. Reported: RSS after the first 40,
  at the end, the growth between, the peak, the time, and the bytes each in-memory
  cache budget holds at the end (`pda.memory_budgets()`).
* `enum10k` — `{"enum": list(range(10000))}`: compile, masks over one value.
* `alternation10k` — a Lark rule of 10,000 distinct random literals: compile, masks
  over one of them.

RSS is the process's resident set (`/proc/self/statm`), peak its high-water mark
(`ru_maxrss`), both with the vocabulary loaded (its baseline is printed).

    .venv/bin/python bench/memory_bench.py                # all three, 240 schemas
    .venv/bin/python bench/memory_bench.py --schemas 80 --workloads schemas
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import resource
import sys
import time
import warnings
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import CORPUS, load_qwen2_tokenizer, machine_description, run_cold_worker  # noqa: E402

WORKLOADS = ("schemas", "enum10k", "alternation10k")
SCHEMAS = CORPUS / "jsonschemabench" / "schemas"


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _serve(pda: Any, tok: Any, vocab: Any, grammar: Any, text: str) -> list[float]:
    """Compile `grammar`, then a mask before each token of `text` and at its end; the mask times (ms)."""
    import numpy as np

    compiled = pda.compile(grammar, vocab)
    matcher = pda.Matcher(compiled)
    row = np.zeros((1, compiled.mask_words), np.int32)
    times = []
    for token in tok.encode(text, add_special_tokens=False) + [None]:
        start = time.perf_counter()
        matcher.fill_bitmask(row, 0)
        times.append((time.perf_counter() - start) * 1e3)
        if token is not None and not matcher.accept_token(token):
            break
    return times


def run_worker(workload: str, n_schemas: int) -> dict[str, Any]:
    import pda

    warnings.simplefilter("ignore")
    tok = load_qwen2_tokenizer()
    vocab = pda.Vocabulary.from_hf(tok)
    out: dict[str, Any] = {"baseline_mib": rss_mib()}
    start = time.perf_counter()
    if workload == "schemas":
        records = [json.loads(line) for f in sorted(SCHEMAS.glob("*.jsonl")) for line in f.open(encoding="utf-8")]
        records = [r for r in records if any(t.get("valid") for t in r.get("tests") or ())]
        records = records[:: max(1, len(records) // n_schemas)][:n_schemas]
        served = 0
        for i, record in enumerate(records):
            instance = next(t for t in record["tests"] if t.get("valid"))
            try:
                grammar = pda.Grammar.from_json_schema(record["schema"], whitespace="flexible")
                _serve(pda, tok, vocab, grammar, json.dumps(instance["data"], indent=2))
                served += 1
            except (pda.PdaError, RecursionError):
                pass
            gc.collect()
            if i == 39:
                out["after_40_mib"] = rss_mib()
        out.update(schemas=len(records), served=served, end_mib=rss_mib(),
                   budgets={name: b["bytes"] for name, b in pda.memory_budgets().items()})
    else:
        if workload == "enum10k":
            grammar, text = pda.Grammar.from_json_schema({"enum": list(range(10000))}), "4321"
        else:
            rng = random.Random(0)
            words = sorted({"".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 12)))
                            for _ in range(10000)})
            grammar, text = pda.Grammar.from_lark("start: " + " | ".join(json.dumps(w) for w in words)), words[5000]
        compile_start = time.perf_counter()
        pda.compile(grammar, vocab)
        out["compile_ms"] = (time.perf_counter() - compile_start) * 1e3
        times = _serve(pda, tok, vocab, grammar, text)  # the compile memo hands back the grammar just built
        out["first_mask_ms"], out["worst_mask_ms"] = times[0], max(times)
    out["seconds"] = time.perf_counter() - start
    out["peak_mib"] = peak_mib()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schemas", type=int, default=240)
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--worker", choices=WORKLOADS, help=argparse.SUPPRESS)
    parser.add_argument("--result-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        Path(args.result_file).write_text(json.dumps(run_worker(args.worker, args.schemas)), encoding="utf-8")
        return
    print(machine_description())
    results = {}
    for workload in args.workloads.split(","):
        if workload == "schemas" and not SCHEMAS.exists():
            print(f"schemas: skipped, no corpus at {SCHEMAS}")
            continue
        result, failure = run_cold_worker(Path(__file__), ["--worker", workload, "--schemas", str(args.schemas)])
        results[workload] = result
        if result is None:
            print(f"{workload}: failed ({failure})")
    found = results.get("schemas")
    if found:
        print(f"\n{found['schemas']} distinct schemas served one after another ({found['served']} compiled and replayed):\n")
        print("| baseline MiB | after 40 MiB | end MiB | growth after 40 MiB | peak MiB | seconds |")
        print("|---|---|---|---|---|---|")
        print(f"| {found['baseline_mib']:.0f} | {found.get('after_40_mib', 0):.0f} | {found['end_mib']:.0f} | "
              f"{found['end_mib'] - found.get('after_40_mib', 0):.0f} | {found['peak_mib']:.0f} | {found['seconds']:.0f} |")
        print("\nbytes held per memory budget at the end: " + ", ".join(
            f"{name} {size / 2**20:.1f} MiB" for name, size in found["budgets"].items()))
    heavy = [(w, results[w]) for w in ("enum10k", "alternation10k") if results.get(w)]
    if heavy:
        print("\n| grammar | compile ms | first mask ms | worst mask ms | peak RSS MiB (vocabulary alone) |")
        print("|---|---|---|---|---|")
        for name, r in heavy:
            print(f"| {name} | {r['compile_ms']:.0f} | {r['first_mask_ms']:.1f} | {r['worst_mask_ms']:.1f} | "
                  f"{r['peak_mib']:.0f} ({r['baseline_mib']:.0f}) |")


if __name__ == "__main__":
    main()
