"""Where first visits go: a per-stage profile of cold compile + replay.

Groundwork for the issue "Per-request grammars at native speed". Two workloads,
each in a fresh interpreter with an empty `PDA_CACHE_DIR` (so every compile is cold,
as for a new JSON Schema per request):

- `schemas`: N JSONSchemaBench schemas, round-robin over the corpus's categories
  (seeded, those with valid instances, as `bench/json_schema_bench.py` samples
  them), flexible whitespace; each compiled with `pda.compile` (default warm-up) and
  one valid instance, pretty-printed (indent 2), replayed token by token with the
  Qwen2 vocabulary: fill the mask, check the token's bit, accept the token; EOS at
  the end. All schemas in one process, one after the other (in-memory caches shared
  across schemas, as in a server and as in json_schema_bench.py).
- `python`: `pda/grammars/python.lark` (with `start: file_input`, as
  `bench/code_bench.py`) over a few files of ../shared/corpus/python/valid, spread
  over sizes up to `--python-max-bytes`.

Each workload is run twice, each time cold:

1. **stages**: selected engine functions are wrapped at run time (monkeypatched
   in this process only; no file is changed) with timers that keep a stack, so
   each stage gets its *exclusive* time (time in the function minus time in nested
   stages), its inclusive time and its call count, split by phase (front end,
   compile, warm-up, step: mask, step: accept). Garbage collection is timed
   with `gc.callbacks` and taken out of the stage it interrupted. Per-step times
   and, for the slowest steps, their per-stage breakdown are recorded.
2. **cprofile**: the same run under cProfile, no wrappers: the top functions by
   own time, with call counts, cumulative time and, for functions outside pda
   (numpy, builtins), the pda caller that spent most of it.

The vocabulary (tokenizer, `pda.Vocabulary`, byte trie, plain-body slices) is built
before profiling and reported apart: it is paid once per vocabulary, not per grammar.

    python bench/profile_first_visits.py                            # 20 schemas, 3 python files
    python bench/profile_first_visits.py --schemas 36 --python-files 2 --out /tmp/profile.md
    python bench/profile_first_visits.py --workload python --passes stages

Run one at a time on a shared machine: the numbers are wall-clock.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import json
import math
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Callable

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import CORPUS, QWEN2_LOGITS_SIZE, REPO_ROOT, load_qwen2_tokenizer, machine_description  # noqa: E402
from bench.common import percentile  # noqa: E402

SCHEMA_CORPUS = CORPUS / "jsonschemabench" / "schemas"
PYTHON_CORPUS = CORPUS / "python" / "valid"
PHASES = ("front end", "compile", "warm-up", "step: mask", "step: accept")
now = time.perf_counter

# --- stages --------------------------------------------------------------------------------------
# (group, stage, [targets]); a target is "module:attr" or "module:Class.attr". Exclusive time goes
# to the innermost wrapped function on the stack, so a stage is "this code, minus the stages it calls".
STAGES: list[tuple[str, str, list[str]]] = [
    ("front end / lowering", "JSON Schema -> IR", ["pda.grammar.json_schema:json_schema_to_ir"]),
    ("front end / lowering", "JSON Schema: pattern automata (ecma_regex.pattern_set_automaton)",
     ["pda.grammar.ecma_regex:pattern_set_automaton"]),
    ("front end / lowering", "JSON Schema: ECMA pattern rewriting",
     ["pda.grammar.ecma_regex:ecma_pattern_body", "pda.grammar.ecma_regex:python_pattern_body"]),
    ("front end / lowering", "JSON Schema: IR assembly (Lowering.ir)", ["pda.grammar.json_schema.lowering:Lowering.ir"]),
    ("front end / lowering", "Lark -> IR (Lark's loader)", ["pda.grammar.grammar:lark_to_ir"]),
    ("front end / lowering", "indenter expansion", ["pda.recognizer:expand_ir"]),
    ("front end / lowering", "parser tables", ["pda.recognizer:build_tables"]),
    ("front end / lowering", "recognizer / lexer init (rest)",
     ["pda.recognizer:Recognizer.__init__", "pda.lexer.lexer:Lexer.__init__"]),
    ("terminal DFAs", "terminal_dfa (memo, disk cache, dispatch)",
     ["pda.lexer.terminals:terminal_dfa", "pda.lexer.lexer:terminal_dfa"]),
    ("terminal DFAs", "regex parse (syntax.translate)", ["pda.regex.dfa:translate"]),
    ("terminal DFAs", "alphabet (classes -> atoms)", ["pda.regex.charset:Alphabet.__init__"]),
    ("terminal DFAs", "NFA construction", ["pda.regex.automaton:NFA.build"]),
    ("terminal DFAs", "subset construction", ["pda.regex.dfa:determinise"]),
    ("terminal DFAs", "minimisation (trim + Hopcroft)", ["pda.regex.dfa:_minimise"]),
    ("terminal DFAs", "UTF-8 expansion", ["pda.regex.utf8:expand", "pda.regex.utf8:expand_bytes"]),
    ("terminal DFAs", "byte classes + live rows (_finish)", ["pda.regex.dfa:_finish"]),
    ("terminal DFAs", "look-around / first-match sub-DFA", ["pda.regex.dfa:_subdfa"]),
    ("terminal DFAs", "deterministic composition (counted repeats)", ["pda.regex.dfa:_composed"]),
    ("terminal DFAs", "regex -> DFA (rest of compile_regex)", ["pda.regex.dfa:_compile_nodes"]),
    ("terminal DFAs", "finite-set / literal DFA",
     ["pda.regex.finite_set:finite_set_dfa", "pda.lexer.terminals:_single_literal_dfa"]),
    ("product DFAs", "all-terminal product (memo, disk)", ["pda.lexer.lexer:_all_terminal_dfa"]),
    ("product DFAs", "product construction (combine)", ["pda.regex.product:combine", "pda.lexer.lexer:combine"]),
    ("product DFAs", "product minimisation (Hopcroft)", ["pda.regex.product:_minimise"]),
    ("product DFAs", "lexer tables per candidate set",
     ["pda.lexer.lexer:LexerTables.__init__", "pda.lexer.lexer:LexerTables.restrict",
      "pda.lexer.lexer:LexerTables.basic", "pda.lexer.lexer:Lexer.tables"]),
    ("product DFAs", "DFA digests (sha256)", ["pda.lexer.lexer:_dfas_digest"]),
    ("token index", "walk tables (per set / terminal)",
     ["pda.index.token_index:_WalkTables.of_candidates", "pda.index.token_index:_WalkTables.of_terminal"]),
    ("token index", "walks from a lexer state (IndexWalks.classify: kernel walk, grouping, objects, in C)",
     ["pda.index.token_index:TokenIndex._walk"]),
    ("token index", "trie walk kernel, basic lexer mode (kernels/walk.py: walk_states, pack)",
     ["pda.kernels.walk:walk_states", "pda.kernels.walk:pack"]),
    ("token index", "walk wrappers (_fresh_walk, _walk_states, _basic_classify, a live set's suffix tables)",
     ["pda.index.token_index:TokenIndex._fresh_walk", "pda.index.token_index:TokenIndex._walk_states",
      "pda.index.token_index:TokenIndex._basic_classify", "pda.index.token_index:TokenIndex._suffix_tables"]),
    ("token index", "walk keys (_signature, LexerTables.key)",
     ["pda.index.token_index:TokenIndex._signature", "pda.lexer.lexer:LexerTables.key"]),
    ("token index", "shared classifications (wrap, LRU, equal inside masks)",
     ["pda.index.token_index:TokenIndex._root_walk", "pda.index.token_index:SharedClassifications.get",
      "pda.index.token_index:SharedClassifications.put", "pda.index.token_index:SharedClassifications.same_inside"]),
    ("token index", "index dispatch (at_state)", ["pda.index.token_index:TokenIndex.at_state"]),
    ("token index", "finite-set tables (trie/)",
     ["pda.trie.lookup:FiniteSetLookup.at_state", "pda.trie.lookup:FiniteSetLookup.plain_rows",
      "pda.trie.lookup:FiniteSetLookup._table", "pda.trie.lookup:FiniteSetLookup.__init__"]),
    ("token index", "token index init", ["pda.index.token_index:TokenIndex.__init__"]),
    ("disk cache", "disk cache I/O (load, store)", ["pda.cache:load", "pda.cache:store"]),
    ("disk cache", "index snapshot encode (snapshot, entries_to_arrays)",
     ["pda.index.token_index:TokenIndex.snapshot", "pda.index.token_index:entries_to_arrays"]),
    ("disk cache", "index snapshot decode (restore, entries_from_arrays)",
     ["pda.index.token_index:TokenIndex.restore", "pda.index.token_index:entries_from_arrays"]),
    # The Earley step is compiled (`pda.kernels._earley`; its methods cannot be wrapped): its
    # time is its callers', the indenter and the boundary groups.
    ("parser", "indenter (IndentedNode.advance, .probe)",
     ["pda.parser.indent:IndentedNode.advance", "pda.parser.indent:IndentedNode.probe"]),
    # A group's miss is walked, grouped and recorded by the index's IndexWalks, which the compose kernel calls
    # from C (`TokenIndex.after_boundary`, an instance attribute): its time is compose's.
    ("mask", "base + boundary groups (compose: probes, ORs, added ids, groups' suffix walks, in C)",
     ["pda.masks:compose"]),
    ("mask", "mask miss (_compute_mask: dispatch, dense dedupe, recent ring)", ["pda.masks:StepMasks._compute_mask"]),
    ("mask", "mask memo + EOS (_step, _text; step_mask, text_mask)",
     ["pda.masks:StepMasks._step", "pda.masks:StepMasks._text", "pda.masks:StepMasks.step_mask",
      "pda.masks:StepMasks.text_mask"]),
    ("mask", "lexer commit / can_end", ["pda.scanner:Scanner.can_end", "pda.scanner:Scanner.commit"]),
    ("warm-up", "warm-up driver (BFS, lexeme states)",
     ["pda.compiler:CompiledGrammar._warm_node", "pda.compiler:CompiledGrammar._lexeme_states"]),
    ("compile", "compile driver (rest of CompiledGrammar.__init__)", ["pda.compiler:CompiledGrammar.__init__"]),
    ("per step", "row writing (copy_row)", ["pda.matcher:copy_row", "pda.masks:copy_row"]),
    ("per step", "fill_bitmask (dispatch)", ["pda.matcher:Matcher.fill_bitmask"]),
    ("per step", "lexer byte steps (Lexer.scan)", ["pda.scanner:Scanner.scan"]),
    ("per step", "accept_token (dispatch)", ["pda.matcher:Matcher.accept_token", "pda.matcher:Matcher._advance"]),
]
GROUP_OF = {stage: group for group, stage, _ in STAGES}
GROUP_OF.update({"GC": "GC", "unattributed": "other", "warm-up (rest)": "warm-up"})


def _resolve(target: str) -> tuple[Any, str, Any] | None:
    """(owner, attribute, raw value in the owner's __dict__) of a target, or None if it is gone."""
    import importlib

    module_name, path = target.split(":")
    try:
        owner: Any = importlib.import_module(module_name)
    except ImportError:
        return None
    *parents, attr = path.split(".")
    for p in parents:
        owner = getattr(owner, p, None)
        if owner is None:
            return None
    raw = owner.__dict__.get(attr) if isinstance(owner, type) else getattr(owner, attr, None)
    if raw is None:
        return None
    return owner, attr, raw


def _function_of(raw: Any) -> Any:
    return raw.__func__ if isinstance(raw, (classmethod, staticmethod)) else raw


class StageProfiler:
    """Exclusive/inclusive time and calls per (phase, stage), from wrapped functions and GC callbacks."""

    def __init__(self) -> None:
        self.excl: dict[tuple[str, str], float] = defaultdict(float)
        # Exclusive seconds per stage over every phase, by the stage's number (`_number`): `snapshot`, taken
        # before every step for the slowest steps' breakdown, copies this list, not a dict over `excl`
        # (which cost ~15 us a step, ~0.3 s of a 36-schema run, counted as "unattributed").
        self.totals: list[float] = []
        self.numbers: dict[str, int] = {}
        self.incl: dict[str, float] = defaultdict(float)
        self.calls: Counter = Counter()
        self.stack: list[list] = []
        self.depth: Counter = Counter()
        self.phase = "setup"
        self.missing: list[str] = []
        self._gc_start = 0.0
        self.gc_collections = 0
        self.gc_by_gen: dict[int, list] = {}

    def install(self) -> None:
        wrapped: dict[int, Any] = {}  # one wrapper per function object, shared by its aliases
        for _, stage, targets in STAGES:
            for target in targets:
                found = _resolve(target)
                if found is None or not callable(_function_of(found[2])):
                    self.missing.append(target)
                    continue
                owner, attr, raw = found
                func = _function_of(raw)
                w = wrapped.get(id(func))
                if w is None:
                    w = wrapped[id(func)] = self._wrap(func, stage)
                if isinstance(raw, classmethod):
                    setattr(owner, attr, classmethod(w))
                elif isinstance(raw, staticmethod):
                    setattr(owner, attr, staticmethod(w))
                else:
                    setattr(owner, attr, w)
        # warm_up switches the phase for everything below it
        from pda.compiler import CompiledGrammar

        orig = CompiledGrammar.warm_up
        prof = self

        def warm_up(*a: Any, **k: Any) -> Any:
            saved = prof.phase
            prof.phase = "warm-up"
            try:
                return prof._call(orig, "warm-up (rest)", a, k)
            finally:
                prof.phase = saved

        CompiledGrammar.warm_up = warm_up
        gc.callbacks.append(self._gc)

    def _gc(self, what: str, info: dict) -> None:
        if what == "start":
            self._gc_start = now()
            return
        dt = now() - self._gc_start
        self.gc_collections += 1
        gen = info.get("generation", -1)
        self.gc_by_gen[gen] = [self.gc_by_gen.get(gen, [0, 0.0])[0] + 1, self.gc_by_gen.get(gen, [0, 0.0])[1] + dt]
        self.excl[(self.phase, "GC")] += dt
        self.totals[self._number("GC")] += dt
        self.calls["GC"] += 1
        if self.stack:
            self.stack[-1][2] += dt  # not the interrupted stage's own time

    def _number(self, stage: str) -> int:
        """The stage's index in `totals` (given on first use)."""
        found = self.numbers.get(stage)
        if found is None:
            found = self.numbers[stage] = len(self.totals)
            self.totals.append(0.0)
        return found

    def _call(self, func: Callable, stage: str, number: int, a: tuple, k: dict) -> Any:
        stack = self.stack
        frame = [stage, now(), 0.0, self.phase]
        stack.append(frame)
        self.calls[stage] += 1
        self.depth[stage] += 1
        try:
            return func(*a, **k)
        finally:
            dt = now() - frame[1]
            stack.pop()
            self.excl[(frame[3], stage)] += dt - frame[2]
            self.totals[number] += dt - frame[2]
            self.depth[stage] -= 1
            if not self.depth[stage]:
                self.incl[stage] += dt
            if stack:
                stack[-1][2] += dt

    def _wrap(self, func: Callable, stage: str) -> Callable:
        call, number = self._call, self._number(stage)

        def wrapper(*a: Any, **k: Any) -> Any:
            return call(func, stage, number, a, k)

        wrapper.__wrapped__ = func  # type: ignore[attr-defined]
        wrapper.__name__ = getattr(func, "__name__", "wrapper")
        return wrapper

    def snapshot(self) -> list[float]:
        """Exclusive seconds per stage so far (by number): `delta` of two gives a step's breakdown."""
        return self.totals.copy()

    def delta(self, before: list[float], after: list[float]) -> dict[str, float]:
        """Per stage, the exclusive seconds between two snapshots (over 0.1 ms)."""
        return {stage: after[i] - (before[i] if i < len(before) else 0.0) for stage, i in self.numbers.items()
                if after[i] - (before[i] if i < len(before) else 0.0) > 1e-4}


def _calibrate(prof: StageProfiler) -> float:
    """Seconds a wrapper adds per call (a no-op function wrapped, timed over 100k calls)."""
    def noop() -> None:
        return None

    w = prof._wrap(noop, "_calibration")
    t0 = now()
    for _ in range(100_000):
        noop()
    bare = now() - t0
    t0 = now()
    for _ in range(100_000):
        w()
    wrapped = now() - t0
    for key in [k for k in prof.excl if k[1] == "_calibration"]:
        del prof.excl[key]
    prof.calls.pop("_calibration", None)
    prof.incl.pop("_calibration", None)
    prof.numbers.pop("_calibration", None)
    return max(0.0, (wrapped - bare) / 100_000)


# --- workloads -----------------------------------------------------------------------------------
def sample_schemas(n: int) -> list[dict[str, Any]]:
    """n schemas round-robin over categories, each category's order seeded as json_schema_bench.py seeds it."""
    per_cat = {}
    for path in sorted(SCHEMA_CORPUS.glob("*.jsonl")):
        rows = [json.loads(line) for line in path.open(encoding="utf-8")]
        rows = [r for r in rows if any(t["valid"] for t in r["tests"])]
        k = min(len(rows), math.ceil(n / 12) + 1)
        per_cat[path.stem] = random.Random(f"pda-bench:{path.stem}").sample(rows, k)
    out = []
    depth = 0
    while len(out) < n and any(depth < len(v) for v in per_cat.values()):
        for cat, rows in per_cat.items():
            if depth < len(rows) and len(out) < n:
                r = rows[depth]
                doc = next(json.dumps(t["data"], indent=2, ensure_ascii=False) for t in r["tests"] if t["valid"])
                out.append({"name": f"{cat}/{r['id']}", "category": cat, "schema": r["schema"], "doc": doc})
        depth += 1
    return out


def python_files(n: int, max_bytes: int) -> list[dict[str, Any]]:
    """n stdlib files spread over sizes (bench/code_bench.py's `_spread`), at most max_bytes each."""
    from bench.code_bench import _spread

    paths = [p for p in PYTHON_CORPUS.rglob("*.py") if 200 <= p.stat().st_size <= max_bytes]
    return [{"name": str(p.relative_to(PYTHON_CORPUS)), "doc": p.read_text(encoding="utf-8")}
            for p in _spread(paths, n)]


# --- the worker ----------------------------------------------------------------------------------
def _rss_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def memory_census() -> dict[str, Any]:
    """What the in-memory caches hold at the end of a run (MiB of numpy data, counted once each, in this order)."""
    import numpy as np

    import pda
    import pda.compiler as pc
    import pda.index.token_index as ti
    import pda.lexer.lexer as pl
    import pda.lexer.terminals as pp
    from pda.kernels.walk import MAPPED_PROOF_BYTES

    rss_before = _rss_mib()
    seen: set[int] = set()

    def nbytes(a: Any) -> int:
        if not isinstance(a, np.ndarray):
            return 0
        while isinstance(a.base, np.ndarray):
            a = a.base
        if id(a) in seen:
            return 0
        seen.add(id(a))
        return a.nbytes

    out: dict[str, Any] = {}
    compiled = list(pc._compiled.values())
    out["compiled grammars alive (pda.compile memo: weak, the newest kept within `compiled_grammars`)"] = len(compiled)
    walks = [sc.walks for sc in list(ti._shared.values())]
    out["shared classifications MiB (LRU, 64 MiB bound)"] = sum(w.nbytes for w in walks) / 2**20
    out["shared classifications entries"] = sum(len(w) for w in walks)
    index_b = 0
    n_cls = 0
    done: set[int] = set()
    stack = []
    for c in compiled:
        stack += list(c.index._roots.values()) + list(c.index._suffixes.values())
    while stack:
        cl = stack.pop()
        if id(cl) in done:
            continue
        done.add(id(cl))
        n_cls += 1
        index_b += nbytes(cl.inside)
        for g in cl.groups:
            index_b += nbytes(g.nodes)
            stack += list(g.after.values())
    out["per-grammar index classifications MiB (_roots, _suffixes; unbounded)"] = index_b / 2**20
    out["per-grammar index classifications"] = n_cls
    budgets = pda.memory_budgets()
    out["masks kept for the next request MiB (`recent_masks`, all grammars)"] = budgets["recent_masks"]["bytes"] / 2**20
    out["parser nodes alive (interned, all grammars)"] = f"{sum(c.recognizer.parser.core.stats()['nodes'] for c in compiled):,}"
    walk_b = 0
    mapped_b = 0
    lex_b = 0
    lex_rows = 0
    for c in compiled:
        for wt in list(c.index._walk_tables.values()):
            # What exists, read off the slots: the properties `trans`, `live`, `stops` and `ends_as` would build a
            # shared product's rows and flags (a copy of its rows, a pass over every state) for the census.
            for a in (wt._trans, wt.byte_class, *wt.arrays[:6], *(wt._flags or ())[:3]):
                walk_b += nbytes(a)
            proof = wt._proof  # (depth, the kernel's int16 proof buffer)
            if proof is not None:
                if proof[1].nbytes >= MAPPED_PROOF_BYTES:
                    mapped_b += nbytes(proof[1])
                else:
                    walk_b += nbytes(proof[1])
        tabs = list(c.lexer._tables.values()) + ([c.lexer._all] if c.lexer._all is not None else [])
        for t in tabs:
            lex_b += nbytes(t.trans)
            if isinstance(t.rows, (list, tuple)) and id(t.rows) not in seen:
                seen.add(id(t.rows))
                lex_rows += t.n_states * (56 + 8 * (t.trans.shape[1] if t.n_states else 0))
    out["walk tables MiB (per candidate set; numpy bytes allocated, a lazily filled array's in full)"] = walk_b / 2**20
    out["walk proof buffers MiB mapped (anonymous maps: pages count in RSS only once touched)"] = mapped_b / 2**20
    out["lexer tables MiB (numpy) + rows as Python lists/tuples (estimate)"] = (
        f"{lex_b / 2**20:.1f} + {lex_rows / 2**20:.1f}")
    out["terminal + all-terminal DFAs MiB (module memos, 256 MiB each at most)"] = (pp._memory.nbytes + pl._combined.nbytes) / 2**20
    out["terminal DFAs memoised"] = len(pp._memory)
    out["gc-tracked objects"] = len(gc.get_objects())
    out["RSS MiB before the census, after it"] = f"{rss_before:.1f}, {_rss_mib():.1f}"
    return out


def run_worker(workload: str, mode: str, items: list[dict[str, Any]], budget_s: float) -> dict[str, Any]:
    import warnings

    warnings.simplefilter("ignore")
    import numpy as np

    import pda
    from pda.compiler import vocabulary_trie
    from pda.index.slices import plain_body

    result: dict[str, Any] = {"workload": workload, "mode": mode, "items": []}
    t0 = now()
    tokenizer = load_qwen2_tokenizer()
    vocab = pda.Vocabulary.from_hf(tokenizer)
    t1 = now()
    trie = vocabulary_trie(vocab)
    plain_body(trie, vocab.content_hash)
    t2 = now()
    result["setup"] = {"tokenizer_vocab_s": t1 - t0, "trie_plain_body_s": t2 - t1, "rss_mib": _rss_mib()}
    eos = tokenizer.eos_token_id
    python_text = "start: file_input\n" + (REPO_ROOT / "pda" / "grammars" / "python.lark").read_text(encoding="utf-8")
    for item in items:
        item["tokens"] = tokenizer.encode(item["doc"], add_special_tokens=False)
    words = math.ceil(QWEN2_LOGITS_SIZE / 32)

    prof = StageProfiler() if mode == "stages" else None
    cprof = None
    if prof is not None:
        prof.install()
        result["wrapper_overhead_s"] = _calibrate(prof)
        result["missing_targets"] = prof.missing
    else:
        import cProfile

        cprof = cProfile.Profile()
    phase_s: dict[str, float] = defaultdict(float)
    # every step: (item, index, kind, seconds); tuples of atoms, which the collector stops tracking, where a dict a
    # step (25,000 of them) was read by every collection of the old generations inside the steps measured
    steps: list[tuple[int, int, str, float]] = []
    worst: list[tuple[float, dict[str, Any]]] = []  # (seconds, record with stage deltas)
    slow_s = 0.02
    gc.collect()
    started = now()

    def set_phase(name: str) -> None:
        if prof is not None:
            prof.phase = name

    for n_item, item in enumerate(items):
        row: dict[str, Any] = {"name": item["name"], "category": item.get("category", "")}
        result["items"].append(row)
        if cprof is not None:
            cprof.enable()
        try:
            set_phase("front end")
            t = now()
            if workload == "schemas":
                grammar = pda.Grammar.from_json_schema(item["schema"], whitespace="flexible")
            else:
                grammar = pda.Grammar.from_lark(python_text)
            row["front_end_ms"] = (now() - t) * 1e3
            phase_s["front end"] += now() - t
            set_phase("compile")
            t = now()
            compiled = pda.compile(grammar, vocab)
            dt = now() - t
            row["compile_ms"] = dt * 1e3  # includes warm-up (as json_schema_bench.py's compile does)
            phase_s["compile+warm-up"] += dt
            matcher = pda.Matcher(compiled)
            bitmask = np.zeros((1, words), dtype=np.int32)
            replay_start = now()
            ok = True
            toks = item["tokens"]
            n_steps = 0
            for i, tok in enumerate([*toks, eos]):
                for kind in ("mask", "accept"):
                    if kind == "accept" and tok == eos:
                        break
                    before = prof.snapshot() if prof is not None else None
                    set_phase("step: " + kind)
                    t = now()
                    if kind == "mask":
                        matcher.fill_bitmask(bitmask, 0)
                    else:
                        good = matcher.accept_token(tok)
                    dt = now() - t
                    set_phase("between steps")
                    phase_s["step: " + kind] += dt
                    steps.append((n_item, i, kind, dt))
                    if dt >= slow_s or len(worst) < 8 or dt > worst[-1][0]:
                        rec = {"item": item["name"], "i": i, "kind": kind, "s": dt,
                               "context": tokenizer.decode(toks[max(0, i - 12):i])[-40:],
                               "token": tokenizer.decode([tok]) if tok != eos else "<eos>"}
                        if before is not None:
                            rec["stages"] = prof.delta(before, prof.snapshot())
                        worst.append((dt, rec))
                        worst.sort(key=lambda x: -x[0])
                        del worst[12:]
                    if kind == "mask" and not (int(bitmask[0, tok >> 5]) >> (tok & 31)) & 1:
                        ok = False
                        row["rejected"] = f"token {i} {tokenizer.decode([tok])!r} not allowed"
                        break
                    if kind == "accept" and not good:
                        ok = False
                        row["rejected"] = f"token {i} {tokenizer.decode([tok])!r} refused by accept_token"
                        break
                if not ok:
                    break
                n_steps = i + 1
                if now() - replay_start > budget_s:
                    row["truncated"] = f"replay budget {budget_s:.0f} s spent after {n_steps} of {len(toks) + 1} tokens"
                    break
            row["ok"] = ok
            row["tokens"], row["steps_done"] = len(toks) + 1, n_steps
            row["replay_s"] = now() - replay_start
        except Exception as exc:  # a refused schema is recorded, not fatal
            row["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
        finally:
            if cprof is not None:
                cprof.disable()
            set_phase("between steps")
        row["rss_mib"] = _rss_mib()
        print(f"  [{workload}/{mode}] {n_item + 1}/{len(items)} {item['name']}: "
              f"compile {row.get('compile_ms', float('nan')):.0f} ms, replay {row.get('replay_s', float('nan')):.1f} s, "
              f"rss {row['rss_mib']:.0f} MiB {row.get('error', '')}", file=sys.stderr, flush=True)
    result["total_s"] = now() - started
    result["phase_s"] = dict(phase_s)
    result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result["steps"] = [{"item": n_item, "i": i, "kind": kind, "s": dt} for n_item, i, kind, dt in steps]
    result["worst"] = [rec for _, rec in worst]
    if prof is not None:
        result["excl"] = [[p, s, t] for (p, s), t in prof.excl.items()]
        result["incl"] = dict(prof.incl)
        result["calls"] = dict(prof.calls)
        result["gc_collections"] = prof.gc_collections
        result["gc_by_gen"] = {str(k): v for k, v in sorted(prof.gc_by_gen.items())}
        result["census"] = memory_census()
    else:
        result["cprofile"] = _cprofile_rows(cprof, result["total_s"])
    return result


def _cprofile_rows(cprof: Any, total_s: float, top: int = 30) -> list[dict[str, Any]]:
    """Top functions by own time; a non-pda function names the pda caller that spent most of it."""
    import pstats

    stats = pstats.Stats(cprof).stats  # type: ignore[attr-defined]
    root = str(REPO_ROOT / "pda")

    def label(func: tuple) -> str:
        filename, line, name = func
        if filename.startswith(root):
            return f"{filename[len(str(REPO_ROOT)) + 1:]}:{line} {name}"
        if filename == "~":
            return name
        return f"{Path(filename).name}:{line} {name}"

    def pda_caller(func: tuple, seen: frozenset = frozenset()) -> str:
        callers = stats[func][4]
        best = None
        for c, v in callers.items():
            if best is None or v[2] > callers[best][2]:
                best = c
        if best is None:
            return ""
        if best[0].startswith(root) or best in seen or len(seen) > 4:
            return label(best)
        return pda_caller(best, seen | {func})

    rows = []
    for func, (cc, nc, tt, ct, _callers) in sorted(stats.items(), key=lambda kv: -kv[1][2])[:top]:
        rows.append({"function": label(func), "calls": nc, "own_s": tt, "cum_s": ct, "share": tt / total_s,
                     "via": "" if func[0].startswith(root) else pda_caller(func)})
    by_cum = []
    for func, (cc, nc, tt, ct, _callers) in sorted(stats.items(), key=lambda kv: -kv[1][3]):
        if func[0].startswith(root):
            by_cum.append({"function": label(func), "calls": nc, "own_s": tt, "cum_s": ct, "share": ct / total_s})
        if len(by_cum) >= top:
            break
    return [{"own": rows, "cum": by_cum}]


# --- the driver ----------------------------------------------------------------------------------
def run_isolated(workload: str, mode: str, items: list[dict[str, Any]], budget_s: float) -> dict[str, Any]:
    """run_worker in a fresh interpreter with an empty PDA_CACHE_DIR (deleted afterwards)."""
    cache_dir = tempfile.mkdtemp(prefix="pda-profile-cache-")
    with tempfile.TemporaryDirectory() as tmp:
        items_file, out = Path(tmp) / "items.json", Path(tmp) / "result.json"
        items_file.write_text(json.dumps(items), encoding="utf-8")
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", workload, "--mode", mode,
               "--items-file", str(items_file), "--result-file", str(out), "--budget", str(budget_s)]
        env = {**os.environ, "PDA_CACHE_DIR": cache_dir,
               "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}
        try:
            proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True)
            if proc.returncode != 0 or not out.exists():
                return {"workload": workload, "mode": mode, "error": f"worker exited {proc.returncode}"}
            return json.loads(out.read_text(encoding="utf-8"))
        finally:
            shutil.rmtree(cache_dir, ignore_errors=True)


def _fmt_s(x: float) -> str:
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


def _stats_us(values: list[float]) -> dict[str, float]:
    v = sorted(x * 1e6 for x in values)
    if not v:
        return {}
    return {"n": len(v), "mean": statistics.fmean(v), "p50": percentile(v, 50), "p99": percentile(v, 99),
            "max": v[-1], "total_s": sum(v) / 1e6}


def format_stages(r: dict[str, Any]) -> list[str]:
    """The per-stage table (exclusive seconds by phase, share, calls, inclusive) and its group totals."""
    lines: list[str] = []
    total = r["total_s"]
    by_stage: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for phase, stage, t in r["excl"]:
        by_stage[stage][phase] += t
    attributed = sum(t for _, _, t in r["excl"] if _ != "setup")
    # time outside every wrapped function within the run: the driver loop, pda.compile's memo, Matcher()
    by_stage["unattributed"]["-"] = max(0.0, total - attributed)
    calls, incl = r["calls"], r["incl"]
    overhead = r.get("wrapper_overhead_s", 0.0)
    n_calls = sum(v for k, v in calls.items() if k != "GC")
    lines.append(f"Total profiled wall time {total:.1f} s (compile + warm-up + replay of every item; the "
                 f"vocabulary setup excluded). Wrappers: {n_calls:,} wrapped calls at ~{overhead * 1e6:.2f} µs "
                 f"each = ~{n_calls * overhead:.1f} s of the total is the profiler's own cost (spread over the "
                 f"stages in proportion to their call counts). GC: {r.get('gc_collections', 0):,} collections.")
    lines.append("")
    phases = [p for p in PHASES if any(p in v for v in by_stage.values())]
    lines.append("| group | stage | " + " | ".join(f"{p} s" for p in phases) +
                 " | total excl. s | share | calls | incl. s |")
    lines.append("|---|---|" + "---|" * len(phases) + "---|---|---|---|")
    rows = []
    for stage, per in by_stage.items():
        if stage.startswith("_"):
            continue
        tot = sum(t for p, t in per.items() if p != "setup")
        rows.append((tot, stage, per))
    rows.sort(key=lambda x: -x[0])
    for tot, stage, per in rows:
        if tot < 0.0005 * total and stage != "unattributed":
            continue
        cells = " | ".join(_fmt_s(per.get(p, 0.0)) if per.get(p, 0.0) >= 0.0005 else "" for p in phases)
        lines.append(f"| {GROUP_OF.get(stage, '?')} | {stage} | {cells} | {_fmt_s(tot)} | {tot / total:.1%} | "
                     f"{calls.get(stage, 0):,} | {_fmt_s(incl.get(stage, 0.0)) if stage in incl else ''} |")
    lines.append("")
    groups: dict[str, float] = defaultdict(float)
    for tot, stage, _ in rows:
        groups[GROUP_OF.get(stage, "?")] += tot
    lines.append("By group: " + "; ".join(f"{g} {t:.2f} s ({t / total:.1%})"
                                          for g, t in sorted(groups.items(), key=lambda x: -x[1])))
    return lines


def format_cprofile(r: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    data = r["cprofile"][0]
    lines.append(f"cProfile, same workload, separate cold run: {r['total_s']:.1f} s under the profiler "
                 "(its overhead inflates Python-level calls more than numpy calls). Top functions by own time:")
    lines.append("")
    lines.append("| function | calls | own s | share | cum s | spent for (pda caller) |")
    lines.append("|---|---|---|---|---|---|")
    for row in data["own"][:25]:
        lines.append(f"| `{row['function']}` | {row['calls']:,} | {_fmt_s(row['own_s'])} | {row['share']:.1%} | "
                     f"{_fmt_s(row['cum_s'])} | {('`' + row['via'] + '`') if row['via'] else ''} |")
    lines.append("")
    lines.append("pda functions by cumulative time (nested: shares add up to more than 100%):")
    lines.append("")
    lines.append("| function | calls | own s | cum s | cum share |")
    lines.append("|---|---|---|---|---|")
    for row in data["cum"][:20]:
        lines.append(f"| `{row['function']}` | {row['calls']:,} | {_fmt_s(row['own_s'])} | {_fmt_s(row['cum_s'])} | "
                     f"{row['share']:.1%} |")
    return lines


def format_run(r: dict[str, Any]) -> list[str]:
    """Items, step distribution, memory and worst steps of one run."""
    lines: list[str] = []
    items = r["items"]
    good = [i for i in items if "error" not in i]
    comp = sorted(i["compile_ms"] for i in good if "compile_ms" in i)
    fe = sorted(i["front_end_ms"] for i in good if "front_end_ms" in i)
    steps = r["steps"]
    mask = _stats_us([s["s"] for s in steps if s["kind"] == "mask"])
    acc = _stats_us([s["s"] for s in steps if s["kind"] == "accept"])
    setup = r["setup"]
    lines.append(f"Setup (once per vocabulary, not profiled): tokenizer + `Vocabulary.from_hf` "
                 f"{setup['tokenizer_vocab_s']:.1f} s, byte trie + plain-body slices {setup['trie_plain_body_s']:.1f} s, "
                 f"RSS after it {setup['rss_mib']:.0f} MiB.")
    lines.append("")
    errors = [i for i in items if "error" in i]
    rejected = [i for i in good if not i.get("ok", False)]
    truncated = [i for i in good if "truncated" in i]
    lines.append(f"Items: {len(items)} ({len(errors)} refused at compile, {len(rejected)} documents rejected, "
                 f"{len(truncated)} cut by the replay budget). "
                 f"Front end p50 {percentile(fe, 50):.1f} ms; compile (incl. warm-up) p50 {percentile(comp, 50):.0f} ms, "
                 f"max {comp[-1] if comp else float('nan'):.0f} ms; "
                 f"phase totals: " + ", ".join(f"{k} {v:.2f} s" for k, v in r["phase_s"].items()) + ".")
    lines.append("")
    if mask:
        slow = [s["s"] for s in steps if s["kind"] == "mask" and s["s"] >= 1e-3]
        lines.append(f"Masks: {mask['n']:,} steps, mean {mask['mean']:.1f} µs, p50 {mask['p50']:.1f}, "
                     f"p99 {mask['p99']:.0f}, max {mask['max']:,.0f} µs, total {mask['total_s']:.2f} s; "
                     f"steps ≥ 1 ms: {len(slow)} ({len(slow) / mask['n']:.1%}) holding "
                     f"{sum(slow) / mask['total_s']:.0%} of mask time.")
    if acc:
        slow = [s["s"] for s in steps if s["kind"] == "accept" and s["s"] >= 1e-3]
        lines.append(f"accept_token: mean {acc['mean']:.1f} µs, p50 {acc['p50']:.1f}, p99 {acc['p99']:.0f}, "
                     f"max {acc['max']:,.0f} µs, total {acc['total_s']:.2f} s; ≥ 1 ms: {len(slow)} holding "
                     f"{sum(slow) / acc['total_s']:.0%}.")
    lines.append("")
    rss = [i["rss_mib"] for i in items]
    lines.append(f"Memory: peak RSS {r['peak_rss_mib']:,.0f} MiB (ru_maxrss); RSS after the setup "
                 f"{setup['rss_mib']:.0f} MiB, after each item: " +
                 ", ".join(f"{x:.0f}" for x in rss) + " MiB" +
                 (f" (+{(rss[-1] - rss[0]) / max(1, len(rss) - 1):.1f} MiB per item after the first)."
                  if len(rss) > 1 else "."))
    if r.get("gc_by_gen"):
        lines.append("GC by generation: " + "; ".join(
            f"gen {g}: {n:,} collections, {t:.2f} s" for g, (n, t) in r["gc_by_gen"].items()) + ".")
        lines.append("")
    if r.get("census"):
        lines.append("What the in-memory caches hold at the end of the run (numpy bytes counted once, in this order):")
        lines.append("")
        lines.append("| cache | value |")
        lines.append("|---|---|")
        for k, v in r["census"].items():
            lines.append(f"| {k} | {v:,.1f} |" if isinstance(v, float) else f"| {k} | {v:,} |" if isinstance(v, int)
                         else f"| {k} | {v} |")
        lines.append("")
    if lines[-1]:
        lines.append("")
    lines.append("| item | compile ms | tokens | replay s | RSS MiB | note |")
    lines.append("|---|---|---|---|---|---|")
    for i in items:
        note = i.get("error") or i.get("rejected") or i.get("truncated") or ""
        lines.append(f"| {i['name']} | {i.get('compile_ms', float('nan')):.0f} | {i.get('tokens', '')} | "
                     f"{i.get('replay_s', float('nan')):.2f} | {i['rss_mib']:.0f} | {note} |")
    lines.append("")
    lines.append("Slowest steps (and, in the stages run, where their time went):")
    lines.append("")
    lines.append("| item | step | kind | ms | text before → token | top stages (ms) |")
    lines.append("|---|---|---|---|---|---|")
    for w in r["worst"][:8]:
        st = w.get("stages", {})
        top = "; ".join(f"{k} {v * 1e3:.0f}" for k, v in sorted(st.items(), key=lambda x: -x[1])[:4])
        ctx = (w["context"] + " → " + w["token"]).replace("|", "\\|").replace("\n", "\\n")
        lines.append(f"| {w['item']} | {w['i']} | {w['kind']} | {w['s'] * 1e3:,.1f} | `{ctx}` | {top} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--schemas", type=int, default=20, help="JSONSchemaBench schemas, round-robin over categories")
    ap.add_argument("--python-files", type=int, default=3, help="python.lark: stdlib files spread over sizes")
    ap.add_argument("--python-max-bytes", type=int, default=6000, help="largest python file considered")
    ap.add_argument("--workload", default="schemas,python", help="comma list of schemas, python")
    ap.add_argument("--passes", default="stages,cprofile", help="comma list of stages, cprofile")
    ap.add_argument("--budget", type=float, default=120.0, help="seconds of replay per item before it is cut")
    ap.add_argument("--out", type=Path, help="also write the tables here (markdown)")
    ap.add_argument("--json", type=Path, help="also write the raw results here")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--mode", help=argparse.SUPPRESS)
    ap.add_argument("--items-file", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--result-file", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        items = json.loads(args.items_file.read_text(encoding="utf-8"))
        res = run_worker(args.worker, args.mode, items, args.budget)
        args.result_file.write_text(json.dumps(res), encoding="utf-8")
        return 0

    results = []
    for workload in args.workload.split(","):
        items = sample_schemas(args.schemas) if workload == "schemas" else python_files(
            args.python_files, args.python_max_bytes)
        for mode in args.passes.split(","):
            print(f"# {workload} / {mode}: {len(items)} items, cold cache", file=sys.stderr, flush=True)
            results.append(run_isolated(workload, mode, items, args.budget))
    when = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = " ".join(argv if argv is not None else sys.argv[1:])
    out = [f"Run {when} on {machine_description()}, load average before the run "
           f"{os.getloadavg()[0]:.2f}; Qwen2 vocabulary ({QWEN2_LOGITS_SIZE} logits); "
           f"command: `python bench/profile_first_visits.py {command}`", ""]
    for r in results:
        title = {"schemas": "JSONSchemaBench schemas", "python": "python.lark over stdlib files"}[r["workload"]]
        out.append(f"## {title}: {r['mode']} run")
        out.append("")
        if "error" in r:
            out.append(f"failed: {r['error']}")
            out.append("")
            continue
        if r["mode"] == "stages":
            out += format_stages(r)
            if r.get("missing_targets"):
                out.append("")
                out.append("Not wrapped (not found in this tree): " + ", ".join(r["missing_targets"]))
        else:
            out += format_cprofile(r)
        out.append("")
        out += format_run(r)
        out.append("")
    text = "\n".join(out)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(results), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
