"""A grammar ready to recognise text: parser tables, Earley parser and lexer, wired by a `Scanner`.

A recogniser is built for one `Limits` (its parser and lexer budgets); `Grammar.recognizer`
uses the defaults and `pda.compile` builds another for other limits.
"""

from __future__ import annotations

from collections import deque

from pda import collector
from pda.errors import ParseError
from pda.grammar.alternatives import merge_alternative_terminals
from pda.grammar.ir import BASIC, GrammarIR
from pda.lexer.lexer import START, Lexer
from pda.limits import DEFAULT_LIMITS, Limits
from pda.parser.earley import EarleyParser, Node
from pda.parser.indent import IndentedNode, Indenter, expand_ir, indenter_terminals
from pda.parser.tables import build_tables
from pda.regex.dfa import LexerDFA
from pda.regex.lazy import LazyDFA
from pda.scanner import Scanner


def shortest_string(dfa: LexerDFA | LazyDFA) -> bytes:
    """A shortest byte string the one-terminal DFA accepts (breadth-first over byte classes); a lazy DFA's
    within `pda.regex.lazy.SHORTEST_MAX_STATES` states, else b"..."."""
    if isinstance(dfa, LazyDFA):
        found = dfa.shortest()
        return b"..." if found is None else found
    byte_of_class: dict[int, int] = {}
    for b in range(256):
        byte_of_class.setdefault(int(dfa.byte_class[b]), b)
    # Per state flags and rows as Python values once: a search meets every state of a long counted
    # terminal (`.{5000}`: 20,000 states, 1.4 s of numpy calls per state before).
    accepting = dfa.accept.any(axis=1).tolist()
    live = dfa.live.any(axis=1).tolist()
    trans = dfa.trans.tolist()
    seen = {dfa.start: b""}
    queue = deque([dfa.start])
    while queue:
        q = queue.popleft()
        if accepting[q]:
            return seen[q]
        row = trans[q]
        for c, b in byte_of_class.items():
            q2 = row[c]
            if q2 not in seen and live[q2]:
                seen[q2] = seen[q] + bytes([b])
                queue.append(q2)
    return b""


class Recognizer:
    """Decides membership and viable prefixes for one grammar, byte by byte."""

    def __init__(self, ir: GrammarIR, *, limits: Limits = DEFAULT_LIMITS, merge_terminals: bool = True) -> None:
        """`merge_terminals=False` skips the IR pass of `pda.grammar.alternatives` (same language; for tests)."""
        self.ir = ir
        self.limits = limits
        with collector.paused():  # building allocates many short-lived containers (pda.collector)
            keep: frozenset[str] = frozenset()
            if ir.indent is not None:
                ir = expand_ir(ir, ir.indent)
                keep = indenter_terminals(ir, ir.indent)
            # The IR the lexer and parser run on (terminal ids index its terminals).
            self.lexer_ir = ir = merge_alternative_terminals(ir, keep) if merge_terminals else ir
            self.tables = build_tables(ir)
            self.parser = EarleyParser(self.tables, limits=limits)
            self.lexer = Lexer(ir, max_states=limits.max_lexer_states)
            self.scanner = Scanner(self.lexer)
            self.root: Node | IndentedNode = (
                Indenter(ir, ir.indent).root(self.parser.root) if ir.indent is not None else self.parser.root
            )
        self._examples: dict[int, str] | None = None

    def __reduce__(self) -> tuple:
        """Pickled as its IR and limits, rebuilt on loading (so a `Grammar` pickles by value)."""
        return _rebuild, (self.ir, self.limits)

    def initial(self) -> tuple[Node, int]:
        return self.root, START

    def run(self, data: bytes, *, prefix: bool = False) -> None:
        """Raise `ParseError` unless `data` is a sentence (or, with `prefix`, a viable prefix)."""
        scanner = self.scanner
        node, q, consumed = scanner.scan(self.root, START, data)
        if consumed < len(data):
            raise self._error(data, consumed, node, q)
        if not prefix and not scanner.can_end(node, q):
            raise self._error(data, len(data), node, q, at_end=True)

    def accepts(self, data: bytes, *, prefix: bool = False) -> bool:
        """`run` as a verdict, without the error message `run` builds (examples of what was
        expected: a search over the terminals' DFAs that a refusal need not pay)."""
        node, q, consumed = self.scanner.scan(self.root, START, data)
        return consumed == len(data) and (prefix or self.scanner.can_end(node, q))

    def expected_terminals(self, node: Node, q: int) -> list[str]:
        """Terminal names that could continue the text at state (node, q)."""
        lexer = self.lexer
        names = self.tables.names_of
        if q == START:
            return names(node.allowed)
        tables = lexer.tables(node.allowed | lexer.ignore)
        growing = 0  # terminals the pending lexeme could still grow into
        for c in set(tables.cls):
            growing |= tables.live_at(tables.row(q)[c])
        live = growing & node.allowed
        after = self.scanner.commit(node, q)
        more = after.allowed if after is not None else 0
        return names(live | more)

    def example(self, terminal: int) -> str:
        """A shortest string of a terminal, for error messages."""
        if self._examples is None:
            self._examples = {}
        if terminal not in self._examples:
            self._examples[terminal] = shortest_string(self.lexer.dfas[terminal]).decode("utf-8", "replace")
        return self._examples[terminal]

    def _error(self, data: bytes, offset: int, node: Node, q: int, *, at_end: bool = False) -> ParseError:
        expected = self.expected_terminals(node, q)
        index = {name: i for i, name in enumerate(self.tables.terminal_names)}
        shown = ", ".join(f"{name} ({self.example(index[name])!r})" for name in expected[:12])
        if len(expected) > 12:
            shown += f", ... ({len(expected) - 12} more)"
        if at_end:
            if self.scanner.can_end(node, q):
                msg = "unexpected end of text"
            else:
                msg = f"unexpected end of text; expected {shown or 'nothing'}"
        else:
            ch = data[offset : offset + 1]
            msg = f"unexpected byte {ch!r} at offset {offset}; expected {shown or 'end of text'}"
            msg += self._basic_lexer_hint(data, offset, node, q)
        return ParseError(msg, offset=offset, expected=tuple(expected))

    def _basic_lexer_hint(self, data: bytes, offset: int, node: Node, q: int) -> str:
        """Under the basic lexer mode, say when the byte glues onto a lexeme of a type that cannot come here."""
        lexer = self.lexer
        if lexer.mode != BASIC:
            return ""
        tables = lexer.tables(node.allowed | lexer.ignore)
        q2 = tables.row(q)[tables.cls[data[offset]]]
        if not tables.extends[q2]:
            return ""
        names = self.tables.names_of(lexer.could_end_as(q2))
        shown = " or ".join(names[:3]) + (" or ..." if len(names) > 3 else "")
        return f" (basic lexer mode: the byte extends the lexeme, which could then only be {shown})"


def _rebuild(ir: GrammarIR, limits: Limits) -> Recognizer:
    """Unpickling a `Recognizer`: build it again (its lexer's DFAs come from the disk cache)."""
    return Recognizer(ir, limits=limits)
