"""Every state of a finite-set DFA joined with the vocabulary trie, at once (issue 9).

The token index classifies the vocabulary from one lexer state at a time by
walking the vocabulary trie (`pda.index.token_index`). For an enum terminal
with K values every DFA state is a distinct lexer state, so that walk would run
once per state at serve time. Here the walks of all states run together, level
by level in numpy: a *pair* is (origin state, current state, vocabulary node),
the vocabulary node spelling a path from the origin. A pair is advanced by
the current state's out-edges, each matched to the vocabulary node's child with
the same byte (one `searchsorted` on a per-vocabulary key `parent * 256 + byte`).
The work is proportional to the number of (state, token prefix) matches, a few
per state for identifier-like values, not to the vocabulary.

Per origin state s the result is exactly what the walk from s produces when s's
terminal is the only live one:

* **inside** — tokens whose every byte has a live transition (the lexeme goes on);
* **boundary** — the trie nodes whose byte has no live transition from an
  accepting state (the lexeme ends there and that byte starts the next one),
  kept as groups shared between states (see `EnumTokenTable`).

All are CSR tables indexed by origin state.
"""

from __future__ import annotations

import weakref

import numpy as np

from pda import cache
from pda.arrays import concat_ranges
from pda.index.trie import TokenTrie
from pda.regex.dfa import LexerDFA

_child_keys: "weakref.WeakKeyDictionary[TokenTrie, tuple[np.ndarray, np.ndarray]]" = weakref.WeakKeyDictionary()
# Tables alive in some compiled grammar, shared by any other that joins the same DFA.
_memory: "weakref.WeakValueDictionary[tuple[str, str], EnumTokenTable]" = weakref.WeakValueDictionary()


def child_keys(trie: TokenTrie) -> tuple[np.ndarray, np.ndarray]:
    """How the join finds a trie node's child by byte: (keys, near_root).

    `keys` is `parent * 256 + byte` of every trie edge in `trie.child_ids` order, plus a
    sentinel that matches nothing. Children in CSR order are sorted by parent, then by
    id, and ids are preorder of sorted tokens, so the keys ascend: a child is found by
    `searchsorted`. The two largest levels of the join (at the root and one byte below
    it) are dense lookups instead: `near_root[b1, b2]` is the position of the child
    `b1 b2` (`near_root[256, b]` of the child `b` of the root), or the sentinel's.
    Depends only on the vocabulary; computed once per trie.
    """
    found = _child_keys.get(trie)
    if found is None:
        kids = trie.child_ids
        keys = np.concatenate((trie.parent[kids].astype(np.int64) * 256 + trie.byte[kids], [np.iinfo(np.int64).max]))
        near_root = np.full((257, 256), len(keys) - 1, dtype=np.int64)
        first = kids[trie.child_ptr[0] : trie.child_ptr[1]]
        near_root[256, trie.byte[first]] = np.arange(trie.child_ptr[0], trie.child_ptr[1])
        for node, b1 in zip(first.tolist(), trie.byte[first].tolist()):
            lo, hi = int(trie.child_ptr[node]), int(trie.child_ptr[node + 1])
            near_root[b1, trie.byte[kids[lo:hi]]] = np.arange(lo, hi)
        found = (keys, near_root)
        _child_keys[trie] = found
    return found


