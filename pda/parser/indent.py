"""Python-style indentation: `_NEWLINE`, `_INDENT`, `_DEDENT` produced from line structure.

This is Lark's `Indenter`/`PythonIndenter` as part of pda's state, so the token
index still applies. The grammar's `_NEWLINE` lexeme (blank lines and comment
lines included) is lexed as one of the terminals `_NEWLINE@k`, where `k` is the
indentation width of the line it ends on (tabs to the next multiple of
`tab_len`), so the lexeme's *terminal* carries its width and boundary groups stay
keyed by terminal sets. `_NEWLINE@*` matches any wider indentation at a lower
priority; it is only accepted inside brackets. A form feed in the indentation
resets the width to 0 (CPython's tokenizer does the same).

CPython also measures each line with tabs of width 1 (its `altcol`: the
indentation's length in characters) and refuses a line whose comparison with the
indentation stack comes out differently under the two tab sizes (`TabError`). The
lexeme therefore also matches one of these, tied with `_NEWLINE@k`, so the indenter
receives the length too and the stack holds (width, length) pairs:

* `_NEWLINE@~j`: indentation of j characters, for j up to `MIXED_MAX_LENGTH`;
* `_NEWLINE@~tabs` / `_NEWLINE@~spaces`: tabs only (length = width / `tab_len`) or
  spaces only (length = width), any length.

Longer indentation that mixes tabs and spaces has no known length, and lines
compared with it are not checked (accepts more). The bound keeps the lexer small:
the (width, length) pairs are states of the all-terminal DFA. With lengths up to 80,
python.lark's DFA grew from 4,607 to 8,336 states and its cold load took 2.4 times
as long; with 16 it has 7,906 states, continuations in indentation included.

A line continuation inside a line's indentation belongs to the newline lexeme, as
CPython's indentation loop reads it: the first backslash at a column k > 0 makes the
line's widths (k, k) (its `cont_line_col`) and the white space after it does not
count; at column 0 the next line's white space is the indentation. A newline lexeme
that ends in a continuation also matches `_NEWLINE@cont`: the text may not end there.

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
  refuse it as the last lexeme of the text, as CPython does; after it the other
  `%ignore`d terminals are in `allowed` too, because any text after the
  continuation (white space, a comment) makes the end acceptable again. A
  continuation terminal that matches a backslash and `\\r\\n` (and not `\\n`) may end
  the text: `ast.parse` turns a final `\\r\\n` into two line breaks.

`IndentedNode` wraps an Earley node with the indentation stack of (width, length)
pairs, the bracket depth, whether the last lexeme ended a line, and a mode (`LINE`; `TEXT_START`; `BLANK`
after the first line's indentation; `END` after `_NEWLINE@$` alone), and turns
lexer terminal sets into parser terminals:

* inside brackets a newline lexeme is dropped;
* otherwise it becomes `_NEWLINE`, then `_INDENT` (deeper), nothing (same), or one
  `_DEDENT` per level popped (shallower; a width that is not on the stack is an error),
  and the length must compare with the stack the same way (deeper, same, the level
  reached), or the line is refused;
* at end of text an unterminated last line gets a `_NEWLINE`, then every open
  level a `_DEDENT`.

It has the interface of an Earley `Node` that the scanner and the masks use
(`allowed`, `advance`, `probe`, `accepting`, `cache`), and is interned, so masks
are memoised per state as usual. Its fields and `probe` are compiled
(`pda.kernels.indent`, the base types of `Indenter` and `IndentedNode`); `_step` here is
the whole step in Python, which the compiled probe calls for every lexeme but a plain
parser lexeme, and the oracle the tests compare it to.

It belongs to the parser, not the lexer: it wraps parser nodes, turns terminal
sets into parser terminals and reads no lexer state. What it gives the lexer is
only terminals in the IR (`expand_ir`), lexed like any other; so the lexer
imports nothing of it, and `pda.scanner`, which drives the parser, drives an
indented grammar's parser through it.
"""

from __future__ import annotations

import re
import weakref
from dataclasses import replace

from pda.errors import GrammarError
from pda.grammar.ir import NEVER, GrammarIR, IndentConfig, TerminalAutomaton, TerminalDef
from pda.kernels.indent import IndentedState, IndenterTables
from pda.parser.earley import Node

