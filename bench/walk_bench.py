"""The token index's trie walks alone: a cold JSON Schema run's walks, recorded, then replayed and timed.

What it measures: the kernel calls a server pays on a new schema's first document for the
vocabulary trie walks (pda/kernels/_walk.c, `IndexWalks`), without the rest of the step:

* `classify` — a walk from a lexer state (`TokenIndex._walk`): the trie's first level at
  some DFA state, with the cut (plain body, letter slices), as a Classification;
* `after_boundary` — a boundary group's suffix classification (called by
  `pda.kernels.compose` on a group's miss): the group's `after` memo was empty, so it is
  found in the index's suffix record or walked (sparse, no cut) and recorded.

1. **Record**: with an empty `PDA_CACHE_DIR` (every compile cold, as for a new schema per
   request), N JSONSchemaBench schemas (`bench/profile_first_visits.py`'s sample: round-robin
   over categories, seeded; flexible whitespace) are compiled with the Qwen2 vocabulary and
   one valid instance each, pretty-printed, replayed token by token (mask, accept). Every
   index's `IndexWalks` is wrapped (this process only, no file changed) to keep each call's
   inputs in order: the tables as the index handed them, the roots, the slices, the group
   and live set, and what `tables_of` answered per live set.
2. **Replay** (`--repeats` times): the calls again in their order, each timed alone, on fresh
   `IndexWalks` objects (empty suffix records and table memos), fresh copies of the groups
   (empty `after`), the walk tables opened again (what opened tables keep, per-state flags and
   search moves, made afresh), every proof buffer zeroed and every accept-row memo
   (`handed`) emptied, so each repeat starts where the cold run did. What differs from the
   cold run: a lazy terminal's DFA rows are already filled (their filling is the lexer's
   cost, not the walk's), `tables_of` answers from the record, and the trie and tables are
   warm in memory after the first repeat (the per-repeat totals show the first apart).
   With `--evict-kib N` an N KiB buffer is read through before each call (untimed): the
   caches as other work between two walks leaves them (back-to-back calls keep the trie's
   records, 5.3 MB for Qwen2, and the tables in cache, which a server's first document
   does not). The garbage collector is off during a replay. The first repeat checks every
   result against the recorded one (inside tokens, groups' terminals and nodes): a kernel
   change that alters a result fails the bench.

Reported: calls, total and per-call time (mean, p50, p90, p99, max) per kind, each call's
time the least over the repeats (the machine is shared: a repeat's total swings with other
processes, a call's minimum much less), the nodes the walks visited (and subtrees cut,
proof pairs searched), ns per node visited; the slowest calls' share; per repeat the
total. A walk's time includes building its result objects (what `IndexWalks` returns),
since that is part of what a miss costs.

    python bench/walk_bench.py                       # 36 schemas, 5 repeats
    python bench/walk_bench.py --schemas 12 --repeats 3 --json walks.json
    python bench/walk_bench.py --repeats 3 --evict-kib 4096

Run one at a time on a shared machine: the numbers are wall-clock.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import QWEN2_LOGITS_SIZE, load_qwen2_tokenizer, machine_description, percentile  # noqa: E402

now_ns = time.perf_counter_ns


@dataclass
class Recorded:
    """One index's walks object as it was made, and what its calls were asked and answered."""

    args: tuple  # IndexWalks' constructor arguments
    tables: dict[int, Any] = field(default_factory=dict)  # tables_of's answer per live set


class Snapshot(NamedTuple):
    """A classification as a call returned it (its caller may change it after: a walk on a terminal's own DFA has
    its groups' terminals renamed, `TokenIndex._fresh_walk`)."""

    inside: Any
    tokens: Any
    groups: tuple


def snapshot(found: Any) -> Snapshot:
    """What `same_classification` compares of `found`, copied now."""
    return Snapshot(None if found.inside is None else found.inside.copy(), found.tokens,
                    tuple(SimpleNamespace(terminals=g.terminals, nodes=g.nodes) for g in found.groups))


class RecordingWalks:
    """An `IndexWalks` that appends each call (kind, its recorded index, inputs, a snapshot of its result) to
    `calls`."""

    def __init__(self, real: Any, recorded: Recorded, calls: list) -> None:
        self._real, self._recorded, self._calls = real, recorded, calls

    def __call__(self, group: Any, live: int) -> Any:
        found = self._real(group, live)
        self._calls.append(("after_boundary", self._recorded, (group, live), snapshot(found)))
        return found

    def classify(self, tables: tuple, roots: Any, slices: Any) -> Any:
        found = self._real.classify(tables, roots, slices)
        self._calls.append(("classify", self._recorded, (tables, roots, slices), snapshot(found)))
        return found

    @property
    def nbytes(self) -> int:
        return self._real.nbytes

    @property
    def counts(self) -> tuple:
        return self._real.counts


