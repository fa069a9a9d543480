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

import numpy as np

from pda.index.trie import TokenTrie, concat_ranges
from pda.lexer.lexer import START, Lexer


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


class TokenIndex:
    """Classifications per lexer state, for one (grammar, vocabulary) pair."""

    def __init__(self, lexer: Lexer, trie: TokenTrie, mask_words: int) -> None:
        self.lexer = lexer
        self.trie = trie
        self.mask_words = mask_words
        n = lexer.n_states
        self.stop = n
        trans = np.vstack([lexer.trans, np.full((1, lexer.trans.shape[1]), n, dtype=np.int32)])
        trans[lexer.dead, :] = n
        self.trans = trans
        self.node_class = lexer.byte_class[trie.byte].astype(np.int64)
        self.first_nodes = trie.child_ids[trie.child_ptr[0] : trie.child_ptr[1]]
        self._suffixes: dict[tuple[bytes, int], Classification] = {}
        self._per_live_set: dict[int, tuple[np.ndarray, np.ndarray, list[int]]] = {}
        self._roots: dict[tuple[int, int], Classification] = {}

    def _live_tables(self, live_set: int) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """For live set A: per DFA state, whether it is live, and which terminal set it ends as."""
        tables = self._per_live_set.get(live_set)
        if tables is None:
            lexer = self.lexer
            n = lexer.n_states
            bits = np.array([(live_set >> j) & 1 for j in range(lexer.live_np.shape[1])], dtype=bool)
            live = np.zeros(n + 1, dtype=bool)
            live[:n] = lexer.live_np[:, bits].any(axis=1)
            ends_as = np.full(n + 1, -1, dtype=np.int32)
            sets: list[int] = []
            seen: dict[int, int] = {}
            for q in np.flatnonzero(lexer.accept_np[:, bits].any(axis=1)):
                if q == START:
                    continue
                e = lexer.best(lexer.accept[q] & live_set)
                if e not in seen:
                    seen[e] = len(sets)
                    sets.append(e)
                ends_as[q] = seen[e]
            tables = (live, ends_as, sets)
            self._per_live_set[live_set] = tables
        return tables

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
        live, ends_as, sets = self._live_tables(live_set)
        trie, trans = self.trie, self.trans
        inside = []
        boundary_nodes = []
        boundary_sets = []
        frontier = roots
        parent_state = np.full(len(frontier), root_state, dtype=np.int32)
        while len(frontier):
            nxt = trans[parent_state, self.node_class[frontier]]
            alive = live[nxt]
            if not alive.all():
                ends = ends_as[parent_state[~alive]]
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
        if q != START:
            # Only terminals still live at q matter from here on.
            live_set &= self.lexer.live[q]
        key = (q, live_set)
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
