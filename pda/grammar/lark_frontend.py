"""Lark EBNF → grammar IR, through Lark's own grammar loader.

Lark already expands `?`, `*`, `+`, `[...]`, ranges, templates, `%import`
(including `common.lark`) and `%ignore`; we only translate its compiled
terminals and rules. Rule shaping (`?rule`, `_rule`, aliases) changes trees,
not languages, so it is kept only as alias information for messages.

pda adds two comment-line directives Lark ignores (`// pda: lexer=basic`,
`// pda: bytes=NAME ...`), and turns every failure of Lark's loader (syntax,
missing `%import` file, bad escapes, nesting too deep for its recursion) into a
`GrammarError` with the line and column where known.

It also adds two items of a rule's expansion: `%json SCHEMA` (llguidance's syntax), a
JSON text valid against the JSON Schema SCHEMA (an object or a boolean, written inline),
lowered with `from_json_schema`'s defaults; and `%grammar NAME`, a sentence of the shipped
grammar NAME (`pda/grammars/NAME.lark`, its own `%ignore` kept inside it). Both are
embedded (`pda.grammar.embed`); Lark sees a declared placeholder terminal in their place.
The host grammar's `%ignore` applies inside them too.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path

from lark.exceptions import LarkError, VisitError
from lark.load_grammar import load_grammar
from lark.lexer import PatternStr

from pda.errors import GrammarError
from pda.grammar.embed import embed_ir
from pda.grammar.ir import BASIC, CONTEXTUAL, LEXER_MODES, NEVER, GrammarIR, IndentConfig, Rule, TerminalDef
from pda.regex import has_lazy_quantifier
from pda.regex.syntax import BYTE_MODE

_TERMINAL_DEF = re.compile(r"^\s*([A-Z_][A-Z_0-9]*)\s*(?:\.\s*-?\d+\s*)?:", re.MULTILINE)
# A grammar file picks its lexer mode with a comment line Lark itself ignores.
_LEXER_DIRECTIVE = re.compile(r"^\s*//\s*pda:\s*lexer\s*=\s*(\S+)\s*$", re.MULTILINE)
# ... and its byte-mode terminals (docs/semantics.md, "Bytes") with `// pda: bytes=NAME NAME`.
_BYTES_DIRECTIVE = re.compile(r"^\s*//\s*pda:\s*bytes\s*=([^\n]*)$", re.MULTILINE)

MAX_LARK_NESTING = 200
"""Deepest `( )`/`[ ]` nesting of a Lark grammar's rules and terminals.

