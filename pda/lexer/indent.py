"""Python-style indentation: `_NEWLINE`, `_INDENT`, `_DEDENT` produced from line structure.

This is Lark's `Indenter`/`PythonIndenter` as part of pda's state, so the token
index still applies. The grammar's `_NEWLINE` lexeme (blank lines and comment
lines included) is lexed as one of the terminals `_NEWLINE@k`, where `k` is the
indentation width of the line it ends on (tabs to the next multiple of
`tab_len`), so the lexeme's *terminal* carries its width and boundary groups stay
keyed by terminal sets. `_NEWLINE@*` matches any wider indentation at a lower
priority; it is only accepted inside brackets.

`IndentedNode` wraps an Earley node with the indentation stack, the bracket depth
and whether the last lexeme ended a line, and turns lexer terminal sets into
parser terminals:

* inside brackets a newline lexeme is dropped;
* otherwise it becomes `_NEWLINE`, then `_INDENT` (deeper), nothing (same), or one
  `_DEDENT` per level popped (shallower; a width that is not on the stack is an error);
* at end of text an unterminated last line gets a `_NEWLINE`, then every open
  level a `_DEDENT`.

It has the interface the lexer and the token index use (`allowed`, `advance`,
`accepting`, `cache`), and is interned, so masks are memoised per state as usual.
"""

from __future__ import annotations

import re
from dataclasses import replace

from pda.errors import GrammarError
from pda.grammar.ir import NEVER, GrammarIR, IndentConfig, TerminalDef
from pda.parser.earley import Node

def width_regex(k: int, tab_len: int) -> str:
    """Spaces and tabs whose expanded width is exactly k: one unit per tab stop, then spaces."""
    stops, spaces = divmod(k, tab_len)
    unit = f"(?: {{{tab_len}}}| {{0,{tab_len - 1}}}\\t)"
    return (f"{unit}{{{stops}}}" if stops else "") + (f" {{{spaces}}}" if spaces else "")


def expand_ir(ir: GrammarIR, config: IndentConfig) -> GrammarIR:
    """The IR the lexer and parser run on: newline terminals by width; indenter outputs unlexable."""
    names = ir.terminal_names
    for name in (config.newline, config.indent, config.dedent):
        if name not in names:
            raise GrammarError(f"the indenter needs a terminal {name!r}, which the grammar does not declare")
    line = r"(?:\r?\n[\t \f]*|#[^\r\n]*)*\r?\n"
    terminals = []
    for t in ir.terminals:
        if t.name in (config.newline, config.indent, config.dedent):
            terminals.append(replace(t, pattern=NEVER, flags="", literal=False, lazy=False))
        else:
            terminals.append(t)
    for k in range(config.max_width + 1):
        terminals.append(TerminalDef(config.width_terminal(k), line + width_regex(k, config.tab_len), priority=1))
    terminals.append(TerminalDef(config.any_width_terminal, line + r"[\t ]*", priority=0))
    return replace(ir, terminals=tuple(terminals))


def uses_indentation(ir: GrammarIR, config: IndentConfig) -> bool:
    """Whether a grammar opts in: it declares the indent/dedent terminals and defines the newline."""
    by_name = ir.terminal_by_name
    return (
        config.indent in by_name
        and config.dedent in by_name
        and config.newline in by_name
        and by_name[config.indent].pattern == NEVER
    )


