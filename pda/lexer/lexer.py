"""The contextual, greedy lexer, fused with the Earley parser: the reference semantics.

State is a pair `(node, q)`: the parser node before the current lexeme, and the
combined-DFA state of the lexeme read so far (`START` when none is in progress).
The terminals live at a lexeme are `node.allowed | ignore`; the DFA is shared
by every such set and restricted by bitmask, so no per-set DFA is built.

* A byte that keeps some live terminal alive extends the lexeme (greedy).
* A byte that cannot extend it commits the lexeme: of the terminals it matches,
  the highest-priority ones are handed to the parser together (keyword and
  identifier both, when tied); the byte then starts the next lexeme.
* At end of input the pending lexeme is committed and the parser must accept.
* `%ignore` terminals are dropped after matching unless the parser can use the
  lexeme; a lazy terminal's DFA rows end at its first match.

`Grammar.accepts`, the matcher's reference path and the token index all use
these functions, so they share one definition of the language.
"""

from __future__ import annotations

import hashlib

import numpy as np

from pda.errors import GrammarError
from pda.grammar.ir import GrammarIR
from pda.parser.earley import Node, iter_bits
from pda.regex import LexerDFA

START = 0


def _bitmask_rows(matrix: np.ndarray) -> list[int]:
    """Each row of a bool matrix as a Python int bitmask (column j → bit j)."""
    n, m = matrix.shape
    if m == 0:
        return [0] * n
    packed = np.packbits(matrix, axis=1, bitorder="little")
    return [int.from_bytes(row.tobytes(), "little") for row in packed]


class Lexer:
    """The grammar's combined DFA, in the form the byte-level driver needs."""

    def __init__(self, ir: GrammarIR, dfa: LexerDFA) -> None:
        trans = np.asarray(dfa.trans)
        accept = np.asarray(dfa.accept, dtype=bool)
        live = np.asarray(dfa.live, dtype=bool)
        if dfa.start != START:
            raise GrammarError("lexer DFA must start in state 0")
        # The start state must mean "no lexeme yet": if a lexeme can return to it,
        # split it off into a copy that only the empty lexeme occupies.
        if (trans == START).any():
            copy = trans.shape[0]
            trans = np.where(trans == START, copy, trans)
            trans = np.vstack([trans, trans[START : START + 1]])
            accept = np.vstack([accept, accept[START : START + 1]])
            live = np.vstack([live, live[START : START + 1]])
        self.n_states = trans.shape[0]
        self.dead = dfa.dead
        self.trans = trans.astype(np.int32)
        self.byte_class = np.asarray(dfa.byte_class, dtype=np.int32)
        self.rows: list[list[int]] = trans.tolist()
        self.cls: list[int] = self.byte_class.tolist()
        self.accept_np = accept
        self.live_np = live
        self.accept: list[int] = _bitmask_rows(accept)
        self.live: list[int] = _bitmask_rows(live)
        self.names = [t.name for t in ir.terminals]
        self.priority = [t.priority for t in ir.terminals]
        index = {t.name: i for i, t in enumerate(ir.terminals)}
        self.ignore = 0
        for name in ir.ignore:
            if name not in index:
                raise GrammarError(f"%ignore names an unknown terminal {name!r}")
            self.ignore |= 1 << index[name]
        if accept[START].any():
            names = [self.names[j] for j in np.flatnonzero(accept[START])]
            raise GrammarError(
                "terminals that match the empty string cannot be lexed: " + ", ".join(names),
                terminal=names[0],
            )
        self._best: dict[int, int] = {}
        digest = hashlib.sha256()
        for array in (self.trans, self.byte_class, accept, live):
            digest.update(np.ascontiguousarray(array).tobytes())
        digest.update(repr((self.priority, self.ignore)).encode())
        # Identifies the state numbering: caches keyed by lexer state must include it.
        self.content_hash = digest.hexdigest()

    def best(self, matched: int) -> int:
        """The highest-priority terminals among `matched` (a bitmask)."""
        best = self._best.get(matched)
        if best is None:
            top = max(self.priority[j] for j in iter_bits(matched))
            best = 0
            for j in iter_bits(matched):
                if self.priority[j] == top:
                    best |= 1 << j
            self._best[matched] = best
        return best

    def lexeme_terminals(self, node: Node, q: int) -> int:
        """The terminal set a pending lexeme in state `q` commits as (0 if it cannot end)."""
        matched = self.accept[q] & (node.allowed | self.ignore)
        return self.best(matched) if matched else 0

    def commit(self, node: Node, q: int) -> Node | None:
        """The parser node after the pending lexeme in state `q` ends; None if it cannot."""
        if q == START:
            return node
        matched = self.accept[q] & (node.allowed | self.ignore)
        if not matched:
            return None
        terminals = self.best(matched)
        if terminals & node.allowed:
            return node.advance(terminals)
        return node

    def scan(self, node: Node, q: int, data: bytes) -> tuple[Node, int, int]:
        """Feed bytes until one is rejected: (node, q, bytes consumed) — the state before that byte."""
        rows, cls, live, ignore = self.rows, self.cls, self.live, self.ignore
        candidates = node.allowed | ignore
        for offset, byte in enumerate(data):
            c = cls[byte]
            q2 = rows[q][c]
            if live[q2] & candidates:
                q = q2
                continue
            if q == START:
                return node, q, offset
            after = self.commit(node, q)
            if after is None:
                return node, q, offset
            q2 = rows[START][c]
            after_candidates = after.allowed | ignore
            if not live[q2] & after_candidates:
                return node, q, offset
            node, q, candidates = after, q2, after_candidates
        return node, q, len(data)

    def feed(self, node: Node, q: int, data: bytes) -> tuple[Node, int] | None:
        """Feed bytes; the new state, or None if some byte makes the text stop being a viable prefix."""
        node2, q2, consumed = self.scan(node, q, data)
        return (node2, q2) if consumed == len(data) else None

    def step(self, node: Node, q: int, byte: int) -> tuple[Node, int] | None:
        """Feed one byte."""
        return self.feed(node, q, bytes((byte,)))

    def can_end(self, node: Node, q: int) -> bool:
        """Whether the text may end here: the pending lexeme commits and the parser accepts."""
        end = self.commit(node, q)
        return end is not None and end.accepting

