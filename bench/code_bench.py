"""Code benchmark: per-step mask time replaying Python and Lua corpus files with Qwen2.

The replay loop, the engines and the table are mask_bench's (`bench/mask_bench.py`,
`bench/peers.py`); this file only builds the two code workloads:

- `python`: files of ../shared/corpus/python/valid (CPython 3.11 stdlib) under
  pda/grammars/python.lark, whose `_NEWLINE`/`_INDENT`/`_DEDENT` come from pda's indenter;
- `python-noindent`: the same files under the Python-like grammar a peer can take
  (`python_like_grammar`): python.lark without the indenter (`_INDENT`/`_DEDENT`
  dropped from the rules, indentation absorbed by `_NEWLINE`), templates
  instantiated, NAME a plain identifier regex. Every engine runs it, pda included:
  the like-for-like row;
- `lua`: files of ../shared/corpus/lua (Lua 5.4.4's test suite) under pda/grammars/lua.lark.

What the peers cannot express: llguidance and XGrammar have no indenter, so
python.lark (which `%declare`s the indenter's terminals) is refused by both (their
rows in `python` say why); llguidance also refuses Lark templates ("params not
supported yet") and terminal priorities, and XGrammar's Lark translation
(bench/peers.py) has no negated Unicode categories (`[^\W\d]`, Python's NAME). The
Python-like grammar therefore accepts programs whose blocks do not line up, keywords
as names, and `ifx` read as `if x` by a scannerless engine: it costs about what the
real thing costs per step but checks much less. Lua needs no indenter; its long
brackets are bounded to levels 0..4 (docs/code_grammars.md).

    python bench/code_bench.py                      # both workloads, pda/llguidance/xgrammar
    python bench/code_bench.py --workload python,python-noindent --docs 4 --budget 30
"""

from __future__ import annotations

import argparse
import datetime as _dt
import re
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import CORPUS, QWEN2_LOGITS_SIZE, REPO_ROOT, load_qwen2_tokenizer, machine_description  # noqa: E402
from bench.mask_bench import format_table, run_isolated, run_worker  # noqa: E402
from bench.workloads import Document, GrammarSpec, Workload, tokenize  # noqa: E402

ENGINES = ("pda", "llguidance-lark", "xgrammar")
WORKLOADS = ("python", "python-noindent", "lua")

_TEMPLATE_DEF = re.compile(r"(?m)^(_?\w+)\{([^}]*)\}:(.*(?:\n[ \t]+\|.*)*)")
_TEMPLATE_USE = re.compile(r"\b(_?\w+)\{([^}\"']*)\}")
# Python's identifiers, as a superset a peer's regex engine takes: any non-ASCII character is a letter.
_PLAIN_NAME = r"NAME: /[A-Za-z_\u0080-\U0010ffff][A-Za-z0-9_\u0080-\U0010ffff]*/"


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


def expand_templates(text: str) -> str:
    """Lark templates (`name{a, b}: ...`) instantiated as plain rules, one per distinct use."""
    templates = {m.group(1): ([p.strip() for p in m.group(2).split(",")], m.group(3)) for m in _TEMPLATE_DEF.finditer(text)}
    text = _TEMPLATE_DEF.sub("", text)
    made: dict[str, str] = {}

    def instantiate(m: re.Match) -> str:
        name, args = m.group(1), [a.strip() for a in m.group(2).split(",")]
        if name not in templates:
            return m.group(0)  # a regex repetition such as `{2}`
        params, body = templates[name]
        rule = f"{name}__{'__'.join(args)}"
        if rule not in made:
            for param, arg in zip(params, args):
                body = re.sub(rf"\b{param}\b", arg, body)
            made[rule] = f"{rule}:{body}"
        return rule

    text = _TEMPLATE_USE.sub(instantiate, text)
    return text + "\n" + "\n".join(made.values()) + "\n"


def python_like_grammar() -> str:
    """python.lark as far as llguidance and XGrammar can take it (see the module docstring)."""
    text = expand_templates((REPO_ROOT / "pda" / "grammars" / "python.lark").read_text(encoding="utf-8"))
    text = text.replace("%declare _INDENT _DEDENT", "")
    text = re.sub(r"[ \t]_(?:INDENT|DEDENT)\b", "", text)
    text, n = re.subn(r"(?m)^NAME: /.*/$", lambda _: _PLAIN_NAME, text)
    assert n == 1, "python.lark's NAME definition moved"
    return text


def _python_docs(n_docs: int) -> list[Document]:
    """Stdlib files spread over sizes; every one is valid Python 3.11."""
    folder = _corpus("python", "valid")
    files = _spread(list(folder.rglob("*.py")), n_docs)
    return [Document(str(p.relative_to(folder)), p.read_text(encoding="utf-8")) for p in files]


def python_workload(n_docs: int) -> Workload:
    """The shipped grammar with pda's indenter."""
    docs = _python_docs(n_docs)
    # every engine's Lark loader starts at `start`
    text = "start: file_input\n" + (REPO_ROOT / "pda" / "grammars" / "python.lark").read_text(encoding="utf-8")
    return Workload(
        name="python",
        grammar=GrammarSpec(kind="lark", lark=text, lark_origin="pda/grammars/python.lark"),
        documents=docs,
        note=f"{len(docs)} files of corpus/python/valid ({sum(len(d.text) for d in docs):,} chars)",
    )


def python_like_workload(n_docs: int) -> Workload:
    """The same files under the indentation-free grammar every engine can take."""
    docs = _python_docs(n_docs)
    return Workload(
        name="python-noindent",
        grammar=GrammarSpec(kind="lark", lark="start: file_input\n" + python_like_grammar(), lark_origin="python-like"),
        documents=docs,
        note=f"{len(docs)} files of corpus/python/valid, indentation-free grammar (python_like_grammar)",
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
    text = "start: chunk\n" + (REPO_ROOT / "pda" / "grammars" / "lua.lark").read_text(encoding="utf-8")
    return Workload(
        name="lua",
        grammar=GrammarSpec(kind="lark", lark=text, lark_origin="pda/grammars/lua.lark"),
        documents=docs,
        note=f"{len(docs)} files of corpus/lua ({sum(len(d.text) for d in docs):,} chars)",
    )


def main(argv: list[str] | None = None) -> int:
    """Build the code workloads, run each engine in its own process, print mask_bench's table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", default=",".join(WORKLOADS), help="comma list of " + ", ".join(WORKLOADS))
    parser.add_argument("--engines", default=",".join(ENGINES), help="comma list of engines (bench/peers.py)")
    parser.add_argument("--docs", type=int, default=6, help="files per workload, spread over sizes (default 6)")
    parser.add_argument("--budget", type=float, default=120.0, help="seconds of replay per engine and workload")
    parser.add_argument("--in-process", action="store_true", help="no subprocess per engine (debugging)")
    args = parser.parse_args(argv)

    builders = {"python": python_workload, "python-noindent": python_like_workload, "lua": lua_workload}
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