class Indenter:
    """Per-grammar tables for `IndentedNode`: terminal ids and the intern table."""

    def __init__(self, ir: GrammarIR, config: IndentConfig) -> None:
        index = {t.name: i for i, t in enumerate(ir.terminals)}
        self.config = config
        self.newline = 1 << index[config.newline]
        self.indent = 1 << index[config.indent]
        self.dedent = 1 << index[config.dedent]
        self.width_bits = [1 << index[config.width_terminal(k)] for k in range(config.max_width + 1)]
        self.width_of = {bit: k for k, bit in enumerate(self.width_bits)}
        self.any_width = 1 << index[config.any_width_terminal]
        self.all_newlines = self.any_width
        for bit in self.width_bits:
            self.all_newlines |= bit
        literals = {t.pattern: i for i, t in enumerate(ir.terminals) if t.literal}
        self.opens = 0
        self.closes = 0
        for ch in config.open_brackets:
            if re.escape(ch) in literals:
                self.opens |= 1 << literals[re.escape(ch)]
        for ch in config.close_brackets:
            if re.escape(ch) in literals:
                self.closes |= 1 << literals[re.escape(ch)]
        self.parser_only = self.newline | self.indent | self.dedent
        self._nodes: dict[tuple, IndentedNode] = {}

    def node(self, earley: Node, stack: tuple[int, ...], depth: int, line_start: bool) -> "IndentedNode":
        key = (earley, stack, depth, line_start)
        found = self._nodes.get(key)
        if found is None:
            found = IndentedNode(self, earley, stack, depth, line_start)
            self._nodes[key] = found
        return found

    def root(self, earley: Node) -> "IndentedNode":
        return self.node(earley, (0,), 0, True)


class IndentedNode:
    """An Earley node plus the indenter's state; quacks like `Node` for the lexer and index."""

    __slots__ = ("indenter", "earley", "stack", "depth", "line_start", "allowed", "_next", "_accepting", "cache")

    def __init__(self, indenter: Indenter, earley: Node, stack: tuple[int, ...], depth: int, line_start: bool) -> None:
        self.indenter = indenter
        self.earley = earley
        self.stack = stack
        self.depth = depth
        self.line_start = line_start
        self._next: dict[int, IndentedNode | None] = {}
        self._accepting: bool | None = None
        self.cache: dict = {}
        self.allowed = self._allowed()

    def __repr__(self) -> str:
        return f"<IndentedNode stack={self.stack} depth={self.depth} {self.earley!r}>"

    def _after_newline(self, width: int) -> Node | None:
        """The Earley node after a newline lexeme ending at indentation `width`."""
        ind = self.indenter
        node = self.earley.advance(ind.newline)
        if node is None:
            return None
        top = self.stack[-1]
        if width > top:
            return node.advance(ind.indent)
        for level in reversed(self.stack):
            if level == width:
                return node
            if level < width:
                return None
            node = node.advance(ind.dedent)
            if node is None:
                return None
        return None

    def _allowed(self) -> int:
        ind = self.indenter
        allowed = self.earley.allowed & ~ind.parser_only
        if self.depth > 0:
            return allowed | ind.all_newlines
        if self.earley.allowed & ind.newline:
            for k, bit in enumerate(ind.width_bits):
                if self._after_newline(k) is not None:
                    allowed |= bit
        return allowed

    def _stack_after(self, width: int) -> tuple[int, ...]:
        if width > self.stack[-1]:
            return self.stack + (width,)
        return tuple(level for level in self.stack if level <= width)

    def advance(self, terminals: int) -> "IndentedNode | None":
        """The state after a lexeme that matched `terminals` (the lexer's top-priority set)."""
        terminals &= self.allowed
        if not terminals:
            return None
        found = self._next.get(terminals, False)
        if found is not False:
            return found
        ind = self.indenter
        result: IndentedNode | None
        if terminals & ind.all_newlines:
            if self.depth > 0:
                result = self
            else:
                width = ind.width_of[terminals & -terminals]
                node = self._after_newline(width)
                result = None if node is None else ind.node(node, self._stack_after(width), 0, True)
        else:
            node = self.earley.advance(terminals)
            depth = self.depth
            if terminals & ind.opens:
                depth += 1
            elif terminals & ind.closes:
                depth -= 1
            result = None if node is None or depth < 0 else ind.node(node, self.stack, depth, False)
        self._next[terminals] = result
        return result

    @property
    def accepting(self) -> bool:
        """End of text: close the last line and every open block, then the parser must accept."""
        if self._accepting is None:
            ind = self.indenter
            node: Node | None = self.earley
            if self.depth > 0:
                node = None
            elif not self.line_start:
                node = node.advance(ind.newline)
            for _ in self.stack[1:]:
                if node is None:
                    break
                node = node.advance(ind.dedent)
            self._accepting = node is not None and node.accepting
        return self._accepting
