"""The token index's lookup for lexer states inside a finite-set lexeme (issue 9).

`TokenIndex.at_state(q, A)` classifies the vocabulary from lexer state q of the
candidate set A's DFA. When the only terminal still live at q is a finite-set
terminal j (an alternation of literal strings, see `pda.regex.literals`), the
walk from q is the walk from q's own state s in j's DFA: the other candidates
are dead at q and stay dead, and a lexeme that ends can only end as j. Its
result is then read from j's `EnumTokenTable` (every state joined with the
vocabulary at compile time, `pda.trie.join`) instead of walked. That includes
the start state when j alone is a candidate (the first byte of a tool name): the
join's row of j's start state is the walk from the trie root.

Every other state (several terminals live, or a terminal that is not a finite
set) returns None and keeps the general walk, so this is an accelerator with
the same answers, never a second semantics.

Only the contextual lexer is accelerated. Under the basic mode a lexeme is cut
by all terminals, so "only j is live among the candidates" does not make the
walk j's own; it would where every continuation can only end typed as j
(`Lexer.could_end_as(q) == {j}`), but the basic tables do not keep the
all-terminal DFA's per-terminal states that the lookup needs to find s.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from pda.arrays import distinct
from pda.bits import iter_bits
from pda.grammar.ir import CONTEXTUAL, TerminalDef
from pda.index.token_index import BoundaryGroup, Classification, TokenIndex
from pda.lexer.lexer import START, Lexer
from pda.regex.finite_set import FINITE_SET_MIN_CHOICES
from pda.regex.literals import literal_alternatives
from pda.trie.join import EnumTokenTable, enum_token_table

# Finite-set DFAs with at least this many states are joined with the vocabulary at
# compile time (~30 ms at 1,000 values, where walking the states lazily costs
# ~0.3 ms each on first visit); smaller ones on the first state that needs them,
# so a keyword set that is never alone live (it overlaps an identifier) costs nothing.
EAGER_MIN_STATES = 1_000


def is_finite_set(t: TerminalDef) -> bool:
    """Whether `t` is an alternation of literal strings (the finite-set engine's terminals)."""
    if t.lazy or t.automaton is not None or not t.pattern.startswith("(?:"):
        return False
    strings = literal_alternatives(t.pattern, t.flags)
    return strings is not None and len(strings) >= FINITE_SET_MIN_CHOICES


class FiniteSetLookup:
    """The finite-set terminals of one (grammar, vocabulary) pair and their joined tables.

    `terminals` is the bitmask of the lexer's finite-set terminals; `tables` holds the
    tables joined so far (the large ones from construction, at compile time).
    """

    def __init__(self, index: TokenIndex, terminals: Sequence[TerminalDef], vocab_key: str) -> None:
        lexer: Lexer = index.lexer
        by_name = {t.name: t for t in terminals}
        self.index = index
        self.lexer = lexer
        self.vocab_key = vocab_key
        self.terminals = 0
        for j, name in enumerate(lexer.names):
            t = by_name.get(name)
            if lexer.mode == CONTEXTUAL and t is not None and is_finite_set(t):
                self.terminals |= 1 << j
        self.tables: dict[int, EnumTokenTable] = {}
        self._groups: dict[tuple[int, int], BoundaryGroup] = {}
        self._columns: dict[tuple[int, int], np.ndarray] = {}
        self._by_set: dict[int, tuple[PlainRows | None, np.ndarray]] = {}
        for j in iter_bits(self.terminals):
            if lexer.dfas[j].n_states >= EAGER_MIN_STATES:
                self._table(j)
                # The candidate set where the terminal is the only one allowed (a JSON value
                # with one possible key, a tool name) is the usual one: build its lexer DFA
                # and plain rows now, at compile time, rather than on the first mask that needs them.
                self._states(1 << j | lexer.ignore)

    def _table(self, j: int) -> EnumTokenTable:
        table = self.tables.get(j)
        if table is None:
            table = enum_token_table(self.lexer.dfas[j], self.index.trie, self.vocab_key)
            self.tables[j] = table
        return table

    def state_of(self, q: int, live_set: int) -> tuple[int, int] | None:
        """(j, s): the finite-set terminal j alone live at lexer state q, and q's state in j's DFA; or None."""
        if not live_set & self.terminals:  # asked for every computed mask: most sets hold no finite-set terminal
            return None
        tables = self.lexer.tables(live_set)
        live = tables.live_at(q)
        if not live & self.terminals or live & (live - 1):
            return None
        j = live.bit_length() - 1
        return j, int(self._component(live_set, j)[tables.resolve(q)])

    def answers_lexemes(self, live_set: int) -> bool:
        """Whether `at_state` answers every state of a lexeme under `live_set` (START included).

        So when one finite-set terminal alone is live at the start: terminals only die
        as a lexeme grows, so it is then the only live one in every state.
        """
        live = self.lexer.tables(live_set).live_at(START)
        return bool(live & self.terminals) and not live & (live - 1)

    def _component(self, live_set: int, j: int) -> np.ndarray:
        """Per state of the candidate set's DFA, the state of j's DFA it stands for where j is live (a column, cached).

        `LexerTables.key(q)` says the same per state, but builds a tuple on each first
        visit (~3 µs); an enum's states are nearly all first visits.
        """
        found = self._columns.get((live_set, j))
        if found is None:
            found = self.lexer.components(live_set).column(j)
            self._columns[(live_set, j)] = found
        return found

    def at_state(self, q: int, live_set: int) -> Classification | None:
        """The classification from lexer state q (what the walk would give), or None to walk.

        The walk would put all boundary nodes in one group (one terminal set can end
        here: {j}); they come as the state's shared groups instead, whose union it is.
        The mask is the same, and each group's suffix walk is cached on the group, once
        for all the states that share it.
        """
        found = self.state_of(q, live_set)
        if found is None:
            return None
        j, s = found
        table = self.tables.get(j) or self._table(j)
        lo, hi = table.group_ptr[s : s + 2].tolist()
        groups = [self._group(j, g) for g in table.group_ids[lo:hi].tolist()] if lo != hi else []
        return Classification(table.inside_mask(s, self.index.mask_words), groups)

    def _group(self, j: int, g: int) -> BoundaryGroup:
        group = self._groups.get((j, g))
        if group is None:
            group = BoundaryGroup(1 << j, self.tables[j].group_nodes(g))
            self._groups[(j, g)] = group
        return group

    def plain_rows(self, live_set: int) -> PlainRows | None:
        """Rows of the candidate set's DFA states that are plain finite-set states (cached per set); None if none is.

        Plain (`EnumTokenTable.plain`): one finite-set terminal j alone is live at q, and
        from q's state s of j's DFA the lexeme can neither end nor be crossed by a token,
        so the text mask at q is s's inside tokens whatever the parser node, and EOS is
        not allowed. START is left out: there the text may end before any lexeme, which
        depends on the parser node. Vectorised over all states at once, so a first visit
        of such a state costs what a repeat does.
        """
        return self._states(live_set)[0]

    def ending_states(self, live_set: int) -> np.ndarray:
        """The other states but START where one finite-set terminal alone is live: a lexeme can end in or after them.

        Their masks depend on the parser node (boundary tokens, EOS); an identifier enum has a
        few (2 at 100 values, 28 at 10,000 on Qwen2), which the warm-up computes.
        """
        return self._states(live_set)[1]

    def _states(self, live_set: int) -> tuple[PlainRows | None, np.ndarray]:
        """`plain_rows` and `ending_states` of one candidate set, computed together and cached."""
        found = self._by_set.get(live_set)
        if found is not None:
            return found
        rows, ending = None, np.zeros(0, dtype=np.int64)
        if live_set & self.terminals:
            n = self.lexer.tables(live_set).n_states
            # The states where one candidate alone is live (a view of the all-terminal DFA: among the candidates).
            states, alone, own = self.lexer.components(live_set).alone(live_set)
            kept = states != START
            states, alone, own = states[kept], alone[kept], own[kept]
            lo = np.full(n, -1, dtype=np.int64)
            hi = np.zeros(n, dtype=np.int64)
            other = np.zeros(n, dtype=bool)
            parts: list[EnumTokenTable] = []
            offset = 0
            for j in distinct(alone).tolist():
                if not self.terminals >> j & 1:
                    continue
                at = alone == j
                table = self._table(j)
                q, s = states[at], own[at]
                plain = table.plain[s]
                other[q[~plain]] = True
                lo[q[plain]] = table.word_ptr[s[plain]] + offset
                hi[q[plain]] = table.word_ptr[s[plain] + 1] + offset
                parts.append(table)
                offset += len(table.words)
            if parts:
                words = parts[0].words if len(parts) == 1 else np.concatenate([t.words for t in parts])
                bits = parts[0].bits if len(parts) == 1 else np.concatenate([t.bits for t in parts])
                rows = PlainRows(array("q", lo.tobytes()), array("q", hi.tobytes()), words, bits)
            ending = np.flatnonzero(other)
        self._by_set[live_set] = rows, ending
        return rows, ending


class PlainRows(NamedTuple):
    """Rows of plain finite-set states of one candidate set's DFA, ready to write (see `FiniteSetLookup.plain_rows`).

    State q's row is zero but for words `words[lo[q]:hi[q]]`, which hold `bits[lo[q]:hi[q]]`;
    `lo[q]` is -1 where q is not plain. `lo`/`hi` are `array`s: indexing one gives a
    Python int without a numpy scalar (the serving hot path reads them on every step).
    """

    lo: array
    hi: array
    words: np.ndarray
    bits: np.ndarray
