"""`pda demo`: constrained generation end to end, with no download.

Builds (once, then loads from the cache) a tiny randomly initialised Qwen2 around
the real Qwen2 tokenizer, generates with the shipped JSON and SQLite grammars, with
two small fixed-structure grammars and with think-then-answer over 1,000 labels (a
structural tag with a reasoning budget), checks every complete output with a
real parser (`json.loads`, SQLite's own `EXPLAIN` against a schema made here),
checks every cut output is a viable prefix, and prints what the constraint costs
per token next to unconstrained decoding. `--model PATH` uses a local model.

A random model writes nonsense, and nonsense inside a JSON string or a SQL
identifier rarely ends within a few dozen tokens: most samples of the open
grammars are cut (and reported as cut); the fixed-structure grammars finish.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import Any

from pda.compiler import CompiledGrammar
from pda.generation import GenerationResult, KVCachedForward, compile_for, generate, sample_token
from pda.vocab.lookups import vocabulary_for
from pda.grammar.grammar import Grammar

SCHEMA = """
CREATE TABLE people(id INTEGER PRIMARY KEY, name TEXT, age INTEGER, city TEXT);
CREATE TABLE pets(id INTEGER PRIMARY KEY, owner INTEGER REFERENCES people(id), kind TEXT, name TEXT);
"""
# Queries over SCHEMA only: every complete sentence runs through sqlite3's EXPLAIN.
SCHEMA_SQL = r"""
start: "SELECT " cols{PEOPLE_COL} " FROM people" where{PEOPLE_COL}? order{PEOPLE_COL}? limit?
     | "SELECT " cols{PET_COL} " FROM pets" where{PET_COL}? order{PET_COL}? limit?