_EOL = r"(?:\r\n?|\n)"  # CPython reads \r\n and a lone \r as \n
_COMMENT = r"(?:#[^\r\n\x00]*)"  # CPython refuses NUL anywhere
_CONTINUATION = rf"(?:\\{_EOL})"
# In blank lines a continuation by a lone \r is not read: `\\\r` + `\n` would also read
# as a continuation and a line break that starts a new line, and the DFA of the widths
# (which tracks every such reading) blows up. (`\r\n` is one line break for CPython.)
_BLANK_CONTINUATION = r"(?:\\\r?\n)"
# A line's leading white space: CPython's indentation loop also reads line continuations.
_INDENTATION = rf"(?:[\t \f]|{_CONTINUATION})*"
_BLANK_INDENTATION = rf"(?:[\t \f]|{_BLANK_CONTINUATION})*"
# Blank lines and comment-only lines inside a newline lexeme.
LINES = rf"(?:{_EOL}{_BLANK_INDENTATION}|{_COMMENT})*{_EOL}"
# White space up to and including the line's last form feed: the width counts from there.
FORM_FEED_RESET = r"(?:[\t \f]*\f)?"
# The indentation up to its last point at column 0: a form feed resets the column, and a
# continuation there leaves it at 0 (the next line's white space counts).
COLUMN_ZERO = rf"(?:[\t ]*\f|{_CONTINUATION})*"
# A continuation at column k > 0 fixes the line's widths at (k, k) (CPython's
# `cont_line_col`): white space and continuations after it do not count.
AFTER_CONTINUATION = rf"{_CONTINUATION}{_INDENTATION}"
# A line's comment and line break, blank and comment lines, and the white space or comment
# of a last line without a break.
# (A continuation may not be the last thing: CPython refuses end of text after it.)
END_OF_TEXT = (
    rf"{_COMMENT}?{_EOL}(?:{_BLANK_INDENTATION}{_COMMENT}?{_EOL})*"
    rf"(?:{_INDENTATION}(?:[\t \f]|{_COMMENT}))?"
)
# Newline lexemes whose last line ends in a continuation: the text may not end there,
# unless its line break is \r\n (`ast.parse` turns a final \r\n into two line breaks).
ENDS_CONTINUED = rf"{LINES}{_INDENTATION}\\[\r\n]"

LINE, TEXT_START, BLANK, END = "line", "text start", "blank first line", "end"

# An open indentation level: (width with tabs of `tab_len`, length in characters or None).
Level = tuple[int, int | None]


def width_regex(k: int, tab_len: int) -> str:
    """Spaces and tabs whose expanded width is exactly k: one unit per tab stop, then spaces."""
    stops, spaces = divmod(k, tab_len)
    unit = f"(?: {{{tab_len}}}| {{0,{tab_len - 1}}}\\t)"
    return (f"{unit}{{{stops}}}" if stops else "") + (f" {{{spaces}}}" if spaces else "")


# Indentation up to this many characters has its length (CPython's width with tabs of 1)
# in its own terminal; longer indentation only when it is all tabs or all spaces.
MIXED_MAX_LENGTH = 16


def length_terminal(config: IndentConfig, j: int | str) -> str:
    """The name of the terminal for indentation of j characters, or of `tabs` or `spaces` only."""
    return f"{config.newline}@~{j}"


def continued_terminal(config: IndentConfig) -> str:
    """The name of the terminal for newline lexemes that end in a line continuation."""
    return f"{config.newline}@cont"


def leading_terminal(config: IndentConfig) -> str:
    """The name of the terminal for the first line's indentation."""
    return f"{config.newline}@^"


def end_terminal(config: IndentConfig) -> str:
    """The name of the terminal for trailing blank and comment lines at the end of the text."""
    return f"{config.newline}@$"


def _matches(t: TerminalDef, text: str) -> bool:
    """Whether `t` matches all of `text` (`re` on its regex, or on its automaton's edges)."""
    try:
        if t.automaton is None:
            return re.fullmatch(t.pattern, text) is not None
        return _spells(t.automaton, text)
    except re.error:
        return False


def _spells(a: TerminalAutomaton, text: str) -> bool:
    """Whether a path of `a` from its start to an accepting state spells `text`: the (state, position)
    pairs reachable, each edge's regex matching a whole slice (for the short texts asked here)."""
    seen = {(a.start, 0)}
    stack = [(a.start, 0)]
    while stack:
        q, i = stack.pop()
        for src, label, r in a.edges:
            if src != q:
                continue
            for j in range(i, len(text) + 1):
                if (r, j) not in seen and re.fullmatch(label, text[i:j]) is not None:
                    seen.add((r, j))
                    stack.append((r, j))
    return any((q, len(text)) in seen for q in a.accept)


