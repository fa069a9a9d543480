"""One grammar inside another: a front end's IR with its names prefixed, its `%ignore` kept inside it.

Structural tags embed JSON Schemas, regexes and Lark or GBNF grammars; Lark text embeds
JSON Schemas with `%json {...}`. The embedded rules and terminals are renamed with a
prefix (no clash with the host's names), and the sub-grammar's ignored terminals become
optional before each of its own terminals and at its end: they may appear between its
lexemes and around it, never outside it. Its lexer mode must be the contextual one and
it may not have an indenter (neither has a meaning inside another grammar).
"""

from __future__ import annotations

from dataclasses import replace

from pda.errors import GrammarError
from pda.grammar.ir import CONTEXTUAL, GrammarIR, Rule, TerminalDef


def embed_ir(ir: GrammarIR, prefix: str) -> tuple[list[TerminalDef], list[Rule], str]:
    """The IR's terminals and rules renamed with `prefix`, and the name of its start symbol."""
    if ir.lexer != CONTEXTUAL:
        raise GrammarError(f"a sub-grammar under the {ir.lexer!r} lexer mode cannot be embedded")
    if ir.indent is not None:
        raise GrammarError("a sub-grammar with an indenter cannot be embedded")
    terminals = {t.name for t in ir.terminals}
    rules: list[Rule] = []
    gap: tuple[str, ...] = ()
    if ir.ignore:
        gap = (f"{prefix}gap",)
        rules += [Rule(gap[0], ())] + [Rule(gap[0], (gap[0], prefix + name)) for name in sorted(set(ir.ignore))]
    for r in ir.rules:
        rhs: list[str] = []
        for s in r.rhs:
            rhs += [*gap, prefix + s] if s in terminals else [prefix + s]
        if r.lhs == ir.start:
            rhs += gap
        rules.append(Rule(prefix + r.lhs, tuple(rhs), r.alias))
    renamed = [replace(t, name=prefix + t.name) for t in ir.terminals]
    return renamed, rules, prefix + ir.start