cols{c}: "*" | "count(*)" | c (", " c)*
where{c}: " WHERE " cond{c} (" AND " cond{c})?
cond{c}: c " " OP " " (INT | STR)
order{c}: " ORDER BY " c (" ASC" | " DESC")?
limit: " LIMIT " INT
OP: "=" | "<" | ">" | "<=" | ">=" | "<>"
PEOPLE_COL: "id" | "name" | "age" | "city"
PET_COL: "id" | "owner" | "kind" | "name"
INT: /[1-9][0-9]{0,2}/
STR: /'[a-z]{1,8}'/
"""
PERSON_JSON = r"""
start: "{\"name\": \"" NAME "\", \"age\": " AGE ", \"pets\": [" (PET (", " PET)*)? "]}"
NAME: /[A-Z][a-z]{1,10}/
AGE: /[1-9][0-9]?/
PET: "\"cat\"" | "\"dog\"" | "\"fish\""
"""


def _sqlite_check(text: str) -> None:
    db = sqlite3.connect(":memory:")
    db.executescript(SCHEMA)
    db.execute("EXPLAIN " + text)


def _show(text: str, width: int = 110) -> str:
    shown = json.dumps(text, ensure_ascii=False)
    return shown if len(shown) <= width else shown[: width - 3] + "..."


def _unconstrained_ms_per_token(model: Any, prompt_ids: list[int], n: int, seed: int) -> float:
    """The same KV-cached forward + sample loop with no grammar: the baseline per token."""
    import torch

    forward = KVCachedForward(model)
    generator = torch.Generator().manual_seed(seed)
    with torch.inference_mode():
        pending = prompt_ids
        scores = forward(pending)
        started = time.perf_counter()
        for _ in range(n):
            pending = [sample_token(scores, 1.0, None, None, generator)]
            scores = forward(pending)
    return (time.perf_counter() - started) * 1000 / n


def _run(
    title: str,
    model: Any,
    tokenizer: Any,
    grammar: CompiledGrammar,
    prompt: str,
    check: Callable[[str], None],
    check_name: str,
    *,
    samples: int,
    max_new_tokens: int,
    seed: int,
    jump_forward: bool = True,
) -> list[GenerationResult]:
    print(f"\n== {title}")
    results = []
    for k in range(samples):
        r = generate(model, tokenizer, grammar, prompt, max_new_tokens=max_new_tokens, seed=seed + k,
                     jump_forward=jump_forward)
        results.append(r)
        if r.terminated:
            check(r.text)
            status = f"complete, {check_name}: ok"
        else:
            if not grammar.grammar.accepts_prefix(r.text):
                raise AssertionError(f"pda demo: a cut output is not a viable prefix: {r.text!r}")
            status = f"cut at {max_new_tokens} tokens: unterminated, a valid prefix"
        print(f"  [{k}] {_show(r.text)}")
        print(f"      {status}; {len(r.token_ids)} tokens, {r.forward_passes} forward passes, "
              f"{r.forced_tokens} forced")
    return results


def demo_main(argv: Sequence[str]) -> int:
    """Run the demo; 0 when every complete output parsed and every cut one is a valid prefix."""
    from pda.cli import command_parser, positive_int, run_command

    parser = command_parser("pda demo", __doc__.split("\n\n")[0])
    parser.add_argument("--model", default="tiny",
                        help="a local transformers model folder (default: tiny, the tiny random Qwen2)")
    parser.add_argument("--device", help="torch device (default: cpu)")
    parser.add_argument("--samples", type=positive_int, default=3, help="samples per grammar (default 3)")
    parser.add_argument("--max-new-tokens", type=positive_int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=positive_int, help="torch intra-op threads (default: torch's)")
    args = parser.parse_args(argv)
    return run_command(parser.prog, lambda: _demo(args))


def _demo(args: argparse.Namespace) -> int:
    import torch

    from pda.cli import load_model

    if args.threads:
        torch.set_num_threads(args.threads)
    started = time.perf_counter()
    model, tokenizer = load_model(args.model, device=args.device)
    vocab = vocabulary_for(tokenizer)
    print(f"model: {'tiny random Qwen2 (' + str(sum(p.numel() for p in model.parameters()) // 10**6) + 'M parameters)' if args.model == 'tiny' else args.model}, "
          f"logits width {model.config.vocab_size}; tokenizer: {vocab!r}  [{time.perf_counter() - started:.1f} s]")
    started = time.perf_counter()
    grammars = {
        "json": compile_for(Grammar.load("json"), tokenizer, model),
        "sqlite": compile_for(Grammar.load("sqlite"), tokenizer, model),
        "person": compile_for(Grammar.from_lark(PERSON_JSON, source="<demo person>"), tokenizer, model),
        "schema_sql": compile_for(Grammar.from_lark(SCHEMA_SQL, source="<demo sql>"), tokenizer, model),
    }
    print(f"compiled 4 grammars for {vocab.size} tokens  [{time.perf_counter() - started:.1f} s]")

    def chat(text: str) -> str:
        if getattr(tokenizer, "chat_template", None):
            return tokenizer.apply_chat_template([{"role": "user", "content": text}], tokenize=False,
                                                 add_generation_prompt=True)
        return text + "\n"

    n, budget, seed = args.samples, args.max_new_tokens, args.seed
    runs: list[GenerationResult] = []
    runs += _run("JSON (pda/grammars/json.lark), sampled at temperature 1", model, tokenizer, grammars["json"],
                 chat("Describe a cat as JSON."), json.loads, "json.loads", samples=n, max_new_tokens=budget,
                 seed=seed)
    runs += _run("SQLite (pda/grammars/sqlite.lark)", model, tokenizer, grammars["sqlite"],
                 chat("Write one SQLite statement."), _sqlite_check, "sqlite3 EXPLAIN", samples=n,
                 max_new_tokens=budget, seed=seed)
    runs += _run("SQL over the demo's schema (people, pets)", model, tokenizer, grammars["schema_sql"],
                 chat("Query the people table."), _sqlite_check, "sqlite3 EXPLAIN", samples=n,
                 max_new_tokens=budget, seed=seed)
    person = _run("JSON with fixed keys, jump-forward on", model, tokenizer, grammars["person"],
                  chat("A person as JSON."), json.loads, "json.loads", samples=n, max_new_tokens=budget,
                  seed=seed)
    plain = [generate(model, tokenizer, grammars["person"], chat("A person as JSON."), max_new_tokens=budget,
                      seed=seed + k, jump_forward=False) for k in range(n)]
    runs += person + plain
    saved = sum(p.forward_passes for p in plain) - sum(p.forward_passes for p in person)
    print(f"  jump-forward: {sum(p.forward_passes for p in person)} forward passes for these {n} samples, "
          f"{sum(p.forward_passes for p in plain)} without it ({saved} saved)")

    labels = [f"topic_{i:03d}" for i in range(1000)]
    think = Grammar.from_structural_tag({"type": "sequence", "elements": [
        {"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>\n"},
        {"type": "or", "elements": [{"type": "const_string", "value": v} for v in labels]}]})

    def labelled(text: str) -> None:
        thought, _, label = text.partition("</think>\n")
        if not thought.startswith("<think>") or label not in labels:
            raise AssertionError(f"pda demo: not a thought and a label: {text!r}")

    reasoned = []
    print("\n== Think, then one of 1,000 labels (a structural tag; reasoning budget 8 tokens, jump-forward on)")
    for k in range(n):
        for jump in (True, False):
            r = generate(model, tokenizer, think, chat("Classify this text."), max_new_tokens=budget, seed=seed + k,
                         jump_forward=jump, reasoning_budget=8, reasoning=("<think>", "</think>\n"))
            if r.terminated:
                labelled(r.text)
            elif not think.accepts_prefix(r.text):
                raise AssertionError(f"pda demo: a cut output is not a viable prefix: {r.text!r}")
            reasoned.append((jump, r))
            if jump:
                print(f"  [{k}] {_show(r.text)}")
                print(f"      {'complete, a thought and a label: ok' if r.terminated else 'cut'}; "
                      f"{len(r.token_ids)} tokens, {r.forward_passes} forward passes, {r.forced_tokens} forced")
    with_jump = sum(r.forward_passes for jump, r in reasoned if jump)
    without = sum(r.forward_passes for jump, r in reasoned if not jump)
    print(f"  jump-forward over <think>, the forced close and the labels' shared prefix: {with_jump} forward "
          f"passes, {without} without it ({without - with_jump} saved)")
    runs += [r for _, r in reasoned]

    complete = sum(r.terminated for r in runs)
    print(f"\n{complete} of {len(runs)} outputs complete and parsed by the real parser; "
          f"the other {len(runs) - complete} were cut at the token limit and are valid prefixes.")

    tokens = sum(len(r.token_ids) for r in runs)
    constraint_ms = sum(r.constraint_seconds for r in runs) * 1000 / max(tokens, 1)
    prompt_ids = list(tokenizer(chat("Describe a cat as JSON."))["input_ids"])
    baseline = _unconstrained_ms_per_token(model, prompt_ids, budget, seed)
    print(f"per token: unconstrained decoding {baseline:.2f} ms; the constraint (mask + apply + accept) "
          f"adds {constraint_ms:.3f} ms ({100 * constraint_ms / baseline:.1f}%), over {tokens} tokens")
    return 0
