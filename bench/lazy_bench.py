"""Lazy terminal DFAs (`pda.regex.lazy`) against eager ones (`pda.regex.dfa`): what a terminal costs.

Per regex terminal of a seeded JSONSchemaBench sample (5 schemas per category, one terminal per
pattern): the eager DFA's build time and states, and the lazy DFA's build time, the time to step
every Qwen2 token from its start state in one `run_many` call (first pass: states made as met;
second pass: every transition already filled) and the states that made. Each time is the least of
`--rounds` rounds, each on a fresh arena. Then Github_hard---o79409's largest string
terminal (every token from three states: the start and after two bytes of a lexeme) and `.{50000}`.
Regex translation is warmed first (both paths share it); every lazy DFA lives on one arena, as in
serving.

    .venv/bin/python bench/lazy_bench.py              # the whole sample
    .venv/bin/python bench/lazy_bench.py --terminals 100
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import warnings
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pda  # noqa: E402
from bench.common import CORPUS, load_qwen2_tokenizer, machine_description, percentile  # noqa: E402
from pda.errors import LimitExceeded  # noqa: E402
from pda.grammar.ir import TerminalDef  # noqa: E402
from pda.kernels.derive import Arena  # noqa: E402
from pda.regex.dfa import build_lexer_dfa, sample_from_dfa  # noqa: E402
from pda.regex.lazy import compile_lazy  # noqa: E402
from pda.regex.syntax import translate  # noqa: E402

SCHEMAS = CORPUS / "jsonschemabench" / "schemas"


def schema_terminals(per_category: int) -> list[TerminalDef]:
    """The regex terminals of a seeded sample of schemas, one per (pattern, flags, lazy)."""
    found: dict[tuple, TerminalDef] = {}
    for path in sorted(SCHEMAS.glob("*.jsonl")):
        rows = [json.loads(line) for line in path.open()]
        for row in random.Random(f"lazy-dfa:{path.stem}").sample(rows, min(per_category, len(rows))):
            try:
                grammar = pda.Grammar.from_json_schema(row["schema"])
            except pda.PdaError:
                continue
            for t in grammar.ir.terminals:
                if t.automaton is None:
                    found.setdefault((t.pattern, t.flags, t.lazy), t)
    return list(found.values())


def o79409_terminal() -> TerminalDef:
    """Github_hard---o79409's terminal with the longest pattern (its counted string)."""
    for line in (SCHEMAS / "Github_hard.jsonl").open():
        row = json.loads(line)
        if row["id"] == "Github_hard---o79409":
            grammar = pda.Grammar.from_json_schema(row["schema"])
            return max((t for t in grammar.ir.terminals if t.automaton is None), key=lambda t: len(t.pattern))
    raise SystemExit("Github_hard---o79409 is not in the corpus")


def ms(ns: int) -> float:
    return ns / 1e6


def measure(t: TerminalDef, tokens: list[bytes], arena: Arena, starts: int = 1) -> dict:
    """One terminal once: eager build (or its refusal), lazy build on `arena`, two passes of every token."""
    translate(t.pattern, t.flags, name=t.name)  # warm: both paths read the memoised IR
    row: dict = {}
    t0 = time.perf_counter_ns()
    try:
        eager = build_lexer_dfa([t])
        row["eager_states"] = eager.n_states
    except LimitExceeded:
        eager = None
        row["eager_states"] = None
    row["eager_ns"] = time.perf_counter_ns() - t0
    t0 = time.perf_counter_ns()
    dfa = compile_lazy(t.pattern, t.flags, name=t.name, lazy=t.lazy, arena=arena)
    row["lazy_build_ns"] = time.perf_counter_ns() - t0
    states = [0]
    if starts > 1:
        lexeme = sample_from_dfa(eager, rng=random.Random(0)) if eager is not None else b"x" * starts
        states += [dfa.run(0, lexeme[:k]) for k in range(1, starts)]
    for label in ("first_ns", "second_ns"):
        t0 = time.perf_counter_ns()
        for s in states:
            dfa.run_many(s, tokens)
        row[label] = time.perf_counter_ns() - t0
    row["lazy_states"] = dfa.n_states
    return row