def expand_ir(ir: GrammarIR, config: IndentConfig) -> GrammarIR:
    """The IR the lexer and parser run on: newline terminals by width; indenter outputs unlexable."""
    names = ir.terminal_names
    for name in (config.newline, config.indent, config.dedent):
        if name not in names:
            raise GrammarError(f"the indenter needs a terminal {name!r}, which the grammar does not declare")
    terminals = []
    for t in ir.terminals:
        if t.name in (config.newline, config.indent, config.dedent):
            terminals.append(replace(t, pattern=NEVER, flags="", literal=False, lazy=False, automaton=None))
        else:
            terminals.append(t)
    for k in range(config.max_width + 1):
        pattern = LINES + COLUMN_ZERO
        if k:
            pattern += width_regex(k, config.tab_len) + f"(?:{AFTER_CONTINUATION})?"
        terminals.append(TerminalDef(config.width_terminal(k), pattern, priority=1))
    for j in range(MIXED_MAX_LENGTH + 1):
        pattern = LINES + COLUMN_ZERO + f"[\\t ]{{{j}}}"
        terminals.append(TerminalDef(length_terminal(config, j), pattern, priority=1))
    tabs = LINES + COLUMN_ZERO + "\\t+"
    # spaces only, or a continuation at column k > 0: length = width
    spaces = LINES + COLUMN_ZERO + f"(?: +|[\\t ]+{AFTER_CONTINUATION})"
    terminals.append(TerminalDef(length_terminal(config, "tabs"), tabs, priority=1))
    terminals.append(TerminalDef(length_terminal(config, "spaces"), spaces, priority=1))
    terminals.append(TerminalDef(config.any_width_terminal, LINES + _BLANK_INDENTATION, priority=0))
    terminals.append(TerminalDef(end_terminal(config), END_OF_TEXT, priority=1))
    terminals.append(TerminalDef(continued_terminal(config), ENDS_CONTINUED, priority=1))
    space = max((t.priority for t in ir.terminals if t.name in ir.ignore and _matches(t, " ")), default=0)
    terminals.append(TerminalDef(leading_terminal(config), FORM_FEED_RESET + r"[\t ]+", priority=space))
    return replace(ir, terminals=tuple(terminals))


def indenter_terminals(ir: GrammarIR, config: IndentConfig) -> frozenset[str]:
    """The terminals an `Indenter` finds by name or by pattern (its own, the brackets): IR passes must keep them."""
    brackets = {re.escape(ch) for ch in (*config.open_brackets, *config.close_brackets)}
    named = {config.newline, config.indent, config.dedent}
    return frozenset(t.name for t in ir.terminals if t.name in named or (t.literal and t.pattern in brackets))


