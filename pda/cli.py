"""The `pda` command line: check, compile, sample, equiv, generate, demo.

Every subcommand follows one convention for its exit status: 0 when the input
is accepted (or the command did its job), 1 when a document is rejected or two
languages differ, 2 for a usage or input error (a missing file, a bad grammar, a
bad option), reported as one line `pda COMMAND: error: ...` on stderr and never
as a traceback. `pda generate` exits 3 when its output was cut by
`--max-new-tokens`. A closed output pipe (`pda sample json | head`) ends the
command quietly with status 141, as a process killed by SIGPIPE would.

The helpers below are shared by every subcommand, including those that live
next to the code they drive (`pda.testing.sampler.sample_main`,
`pda.testing.equiv.equiv_main`, `pda.demo.runner.demo_main`): `command_parser`
(one-line usage errors), the count types, `add_grammar_options` +
`load_grammar` (the options of `Grammar.load` and `Grammar.from_json_schema`)
and `run_command` (input errors become exit status 2).

Benchmarks are not a subcommand: they live in the repository's `bench/`, which
is not installed with the package (`make bench` in a clone).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from pda.errors import ParseError, PdaError
from pda.grammar.grammar import Grammar
from pda.grammar.ir import LEXER_MODES

EXIT_OK, EXIT_REJECTED, EXIT_ERROR = 0, 1, 2
EXIT_BROKEN_PIPE = 128 + 13  # what a shell reports for a process killed by SIGPIPE
EXIT_INTERRUPTED = 128 + 2

GRAMMAR_HELP = "a shipped grammar's name (json, sqlite, ...) or a .lark, .gbnf or .json (JSON Schema) file"


class UsageError(ValueError):
    """An option or argument that does not fit the input (reported as exit status 2)."""


class CommandParser(argparse.ArgumentParser):
    """An `ArgumentParser` whose errors are one line, `pda COMMAND: error: ...`, and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def command_parser(prog: str, description: str, **kwargs: Any) -> argparse.ArgumentParser:
    """The argument parser every subcommand uses."""
    return CommandParser(prog=prog, description=description, **kwargs)


def positive_int(text: str) -> int:
    """argparse type for counts: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def non_negative_float(text: str) -> float:
    """argparse type for temperatures and time limits: a number >= 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value >= 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def probability(text: str) -> float:
    """argparse type for top-p: a number in (0, 1]."""
    value = non_negative_float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {text}")
    return value


# -- grammars ------------------------------------------------------------------------


def add_grammar_options(parser: argparse.ArgumentParser) -> None:
    """The options of `Grammar.load` (Lark files) and `Grammar.from_json_schema` (.json files).

    Each one is refused where it does not apply, rather than silently ignored.
    """
    group = parser.add_argument_group("grammar options")
    group.add_argument("--start", help="Lark grammars: the start rule (default: start, or the first rule)")
    group.add_argument("--lexer", choices=LEXER_MODES,
                       help="Lark grammars: the lexer mode (default: the grammar's `// pda: lexer=` line, "
                       "else contextual; docs/semantics.md)")
    group.add_argument("--whitespace", choices=("flexible", "compact", "any"),
                       help="JSON Schema: white space between tokens: runs of up to --max-whitespace characters "
                       "(flexible, the default), none (compact), or any run (any, the default with --exact)")
    group.add_argument("--max-whitespace", type=positive_int, metavar="N",
                       help="JSON Schema: longest white-space run with --whitespace flexible (default 65: a newline "
                       "and 64 spaces, json.dumps(indent=4) at depth 16)")
    group.add_argument("--exact", action=argparse.BooleanOptionalAction, default=None,
                       help="JSON Schema: JSON Schema's exact language (any white space, integers as 1.0 or 1e5, any "
                       "number, undeclared keys where additionalProperties is absent) instead of the generation "
                       "defaults (docs/json_schema.md)")
    group.add_argument("--on-unsupported", choices=("raise", "relax"),
                       help="JSON Schema: refuse unsupported keywords (raise, the default), or ignore them with a "
                       "warning (relax)")
    group.add_argument("--strict", action=argparse.BooleanOptionalAction, default=None,
                       help="JSON Schema: deprecated name of --on-unsupported raise (--strict) or relax (--no-strict)")
    group.add_argument("--property-order", choices=("any", "schema"),
                       help="JSON Schema: properties in any order (default) or in the schema's order")


SCHEMA_OPTIONS = ("whitespace", "max_whitespace", "exact", "on_unsupported", "strict", "property_order")
"""The `Grammar.from_json_schema` options `add_grammar_options` adds, as argparse names them."""


