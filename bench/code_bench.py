"""Code benchmark: per-step mask time replaying Python and Lua corpus files with Qwen2.

The replay loop, the engines and the table are mask_bench's (`bench/mask_bench.py`,
`bench/peers.py`); this file only builds the two code workloads:

- `python`: files of ../shared/corpus/python/valid (CPython 3.11 stdlib) under
  grammars/python.lark, whose `_NEWLINE`/`_INDENT`/`_DEDENT` come from pda's indenter;
- `lua`: files of ../shared/corpus/lua (Lua 5.4.4's test suite) under grammars/lua.lark.

Peers: llguidance and XGrammar have no indenter. python.lark `%declare`s the
indenter's terminals, which neither can produce, so both refuse it (their rows say
why). An indentation-free Python grammar would accept programs whose blocks do not
line up, so it is not a like-for-like comparison and is not run. Lua needs no
indenter; its long brackets are bounded to levels 0..4 (docs/code_grammars.md).

    python bench/code_bench.py                      # both workloads, pda/llguidance/xgrammar
    python bench/code_bench.py --workload python --docs 4 --budget 30
"""

from __future__ import annotations

import argparse
import datetime as _dt
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import CORPUS, QWEN2_LOGITS_SIZE, REPO_ROOT, load_qwen2_tokenizer, machine_description  # noqa: E402
from bench.mask_bench import format_table, run_isolated, run_worker  # noqa: E402
from bench.workloads import Document, GrammarSpec, Workload, tokenize  # noqa: E402

ENGINES = ("pda", "llguidance-lark", "xgrammar")
WORKLOADS = ("python", "lua")


def _spread(paths: list[Path], n: int) -> list[Path]:
    """n files spread over the size order (small to large), deterministic."""
    paths = sorted(paths, key=lambda p: (p.stat().st_size, p.name))
    if n >= len(paths):
        return paths
    return [paths[round(i * (len(paths) - 1) / max(1, n - 1))] for i in range(n)]


def _corpus(*parts: str) -> Path:
    path = CORPUS.joinpath(*parts)
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing (the benchmark reads ../shared/corpus/)")
    return path


def python_workload(n_docs: int) -> Workload:
    """Stdlib files spread over sizes; every one is valid Python 3.11."""
    folder = _corpus("python", "valid")
    files = _spread(list(folder.rglob("*.py")), n_docs)
    docs = [Document(str(p.relative_to(folder)), p.read_text(encoding="utf-8")) for p in files]
    # every engine's Lark loader starts at `start`
    text = "start: file_input\n" + (REPO_ROOT / "grammars" / "python.lark").read_text(encoding="utf-8")
    return Workload(
        name="python",
        grammar=GrammarSpec(kind="lark", lark=text, lark_origin="grammars/python.lark"),
        documents=docs,
        note=f"{len(docs)} files of corpus/python/valid ({sum(len(d.text) for d in docs):,} chars)",
    )


def lua_workload(n_docs: int) -> Workload:
    """Lua test scripts spread over sizes; Latin-1 files are read one character per byte,
    as tests/test_lua_grammar.py does."""
    folder = _corpus("lua")
    files = _spread(list(folder.glob("*.lua")), n_docs)
    docs = []
    for p in files:
        data = p.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = data.decode("latin-1")
        docs.append(Document(p.name, text))
    text = "start: chunk\n" + (REPO_ROOT / "grammars" / "lua.lark").read_text(encoding="utf-8")
    return Workload(
        name="lua",
        grammar=GrammarSpec(kind="lark", lark=text, lark_origin="grammars/lua.lark"),
        documents=docs,
        note=f"{len(docs)} files of corpus/lua ({sum(len(d.text) for d in docs):,} chars)",
    )


def main(argv: list[str] | None = None) -> int:
    """Build the code workloads, run each engine in its own process, print mask_bench's table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", default=",".join(WORKLOADS), help="comma list of python, lua")
    parser.add_argument("--engines", default=",".join(ENGINES), help="comma list of engines (bench/peers.py)")
    parser.add_argument("--docs", type=int, default=6, help="files per workload, spread over sizes (default 6)")
    parser.add_argument("--budget", type=float, default=120.0, help="seconds of replay per engine and workload")
    parser.add_argument("--in-process", action="store_true", help="no subprocess per engine (debugging)")
    args = parser.parse_args(argv)

    builders = {"python": python_workload, "lua": lua_workload}
    tokenizer = load_qwen2_tokenizer()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.workload.split(","):
            workload = builders[name](args.docs)
            tokenize(workload, tokenizer)
            steps = sum(len(d.tokens) + 1 for d in workload.documents)
            print(f"# {name}: {workload.note}; {steps} mask steps", file=sys.stderr)
            path = Path(tmp) / f"{name}.json"
            path.write_text(workload.to_json(), encoding="utf-8")
            results[name] = []
            for engine in args.engines.split(","):
                run = run_worker if args.in_process else run_isolated
                r = run(engine, path, args.budget)
                status = r.get("skipped") or r.get("error") or f"mean {r['mask']['mean_us']:.1f} µs"
                print(f"#   {engine}: {status}", file=sys.stderr)
                results[name].append(r)
    when = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    command = " ".join(argv if argv is not None else sys.argv[1:])
    print(
        f"Run {when} on {machine_description()}; Qwen2 vocabulary ({QWEN2_LOGITS_SIZE} logits); "
        f"command: `python bench/code_bench.py {command}`\n\n" + format_table(results, "pda")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
