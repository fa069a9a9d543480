"""Structural-tag benchmark: per-step masks inside free text and inside tags, pda beside XGrammar.

Three specs in XGrammar's structural-tag format, each given as is to both engines
(`pda.Grammar.from_structural_tag`, `xgrammar.Grammar.from_structural_tag`):

* `tools`: prose with `<function=NAME>ARGS</function>` calls to two tools (triggered tags);
* `think`: `<think>` free reasoning `</think>`, then one of 1,000 labels;
* `no_call`: free text that may not contain `<function=`.

Documents are built from a fixed word list (seeded), Qwen2-tokenized canonically and
replayed token by token: each mask is filled into a preallocated bitmask (timed), the
token's bit checked, the token accepted. Steps are split by where the text so far ends:
inside a tag (between a begin and its end) or in free text; then the same documents are
replayed again (warm: every state met before). Peak RSS is the worker process's high-water
mark after each spec. Each engine runs in its own subprocess with an empty `PDA_CACHE_DIR`
and compiles cold (after one trivial compile that pays the process's one-off costs: the
vocabulary's trie and tables).

    python bench/structural_bench.py
    python bench/structural_bench.py --docs 40 --engines pda
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import QWEN2_LOGITS_SIZE, load_qwen2_tokenizer, machine_description, now_ns  # noqa: E402
from bench.common import percentile, run_cold_worker  # noqa: E402

WORDS = ("the quick answer depends on what you need here so let me look at it carefully before "
         "replying with a short plan and then a result for each step of the question").split()
LOOKUP = {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
          "required": ["query"], "additionalProperties": False}
CONVERT = {"type": "object", "properties": {"amount": {"type": "number"}, "unit": {"enum": ["km", "mi"]}},
           "required": ["amount", "unit"], "additionalProperties": False}
CLASSES = [f"class_{i}" for i in range(1000)]

SPECS: dict[str, dict[str, Any]] = {
    "tools": {"type": "structural_tag", "format": {
        "type": "triggered_tags", "triggers": ["<function="],
        "tags": [{"type": "tag", "begin": f"<function={name}>", "end": "</function>",
                  "content": {"type": "json_schema", "json_schema": schema}}
                 for name, schema in (("lookup", LOOKUP), ("convert", CONVERT))]}},
    "think": {"type": "structural_tag", "format": {"type": "sequence", "elements": [
        {"type": "tag", "begin": "<think>", "end": "</think>", "content": {"type": "any_text"}},
        {"type": "or", "elements": [{"type": "const_string", "value": c} for c in CLASSES]}]}},
    "no_call": {"type": "structural_tag", "format": {"type": "any_text", "excludes": ["<function="]}},
}


def _prose(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def documents(name: str, count: int, seed: int = 0) -> list[tuple[str, list[tuple[int, int]]]]:
    """`count` texts of spec `name`, each with the character spans that are inside tags."""
    rng = random.Random(f"structural:{name}:{seed}")
    out = []
    for _ in range(count):
        parts: list[tuple[str, bool]] = []
        if name == "tools":
            for _ in range(rng.randint(1, 3)):
                parts.append((_prose(rng, rng.randint(5, 30)) + " ", False))
                args = ({"query": _prose(rng, 4), "limit": rng.randint(1, 50)} if rng.random() < 0.5
                        else {"amount": round(rng.uniform(0, 500), 2), "unit": rng.choice(["km", "mi"])})
                tool = "lookup" if "query" in args else "convert"
                parts.append((f"<function={tool}>{json.dumps(args)}</function>", True))
            parts.append((" " + _prose(rng, rng.randint(3, 15)), False))
        elif name == "think":
            parts.append(("<think>" + _prose(rng, rng.randint(20, 80)) + "</think>", True))
            parts.append((rng.choice(CLASSES), False))
        else:
            parts.append((_prose(rng, rng.randint(30, 120)), False))
        spans, at = [], 0
        for text, inside in parts:
            if inside:
                spans.append((at, at + len(text)))
            at += len(text)
        out.append(("".join(t for t, _ in parts), spans))
    return out


class _Pda:
    def __init__(self, tokenizer: Any) -> None:
        import numpy as np

        import pda

        self.pda, self.np = pda, np
        self.vocab = pda.Vocabulary.from_hf(tokenizer)
        self.bitmask = np.zeros((1, -(-QWEN2_LOGITS_SIZE // 32)), dtype=np.int32)

    def compile(self, spec: dict) -> Any:
        return self.pda.compile(self.pda.Grammar.from_structural_tag(spec), self.vocab, mask_width=QWEN2_LOGITS_SIZE)

    def session(self, compiled: Any) -> tuple[Any, Any, Any]:
        m, bitmask = self.pda.Matcher(compiled), self.bitmask
        return lambda: m.fill_bitmask(bitmask, 0), m.accept_token, bitmask


class _XGrammar:
    def __init__(self, tokenizer: Any) -> None:
        import xgrammar as xgr

        self.xgr = xgr
        info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=QWEN2_LOGITS_SIZE)
        self.compiler = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=False)
        self.bitmask = xgr.allocate_token_bitmask(1, QWEN2_LOGITS_SIZE)

    def compile(self, spec: dict) -> Any:
        return self.compiler.compile_grammar(self.xgr.Grammar.from_structural_tag(json.dumps(spec)))

    def session(self, compiled: Any) -> tuple[Any, Any, Any]:
        m, bitmask = self.xgr.GrammarMatcher(compiled), self.bitmask
        return lambda: m.fill_next_token_bitmask(bitmask, 0), m.accept_token, bitmask.numpy()


def _replay(engine: Any, compiled: Any, tokens: list[int], eos: int) -> list[int] | None:
    """Each mask's fill time (ns), or None when the engine refuses a token of the document."""
    fill, accept, words = engine.session(compiled)
    times = []
    for tok in [*tokens, eos]:
        t0 = now_ns()
        fill()
        times.append(now_ns() - t0)
        if not (int(words[0, tok >> 5]) >> (tok & 31)) & 1 or (tok != eos and not accept(tok)):
            return None
    return times


