"""The disk cache under a small budget: JSONSchemaBench schemas compiled one after another.

Each schema is compiled with the Qwen2 vocabulary into one cache folder whose
budget is `--budget-mib`; after each the folder's size is printed, and the run
ends with the largest size seen. Schemas are compiled in batches of 20 per
process, so the in-memory caches of one process do not hide the disk's work.

    .venv/bin/python bench/cache_budget.py --schemas 200 --budget-mib 64
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "jsonschemabench" / "schemas"
BATCH = 20


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def sample(n: int) -> list[dict]:
    """`n` schemas spread evenly over every category file of the corpus."""
    schemas = [json.loads(line) for f in sorted(CORPUS.glob("*.jsonl")) for line in f.open(encoding="utf-8")]
    return schemas[:: max(1, len(schemas) // n)][:n]


def compile_batch(first: int, last: int, n: int) -> None:
    """Compile schemas first..last-1 of the sample in this process, printing the cache size after each."""
    import pda
    from pda.demo.qwen import load_qwen2_tokenizer

    warnings.simplefilter("ignore")
    vocab = pda.Vocabulary.from_hf(load_qwen2_tokenizer())
    folder = Path(os.environ["PDA_CACHE_DIR"])
    limits = pda.Limits(warmup_seconds=0.3)
    for i, record in enumerate(sample(n)[first:last], start=first):
        start = time.perf_counter()
        try:
            pda.compile(pda.Grammar.from_json_schema(record["schema"], whitespace="flexible"), vocab, limits=limits)
            outcome = "compiled"
        except pda.PdaError as error:
            outcome = type(error).__name__
        seconds = time.perf_counter() - start
        print(f"{i:4d}  {record['id'][:44]:44s}  {outcome:13s}  {seconds:6.2f} s  {folder_bytes(folder) / 2**20:7.1f} MiB",
              flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--schemas", type=int, default=200)
    parser.add_argument("--budget-mib", type=int, default=64)
    parser.add_argument("--batch", nargs=2, type=int, help=argparse.SUPPRESS)  # a child process's share
    args = parser.parse_args()
    if args.batch:
        compile_batch(*args.batch, args.schemas)
        return
    if not CORPUS.exists():
        sys.exit(f"{CORPUS} is missing (the benchmark reads ../shared/corpus/)")
    folder = Path(tempfile.mkdtemp(prefix="pda-cache-budget-"))
    env = {**os.environ, "PDA_CACHE_DIR": str(folder), "PDA_CACHE_MAX_BYTES": str(args.budget_mib << 20)}
    largest = 0
    print(f"   #  schema                                        outcome        compile  cache size (budget {args.budget_mib} MiB)")
    for first in range(0, args.schemas, BATCH):
        batch = [str(first), str(min(args.schemas, first + BATCH))]
        lines = subprocess.run([sys.executable, __file__, "--schemas", str(args.schemas), "--batch", *batch],
                               env=env, check=True, capture_output=True, text=True).stdout
        print(lines, end="")
        largest = max([largest] + [float(line.split()[-2]) for line in lines.splitlines()])
    print(f"largest cache size seen: {largest:.1f} MiB of a {args.budget_mib} MiB budget ({folder})")


if __name__ == "__main__":
    main()
