"""Python-style indentation: `_NEWLINE`, `_INDENT`, `_DEDENT` produced from line structure.

This is Lark's `Indenter`/`PythonIndenter` as part of pda's state, so the token
index still applies. The grammar's `_NEWLINE` lexeme (blank lines and comment
lines included) is lexed as one of the terminals `_NEWLINE@k`, where `k` is the
indentation width of the line it ends on (tabs to the next multiple of
`tab_len`), so the lexeme's *terminal* carries its width and boundary groups stay
keyed by terminal sets. `_NEWLINE@*` matches any wider indentation at a lower
priority; it is only accepted inside brackets. A form feed in the indentation
resets the width to 0 (CPython's tokenizer does the same).

Three more lexer terminals cover what a width cannot say:

* `_NEWLINE@$`: line breaks, blank and comment lines that end the text without a
  last line break (`x = 1\\n# end`, `x = 1\\n\\t`). It ties with `_NEWLINE@k` on
  the text they share, so the parser state gets both readings: "a line of width
  k starts" and "the text may end here" (its whitespace is not indentation).
* `_NEWLINE@^`: the first line has no newline lexeme before it, so its
  indentation would be read by the grammar's `%ignore`d white space. This
  terminal (indentation of width > 0) ties with that white space, so the parser
  state sees it; it is accepted only at the start of the text, and after it only
  a line break may come: an indented first statement is refused ("unexpected
  indent"), an indented blank or comment line is not. Elsewhere the tie leaves
  the white space ignored, under both lexer modes.
* the line continuation: an `%ignore`d terminal of the grammar that matches a
  backslash and a line break. The indenter sees it (it is in `allowed`) only to
  refuse it as the last lexeme of the text, as CPython does.

`IndentedNode` wraps an Earley node with the indentation stack, the bracket depth,
whether the last lexeme ended a line, and a mode (`LINE`; `TEXT_START`; `BLANK`
after the first line's indentation; `END` after `_NEWLINE@$` alone), and turns
lexer terminal sets into parser terminals:

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

_EOL = r"(?:\r?\n)"
_COMMENT = r"(?:#[^\r\n\x00]*)"  # CPython refuses NUL anywhere
# Blank lines and comment-only lines inside a newline lexeme.
LINES = rf"(?:{_EOL}[\t \f]*|{_COMMENT})*{_EOL}"
# White space up to and including the line's last form feed: the width counts from there.
FORM_FEED_RESET = r"(?:[\t \f]*\f)?"
# A line's comment and line break, blank and comment lines, and the white space or comment
# of a last line without a break.
END_OF_TEXT = rf"{_COMMENT}?{_EOL}(?:[\t \f]*{_COMMENT}?{_EOL})*[\t \f]*{_COMMENT}?"

LINE, TEXT_START, BLANK, END = "line", "text start", "blank first line", "end"


def width_regex(k: int, tab_len: int) -> str:
    """Spaces and tabs whose expanded width is exactly k: one unit per tab stop, then spaces."""
    stops, spaces = divmod(k, tab_len)
    unit = f"(?: {{{tab_len}}}| {{0,{tab_len - 1}}}\\t)"
    return (f"{unit}{{{stops}}}" if stops else "") + (f" {{{spaces}}}" if spaces else "")


def leading_terminal(config: IndentConfig) -> str:
    """The name of the terminal for the first line's indentation."""
    return f"{config.newline}@^"


def end_terminal(config: IndentConfig) -> str:
    """The name of the terminal for trailing blank and comment lines at the end of the text."""
    return f"{config.newline}@$"


def _matches(t: TerminalDef, text: str) -> bool:
    try:
        return re.fullmatch(t.pattern, text) is not None
    except re.error:
        return False


def expand_ir(ir: GrammarIR, config: IndentConfig) -> GrammarIR:
    """The IR the lexer and parser run on: newline terminals by width; indenter outputs unlexable."""
    names = ir.terminal_names
    for name in (config.newline, config.indent, config.dedent):
        if name not in names:
            raise GrammarError(f"the indenter needs a terminal {name!r}, which the grammar does not declare")
    terminals = []
    for t in ir.terminals:
        if t.name in (config.newline, config.indent, config.dedent):
            terminals.append(replace(t, pattern=NEVER, flags="", literal=False, lazy=False))
        else:
            terminals.append(t)
    for k in range(config.max_width + 1):
        pattern = LINES + FORM_FEED_RESET + width_regex(k, config.tab_len)
        terminals.append(TerminalDef(config.width_terminal(k), pattern, priority=1))
    terminals.append(TerminalDef(config.any_width_terminal, LINES + r"[\t \f]*", priority=0))
    terminals.append(TerminalDef(end_terminal(config), END_OF_TEXT, priority=1))
    space = max((t.priority for t in ir.terminals if t.name in ir.ignore and _matches(t, " ")), default=0)
    terminals.append(TerminalDef(leading_terminal(config), FORM_FEED_RESET + r"[\t ]+", priority=space))
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
        self.end = 1 << index[end_terminal(config)]
        self.leading = 1 << index[leading_terminal(config)]
        self.all_newlines = self.any_width | self.end
        for bit in self.width_bits:
            self.all_newlines |= bit
        self.continuation = 0
        for name in ir.ignore:
            # a backslash and a line break: Python's explicit line joining
            if _matches(ir.terminals[index[name]], "\\\n"):
                self.continuation |= 1 << index[name]
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

    def node(
        self, earley: Node, stack: tuple[int, ...], depth: int, line_start: bool, mode: str = LINE,
        may_end: bool = False, continued: bool = False,
    ) -> "IndentedNode":
        key = (earley, stack, depth, line_start, mode, may_end, continued)
        found = self._nodes.get(key)
        if found is None:
            found = IndentedNode(self, earley, stack, depth, line_start, mode, may_end, continued)
            self._nodes[key] = found
        return found

    def root(self, earley: Node) -> "IndentedNode":
        return self.node(earley, (0,), 0, True, TEXT_START)