ENGINES = {"pda": _Pda, "xgrammar": _XGrammar}


def run_worker(engine_name: str, n_docs: int) -> dict[str, Any]:
    """Compile each spec and replay its documents with one engine, in this process."""
    tokenizer = load_qwen2_tokenizer()
    try:
        engine = ENGINES[engine_name](tokenizer)
    except ImportError as exc:
        return {"engine": engine_name, "skipped": f"import failed: {exc}"}
    eos = tokenizer.eos_token_id
    engine.compile({"type": "structural_tag", "format": {"type": "const_string", "value": "x"}})  # one-off costs of a first compile in a process
    rows = []
    for name, spec in SPECS.items():
        row: dict[str, Any] = {"spec": name, "free": [], "tag": [], "rejected": 0}
        t0 = now_ns()
        try:
            compiled = engine.compile(spec)
        except Exception as exc:  # an engine's own refusal of a spec: reported, not fatal
            row["error"] = f"{type(exc).__name__}: {str(exc)[:120]}"
            rows.append(row)
            continue
        row["compile_ms"] = (now_ns() - t0) / 1e6
        docs = [(tokenizer.encode(text, add_special_tokens=False), spans) for text, spans in documents(name, n_docs)]
        for tokens, spans in docs:
            times = _replay(engine, compiled, tokens, eos)
            if times is None:
                row["rejected"] += 1
                continue
            at = 0
            for tok, dt in zip([*tokens, eos], times):
                inside = any(a < at < b for a, b in spans)  # the text so far ends inside a tag
                row["tag" if inside else "free"].append(dt / 1e3)
                at += len(tokenizer.decode([tok])) if tok != eos else 0
        # warm: the same documents again on the same compiled grammar (every state visited before)
        row["warm"] = [dt / 1e3 for tokens, _ in docs for dt in (_replay(engine, compiled, tokens, eos) or [])]
        row["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        rows.append(row)
    return {"engine": engine_name, "rows": rows}


def _cells(values: list[float]) -> str:
    if not values:
        return "–"
    values = sorted(values)
    return f"{sum(values) / len(values):,.1f} / {percentile(values, 50):,.1f} / {percentile(values, 99):,.1f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=20, help="documents per spec")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--result-file", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        args.result_file.write_text(json.dumps(run_worker(args.worker, args.docs)))
        return 0
    print(machine_description(), f"; Qwen2 vocabulary; {args.docs} documents per spec\n")
    print("| spec | engine | compile ms | cold, free text: mean / p50 / p99 µs | cold, in tags | warm, every step "
          "| peak RSS MiB | rejected |")
    print("|---|---|---|---|---|---|---|---|")
    for engine in args.engines.split(","):
        result, error = run_cold_worker(Path(__file__), ["--worker", engine, "--docs", str(args.docs)])
        if result is None or "skipped" in result:
            print(f"| all | {engine} | skipped: {error or result['skipped']} | | | | | |")
            continue
        for row in result["rows"]:
            if "error" in row:
                print(f"| {row['spec']} | {engine} | {row['error']} | | | | | |")
                continue
            print(f"| {row['spec']} | {engine} | {row['compile_ms']:,.1f} | {_cells(row['free'])} | "
                  f"{_cells(row['tag'])} | {_cells(row['warm'])} | {row['peak_mib']:,.0f} | {row['rejected']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