def load_grammar(spec: str, args: argparse.Namespace) -> Grammar:
    """The grammar named by `spec` (see `GRAMMAR_HELP`), with the options `add_grammar_options` parsed."""
    lark_options = {k: getattr(args, k) for k in ("start", "lexer") if getattr(args, k) is not None}
    schema_options = {k: getattr(args, k) for k in SCHEMA_OPTIONS if getattr(args, k) is not None}
    path = Path(spec)
    suffix = path.suffix.lower()  # a shipped grammar's name has none: it is Lark
    try:
        if suffix == ".json":
            if lark_options:
                raise UsageError(f"{_apply(lark_options)} to Lark grammars, and {spec} is a JSON Schema")
            return Grammar.from_json_schema(_read_json(path), **_undeprecated(schema_options))
        if schema_options:
            raise UsageError(f"{_apply(schema_options)} to JSON Schema (.json) grammars, and {spec} is not one")
        if suffix == ".gbnf" and lark_options:
            raise UsageError(f"{_apply(lark_options)} to Lark grammars (a GBNF grammar starts at root)")
        return Grammar.load(spec, **lark_options)
    except UnicodeDecodeError as exc:
        raise UsageError(f"{spec}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _undeprecated(options: dict[str, Any]) -> dict[str, Any]:
    """`--strict`/`--no-strict` as `--on-unsupported`, with a warning on stderr that names it."""
    if "strict" not in options:
        return options
    options = dict(options)
    if "on_unsupported" in options:
        raise UsageError("--strict is the deprecated name of --on-unsupported: pass --on-unsupported only")
    strict = options.pop("strict")
    new = "raise" if strict else "relax"
    print(f"pda: warning: --{'' if strict else 'no-'}strict is deprecated: use --on-unsupported {new}", file=sys.stderr)
    return {**options, "on_unsupported": new}


def _apply(options: dict[str, Any]) -> str:
    """`--start applies` / `--start and --lexer apply`: the options given, for a message."""
    names = [f"--{k.replace('_', '-')}" for k in options]
    return f"{names[0]} applies" if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]} apply"


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: not valid JSON: {exc}") from None


# -- errors --------------------------------------------------------------------------

INPUT_ERRORS = (OSError, PdaError, ValueError, ImportError)


def run_command(prog: str, body: Callable[[], int]) -> int:
    """Run a subcommand's body; an input error becomes one line on stderr and exit status 2."""
    try:
        return int(body() or 0)
    except BrokenPipeError:
        raise  # not an input error: `main` ends the process quietly
    except INPUT_ERRORS as exc:
        print(f"{prog}: error: {_message(exc)}", file=sys.stderr)
        return EXIT_ERROR


def _message(exc: BaseException) -> str:
    """The error as one line."""
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    text = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip()) or type(exc).__name__
    if isinstance(exc, ImportError):
        text += " (the optional dependencies: pip install 'pda[transformers]', or 'pda[demo]' for the tiny model)"
    return text


# -- check and compile ---------------------------------------------------------------


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
    """`pda check GRAMMAR FILE...`: 0 when every file is accepted, 1 when one is rejected."""
    parser = command_parser("pda check", "Check files against a grammar. Exit status 0 when every file "
                            "is accepted, 1 when one is rejected, 2 on an error.")
    parser.add_argument("grammar", help=GRAMMAR_HELP)
    parser.add_argument("files", nargs="+", help="files to check ('-' for standard input)")
    parser.add_argument("--prefix", action="store_true", help="accept viable prefixes (text that could still be completed)")
    add_grammar_options(parser)
    args = parser.parse_args(argv)

    def run() -> int:
        grammar = load_grammar(args.grammar, args)
        status = EXIT_OK
        for path in args.files:
            data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
            try:
                grammar.check(data, prefix=args.prefix)
            except ParseError as error:
                print(format_parse_error(path, data, error))
                status = EXIT_REJECTED
            else:
                print(f"{path}: ok")
        return status

    return run_command(parser.prog, run)


def compile_main(argv: Sequence[str]) -> int:
    """`pda compile GRAMMAR`: the terminals, their DFA sizes, the rules and warnings."""
    parser = command_parser("pda compile", "Show what a grammar compiles to.")
    parser.add_argument("grammar", help=GRAMMAR_HELP)
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    add_grammar_options(parser)
    args = parser.parse_args(argv)
    return run_command(parser.prog, lambda: _print_compiled(load_grammar(args.grammar, args), as_json=args.json))