class Indenter(IndenterTables):
    """Per-grammar tables for `IndentedNode`: terminal ids and the intern table."""

    def __init__(self, ir: GrammarIR, config: IndentConfig) -> None:
        index = {t.name: i for i, t in enumerate(ir.terminals)}
        self.config = config
        self.newline = 1 << index[config.newline]
        self.indent = 1 << index[config.indent]
        self.dedent = 1 << index[config.dedent]
        self.width_bits = [1 << index[config.width_terminal(k)] for k in range(config.max_width + 1)]
        self.width_of = {bit: k for k, bit in enumerate(self.width_bits)}
        self.widths = 0
        for bit in self.width_bits:
            self.widths |= bit
        # widths_above[k]: the bits of the widths deeper than k
        self.widths_above = [sum(self.width_bits[k + 1 :]) for k in range(len(self.width_bits))]
        length_bits = [1 << index[length_terminal(config, j)] for j in range(MIXED_MAX_LENGTH + 1)]
        self.length_of = {bit: j for j, bit in enumerate(length_bits)}
        self.counted = 0
        for bit in length_bits:
            self.counted |= bit
        self.tabs = 1 << index[length_terminal(config, "tabs")]
        self.spaces = 1 << index[length_terminal(config, "spaces")]
        self.lengths = self.counted | self.tabs | self.spaces
        self.any_width = 1 << index[config.any_width_terminal]
        self.end = 1 << index[end_terminal(config)]
        self.leading = 1 << index[leading_terminal(config)]
        self.continued_line = 1 << index[continued_terminal(config)]
        self.all_newlines = self.any_width | self.end | self.widths | self.lengths | self.continued_line
        self.continuation = 0
        self.crlf_continuation = 0  # may end the text (see the module docstring)
        self.ignored = 0  # the other %ignore terminals
        for name in ir.ignore:
            t = ir.terminals[index[name]]
            # a backslash and a line break: Python's explicit line joining
            if any(_matches(t, "\\" + eol) for eol in ("\n", "\r", "\r\n")):
                self.continuation |= 1 << index[name]
                if _matches(t, "\\\r\n") and not _matches(t, "\\\n"):
                    self.crlf_continuation |= 1 << index[name]
            else:
                self.ignored |= 1 << index[name]
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
        # Precomputed for the hot path (a mask probes every boundary through `IndentedNode.probe`,
        # which reads these: `IndenterTables`): the terminals `_step` treats specially (any other
        # lexeme only moves the parser and the bracket depth), and the sets `_allowed` combines.
        self.special = self.continuation | self.leading | self.all_newlines | self.ignored
        self.brackets = self.opens | self.closes
        self.not_parser_only = ~self.parser_only
        self.in_brackets = self.all_newlines | self.continuation
        self.line_mode = LINE
        # Interned weakly, as Earley nodes are: a state dies with the last matcher or memo using it.
        self._nodes: weakref.WeakValueDictionary[tuple, IndentedNode] = weakref.WeakValueDictionary()

    def node(
        self, earley: Node, stack: tuple[Level, ...], depth: int, line_start: bool, mode: str = LINE,
        may_end: bool = False, continued: bool = False, *, interned: bool = True,
    ) -> "IndentedNode":
        """The state with these fields: interned, or (`interned=False`, for probes) a new one nothing else holds."""
        if not interned:
            return IndentedNode(self, earley, stack, depth, line_start, mode, may_end, continued)
        key = (earley, stack, depth, line_start, mode, may_end, continued)
        found = self._nodes.get(key)
        if found is None:
            found = IndentedNode(self, earley, stack, depth, line_start, mode, may_end, continued)
            self._nodes[key] = found
        return found

    def root(self, earley: Node) -> "IndentedNode":
        return self.node(earley, ((0, 0),), 0, True, TEXT_START)


