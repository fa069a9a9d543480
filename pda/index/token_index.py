"""The per-lexer-state token index (DESIGN.md, "The token index").

From a lexer state `q` with live terminal set `A`, every token is one of:

* **inside** — all its bytes extend the current lexeme: allowed whatever the stack;
* **dead** — some byte can neither extend the lexeme nor follow a lexeme end;
* **boundary** — the lexeme ends inside the token (the next byte cannot extend
  it, and it matches terminal set `E`); the rest of the token starts a new
  lexeme, which depends on the parser node after `E`.

Boundary tokens are kept as `BoundaryGroup`s: the trie nodes where the lexeme
ended, grouped by `E`. Classifying a group's suffixes from the lexer's start
state under the next live set `A2` is again independent of the stack, so it is
cached on the group by `A2`. Only `node.advance(E)` at serve time depends on
the stack. All walks are vectorised level by level over the vocabulary trie.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from pda.index.trie import TokenTrie, concat_ranges
from pda.lexer.lexer import START, Lexer, LexerTables

if TYPE_CHECKING:
    from pda.trie.lookup import FiniteSetLookup


class Classification:
    """Tokens allowed outright (a packed int32 mask, or None) and the boundary groups."""

    __slots__ = ("inside", "groups")

    def __init__(self, inside: np.ndarray | None, groups: list["BoundaryGroup"]) -> None:
        self.inside = inside
        self.groups = groups


class BoundaryGroup:
    """Tokens whose lexeme ended with terminal set `terminals` at the trie nodes `nodes`.

    `key` identifies the node set: groups from different lexer states that end at
    the same nodes share their suffix walks.
    """

    __slots__ = ("terminals", "nodes", "key", "after")

    def __init__(self, terminals: int, nodes: np.ndarray) -> None:
        self.terminals = terminals
        self.nodes = nodes
        self.key = nodes.tobytes()
        self.after: dict[int, Classification] = {}


class _WalkTables:
    """A candidate set's DFA as arrays for the walk: a stop state, liveness, lexeme ends."""

    __slots__ = ("tables", "trans", "node_class", "live", "stops", "ends_as", "sets")

    def __init__(self, lexer: Lexer, tables: LexerTables, trie: TokenTrie, shared: dict) -> None:
        n = tables.n_states
        self.tables = tables
        # Views of one DFA share its transition table and byte classes.
        arrays = shared.get(id(tables.trans))
        if arrays is None:
            trans = np.vstack([tables.trans, np.full((1, tables.trans.shape[1]), n, dtype=np.int32)])
            node_class = tables.byte_class.astype(np.uint8 if tables.trans.shape[1] <= 256 else np.int32)[trie.byte]
            arrays = (tables.trans, trans, node_class)
            shared[id(tables.trans)] = arrays
        _, self.trans, self.node_class = arrays
        self.live = np.array([bool(x) for x in tables.live] + [False])
        # Where the lexeme cannot grow: only there may it end (basic mode: not merely "not live").
        self.stops = ~np.array([bool(x) for x in tables.extends] + [False])
        self.ends_as = np.full(n + 1, -1, dtype=np.int32)
        self.sets: list[int] = []
        seen: dict[int, int] = {}
        for q in range(1, n):
            if tables.accept[q]:
                e = lexer.best(tables.accept[q])
                if e not in seen:
                    seen[e] = len(self.sets)
                    self.sets.append(e)
                self.ends_as[q] = seen[e]