class IndentedNode:
    """An Earley node plus the indenter's state; quacks like `Node` for the lexer and index.

    `mode`: `LINE`, or `TEXT_START` (only ignored text read: leading indentation may
    come), `BLANK` (the first line's indentation read: only a line break may follow),
    `END` (trailing blank or comment lines read: only the end of the text may follow).
    `may_end`: the last newline lexeme also read as the end of the text, which the
    parser accepts there. `continued`: the last lexeme was a line continuation.
    """

    __slots__ = (
        "indenter", "earley", "stack", "depth", "line_start", "mode", "may_end", "continued", "allowed",
        "_next", "_accepting", "cache",
    )

    def __init__(
        self, indenter: Indenter, earley: Node, stack: tuple[int, ...], depth: int, line_start: bool,
        mode: str = LINE, may_end: bool = False, continued: bool = False,
    ) -> None:
        self.indenter = indenter
        self.earley = earley
        self.stack = stack
        self.depth = depth
        self.line_start = line_start
        self.mode = mode
        self.may_end = may_end
        self.continued = continued
        self._next: dict[int, IndentedNode | None] = {}
        self._accepting: bool | None = None
        self.cache: dict = {}
        self.allowed = self._allowed()

    def __repr__(self) -> str:
        flags = "".join(f" {f}" for f, on in (("may_end", self.may_end), ("continued", self.continued)) if on)
        return f"<IndentedNode {self.mode} stack={self.stack} depth={self.depth}{flags} {self.earley!r}>"

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

    def _closed(self, node: Node | None) -> bool:
        """Whether the parser accepts after `node` and one `_DEDENT` per open level."""
        for _ in self.stack[1:]:
            if node is None:
                return False
            node = node.advance(self.indenter.dedent)
        return node is not None and node.accepting

    def _ends_here(self) -> bool:
        """Whether the text may end after a line break here (`_NEWLINE`, then the dedents)."""
        return self._closed(self.earley.advance(self.indenter.newline))

    def _allowed(self) -> int:
        ind = self.indenter
        if self.mode == END:
            return 0
        allowed = self.earley.allowed & ~ind.parser_only
        if self.depth > 0:
            return allowed | ind.all_newlines | ind.continuation
        newlines = 0
        if self.earley.allowed & ind.newline:
            for k, bit in enumerate(ind.width_bits):
                if self._after_newline(k) is not None:
                    newlines |= bit
            if self._ends_here():
                newlines |= ind.end
        if self.mode == BLANK:
            return newlines
        if self.mode == TEXT_START:
            allowed |= ind.leading
        return allowed | newlines | ind.continuation

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
        if terminals & ind.continuation:
            result = ind.node(self.earley, self.stack, self.depth, self.line_start, self.mode, False, True)
        elif terminals & ind.leading:
            result = ind.node(self.earley, self.stack, 0, True, BLANK)
        elif terminals & ind.all_newlines:
            result = self._after_line_break(terminals)
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

    def _after_line_break(self, terminals: int) -> "IndentedNode | None":
        ind = self.indenter
        if self.depth > 0:
            return ind.node(self.earley, self.stack, self.depth, self.line_start)
        widths = terminals & ~(ind.end | ind.any_width)
        if not widths:  # only the end-of-text reading
            return ind.node(self.earley, self.stack, 0, False, END)
        width = ind.width_of[widths & -widths]
        node = self._after_newline(width)
        if node is None:
            return None
        return ind.node(node, self._stack_after(width), 0, True, LINE, bool(terminals & ind.end))

    @property
    def accepting(self) -> bool:
        """End of text: close the last line and every open block, then the parser must accept."""
        if self._accepting is None:
            if self.continued or self.depth > 0:
                self._accepting = False
            elif self.mode == END or (not self.line_start and self.mode == LINE):
                self._accepting = self._ends_here()
            else:
                self._accepting = self.may_end or self._closed(self.earley)
        return self._accepting