class EnumTokenTable:
    """Per state of one finite-set DFA: inside tokens and boundary groups (CSR tables).

    The inside tokens are also kept pre-packed, as the nonzero words of the state's
    packed mask (`word_ptr`, `words`, `bits`): building the mask at serve time is then
    one zeroed array and one scatter.

    A boundary *group* is the set of trie nodes one byte past a vocabulary node v
    whose path reached an accepting DFA state s: v's children whose byte has no
    live edge from s. It depends on (v, s) only, so states share groups (every
    state just before a closing `"` reaches v = `"` with tokens such as `"}` and
    `",`), and the suffix classification after a group, cached on it, is shared
    too. A state's boundary nodes are the union of its groups.

    `plain[s]`: s is not accepting and has no boundary group, so the lexeme can
    neither end nor be crossed from s: its inside tokens are the whole mask there.
    """

    __slots__ = ("inside_ptr", "inside_tokens", "word_ptr", "words", "bits",
                 "group_ptr", "group_ids", "node_ptr", "nodes", "plain", "__weakref__")

    def __init__(self, inside_ptr: np.ndarray, inside_tokens: np.ndarray, group_ptr: np.ndarray,
                 group_ids: np.ndarray, node_ptr: np.ndarray, nodes: np.ndarray, accepting: np.ndarray) -> None:
        self.plain = ~accepting & (group_ptr[1:] == group_ptr[:-1])
        self.inside_ptr = inside_ptr
        self.inside_tokens = inside_tokens.astype(np.int32)
        self.group_ptr, self.group_ids = group_ptr, group_ids
        self.node_ptr, self.nodes = node_ptr, nodes
        # (state, word) runs: tokens are sorted within a state, so equal words are adjacent.
        state = np.repeat(np.arange(len(inside_ptr) - 1), np.diff(inside_ptr))
        word_key = state.astype(np.int64) << 32 | (inside_tokens >> 5)
        starts = np.flatnonzero(np.diff(word_key, prepend=-1)) if len(word_key) else np.zeros(0, np.int64)
        one_bits = np.left_shift(np.uint32(1), (inside_tokens & 31).astype(np.uint32))
        # Distinct tokens of one word have distinct bits, so their sum is their OR.
        self.bits = (np.add.reduceat(one_bits, starts) if len(starts) else one_bits).astype(np.uint32).view(np.int32)
        # Word indices as intp: a scatter with them needs no conversion (serve time, ~0.25 µs).
        self.words = (word_key[starts] & 0xFFFFFFFF).astype(np.intp)
        self.word_ptr = np.searchsorted(starts, inside_ptr).astype(np.int64)

    def to_arrays(self) -> tuple[dict, dict[str, np.ndarray]]:
        """(meta, arrays) for the disk cache: every table as it is (`from_arrays` reads them back)."""
        return {}, {name: getattr(self, name) for name in self.__slots__ if name != "__weakref__"}

    @classmethod
    def from_arrays(
        cls, meta: dict, arrays: dict[str, np.ndarray], n_states: int, trie: TokenTrie
    ) -> "EnumTokenTable":
        """The table `to_arrays` wrote for a DFA of `n_states` states and `trie`, checked so that every
        pointer, token and node is in range (`inside_mask` scatters `words` into a mask as wide as the
        vocabulary); raises `cache.Invalid`."""
        self = cls.__new__(cls)
        take = cache.take
        n_tokens = int(trie.token_ids.max(initial=-1)) + 1
        self.inside_tokens = take(arrays, "inside_tokens", np.int32, (None,), (0, n_tokens))
        self.inside_ptr = take(arrays, "inside_ptr", np.int64, (n_states + 1,), (0, len(self.inside_tokens) + 1))
        self.words = take(arrays, "words", np.intp, (None,), (0, (n_tokens + 31) >> 5))
        self.bits = take(arrays, "bits", np.int32, (len(self.words),))
        self.word_ptr = take(arrays, "word_ptr", np.int64, (n_states + 1,), (0, len(self.words) + 1))
        self.nodes = take(arrays, "nodes", np.int64, (None,), (0, trie.n_nodes))
        self.node_ptr = take(arrays, "node_ptr", np.int64, (None,), (0, len(self.nodes) + 1))
        self.group_ids = take(arrays, "group_ids", np.int64, (None,), (0, max(len(self.node_ptr) - 1, 0)))
        self.group_ptr = take(arrays, "group_ptr", np.int64, (n_states + 1,), (0, len(self.group_ids) + 1))
        self.plain = take(arrays, "plain", bool, (n_states,))
        return self

    def inside(self, state: int) -> np.ndarray:
        """Token ids allowed from `state` whatever follows the lexeme (ascending)."""
        return self.inside_tokens[self.inside_ptr[state] : self.inside_ptr[state + 1]]

    def inside_mask(self, state: int, mask_words: int) -> np.ndarray | None:
        """`inside(state)` as a packed int32 mask of `mask_words` words (bit i % 32 of word i // 32), or None if empty."""
        lo, hi = self.word_ptr[state], self.word_ptr[state + 1]
        if lo == hi:
            return None
        mask = np.zeros(mask_words, dtype=np.int32)
        mask.put(self.words[lo:hi], self.bits[lo:hi])
        return mask

    def groups(self, state: int) -> np.ndarray:
        """The boundary groups (ids) of `state`, ascending."""
        return self.group_ids[self.group_ptr[state] : self.group_ptr[state + 1]]

    def group_nodes(self, group: int) -> np.ndarray:
        """The trie nodes of one boundary group (ascending): their bytes start the next lexeme."""
        return self.nodes[self.node_ptr[group] : self.node_ptr[group + 1]]

    def boundary(self, state: int) -> np.ndarray:
        """All trie nodes where a lexeme started at `state` ends (ascending; what one walk would group)."""
        return np.sort(np.concatenate([self.group_nodes(g) for g in self.groups(state)] or [self.nodes[:0]]))

    @property
    def nbytes(self) -> int:
        return sum(getattr(self, name).nbytes for name in self.__slots__ if name != "__weakref__")