class TokenIndex:
    """Classifications per lexer state, for one (grammar, vocabulary) pair."""

    def __init__(self, lexer: Lexer, trie: TokenTrie, mask_words: int) -> None:
        self.lexer = lexer
        self.trie = trie
        self.mask_words = mask_words
        self.first_nodes = trie.child_ids[trie.child_ptr[0] : trie.child_ptr[1]]
        self._suffixes: dict[tuple[bytes, int], Classification] = {}
        self._walk_tables: dict[int, _WalkTables] = {}
        self._shared: dict[int, tuple] = {}
        self._roots: dict[tuple, Classification] = {}
        # Issue 9: states inside a finite-set lexeme are looked up, not walked (set by pda.compile).
        self.finite_sets: FiniteSetLookup | None = None

    def _tables(self, live_set: int) -> "_WalkTables":
        found = self._walk_tables.get(live_set)
        if found is None:
            found = _WalkTables(self.lexer, self.lexer.tables(live_set), self.trie, self._shared)
            self._walk_tables[live_set] = found
        return found

    def _pack(self, token_ids: np.ndarray) -> np.ndarray | None:
        """Token ids as a packed int32 mask (bit i % 32 of word i // 32), or None when empty."""
        if len(token_ids) == 0:
            return None
        if len(token_ids) < 2048:
            words = np.zeros(self.mask_words, dtype=np.int64)
            np.bitwise_or.at(words, token_ids >> 5, np.left_shift(1, token_ids & 31))
            return words.astype(np.uint32).view(np.int32)
        bits = np.zeros(self.mask_words * 32, dtype=bool)
        bits[token_ids] = True
        return np.packbits(bits, bitorder="little").view(np.int32)

    # Compile-time work, paid once per (lexer state, live set) or (group, live set); cached.
    def _classify(self, roots: np.ndarray, root_state: int, live_set: int) -> Classification:
        """Walk the trie from `roots` level by level, expanding only nodes whose lexeme is still live."""
        tables = self._tables(live_set)
        live, stops, ends_as, sets = tables.live, tables.stops, tables.ends_as, tables.sets
        trans, node_class = tables.trans, tables.node_class
        trie = self.trie
        inside = []
        boundary_nodes = []
        boundary_sets = []
        frontier = roots
        parent_state = np.full(len(frontier), root_state, dtype=np.int32)
        while len(frontier):
            nxt = trans[parent_state, node_class[frontier]]
            alive = live[nxt]
            if not alive.all():
                ends = np.where(stops[nxt[~alive]], ends_as[parent_state[~alive]], -1)
                ok = ends >= 0
                if ok.any():
                    boundary_nodes.append(frontier[~alive][ok])
                    boundary_sets.append(ends[ok])
                frontier, nxt = frontier[alive], nxt[alive]
            inside.append(trie.tokens_at(frontier))
            lo, hi = trie.child_ptr[frontier], trie.child_ptr[frontier + 1]
            parent_state = np.repeat(nxt, hi - lo)
            frontier = concat_ranges(trie.child_ids, lo, hi)
        groups = []
        if boundary_nodes:
            nodes = np.concatenate(boundary_nodes)
            which = np.concatenate(boundary_sets)
            for k in np.unique(which):
                groups.append(BoundaryGroup(sets[k], np.sort(nodes[which == k])))
        return Classification(self._pack(np.concatenate(inside)) if inside else None, groups)

    def snapshot(self) -> tuple[dict, dict]:
        """The cached classifications as flat tables of arrays, for the disk cache."""

        def flat(c: Classification) -> tuple:
            return c.inside, [(g.terminals, g.nodes) for g in c.groups]

        return (
            {key: flat(c) for key, c in self._roots.items()},
            {key: flat(c) for key, c in self._suffixes.items()},
        )

    def restore(self, snapshot: tuple[dict, dict]) -> None:
        """Adopt classifications from a snapshot of the same (grammar, vocabulary)."""

        def build(entry: tuple) -> Classification:
            inside, groups = entry
            return Classification(inside, [BoundaryGroup(e, nodes) for e, nodes in groups])

        roots, suffixes = snapshot
        self._roots.update((key, build(entry)) for key, entry in roots.items())
        self._suffixes.update((key, build(entry)) for key, entry in suffixes.items())

    def at_state(self, q: int, live_set: int) -> Classification:
        """Classify the whole vocabulary from lexer state `q` under live set `live_set`."""
        # From a state inside a lexeme only the terminals still live there matter, so the
        # entry is keyed by their own DFA states and shared by every candidate set.
        if q != START and self.finite_sets is not None:
            # Answered from the finite-set tables in microseconds: not worth a cached mask per state.
            found = self.finite_sets.at_state(q, live_set)
            if found is not None:
                return found
        key = (live_set, START) if q == START else self.lexer.tables(live_set).key(q)
        found = self._roots.get(key)
        if found is None:
            found = self._classify(self.first_nodes, q, live_set)
            self._roots[key] = found
        return found

    def after_boundary(self, group: BoundaryGroup, live_set: int) -> Classification:
        """Classify a group's suffixes from the start state under the next live set."""
        found = group.after.get(live_set)
        if found is None:
            key = (group.key, live_set)
            found = self._suffixes.get(key)
            if found is None:
                found = self._classify(group.nodes, START, live_set)
                self._suffixes[key] = found
            group.after[live_set] = found
        return found