def _print_compiled(grammar: Grammar, *, as_json: bool) -> int:
    recognizer = grammar.recognizer
    ir = recognizer.lexer_ir
    terminals = []
    for t, dfa in zip(ir.terminals, recognizer.lexer.dfas):
        automaton = t.automaton
        terminals.append(
            {"name": t.name, "pattern": t.pattern, "flags": t.flags, "priority": t.priority,
             "lazy": t.lazy, "dfa_states": int(dfa.n_states), "ignored": t.name in ir.ignore,
             # A terminal given as an automaton: its `pattern` only describes it.
             "automaton": None if automaton is None else {
                 "states": automaton.n_states, "start": automaton.start, "accept": list(automaton.accept),
                 "edges": [list(e) for e in automaton.edges]}}
        )
    tables = recognizer.tables
    used = {s for rhs in tables.rhs for s in rhs}
    warnings = [f"terminal {t.name} is never used by a rule" for i, t in enumerate(ir.terminals)
                if i not in used and t.name not in ir.ignore]
    pruned = len(ir.rules) - (len(tables.rhs) - 1)
    if pruned:
        warnings.append(f"{pruned} rules can never derive a sentence and were dropped")
    root = recognizer.root
    start_states = recognizer.lexer.tables(root.allowed | recognizer.lexer.ignore).own_states()
    doc = {
        "source": ir.source, "start": ir.start, "hash": grammar.ir.content_hash,
        "terminals": terminals, "ignore": list(ir.ignore),
        "rules": [{"lhs": r.lhs, "rhs": list(r.rhs), "alias": r.alias} for r in ir.rules],
        "start_lexer_dfa_states": start_states, "warnings": warnings,
    }
    if as_json:
        print(json.dumps(doc, indent=2))
        return EXIT_OK
    print(f"grammar {ir.source}  start={ir.start}  hash={grammar.ir.content_hash[:16]}")
    print(f"terminals ({len(terminals)}); the lexer DFA for the first lexeme has {start_states} states")
    for t in terminals:
        flags = f" flags={t['flags']}" if t["flags"] else ""
        extra = (" ignored" if t["ignored"] else "") + (" lazy" if t["lazy"] else "")
        shown = t["pattern"] if t["automaton"] else f"/{t['pattern']}/"
        print(f"  {t['name']:<24} {t['dfa_states']:>6} states  prio={t['priority']}{flags}{extra}  {shown}")
    print(f"rules ({len(ir.rules)}):")
    for r in ir.rules:
        alias = f"   -> {r.alias}" if r.alias else ""
        print(f"  {r.lhs}: {' '.join(r.rhs) or '<empty>'}{alias}")
    print(f"ignore: {', '.join(ir.ignore) or '(none)'}")
    for w in warnings:
        print(f"warning: {w}")
    return EXIT_OK


# -- generate ------------------------------------------------------------------------

EXIT_CUT = 3