def best(rounds: list[list[dict]]) -> list[dict]:
    """Per terminal, the least of each time over the rounds (a shared machine's noise only adds)."""
    out = [{k: min(r[k] for r in runs) if k.endswith("_ns") else runs[0][k] for k in runs[0]} for runs in zip(*rounds)]
    for row, runs in zip(out, zip(*rounds)):
        row["eager_cold_ns"] = runs[0]["eager_ns"]  # the first round's: leaf DFAs not memoised yet
    return out


def line(label: str, values: list[float], fmt: str = "{:.2f}") -> str:
    values = sorted(values)
    return f"| {label} | {fmt.format(sum(values))} | {fmt.format(percentile(values, 50))} | {fmt.format(values[-1])} |"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-category", type=int, default=5, help="schemas per category (seeded)")
    ap.add_argument("--terminals", type=int, default=0, help="at most this many terminals (0: all)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds; each time is the least over them")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    vocab = pda.Vocabulary.from_hf(load_qwen2_tokenizer())
    tokens = [t for t in vocab.tokens if t]  # (special tokens have no text: None)
    terms = schema_terminals(args.per_category)
    if args.terminals:
        terms = terms[: args.terminals]
    # Each round on a fresh arena shared by its terminals; eager builds after the first find the leaf
    # DFAs memoised (`dfa.LEAF_DFAS_MAX_BYTES`), as in a serving process.
    rounds, arena = [], Arena()
    for _ in range(args.rounds):
        arena = Arena()
        rounds.append([measure(t, tokens, arena) for t in terms])
    rows = best(rounds)
    print(f"# lazy vs eager terminal DFAs ({machine_description()})")
    print(f"{len(rows)} terminals of {args.per_category} schemas a category; {len(tokens):,} Qwen2 tokens stepped from each start\n")
    print("| per terminal | total | p50 | max |")
    print("|---|---|---|---|")
    print(line("eager build (first round: leaf memo cold), ms", [ms(r["eager_cold_ns"]) for r in rows]))
    print(line("eager build (least: leaf memo warm), ms", [ms(r["eager_ns"]) for r in rows]))
    print(line("eager states", [r["eager_states"] or 0 for r in rows], "{:,.0f}"))
    print(line("lazy build, ms", [ms(r["lazy_build_ns"]) for r in rows]))
    print(line("lazy, every token, first pass, ms", [ms(r["first_ns"]) for r in rows]))
    print(line("lazy, every token, filled, ms", [ms(r["second_ns"]) for r in rows]))
    print(line("lazy states made", [r["lazy_states"] for r in rows], "{:,.0f}"))
    new = sum(r["lazy_states"] for r in rows)
    extra = sum(r["first_ns"] - r["second_ns"] for r in rows)
    print(f"\nfirst pass minus filled pass over {new:,} states: {extra / max(new, 1) / 1000:.1f} us a new state "
          f"(its derivative, emptiness check and row); arena {arena.nbytes / 2**20:.1f} MiB, {arena.n_terms:,} terms\n")
    print("| terminal | eager build ms (cold, warm) | eager states | lazy build ms | tokens from | first pass ms | filled ms | lazy states | arena MiB |")
    print("|---|---|---|---|---|---|---|---|---|")
    big = [("o79409's string", o79409_terminal(), 3), (".{50000}", TerminalDef(name="DOTS", pattern=".{50000}"), 1)]
    for label, t, starts in big:
        runs = []
        for _ in range(args.rounds):
            own = Arena()
            runs.append([measure(t, tokens, own, starts)])
        (r,) = best(runs)
        eager = "refused" if r["eager_states"] is None else f"{r['eager_states']:,}"
        print(f"| {label} | {ms(r['eager_cold_ns']):.1f}, {ms(r['eager_ns']):.1f} | {eager} | {ms(r['lazy_build_ns']):.2f} | {starts} states | "
              f"{ms(r['first_ns']):.1f} | {ms(r['second_ns']):.1f} | {r['lazy_states']:,} | {own.nbytes / 2**20:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