def install_recorder(calls: list, recorded: list[Recorded]) -> None:
    """Make every new token index's walks a `RecordingWalks` (pda.kernels.walk.IndexWalks replaced here)."""
    from pda.kernels import walk as kernel

    real_type = kernel.IndexWalks

    def recording(trie, mask_words, sparse_max, suffixes, tables_of, best, classify, types):  # noqa: ANN001, ANN202
        rec = Recorded((trie, mask_words, sparse_max, suffixes, tables_of, best, classify, types))

        def asked(live: int) -> Any:
            found = rec.tables[live] = tables_of(live)
            return found

        rec.args = (trie, mask_words, sparse_max, suffixes, asked, best, classify, types)
        recorded.append(rec)
        return RecordingWalks(real_type(trie, mask_words, sparse_max, suffixes, asked, best, classify, types),
                              rec, calls)

    kernel.IndexWalks = recording


def run_schemas(n: int) -> tuple[int, int]:
    """Compile and replay n schemas' first documents (mask + accept per token, EOS); (items ok, tokens)."""
    import warnings

    import numpy as np

    import pda
    from bench.profile_first_visits import sample_schemas
    from pda.compiler import vocabulary_trie
    from pda.index.slices import plain_body

    warnings.simplefilter("ignore")
    tokenizer = load_qwen2_tokenizer()
    vocab = pda.Vocabulary.from_hf(tokenizer)
    plain_body(vocabulary_trie(vocab), vocab.content_hash)
    words = -(-QWEN2_LOGITS_SIZE // 32)
    bitmask = np.zeros((1, words), dtype=np.int32)
    items = sample_schemas(n)
    if not items:
        raise SystemExit("walk_bench: no JSONSchemaBench schemas found (bench/profile_first_visits.py's SCHEMA_CORPUS)")
    ok = tokens = 0
    for item in items:
        toks = tokenizer.encode(item["doc"], add_special_tokens=False)
        try:
            matcher = pda.Matcher(pda.compile(pda.Grammar.from_json_schema(item["schema"], whitespace="flexible"),
                                              vocab))
        except Exception:  # noqa: BLE001 - a schema pda refuses is left out, as the other benches do
            continue
        good = True
        for tok in toks:
            matcher.fill_bitmask(bitmask, 0)
            tokens += 1
            if not (int(bitmask[0, tok >> 5]) >> (tok & 31)) & 1 or not matcher.accept_token(tok):
                good = False
                break
        if good:
            matcher.fill_bitmask(bitmask, 0)
            ok += 1
    return ok, tokens


def same_classification(a: Any, b: Any) -> bool:
    """Whether two classifications hold the same inside tokens and groups (terminals, nodes)."""
    import numpy as np

    def eq(x: Any, y: Any) -> bool:
        return (x is None) == (y is None) and (x is None or np.array_equal(x, y))

    return (eq(a.inside, b.inside) and eq(a.tokens, b.tokens) and len(a.groups) == len(b.groups)
            and all(g.terminals == h.terminals and np.array_equal(g.nodes, h.nodes) for g, h in zip(a.groups, b.groups)))


def table_arrays() -> dict[int, Any]:
    """Every live index's walk tables' arrays by their opened tables' id (`_WalkTables.kernel_tables`), to open them
    again for a replay."""
    from pda.index.token_index import _WalkTables

    return {id(t.kernel_tables): t.arrays for t in gc.get_objects() if isinstance(t, _WalkTables)}


def replay(calls: list, recorded: list[Recorded], arrays: dict[int, Any], check: bool,
           evict: Any = None) -> tuple[list[int], dict[str, tuple]]:
    """The recorded calls again, cold as in the run (see the module docstring): each call's ns, and per kind the
    summed (walks, visited, cut, searched) the walks objects counted. The tables are opened again from their
    `arrays` (`table_arrays`), so that what opened tables keep is made afresh. With `evict` (a numpy array), it
    is read through before each call, untimed."""
    from pda.kernels._walk import IndexWalks  # the type itself: pda.kernels.walk's name is the recorder's
    from pda.kernels.walk import opened

    reopened: dict[int, Any] = {}

    def again(tables: Any) -> Any:
        """The tables' tuple with its opened tables opened again (once per replay)."""
        if tables is None:
            return None
        found = reopened.get(id(tables[0]))
        if found is None:
            found = reopened[id(tables[0])] = opened(arrays[id(tables[0])])
        return (found, *tables[1:])

    for _, _, (tables, *_rest), _ in calls:
        if isinstance(tables, tuple) and isinstance(tables[5], dict):
            tables[5].clear()
    for rec in recorded:
        for tables in rec.tables.values():
            if tables is not None and isinstance(tables[5], dict):
                tables[5].clear()
    proofs = {id(args[2][1]): args[2][1] for kind, _, args, _ in calls if kind == "classify" and args[2] is not None}
    for proof in proofs.values():
        proof.fill(0)
    fresh: dict[int, Any] = {}
    for rec in recorded:
        trie, words, most, _, _, best, classify, types = rec.args
        answers = {live: again(tables) for live, tables in rec.tables.items()}
        fresh[id(rec)] = IndexWalks(trie, words, most, {}, answers.__getitem__, best, classify, types)
    calls = [(kind, rec, (again(args[0]), *args[1:]) if kind == "classify" else args, found)
             for kind, rec, args, found in calls]
    copies: dict[int, Any] = {}
    times = []
    for kind, rec, args, found in calls:
        if evict is not None:
            evict.sum()
        walks = fresh[id(rec)]
        if kind == "classify":
            start = now_ns()
            got = walks.classify(*args)
            times.append(now_ns() - start)
        else:
            group, live = args
            copy = copies.get(id(group))
            if copy is None:
                copy = copies[id(group)] = type(group)(group.terminals, group.nodes, group.key)
            start = now_ns()
            got = walks(copy, live)
            times.append(now_ns() - start)
        if check and not same_classification(got, found):
            raise SystemExit(f"walk_bench: replayed {kind} call {len(times) - 1} differs from the recorded result")
    counts = {}
    for rec in recorded:
        for k, v in zip(("walks", "visited", "cut", "searched"), fresh[id(rec)].counts):
            counts[k] = counts.get(k, 0) + v
    return times, counts


def stats_us(values: list[int]) -> dict[str, float]:
    s = sorted(values)
    return {"n": len(s), "total_ms": sum(s) / 1e6, "mean_us": sum(s) / max(1, len(s)) / 1e3,
            "p50_us": percentile(s, 50) / 1e3, "p90_us": percentile(s, 90) / 1e3,
            "p99_us": percentile(s, 99) / 1e3, "max_us": (s[-1] if s else 0) / 1e3}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--schemas", type=int, default=36, help="JSONSchemaBench schemas, round-robin over categories")
    ap.add_argument("--repeats", type=int, default=5, help="replays of the recorded calls")
    ap.add_argument("--json", type=Path, help="also write the results here")
    ap.add_argument("--evict-kib", type=int, default=0,
                    help="read through a buffer this large before each call: the caches as other work leaves them")
    a = ap.parse_args(argv)

    cache_dir = tempfile.mkdtemp(prefix="pda-walk-bench-")
    os.environ["PDA_CACHE_DIR"] = cache_dir
    try:
        calls: list = []
        recorded: list[Recorded] = []
        install_recorder(calls, recorded)
        started = time.perf_counter()
        ok, tokens = run_schemas(a.schemas)
        run_s = time.perf_counter() - started
        kinds = [kind for kind, *_ in calls]
        evict = None
        if a.evict_kib:
            import numpy as np

            evict = np.arange(a.evict_kib * 128, dtype=np.uint64)
        arrays = table_arrays()
        per_repeat, counts = [], {}
        for r in range(a.repeats):
            gc.collect()
            gc.disable()  # a collection lands on whichever call allocates next: not the walk's cost
            try:
                times, counts = replay(calls, recorded, arrays, check=r == 0, evict=evict)
            finally:
                gc.enable()
            per_repeat.append(times)
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)

    # per call, its least time over the repeats: what it costs when no other process took the core meanwhile
    best = [min(col) for col in zip(*per_repeat)]
    first = per_repeat[0]
    print(f"{machine_description()}; Qwen2 vocabulary; {a.schemas} schemas asked, {ok} replayed to EOS, "
          f"{tokens:,} tokens; recording run {run_s:.1f} s; {a.repeats} replays"
          + (f", {a.evict_kib:,} KiB read through before each call" if a.evict_kib else ""))
    print(f"walks counted by IndexWalks (one replay): {counts['walks']:,}, nodes visited {counts['visited']:,}, "
          f"subtrees cut {counts['cut']:,}, proof pairs searched {counts['searched']:,}")
    print()
    print("| calls | n | total ms | mean us | p50 us | p90 us | p99 us | max us | first replay total ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    rows = {}
    for kind in ("classify", "after_boundary", "all"):
        sel = [i for i, k in enumerate(kinds) if kind in ("all", k)]
        s = stats_us([best[i] for i in sel])
        s["first_total_ms"] = sum(first[i] for i in sel) / 1e6
        rows[kind] = s
        print(f"| {kind} | {s['n']:,} | {s['total_ms']:.1f} | {s['mean_us']:.1f} | {s['p50_us']:.1f} | "
              f"{s['p90_us']:.1f} | {s['p99_us']:.1f} | {s['max_us']:.0f} | {s['first_total_ms']:.1f} |")
    total = sum(best)
    top = sorted(best, reverse=True)[: max(1, len(best) // 100)]
    print()
    print(f"ns per node visited (all calls): {total / max(1, counts['visited']):.1f}; the slowest 1% of calls "
          f"({len(top)}) hold {100 * sum(top) / max(1, total):.0f}% of the time")
    print("per replay total ms: " + ", ".join(f"{sum(t) / 1e6:.1f}" for t in per_repeat))
    if a.json:
        a.json.write_text(json.dumps({"rows": rows, "counts": counts, "per_repeat_ms": [sum(t) / 1e6 for t in per_repeat],
                                      "kinds": kinds, "best_ns": best}), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