def load_model(spec: str, *, device: str | None = None) -> tuple[Any, Any]:
    """`(model, tokenizer)` for `--model`: `tiny`, or a local transformers model folder.

    `tiny` is the demo's randomly initialised Qwen2 (`pda.demo`, the `demo` extra),
    imported only when asked for: the engine never needs it. A folder is read
    with `local_files_only=True`, so nothing is downloaded.
    """
    if spec != "tiny" and not (Path(spec) / "config.json").is_file():
        raise UsageError(f"--model {spec}: not a transformers model folder (no config.json); "
                         "give a local folder or 'tiny' (nothing is downloaded)")
    from transformers.utils import logging

    logging.disable_progress_bar()  # weight-loading bars would interleave with the streamed output
    if spec == "tiny":
        from pda.demo.models import load_tiny_qwen2

        model, tokenizer = load_tiny_qwen2()
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(spec, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(spec, local_files_only=True).eval()
    if device is not None:
        model = model.to(device)
    return model, tokenizer


def generate_main(argv: Sequence[str]) -> int:
    """`pda generate GRAMMAR PROMPT --model M`: stream a constrained generation; 0 if complete, 3 if cut."""
    parser = command_parser(
        "pda generate",
        "Generate text that belongs to a grammar, streaming it to stdout. Exit status 0 when the "
        f"output is a complete sentence (EOS), {EXIT_CUT} when --max-new-tokens cut it, 2 on an error.",
    )
    parser.add_argument("grammar", help=GRAMMAR_HELP)
    parser.add_argument("prompt", help="the prompt text ('-' reads standard input)")
    parser.add_argument("--model", required=True,
                        help="a local transformers model folder, or 'tiny': pda's tiny random Qwen2 "
                        "(the demo extra; it writes nonsense, but grammatical nonsense)")
    parser.add_argument("--device", help="torch device for the model (default: cpu)")
    parser.add_argument("--max-new-tokens", type=positive_int, default=256)
    parser.add_argument("--temperature", type=non_negative_float, default=1.0, help="0 for greedy decoding")
    parser.add_argument("--top-k", type=positive_int)
    parser.add_argument("--top-p", type=probability)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--prefix", default="", help="text the output starts with (the grammar matches it)")
    parser.add_argument("--chat", action="store_true", help="wrap the prompt in the tokenizer's chat template")
    parser.add_argument("--no-jump-forward", action="store_true", help="sample forced text token by token")
    parser.add_argument("--no-heal", action="store_true", help="keep the prompt's last token as it is")
    parser.add_argument("--stats", action="store_true", help="print token and forward-pass counts to stderr")
    add_grammar_options(parser)
    args = parser.parse_args(argv)
    return run_command(parser.prog, lambda: _generate(args))


def _generate(args: argparse.Namespace) -> int:
    from pda.generation import generate

    grammar = load_grammar(args.grammar, args)
    prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
    model, tokenizer = load_model(args.model, device=args.device)
    if args.chat:
        prompt = tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
        )

    def stream(chunk: str) -> None:
        sys.stdout.write(chunk)
        sys.stdout.flush()

    result = generate(
        model, tokenizer, grammar, prompt,
        max_new_tokens=args.max_new_tokens, temperature=args.temperature, top_k=args.top_k,
        top_p=args.top_p, seed=args.seed, jump_forward=not args.no_jump_forward,
        heal=not args.no_heal, prefix=args.prefix, on_text=stream,
    )
    sys.stdout.write("\n")
    sys.stdout.flush()  # the text before the notes on stderr
    if not result.terminated:
        print(f"pda generate: output cut at --max-new-tokens {args.max_new_tokens}: not a complete sentence",
              file=sys.stderr)
    if args.stats:
        print(
            f"{len(result.token_ids)} tokens, {result.forward_passes} forward passes, "
            f"{result.forced_tokens} forced by jump-forward, terminated={result.terminated}",
            file=sys.stderr,
        )
    return EXIT_OK if result.terminated else EXIT_CUT


# -- dispatch ------------------------------------------------------------------------

# name: (module, function, one-line summary); each module is imported only when its command runs.
COMMANDS = {
    "check": ("pda.cli", "check_main", "check files against a grammar (exit 1 when one is rejected)"),
    "compile": ("pda.cli", "compile_main", "show a grammar's terminals, DFA sizes and rules (--json)"),
    "sample": ("pda.testing.sampler", "sample_main", "print random sentences (or near-misses) of a grammar"),
    "equiv": ("pda.testing.equiv", "equiv_main", "fuzz-test two grammars, or a grammar and a real parser"),
    "generate": ("pda.cli", "generate_main", "constrained generation with a transformers model"),
    "demo": ("pda.demo.runner", "demo_main", "generation end to end on a tiny random model (the demo extra)"),
}

USAGE = "usage: pda COMMAND [ARGS]   (pda COMMAND --help for each)\n\ncommands:\n" + "".join(
    f"  {name:<9} {summary}\n" for name, (_, _, summary) in COMMANDS.items()
) + "\nBenchmarks live in the repository's bench/ (make bench), not in the installed command."


def main(argv: Sequence[str] | None = None) -> int:
    """The `pda` entry point: dispatch to a subcommand; see the module docstring for exit statuses."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-h", "--help"):
        print(USAGE)
        return EXIT_OK
    if not argv:
        print(USAGE, file=sys.stderr)
        return EXIT_ERROR
    if argv[0] not in COMMANDS:
        print(f"pda: error: unknown command {argv[0]!r} (commands: {', '.join(COMMANDS)}; see pda --help)",
              file=sys.stderr)
        return EXIT_ERROR
    module_name, function_name, _ = COMMANDS[argv[0]]
    try:
        command = getattr(importlib.import_module(module_name), function_name)
    except ImportError as exc:
        print(f"pda {argv[0]}: error: {_message(exc)}", file=sys.stderr)
        return EXIT_ERROR
    try:
        status = int(command(argv[1:]) or 0)
        sys.stdout.flush()  # a closed pipe shows up here, where it can be handled, not at exit
        return status
    except BrokenPipeError:
        # The reader went away (`| head`). Python flushes stdout again at exit: point it
        # at /dev/null first so that flush cannot fail and print a traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
