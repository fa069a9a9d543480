"""The contextual lexer wired to the Earley parser: bytes in, parser nodes out (the reference semantics).

This is the one module that drives the parser from the lexer (as Lark's
`parser_frontends.py` does); `pda.lexer` builds the candidate sets' DFAs and
knows nothing of parser nodes.

State is a pair `(node, q)`: the parser node before the current lexeme, and the
DFA state of the lexeme read so far (`START` when none is in progress). The
candidates for a lexeme are `node.allowed | ignore`; the scanner runs the
product DFA of exactly those terminals (`Lexer.tables`), so `q` is a state of
that set's DFA.

* A byte that keeps some candidate alive extends the lexeme (greedy).
* A byte that cannot extend it commits the lexeme: of the candidates it matches,
  the highest-priority ones are handed to the parser together (keyword and
  identifier both, when tied); the byte then starts the next lexeme.
* At end of input the pending lexeme is committed and the parser must accept.
* `%ignore` terminals are dropped after matching unless the parser can use the
  lexeme; a lazy terminal's DFA ends at its first match.
* Under the basic lexer mode a byte that some terminal can take extends the
  lexeme even where no candidate can (`LexerTables.extends`): the text is then
  refused rather than the lexeme ended (`pda.lexer.lexer` defines the mode's tables).

`Grammar.accepts` and the matcher run these functions, and the token index
walks the same `LexerTables`, so they share one definition of the language.
The byte loop and the commit (`scan`, `feed`, `commit`, `can_end`) are compiled
(`pda.kernels.scan`); `pda.reference` has them in plain Python
(`reference_scan`, `reference_commit`, `reference_can_end`), the oracles the
mask reference feeds tokens through. `node` is an Earley `Node` or anything
with its interface (`allowed`, `advance`, `accepting`: the indenter's
`IndentedNode`).
"""

from __future__ import annotations

from pda.grammar.ir import BASIC
from pda.kernels.scan import ByteLoop
from pda.lexer.lexer import START, UNKNOWN, Lexer
from pda.parser.earley import Node


class Scanner(ByteLoop):
    """One grammar's lexer run against its parser's nodes, byte by byte.

    Compiled (`pda.kernels.scan.ByteLoop`, the bullets above): `scan(node, q, data) ->
    (node, q, consumed)` feeds bytes until one is rejected and returns the state before
    that byte; `feed(node, q, data)` is the new state, or None if some byte makes the text
    stop being a viable prefix; `commit(node, q)` is the parser node after the pending
    lexeme in state `q` ends (`node` at START), None if it cannot; `can_end(node, q)`
    whether the text may end here: the pending lexeme commits and the parser accepts.
    """

    __slots__ = ("lexer",)

    def __init__(self, lexer: Lexer) -> None:
        super().__init__(lexer.tables, lexer.priority, lexer.ignore, lexer.mode == BASIC)
        self.lexer = lexer

    def step(self, node: Node, q: int, byte: int) -> tuple[Node, int] | None:
        """Feed one byte."""
        return self.feed(node, q, bytes((byte,)))

    def only_byte(self, node: Node, q: int) -> tuple[int, tuple[Node, int]] | None:
        """The one byte that can come next at (node, q) and the state after it; None if none or several can.

        `step` for every byte, as `scan` decides one (the same branches), with the
        lexeme's commit done once: jump-forward asks this for every forced byte.
        """
        lexer = self.lexer
        ignore = lexer.ignore
        tables = lexer.tables(node.allowed | ignore)
        row, cls, live, extends = tables.row(q), tables.cls, tables.live_flags, tables.extends
        after: Node | None | bool = False  # the commit, once needed
        found = None
        for byte in range(256):
            q2 = row[cls[byte]]
            flag = live[q2]
            if flag == UNKNOWN:
                flag = tables.live_flag(q2)
            if flag:
                nxt = (node, q2)
            elif q == START or extends[q2]:
                continue
            else:
                if after is False:
                    after = self.commit(node, q)
                if after is None:
                    continue
                next_tables = lexer.tables(after.allowed | ignore)
                q3 = next_tables.row(START)[next_tables.cls[byte]]
                if not next_tables.live_flag(q3):
                    continue
                nxt = (after, q3)
            if found is not None:
                return None
            found = (byte, nxt)
        return found
