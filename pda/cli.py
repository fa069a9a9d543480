"""The `pda` command line: compile, check, sample, equiv, generate, bench, demo."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from pda.errors import ParseError, PdaError
from pda.grammar.grammar import Grammar


def _load(spec: str, start: str | None = None) -> Grammar:
    return Grammar.load(spec, start=start)


def _location(data: bytes, offset: int) -> tuple[int, int, str]:
    """1-based line and column (in characters) of a byte offset, and that line's text."""
    line_start = data.rfind(b"\n", 0, offset) + 1
    line_end = data.find(b"\n", offset)
    line_end = len(data) if line_end < 0 else line_end
    line = data.count(b"\n", 0, offset) + 1
    text = data[line_start:line_end].decode("utf-8", "replace")
    column = len(data[line_start:offset].decode("utf-8", "replace")) + 1
    return line, column, text


def format_parse_error(path: str, data: bytes, error: ParseError) -> str:
    """`file:line:col: message`, the offending line and a caret under the error."""
    line, column, text = _location(data, error.offset)
    return f"{path}:{line}:{column}: {error}\n    {text}\n    {' ' * (column - 1)}^"


def check_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="pda check", description="Check files against a grammar.")
    parser.add_argument("grammar", help="a .lark/.gbnf/.json (JSON Schema) path or a shipped grammar name")
    parser.add_argument("files", nargs="+", help="files to check ('-' for standard input)")
    parser.add_argument("--prefix", action="store_true", help="accept viable prefixes (text that could still be completed)")
    parser.add_argument("--start", help="start rule (default: start, or the first rule)")
    args = parser.parse_args(argv)
    grammar = _load(args.grammar, args.start)
    status = 0
    for path in args.files:
        data = sys.stdin.buffer.read() if path == "-" else open(path, "rb").read()
        try:
            grammar.check(data, prefix=args.prefix)
        except ParseError as error:
            print(format_parse_error(path, data, error))
            status = 1
        else:
            print(f"{path}: ok")
    return status


def compile_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="pda compile", description="Show what a grammar compiles to.")
    parser.add_argument("grammar")
    parser.add_argument("--start")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args(argv)
    grammar = _load(args.grammar, args.start)
    ir = grammar.ir
    recognizer = grammar.recognizer
    terminals = []
    for t, dfa in zip(ir.terminals, recognizer.lexer.dfas):
        terminals.append(
            {"name": t.name, "pattern": t.pattern, "flags": t.flags, "priority": t.priority,
             "lazy": t.lazy, "dfa_states": int(dfa.n_states), "ignored": t.name in ir.ignore}
        )
    tables = recognizer.tables
    used = {s for rhs in tables.rhs for s in rhs}
    warnings = [f"terminal {t.name} is never used by a rule" for i, t in enumerate(ir.terminals)
                if i not in used and t.name not in ir.ignore]
    pruned = len(ir.rules) - (len(tables.rhs) - 1)
    if pruned:
        warnings.append(f"{pruned} rules can never derive a sentence and were dropped")
    root = recognizer.root
    start_states = recognizer.lexer.tables(root.allowed | recognizer.lexer.ignore).n_states
    doc = {
        "source": ir.source, "start": ir.start, "hash": ir.content_hash,
        "terminals": terminals, "ignore": list(ir.ignore),
        "rules": [{"lhs": r.lhs, "rhs": list(r.rhs), "alias": r.alias} for r in ir.rules],
        "start_lexer_dfa_states": start_states, "warnings": warnings,
    }
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    print(f"grammar {ir.source}  start={ir.start}  hash={ir.content_hash[:16]}")
    print(f"terminals ({len(terminals)}); the lexer DFA for the first lexeme has {start_states} states")
    for t in terminals:
        flags = f" flags={t['flags']}" if t["flags"] else ""
        extra = (" ignored" if t["ignored"] else "") + (" lazy" if t["lazy"] else "")
        print(f"  {t['name']:<24} {t['dfa_states']:>6} states  prio={t['priority']}{flags}{extra}  /{t['pattern']}/")
    print(f"rules ({len(ir.rules)}):")
    for r in ir.rules:
        alias = f"   -> {r.alias}" if r.alias else ""
        print(f"  {r.lhs}: {' '.join(r.rhs) or '<empty>'}{alias}")
    print(f"ignore: {', '.join(ir.ignore) or '(none)'}")
    for w in warnings:
        print(f"warning: {w}")
    return 0


COMMANDS = {
    "check": ("pda.cli", "check_main"),
    "compile": ("pda.cli", "compile_main"),
    "sample": ("pda.testing.sampler", "sample_main"),
    "equiv": ("pda.testing.equiv", "equiv_main"),
    "generate": ("pda.generation", "generate_main"),
    "demo": ("pda.demo.runner", "demo_main"),
    "bench": ("pda.bench_cli", "bench_main"),
}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        print("usage: pda {" + ",".join(COMMANDS) + "} ...   (each with --help)")
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    module_name, func = COMMANDS[argv[0]]
    import importlib

    try:
        module = importlib.import_module(module_name)
        return int(getattr(module, func)(argv[1:]) or 0)
    except PdaError as error:
        print(f"pda {argv[0]}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
