"""Enum benchmark (issue 9): one string enum of K identifier-like values, Qwen2 vocabulary.

For each K and engine a subprocess compiles the set and replays documents
`{"tool": "<value>"}` (Qwen2-tokenized) through a matcher, timing each mask.

pda's grammar is the object frame with the enum as ONE terminal whose pattern is
the alternation of the quoted values — the form the finite-set engine takes over
(`pda.regex.finite_set`, `pda.trie`). It is built by replacing that terminal's pattern in the IR, because
loading a 100,000-alternative terminal through Lark's own grammar parser takes
~50 s; that front-end time is reported apart (`--lark-front-end`). Peers get the
same set as a JSON Schema string enum.

pda compiles as `pda.compile` does, with no warm-up (`--warm`: a second of it,
`Limits.warmup_seconds=1.0`), and without the index snapshot on disk. Columns: front end (grammar object), compile cold (empty disk cache,
vocabulary trie built), compile warm (a second set of the same K in the same
process: the vocabulary trie and the walks shared by content cached), first
mask, per-step mask mean/p50/p99 over all steps, the mean over the documents
after the first (whose steps pay each engine's one-off lazy work), peak RSS
growth of the warm compile, and for pda the size of the finite-set lookup tables
(`pda.trie.join`).

    python bench/enum_bench.py                              # K = 100, 1k, 10k, 100k; all engines
    python bench/enum_bench.py --k 1000 --engines pda --docs 50
    python bench/enum_bench.py --engines pda --warm          # pda with a second of compile-time warm-up
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any, Callable

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import QWEN2_LOGITS_SIZE, PeakMemory, load_qwen2_tokenizer, summarize  # noqa: E402

WORDS = ("get", "set", "user", "profile", "list", "create", "delete", "update", "item", "order",
         "account", "search", "file", "tool", "query", "data", "report", "send", "message", "fetch",
         "batch", "image", "event", "calendar", "invoice", "payment", "schema", "status", "log", "config")
FRAME = 'start: "{\\"tool\\": " TOOL "}"\nTOOL: "\\"x\\""\n'


def enum_values(k: int, seed: int) -> list[str]:
    """k distinct `get_user_profile_v2`-style values."""
    rng = random.Random(seed)
    values: set[str] = set()
    while len(values) < k:
        words = "_".join(rng.choice(WORDS) for _ in range(rng.randint(2, 4)))
        values.add(f"{words}_v{rng.randint(1, 99)}")
    return sorted(values)


def schema(values: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": {"tool": {"type": "string", "enum": values}},
            "required": ["tool"], "additionalProperties": False}


def pda_grammar(values: list[str], via_lark: bool):
    import pda

    pattern = "(?:" + "|".join(re.escape(json.dumps(v)) for v in values) + ")"
    if via_lark:
        alternatives = " | ".join('"' + json.dumps(v).replace('"', '\\"') + '"' for v in values)
        return pda.Grammar.from_lark(FRAME.replace('"\\"x\\""', alternatives))
    g = pda.Grammar.from_lark(FRAME)
    terminals = tuple(dataclasses.replace(t, pattern=pattern, literal=False) if t.name == "TOOL" else t
                      for t in g.ir.terminals)
    return pda.Grammar(dataclasses.replace(g.ir, terminals=terminals))


def run_pda(k: int, docs: list[list[int]], via_lark: bool, warm: bool, collect: bool) -> dict[str, Any]:
    import pda
    from pda.compiler import CompiledGrammar

    tokenizer = load_qwen2_tokenizer()
    vocab = pda.Vocabulary.from_hf(tokenizer)
    out: dict[str, Any] = {}
    for phase, seed in (("cold", k), ("warm", k + 1)):
        t0 = time.perf_counter()
        g = pda_grammar(enum_values(k, seed), via_lark)
        t1 = time.perf_counter()
        with PeakMemory() as mem:
            g.recognizer
            # No warm-up unless --warm; no index snapshot on disk, so a warm set is compiled, not read back.
            compiled = CompiledGrammar(g, vocab, mask_width=QWEN2_LOGITS_SIZE, disk_cache=False,
                                       warmup_seconds=1.0 if warm else 0.0)
        t2 = time.perf_counter()
        out[f"front_end_{phase}_s"] = t1 - t0
        out[f"compile_{phase}_s"] = t2 - t1
        out[f"memory_{phase}_mib"] = mem.growth_mib
    from pda.lexer.terminals import terminal_dfa

    out["lexer_states"] = terminal_dfa(g.ir.terminal_by_name["TOOL"]).n_states
    out["table_mib"] = sum(t.nbytes for t in compiled.index.finite_sets.tables.values()) / 2**20
    values = enum_values(k, k + 1)
    docs = [tokenizer.encode(json.dumps({"tool": v}, separators=(",", ": "))) for v in
            random.Random(0).sample(values, min(len(values), len(docs)))]

    def session(bitmask: np.ndarray) -> tuple[Callable[[], Any], Callable[[int], bool]]:
        m = pda.Matcher(compiled)
        return partial(m.fill_bitmask, bitmask, 0), m.accept_token

    return out | replay(session, docs, vocab.eos_ids, collect)


def replay(new_session: Callable[[np.ndarray], tuple[Callable[[], Any], Callable[[int], bool]]],
           docs: list[list[int]], eos_ids, collect: bool) -> dict[str, Any]:
    """Per step: time the mask, check the document's token is allowed, accept it.

    `new_session(bitmask)` gives a document's `fill()` and `accept(token)`: each engine's
    own bound methods with their arguments bound (`functools.partial`), so every engine
    is timed through the same one call and no adapter. `collect`: a full garbage
    collection first, so that the one the compile's allocations make due does not land
    in a timed step (4-8 ms in pda's process, seen in ~half the runs).
    """
    import gc

    if collect:
        gc.collect()
    words = (QWEN2_LOGITS_SIZE + 31) // 32
    bitmask = np.zeros((1, words), dtype=np.int32)
    flat = bitmask.reshape(-1).view(np.uint32)
    steps, firsts = [], []
    eos = min(eos_ids)
    rejected = 0
    first_doc_steps = 0
    for n, doc in enumerate(docs):
        fill, accept = new_session(bitmask)
        for i, token in enumerate(doc + [eos]):
            t = time.perf_counter_ns()
            fill()
            dt = time.perf_counter_ns() - t
            (firsts if i == 0 else steps).append(dt)
            if not (int(flat[token >> 5]) >> (token & 31)) & 1 or not accept(token):
                rejected += 1
                break
        if n == 0:
            first_doc_steps = len(steps)
    s = summarize(steps)
    # The first document pays each engine's one-off lazy work (lexer tables, first suffix walks).
    later = summarize(steps[first_doc_steps:])
    # Steps of 1 ms and more: on a loaded machine mostly the scheduler (or a full garbage
    # collection), and each adds ~1 µs per ms to a mean over ~1,100 steps; counted to read the mean by.
    stalls = sum(1 for dt in steps if dt >= 1_000_000)
    return {"first_mask_us": sum(firsts) / len(firsts) / 1e3, "step_mean_us": s.mean_us,
            "step_p50_us": s.p50_us, "step_p99_us": s.p99_us, "later_mean_us": later.mean_us,
            "steps": len(steps), "stalls": stalls, "docs_rejected": rejected}


def run_peer(engine: str, k: int, n_docs: int, collect: bool) -> dict[str, Any]:
    tokenizer = load_qwen2_tokenizer()
    out: dict[str, Any] = {}
    for phase, seed in (("cold", k), ("warm", k + 1)):
        text = json.dumps(schema(enum_values(k, seed)))
        with PeakMemory() as mem:
            t = time.perf_counter()
            if engine == "xgrammar":
                import xgrammar as xgr

                if phase == "cold":
                    info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=QWEN2_LOGITS_SIZE)
                    compiler = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=False)
                compiled = compiler.compile_json_schema(text, any_whitespace=True)

                def new_session(bitmask: np.ndarray) -> tuple[Callable[[], Any], Callable[[int], bool]]:
                    import torch

                    m = xgr.GrammarMatcher(compiled)
                    # A torch view of the same buffer, made per document, outside the timed steps.
                    return partial(m.fill_next_token_bitmask, torch.from_numpy(bitmask), 0), m.accept_token
            else:
                import llguidance
                import llguidance.hf

                if phase == "cold":
                    lltok = llguidance.hf.from_tokenizer(tokenizer, n_vocab=QWEN2_LOGITS_SIZE)
                grammar = llguidance.grammar_from("json_schema", text)
                probe = llguidance.LLMatcher(lltok, grammar, log_level=0)
                if probe.is_error():
                    return {"error": probe.get_error()[:200]}

                def new_session(bitmask: np.ndarray) -> tuple[Callable[[], Any], Callable[[int], bool]]:
                    m = llguidance.LLMatcher(lltok, grammar, log_level=0)
                    return partial(m.unsafe_compute_mask_ptr, bitmask.ctypes.data, bitmask.nbytes), m.consume_token
            out[f"compile_{phase}_s"] = time.perf_counter() - t
        out[f"memory_{phase}_mib"] = mem.growth_mib
    values = enum_values(k, k + 1)
    docs = [tokenizer.encode(json.dumps({"tool": v}, separators=(",", ": "))) for v in
            random.Random(0).sample(values, min(len(values), n_docs))]
    return out | replay(new_session, docs, [tokenizer.eos_token_id or 151643], collect)


def worker(engine: str, k: int, docs: int, via_lark: bool, warm: bool, collect: bool) -> None:
    if engine == "pda":
        result = run_pda(k, [[]] * docs, via_lark, warm, collect)
    else:
        result = run_peer(engine, k, docs, collect)
    print("RESULT " + json.dumps(result))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--k", default="100,1000,10000,100000")
    p.add_argument("--engines", default="pda,xgrammar,llguidance")
    p.add_argument("--docs", type=int, default=100, help="documents replayed per (engine, K)")
    p.add_argument("--lark-front-end", action="store_true", help="pda: load the enum through Lark's grammar parser")
    p.add_argument("--warm", action="store_true",
                   help="pda: compile with a second of warm-up (Limits.warmup_seconds=1.0)")
    p.add_argument("--gc-collect", action="store_true",
                   help="every engine: one full garbage collection after compile, before the timed replay")
    p.add_argument("--repeat", type=int, default=1,
                   help="runs per (engine, K), each in its own process; the row is the run with the median "
                        "step mean, and the last column lists every run's mean (stalls on a loaded machine)")
    p.add_argument("--timeout", type=int, default=900)
    p.add_argument("--worker", nargs=2, metavar=("ENGINE", "K"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args.worker[0], int(args.worker[1]), args.docs, args.lark_front_end, args.warm, args.gc_collect)
        return
    print_header()
    for k in [int(x) for x in args.k.split(",")]:
        for engine in args.engines.split(","):
            runs = [run_worker(engine, k, args) for _ in range(args.repeat)]
            done = sorted((r for r in runs if "error" not in r), key=lambda r: r["step_mean_us"])
            result = done[len(done) // 2] if done else runs[0]
            if len(runs) > 1 and done:
                result = result | {"run_means": " / ".join(f"{r['step_mean_us']:.1f}" for r in runs if "error" not in r)}
            print_row(k, engine, result, flush=True)


def run_worker(engine: str, k: int, args: argparse.Namespace) -> dict[str, Any]:
    """One (engine, K) run in a fresh process with an empty disk cache."""
    env = dict(os.environ, PDA_CACHE_DIR=tempfile.mkdtemp(prefix="pda-enum-bench-"))
    cmd = [sys.executable, __file__, "--worker", engine, str(k), "--docs", str(args.docs)]
    if args.lark_front_end:
        cmd.append("--lark-front-end")
    if args.warm:
        cmd.append("--warm")
    if args.gc_collect:
        cmd.append("--gc-collect")
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {args.timeout} s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    return json.loads(lines[-1][7:]) if lines else {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1][:200]}


HEADER = ("| K | engine | front end s | compile cold s | compile warm s | first mask µs | step mean µs "
          "| step p50 µs | step p99 µs | mean after doc 1 µs | steps ≥ 1 ms | memory MiB | enum table MiB | enum DFA states "
          "| rejected | runs' means µs |")


def print_header() -> None:
    print(HEADER)
    print("|---" * (HEADER.count("|") - 1) + "|", flush=True)


def print_row(k: int, engine: str, r: dict[str, Any], *, flush: bool = False) -> None:

    def f(key: str, fmt: str = "{:.3f}") -> str:
        v = r.get(key)
        return "–" if v is None else fmt.format(v)

    if "error" in r:
        print(f"| {k:,} | {engine} | {r['error']} |", flush=flush)
        return
    print(f"| {k:,} | {engine} | {f('front_end_warm_s')} | {f('compile_cold_s')} | {f('compile_warm_s')} "
          f"| {f('first_mask_us', '{:.0f}')} | {f('step_mean_us', '{:.1f}')} | {f('step_p50_us', '{:.1f}')} "
          f"| {f('step_p99_us', '{:.0f}')} | {f('later_mean_us', '{:.1f}')} | {f('stalls', '{}')} | {f('memory_warm_mib', '{:.0f}')} "
          f"| {f('table_mib', '{:.1f}')} | {f('lexer_states', '{:,}')} | {f('docs_rejected', '{}')} | {r.get('run_means', '–')} |", flush=flush)


if __name__ == "__main__":
    main()
