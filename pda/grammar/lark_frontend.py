"""Lark EBNF → grammar IR, through Lark's own grammar loader.

Lark already expands `?`, `*`, `+`, `[...]`, ranges, templates, `%import`
(including `common.lark`) and `%ignore`; we only translate its compiled
terminals and rules. Rule shaping (`?rule`, `_rule`, aliases) changes trees,
not languages, so it is kept only as alias information for messages.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from lark.exceptions import LarkError
from lark.load_grammar import load_grammar
from lark.lexer import PatternStr

from pda.errors import GrammarError
from pda.grammar.ir import BASIC, CONTEXTUAL, LEXER_MODES, NEVER, GrammarIR, IndentConfig, Rule, TerminalDef
from pda.regex import has_lazy_quantifier

_TERMINAL_DEF = re.compile(r"^\s*([A-Z_][A-Z_0-9]*)\s*(?:\.\s*-?\d+\s*)?:", re.MULTILINE)
# A grammar file picks its lexer mode with a comment line Lark itself ignores.
_LEXER_DIRECTIVE = re.compile(r"^\s*//\s*pda:\s*lexer\s*=\s*(\S+)\s*$", re.MULTILINE)


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
        lines.setdefault(match.group(1), text.count("\n", 0, match.start()) + 1)
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
    Python-style indentation (`pda.lexer.indent`); `indent` overrides the names
    and widths.

    `lexer` is the lexer mode (`"contextual"` or `"basic"`); by default the
    grammar's `// pda: lexer=MODE` line, else contextual. Under the basic mode
    the terminals defined in this text are kept even if no rule uses them.
    """
    mode = lexer or lexer_directive(text, source) or CONTEXTUAL
    if mode not in LEXER_MODES:
        raise GrammarError(f"{source}: unknown lexer mode {mode!r}; expected one of {', '.join(LEXER_MODES)}")
    lines = _definition_lines(text)
    paths = list(import_paths)
    if os.path.sep in source or os.path.exists(source):
        paths.insert(0, os.path.dirname(os.path.abspath(source)))
    try:
        grammar, _ = load_grammar(text, source, paths, False)
        terminals, rules, ignore = grammar.compile([start], set(lines) if mode == BASIC else set())
    except LarkError as exc:
        line = getattr(exc, "line", None)
        column = getattr(exc, "column", None)
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise GrammarError(f"{source}: cannot load Lark grammar: {message}", line=line, column=column) from None
    except (KeyError, ValueError, TypeError, AssertionError) as exc:
        raise GrammarError(f"{source}: cannot load Lark grammar: {exc!r}") from None

    defs = []
    for term in terminals:
        pattern = term.pattern
        flags = "".join(sorted(pattern.flags))
        regex = re.escape(pattern.value) if isinstance(pattern, PatternStr) else pattern.value
        defs.append(
            TerminalDef(
                name=term.name,
                pattern=regex,
                flags=flags,
                priority=term.priority,
                literal=isinstance(pattern, PatternStr),
                lazy=has_lazy_quantifier(regex, flags),
                line=lines.get(term.name),
            )
        )
    defined = {t.name for t in defs}
    declared = sorted({sym.name for rule in rules for sym in rule.expansion if sym.is_term} - defined)
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


__all__ = ["lark_to_ir", "lexer_directive"]
