"""Per-step cost of grammar-constrained decoding through transformers' logits-processor hook.

What is timed, per decoding step, on a batch of B rows replaying real JSON
documents (canonical Qwen2 tokens, so every row follows a grammar-valid path):

- `pda` — `GrammarLogitsProcessor.__call__`: sync matchers with `input_ids`
  (accept each row's newest token), fill the packed bitmask, apply it to the
  scores. Reported cold (first pass: masks computed) and warm (second pass over
  the same documents with a fresh processor: masks come from the compiled
  grammar's memo, the steady state of a server).
- `apply` variants alone on the same masks: pda's packed apply (numpy unpack
  to the banned set + `masked_fill_`), the torch shift-unpack to a dense bool
  mask (`pda.integrations.bitmask.apply_token_bitmask_inplace`), and applying a
  precomputed dense bool mask (the floor: no unpacking at all).
- `xgrammar` — `xgrammar.contrib.hf.LogitsProcessor` on the same steps, when installed.
- `model` — one KV-cached forward pass + sampling of the tiny Qwen2 per step,
  the unconstrained baseline the overhead is compared against.

Run: `python bench/logits_processor_bench.py [--batch 1 16] [--docs N] [--threads T]`.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from typing import Any

import numpy as np
import torch

import pda
from pda.generation import KVCachedForward, sample_token
from pda.vocab.lookups import vocabulary_for
from pda.integrations.bitmask import apply_token_bitmask_inplace, unpack_bitmask
from pda.integrations.transformers import GrammarLogitsProcessor, apply_packed_bitmask_
from pda.demo.models import load_tiny_qwen2


def random_json(rng: random.Random, depth: int = 0) -> Any:
    """A small random JSON value with the usual shapes (objects, arrays, strings, numbers)."""
    if depth == 0:  # a document (XGrammar's built-in JSON grammar takes objects and arrays only)
        kind = rng.choice(["obj", "arr"])
    else:
        kind = rng.choice(["obj", "arr", "str", "num", "lit"] if depth < 3 else ["str", "num", "lit"])
    if kind == "obj":
        return {rng.choice(["id", "name", "tags", "price", "items", "ok", "city"]) + str(i): random_json(rng, depth + 1)
                for i in range(rng.randint(1, 4))}
    if kind == "arr":
        return [random_json(rng, depth + 1) for _ in range(rng.randint(1, 4))]
    if kind == "str":
        return " ".join(rng.choice(["red", "fox", "naïve", "東京", "a\"b", "x\\y", "line\n"]) for _ in range(rng.randint(1, 4)))
    if kind == "num":
        return rng.choice([rng.randint(-1000, 10**6), round(rng.uniform(-1e3, 1e3), 3)])
    return rng.choice([True, False, None])


def documents(tok: Any, n: int, seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    docs = [json.dumps(random_json(rng), ensure_ascii=False, indent=rng.choice([None, 2])) for _ in range(n)]
    return [tok(d, add_special_tokens=False)["input_ids"] for d in docs]


def _ms(samples: list[float]) -> str:
    return f"median {statistics.median(samples) * 1e3:7.3f} ms  p90 {np.percentile(samples, 90) * 1e3:7.3f} ms"


def replay(processor_factory: Any, rows: list[list[int]], prompt: list[int], width: int) -> list[float]:
    """Step times of a processor fed `rows` token by token (all rows advance together)."""
    steps = min(len(r) for r in rows)
    proc = processor_factory()
    times = []
    scores = torch.zeros(len(rows), width)
    for t in range(steps + 1):
        ids = torch.tensor([prompt + r[:t] for r in rows])
        scores.normal_()
        started = time.perf_counter()
        proc(ids, scores)
        times.append(time.perf_counter() - started)
    return times


def bench_apply(bitmask: np.ndarray, width: int, repeats: int = 50) -> dict[str, list[float]]:
    scores = torch.zeros(bitmask.shape[0], width)
    dense = torch.from_numpy(unpack_bitmask(bitmask, width))
    out: dict[str, list[float]] = {"pda packed (numpy unpack)": [], "torch shift-unpack to bool": [],
                                   "precomputed dense bool": []}
    for _ in range(repeats):
        scores.normal_()
        s = time.perf_counter()
        apply_packed_bitmask_(scores, bitmask)
        out["pda packed (numpy unpack)"].append(time.perf_counter() - s)
        scores.normal_()
        s = time.perf_counter()
        apply_token_bitmask_inplace(scores, torch.from_numpy(bitmask))
        out["torch shift-unpack to bool"].append(time.perf_counter() - s)
        scores.normal_()
        s = time.perf_counter()
        scores.masked_fill_(~dense, float("-inf"))
        out["precomputed dense bool"].append(time.perf_counter() - s)
    return out


def model_step_times(model: Any, prompt: list[int], batch: int, steps: int) -> list[float]:
    """Unconstrained decoding: one batched forward + sampling per step."""
    forward = KVCachedForward(model)
    generator = torch.Generator().manual_seed(0)
    times = []
    with torch.inference_mode():
        if batch == 1:
            scores = forward(prompt)
            for _ in range(steps):
                s = time.perf_counter()
                scores = forward([sample_token(scores, 1.0, None, None, generator)])
                times.append(time.perf_counter() - s)
            return times
        ids = torch.tensor([prompt] * batch)
        out = model(input_ids=ids, use_cache=True)
        cache = getattr(out, forward.cache_arg)
        for _ in range(steps):
            s = time.perf_counter()
            nxt = torch.multinomial(torch.softmax(out.logits[:, -1].float(), -1), 1, generator=generator)
            kwargs = {forward.cache_arg: cache}
            out = model(input_ids=nxt, use_cache=True, logits_to_keep=1, **kwargs)
            cache = getattr(out, forward.cache_arg)
            times.append(time.perf_counter() - s)
    return times


def xgrammar_factory(tok: Any, width: int) -> Any:
    try:
        import xgrammar as xgr
        import xgrammar.contrib.hf  # noqa: F401
    except ImportError:
        return None
    info = xgr.TokenizerInfo.from_huggingface(tok, vocab_size=width)
    compiled = xgr.GrammarCompiler(info).compile_builtin_json_grammar()
    return lambda: xgr.contrib.hf.LogitsProcessor(compiled)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--docs", type=int, default=64, help="JSON documents replayed (default 64)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    model, tok = load_tiny_qwen2()
    width = model.config.vocab_size
    vocab = vocabulary_for(tok)
    started = time.perf_counter()
    cg = pda.compile(pda.Grammar.load("json"), vocab, mask_width=width)
    print(f"pda compile json.lark for {vocab.size} tokens: {time.perf_counter() - started:.2f} s")
    xgr = xgrammar_factory(tok, width)
    prompt = tok("JSON:")["input_ids"]
    docs = documents(tok, args.docs, seed=0)
    print(f"{len(docs)} JSON documents, {sum(map(len, docs))} tokens; logits width {width}; "
          f"torch threads {args.threads}")

    for batch in args.batch:
        print(f"\n== batch {batch}")
        groups = [docs[i:i + batch] for i in range(0, len(docs) - batch + 1, batch)] or [docs[:batch]]
        cold: list[float] = []
        warm: list[float] = []
        xg: list[float] = []
        for rows in groups:
            cold += replay(lambda: GrammarLogitsProcessor(cg), rows, prompt, width)
        for rows in groups:
            warm += replay(lambda: GrammarLogitsProcessor(cg), rows, prompt, width)
            if xgr is not None:
                xg += replay(xgr, rows, prompt, width)
        steps = len(warm)
        base = model_step_times(model, prompt, batch, 32)
        print(f"  tiny model, unconstrained step   {_ms(base)}")
        print(f"  pda processor, cold              {_ms(cold)}   ({steps} steps)")
        print(f"  pda processor, warm              {_ms(warm)}   "
              f"= {100 * statistics.median(warm) / statistics.median(base):.1f}% of the model step")
        if xgr is not None:
            print(f"  xgrammar.contrib.hf processor    {_ms(xg)}   "
                  f"= {100 * statistics.median(xg) / statistics.median(base):.1f}% of the model step")
        else:
            print("  xgrammar: not installed (pip install xgrammar) - skipped")
        proc = GrammarLogitsProcessor(cg)
        half = min(map(len, groups[0])) // 2
        ids = torch.tensor([prompt + r[:half] for r in groups[0]])
        proc(torch.tensor([prompt] * len(groups[0])), torch.zeros(len(groups[0]), width))
        for t in range(1, half):
            proc.sync(torch.tensor([prompt + r[:t] for r in groups[0]]))
        bitmask = proc.fill_bitmask(ids, width).copy()
        for name, times in bench_apply(bitmask, width).items():
            print(f"  apply only: {name:<28} {_ms(times)}")


if __name__ == "__main__":
    main()