Lark's grammar loader recurses once per level (it fails near 450 levels); a
grammar nested deeper is refused up front with a GrammarError at the opening
bracket. Regexes inside `/.../` do not count: pda parses them itself, at any depth.
"""
_LARK_TOKEN = re.compile(r'//[^\n]*|"(?:[^"\\\n]|\\.)*"i?|/(?!/)(?:\\.|[^/\\\n])+/[imslux]*|[(\[]|[)\]]|\n')
# Where `%json` and `%grammar` items are: strings, regexes and comments skipped.
_ISLAND_ITEM = re.compile(r'//[^\n]*|"(?:[^"\\\n]|\\.)*"i?|/(?!/)(?:\\.|[^/\\\n])+/[imslux]*|%json\b'
                        r'|%grammar[ \t]+([A-Za-z_][A-Za-z_0-9]*)')
_ISLAND_PLACEHOLDER = "PDA_JSON_{}"
SHIPPED_GRAMMARS = Path(__file__).resolve().parent.parent / "grammars"


def lexer_directive(text: str, source: str = "<grammar>") -> str | None:
    """The mode named by a `// pda: lexer=MODE` line, if the grammar has one."""
    modes = {m.group(1) for m in _LEXER_DIRECTIVE.finditer(text)}
    if not modes:
        return None
    if len(modes) > 1 or not modes <= set(LEXER_MODES):
        raise GrammarError(
            f"{source}: '// pda: lexer=' names {', '.join(sorted(modes))}; expected one of {', '.join(LEXER_MODES)}"
        )
    return modes.pop()


def _definition_lines(text: str) -> dict[str, int]:
    """Line numbers of terminal definitions, for error messages."""
    lines: dict[str, int] = {}
    for match in _TERMINAL_DEF.finditer(text):
        lines.setdefault(match.group(1), text.count("\n", 0, match.start(1)) + 1)
    return lines


def lark_to_ir(
    text: str,
    *,
    start: str = "start",
    import_paths: Sequence[str] = (),
    source: str = "<grammar>",
    indent: IndentConfig | None = None,
    lexer: str | None = None,
) -> GrammarIR:
    """Load Lark grammar text and return its IR.

    `import_paths` are folders searched for relative `%import`s; the folder
    of `source` (when it is a path) is searched first. A grammar that
    `%declare`s `_INDENT` and `_DEDENT` and defines `_NEWLINE` opts in to
    Python-style indentation (`pda.parser.indent`); `indent` overrides the names
    and widths.

    `lexer` is the lexer mode (`"contextual"` or `"basic"`); by default the
    grammar's `// pda: lexer=MODE` line, else contextual. Under the basic mode
    the terminals defined in this text are kept even if no rule uses them.
    """
    mode = lexer or lexer_directive(text, source) or CONTEXTUAL
    if mode not in LEXER_MODES:
        raise GrammarError(f"{source}: unknown lexer mode {mode!r}; expected one of {', '.join(LEXER_MODES)}")
    text, islands = _islands(text, source)
    lines = _definition_lines(text)
    byte_terminals = _byte_terminals(text, source)
    paths = list(import_paths)
    if os.path.sep in source or os.path.exists(source):
        paths.insert(0, os.path.dirname(os.path.abspath(source)))
    _check_nesting(text, source)
    try:
        grammar, _ = load_grammar(text, source, paths, False)
        terminals, rules, ignore = grammar.compile([start], set(lines) if mode == BASIC else set())
    except LarkError as exc:
        line = getattr(exc, "line", None)
        column = getattr(exc, "column", None)
        raise GrammarError(f"{source}: cannot load Lark grammar: {_lark_message(exc)}", line=line, column=column) from None
    except FileNotFoundError as exc:
        module = os.path.splitext(os.path.basename(exc.filename or ""))[0]
        found = re.search(rf"^\s*%import\s+\.?{re.escape(module)}\b", text, re.MULTILINE) if module else None
        raise GrammarError(
            f"{source}: %import of {module or '?'!r}: no file {exc.filename!r} in the grammar's folder, "
            "the import paths or Lark's own grammars",
            line=text.count("\n", 0, found.start()) + 1 if found else None,
        ) from None
    except RecursionError:
        raise GrammarError(
            f"{source}: Lark's grammar loader ran out of stack (nesting too deep); "
            "split deeply nested rules or terminals into named ones"
        ) from None
    except (KeyError, ValueError, TypeError, AssertionError) as exc:
        raise GrammarError(f"{source}: cannot load Lark grammar: {exc!r}") from None

    defs = []
    for term in terminals:
        pattern = term.pattern
        flags = "".join(sorted(set(pattern.flags) | ({BYTE_MODE} if term.name in byte_terminals else set())))
        regex = re.escape(pattern.value) if isinstance(pattern, PatternStr) else pattern.value
        line = lines.get(term.name)
        if isinstance(pattern, PatternStr) and BYTE_MODE not in flags:
            _check_encodable(pattern.value, term.name, line)
        defs.append(
            TerminalDef(
                name=term.name,
                pattern=regex,
                flags=flags,
                priority=term.priority,
                literal=isinstance(pattern, PatternStr),
                # an escaped string has no quantifier (and parsing each of 10,000 literals costs 0.8 s)
                lazy=not isinstance(pattern, PatternStr) and has_lazy_quantifier(regex, flags, name=term.name, line=line),
                line=line,
            )
        )
    defined = {t.name for t in defs}
    for name in sorted(byte_terminals - defined):
        raise GrammarError(
            f"{source}: '// pda: bytes=' names {name}, which is not a terminal of the compiled grammar "
            "(name the terminal the rules use, not one inlined into it)",
            terminal=name,
        )
    declared = sorted({sym.name for rule in rules for sym in rule.expansion if sym.is_term} - defined - set(islands))
    if indent is None and {"_INDENT", "_DEDENT"} <= set(declared):
        indent = IndentConfig()
    for name in declared:
        if indent is None or name not in (indent.indent, indent.dedent):
            raise GrammarError(
                f"{source}: terminal {name} is declared (%declare) but never defined; "
                "only an indenter's _INDENT/_DEDENT may be declared (see docs/code_grammars.md)",
                terminal=name,
            )
        defs.append(TerminalDef(name=name, pattern=NEVER))
    if indent is not None and indent.newline not in defined:
        raise GrammarError(f"{source}: indentation needs a {indent.newline} terminal to be defined")

    ir_rules = [Rule(lhs=rule.origin.name, rhs=tuple(sym.name for sym in rule.expansion), alias=rule.alias) for rule in rules]
    if islands:
        defs, ir_rules = _embed_islands(islands, defs, ir_rules, source)
    if not any(r.lhs == start for r in ir_rules):
        raise GrammarError(f"{source}: start symbol {start!r} has no rules")
    return GrammarIR(
        terminals=tuple(defs),
        rules=tuple(ir_rules),
        start=start,
        ignore=tuple(ignore),
        indent=indent,
        lexer=mode,
        source=source,
    )


def _islands(text: str, source: str) -> tuple[str, dict[str, tuple[object, int]]]:
    """The text with each `%json SCHEMA` item replaced by a declared placeholder terminal, and the
    schemas with their lines by placeholder. A schema's line breaks move to the end of its line
    (a rule's expansion cannot break there), so Lark's line numbers hold after it."""
    islands: dict[str, tuple[object, int]] = {}
    pieces: list[str] = []
    moved = 0  # line breaks of schemas, owed at the next line break outside them
    at = 0
    for m in _ISLAND_ITEM.finditer(text):
        if moved and text.find("\n", at, m.start()) >= 0:
            newline = text.index("\n", at, m.start())
            pieces += [text[at:newline], "\n" * moved]
            at, moved = newline, 0
        if not m.group().startswith(("%json", "%grammar")) or m.start() < at:
            continue
        line = text.count("\n", 0, m.start()) + 1
        if m.group(1):  # %grammar NAME
            name = _ISLAND_PLACEHOLDER.format(len(islands))
            islands[name] = (("grammar", m.group(1)), line)
            pieces += [text[at:m.start()], f" {name} "]
            at = m.end()
            continue
        begin = m.end() + len(text[m.end():]) - len(text[m.end():].lstrip(" \t"))
        try:
            schema, end = json.JSONDecoder().raw_decode(text, begin)
        except json.JSONDecodeError as exc:
            raise GrammarError(f"{source}: %json needs a JSON Schema (an object) after it: {exc.msg}", line=line) from None
        if not isinstance(schema, (dict, bool)):
            raise GrammarError(f"{source}: %json needs a JSON Schema (an object or a boolean)", line=line)
        name = _ISLAND_PLACEHOLDER.format(len(islands))
        islands[name] = (schema, line)
        pieces += [text[at:m.start()], f" {name} "]
        moved += text.count("\n", m.start(), end)
        at = end
    if not islands:
        return text, islands
    rest = text[at:]
    if moved:
        newline = rest.find("\n")
        rest = rest + "\n" * moved if newline < 0 else rest[:newline] + "\n" * moved + rest[newline:]
    declare = "".join(f"\n%declare {name}" for name in islands)
    return "".join(pieces) + rest + declare, islands


def _embed_islands(islands: dict[str, tuple[object, int]], defs: list[TerminalDef], rules: list[Rule],
                   source: str) -> tuple[list[TerminalDef], list[Rule]]:
    """Each `%json` placeholder replaced by its schema's grammar, embedded with its own names."""
    from pda.grammar.json_schema import json_schema_to_ir

    start_of: dict[str, str] = {}
    embedded_terms: list[TerminalDef] = []
    embedded_rules: list[Rule] = []
    for name, (schema, line) in islands.items():
        try:
            ir = _shipped_ir(schema[1]) if isinstance(schema, tuple) else json_schema_to_ir(schema)
            terminals, sub_rules, start_of[name] = embed_ir(ir, f"{name.lower()}_")
        except GrammarError as exc:
            item = f"%grammar {schema[1]}" if isinstance(schema, tuple) else "%json"
            raise GrammarError(f"{source}: {item} on line {line}: {exc}", line=line) from None
        embedded_terms += terminals
        embedded_rules += sub_rules
    rules = [Rule(r.lhs, tuple(start_of.get(s, s) for s in r.rhs), r.alias) for r in rules]
    return defs + embedded_terms, rules + embedded_rules


def _shipped_ir(name: str) -> GrammarIR:
    """The IR of the shipped grammar `name` (`pda/grammars/NAME.lark`)."""
    path = SHIPPED_GRAMMARS / f"{name}.lark"
    if not path.exists():
        names = ", ".join(sorted(p.stem for p in SHIPPED_GRAMMARS.glob("*.lark")))
        raise GrammarError(f"no shipped grammar {name!r} (shipped: {names})")
    text = path.read_text(encoding="utf-8")
    return lark_to_ir(text, start=default_start(text), source=str(path))


def default_start(text: str) -> str:
    """`start` if the grammar defines it, else the first rule defined (like `file_input` grammars)."""
    if re.search(r"^\s*[?!]?start\b", text, re.MULTILINE):
        return "start"
    match = re.search(r"^\s*[?!]?([a-z_][a-z_0-9]*)\s*(?:\{[^}]*\})?\s*(?:\.\s*-?\d+\s*)?:", text, re.MULTILINE)
    return match.group(1) if match else "start"


def _byte_terminals(text: str, source: str) -> set[str]:
    """The terminals named by `// pda: bytes=NAME ...` lines (their patterns read raw bytes)."""
    names = {name for m in _BYTES_DIRECTIVE.finditer(text) for name in re.split(r"[\s,]+", m.group(1)) if name}
    for name in names:
        if not re.fullmatch(r"[A-Z_][A-Z_0-9]*", name):
            raise GrammarError(f"{source}: '// pda: bytes=' takes terminal names, not {name!r}")
    return names


def _check_nesting(text: str, source: str) -> None:
    """Refuse brackets nested deeper than MAX_LARK_NESTING before Lark's recursive loader sees them."""
    depth, line, line_start = 0, 1, 0
    for m in _LARK_TOKEN.finditer(text):
        token = m.group()
        if token == "\n":
            line, line_start = line + 1, m.end()
        elif token in "([":
            depth += 1
            if depth > MAX_LARK_NESTING:
                raise GrammarError(
                    f"{source}: brackets nested more than {MAX_LARK_NESTING} deep (Lark's grammar loader "
                    "recurses per level); move inner groups into rules of their own",
                    line=line,
                    column=m.start() - line_start + 1,
                )
        elif token in ")]":
            depth = max(depth - 1, 0)


def _check_encodable(value: str, name: str, line: int | None) -> None:
    """A literal with a surrogate (`"\\ud800"`) has no UTF-8 spelling: it could never match."""
    for c in value:
        if 0xD800 <= ord(c) <= 0xDFFF:
            raise GrammarError(
                f"the literal {value!r} contains the surrogate U+{ord(c):04X}, which has no UTF-8 "
                "encoding, so the terminal could never match",
                terminal=name,
                line=line,
            )


def _lark_message(exc: BaseException) -> str:
    """The first line of what Lark reports, with its wrapped cause (VisitError, bad escapes) spelled out."""
    if isinstance(exc, VisitError):
        return _lark_message(exc.orig_exc)
    if len(exc.args) == 2 and isinstance(exc.args[1], SyntaxError):
        detail = str(exc.args[1].msg).split(": ")[-1]
        return f"bad escape in the literal {exc.args[0]}: {detail}"
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


__all__ = ["MAX_LARK_NESTING", "SHIPPED_GRAMMARS", "default_start", "lark_to_ir", "lexer_directive"]