def _edges(dfa: LexerDFA) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Live out-edges per state as CSR over states, sorted by byte: (ptr, byte, target)."""
    live = dfa.live.any(axis=1)
    n_classes = dfa.trans.shape[1]
    bytes_by_class = np.argsort(dfa.byte_class, kind="stable")
    class_ptr = np.concatenate(([0], np.cumsum(np.bincount(dfa.byte_class, minlength=n_classes))))
    if not live[dfa.dead] and np.count_nonzero(live) == dfa.n_states - 1:  # every state but the dead one (a trie DFA)
        src, cls = np.nonzero(dfa.trans != dfa.dead)
    else:
        src, cls = np.nonzero(live[dfa.trans] & live[:, None])
    counts = class_ptr[cls + 1] - class_ptr[cls]
    byte = bytes_by_class[concat_ranges(np.arange(256), class_ptr[cls], class_ptr[cls + 1])]
    target = np.repeat(dfa.trans[src, cls], counts)
    src = np.repeat(src, counts)
    order = np.argsort(src.astype(np.int64) * 256 + byte, kind="stable")
    ptr = np.concatenate(([0], np.cumsum(np.bincount(src, minlength=dfa.n_states))))
    return ptr, byte[order].astype(np.int64), target[order].astype(np.int64)


def _csr(origin: np.ndarray, values: np.ndarray, n_states: int) -> tuple[np.ndarray, np.ndarray]:
    """Group `values` by `origin`: (ptr over states, values sorted by (origin, value))."""
    if len(values) == 0:
        return np.zeros(n_states + 1, dtype=np.int64), np.zeros(0, dtype=np.int64)
    order = np.sort(origin.astype(np.int64) << 32 | values.astype(np.int64))
    ptr = np.concatenate(([0], np.cumsum(np.bincount(order >> 32, minlength=n_states))))
    return ptr, order & 0xFFFFFFFF


def join(dfa: LexerDFA, trie: TokenTrie) -> EnumTokenTable:
    """Classify the vocabulary from every live state of `dfa` (one terminal's DFA) in one pass."""
    n = dfa.n_states
    live = dfa.live.any(axis=1)
    accepting = dfa.accept.any(axis=1)
    edge_ptr, edge_byte, edge_target = _edges(dfa)
    keys, near_root = child_keys(trie)
    kids = trie.child_ids
    inside_origin, inside_tokens, end_origin, end_node, end_state = [], [], [], [], []
    origin = np.flatnonzero(live).astype(np.int64)
    state = origin.copy()
    node = np.zeros(len(origin), dtype=np.int64)
    edge_ids = np.arange(len(edge_byte))
    depth = 0
    while len(origin):
        # The lexeme can end here: record (origin, node, accepting state); groups come after.
        at_end = accepting[state]
        if at_end.any():
            end_origin.append(origin[at_end])
            end_node.append(node[at_end])
            end_state.append(state[at_end])
        # Extend: each out-edge of the current state, matched to the node's child with that byte.
        lo, hi = edge_ptr[state], edge_ptr[state + 1]
        edges = concat_ranges(edge_ids, lo, hi)
        pair = np.repeat(np.arange(len(origin)), hi - lo)
        byte = edge_byte[edges]
        parent = node[pair]
        want = parent * 256 + byte
        # The first two levels are the largest (every origin starts at the root): dense lookups.
        if depth < 2:
            pos = near_root[256 if depth == 0 else trie.byte[parent], byte]
        else:
            # Sorted queries search ~3x faster (each starts where the last one ended, in cache).
            order = np.argsort(want)
            pos = np.empty_like(want)
            pos[order] = np.searchsorted(keys, want[order])
        depth += 1
        hit = keys[pos] == want
        origin, state, node = origin[pair[hit]], edge_target[edges[hit]], kids[pos[hit]]
        # Tokens ending at the reached nodes stay inside the lexeme.
        tlo, thi = trie.token_ptr[node], trie.token_ptr[node + 1]
        inside_origin.append(np.repeat(origin, thi - tlo))
        inside_tokens.append(trie.token_ids[concat_ranges(trie.token_positions, tlo, thi)])
    inside_ptr, inside = _csr(_cat(inside_origin), _cat(inside_tokens), n)
    group_ptr, group_ids, node_ptr, nodes = _groups(trie, dfa, live, _cat(end_origin), _cat(end_node), _cat(end_state))
    return EnumTokenTable(inside_ptr, inside, group_ptr, group_ids, node_ptr, nodes, accepting)


def _cat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _groups(trie: TokenTrie, dfa: LexerDFA, live: np.ndarray, origin: np.ndarray, node: np.ndarray,
            state: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Boundary groups from the (origin, node v, accepting state s) triples where a lexeme can end.

    A group is v's children whose byte has no live edge from s (the walk's boundary
    nodes), one per distinct (v, s) with at least one such child. Returns
    (group_ptr, group_ids) per origin state and (node_ptr, nodes) per group.
    """
    n = dfa.n_states
    pair_key, inverse = np.unique(node * n + state, return_inverse=True)
    v, s = pair_key // n, pair_key % n
    lo, hi = trie.child_ptr[v], trie.child_ptr[v + 1]
    children = concat_ranges(trie.child_ids, lo, hi)
    owner = np.repeat(np.arange(len(pair_key)), hi - lo)
    stop = ~live[dfa.trans[s[owner], dfa.byte_class[trie.byte[children]]]]
    children, owner = children[stop], owner[stop]
    counts = np.bincount(owner, minlength=len(pair_key))
    # Renumber the pairs that have boundary nodes as groups 0..G-1.
    kept = counts > 0
    group_of = np.cumsum(kept) - 1
    node_ptr = np.concatenate(([0], np.cumsum(counts[kept])))
    has = kept[inverse]
    group_ptr, group_ids = _csr(origin[has], group_of[inverse[has]], n)
    return group_ptr, group_ids, node_ptr, children


def enum_token_table(dfa: LexerDFA, trie: TokenTrie, vocab_key: str) -> EnumTokenTable:
    """`join(dfa, trie)`, cached in memory and on disk by (DFA content, vocabulary key)."""
    key = (dfa.digest, vocab_key)
    table = _memory.get(key)
    if table is None:
        disk_key = {"dfa": key[0], "vocab": vocab_key, "states": dfa.n_states, "nodes": trie.n_nodes}
        table = cache.load("enum-table", disk_key,
                           lambda meta, arrays: EnumTokenTable.from_arrays(meta, arrays, dfa.n_states, trie))
        if table is None:
            table = join(dfa, trie)
            cache.store("enum-table", disk_key, *table.to_arrays())
        _memory[key] = table
    return table