class IndentedNode(IndentedState):
    """An Earley node plus the indenter's state; quacks like `Node` for the lexer and index.

    `mode`: `LINE`, or `TEXT_START` (only ignored text read: leading indentation may
    come), `BLANK` (the first line's indentation read: only a line break may follow),
    `END` (trailing blank or comment lines read: only the end of the text may follow).
    `may_end`: the last newline lexeme also read as the end of the text, which the
    parser accepts there. `continued`: the last lexeme was a line continuation.
    `stack`: the open levels as (width with tabs of `tab_len`, length in characters or None
    where it is not known: long indentation mixing tabs and spaces).
    """

    __slots__ = ()  # the fields are `IndentedState`'s

    def __init__(
        self, indenter: Indenter, earley: Node, stack: tuple[Level, ...], depth: int, line_start: bool,
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
        # `_next` (advance's memo), `_accepting` and `_cache` are made when first used: most states
        # are a mask's probes, which never advance or hold masks. Until then they read None.
        self.allowed = self._allowed()

    @property
    def cache(self) -> dict:
        """A dict for the mask layer's memos (as `Node.cache`)."""
        cache = self._cache
        if cache is None:
            cache = self._cache = {}
        return cache

    def __repr__(self) -> str:
        flags = "".join(f" {f}" for f, on in (("may_end", self.may_end), ("continued", self.continued)) if on)
        return f"<IndentedNode {self.mode} stack={self.stack} depth={self.depth}{flags} {self.earley!r}>"

    def _after_newline(self, width: int, length: int | None = None) -> Node | None:
        """The Earley node after a newline lexeme ending at indentation `width` of `length`
        characters (None: not checked)."""
        ind = self.indenter
        node = self.earley.advance(ind.newline)
        if node is None:
            return None
        top, top_length = self.stack[-1]
        if width > top:
            if length is not None and top_length is not None and length <= top_length:
                return None  # TabError: deeper with tabs of 8, not with tabs of 1
            return node.advance(ind.indent)
        for level, level_length in reversed(self.stack):
            if level == width:
                if length is not None and level_length is not None and length != level_length:
                    return None  # TabError
                return node
            if level < width:
                return None
            node = node.advance(ind.dedent)
            if node is None:
                return None
        return None

    def _newline_widths(self) -> int:
        """The width bits k for which `_after_newline(k)` (length unchecked) is a node, in one pass over the stack.

        Deeper than the top level: one indent, so all or none of those widths; at a level: the
        dedents above it; between levels: none.
        """
        ind = self.indenter
        node = self.earley.advance(ind.newline)
        if node is None:
            return 0
        top = self.stack[-1][0]
        bits = ind.widths_above[top] if top < len(ind.width_bits) and node.advance(ind.indent) is not None else 0
        for level, _ in reversed(self.stack):
            if level < len(ind.width_bits):
                bits |= ind.width_bits[level]
            node = node.advance(ind.dedent)
            if node is None:
                break
        return bits

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
        allowed = self.earley.allowed & ind.not_parser_only
        if self.continued:
            allowed |= ind.ignored
        if self.depth > 0:
            return allowed | ind.in_brackets
        newlines = 0
        if self.earley.allowed & ind.newline:
            newlines = self._newline_widths()
            if newlines:
                newlines |= ind.lengths | ind.continued_line  # read with the width in `advance`
            if self._ends_here():
                newlines |= ind.end
        if self.mode == BLANK:
            return newlines
        if self.mode == TEXT_START:
            allowed |= ind.leading
        return allowed | newlines | ind.continuation

    def _length(self, terminals: int, width: int) -> int | None:
        """The indentation's length in characters, from the length terminals in the lexeme's set."""
        ind = self.indenter
        counted = terminals & ind.counted
        if counted:
            return ind.length_of[counted & -counted]
        if terminals & ind.tabs:
            return width // ind.config.tab_len
        if terminals & ind.spaces:
            return width
        return None

    def _stack_after(self, width: int, length: int | None) -> tuple[Level, ...]:
        if width > self.stack[-1][0]:
            return self.stack + ((width, length),)
        return tuple(level for level in self.stack if level[0] <= width)

    def advance(self, terminals: int) -> "IndentedNode | None":
        """The state after a lexeme that matched `terminals` (the lexer's top-priority set). Memoised."""
        terminals &= self.allowed
        memo = self._next
        if memo is None:
            memo = self._next = {}
        found = memo.get(terminals, False)
        if found is False:
            found = memo[terminals] = self._step(terminals, probe=False) if terminals else None
        return found

    # `probe(terminals)` (`IndentedState.probe`, compiled) is `advance` that memoises and interns
    # nothing it builds: for masks, which look past the next lexeme (as `Node.probe`: memoised, the
    # states a mask probes would live as long as this one; a mask reads only their `allowed` and
    # probes on from them). It is `_step(terminals & self.allowed, probe=True)`.

    def _step(self, terminals: int, *, probe: bool) -> "IndentedNode | None":
        ind = self.indenter
        if not terminals & ind.special:  # the hot path: a lexeme for the parser, moving the bracket depth
            node = self.earley.probe(terminals) if probe else self.earley.advance(terminals)
            if node is None:
                return None
            depth = self.depth
            if terminals & ind.brackets:
                depth += 1 if terminals & ind.opens else -1
                if depth < 0:
                    return None
            return ind.node(node, self.stack, depth, False, interned=not probe)
        if terminals & ind.continuation:
            continued = not terminals & ind.crlf_continuation
            return ind.node(self.earley, self.stack, self.depth, self.line_start, self.mode, False, continued,
                            interned=not probe)
        if terminals & ind.leading:
            return ind.node(self.earley, self.stack, 0, True, BLANK, interned=not probe)
        if terminals & ind.all_newlines:
            return self._after_line_break(terminals, interned=not probe)
        # white space or a comment after a line continuation (`ind.ignored`)
        return ind.node(self.earley, self.stack, self.depth, self.line_start, self.mode, self.may_end,
                        interned=not probe)

    def _after_line_break(self, terminals: int, *, interned: bool) -> "IndentedNode | None":
        ind = self.indenter
        if self.depth > 0:
            return ind.node(self.earley, self.stack, self.depth, self.line_start, interned=interned)
        widths = terminals & ind.widths
        node = None
        if widths:
            width = ind.width_of[widths & -widths]
            length = self._length(terminals, width)
            node = self._after_newline(width, length)
        if node is None:
            if terminals & ind.end:  # only the end-of-text reading (its white space is no indentation)
                return ind.node(self.earley, self.stack, 0, False, END, interned=interned)
            return None
        may_end, continued = bool(terminals & ind.end), bool(terminals & ind.continued_line)
        return ind.node(node, self._stack_after(width, length), 0, True, LINE, may_end, continued, interned=interned)

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
