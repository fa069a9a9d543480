"""A finite set of literal strings as a minimal, acyclic `LexerDFA`, built directly (docs/finite_set.md).

`finite_set_dfa(t)` is the construction `pda.lexer.terminals.terminal_dfa` tries
first: when a terminal's pattern is a pure alternation of literals (Lark
`"a" | "b" | ...`, recognised by `pda.regex.literals`), its minimal DFA is built
directly from the sorted strings (`build_literal_dfa`) instead of through
regex → NFA → subset construction. The language is exactly the regex path's.

The strings are sorted, so a trie comes from longest-common-prefix lengths
alone (`pda.kernels.trie.string_trie`, the vocabulary trie's layout too): string k creates the nodes at
depths lcp(k-1, k)+1 .. len(k), in preorder. Suffixes are then merged bottom-up
by height: two nodes are equivalent iff they agree on acceptance and map every
byte class to equivalent children (for an acyclic automaton this is the
Myhill–Nerode relation, so the result is the minimal DFA). A small trie (a JSON
Schema enum) is merged node by node, its signatures interned exactly in a dict;
a large one (100,000 values) one height level at a time, each level one
hash-and-unique pass in numpy, node signatures hashed with two independent
64-bit random linear hashes (a false merge needs both to collide).

`excluding_dfa(free, strings)` is the other finite set a JSON Schema writes: the object keys its named
properties leave free, a string pattern minus the names (`"(?!(?:a|b)")(?:G)*"`, read by
`pda.regex.literals.excluded_alternatives`). The free pattern's DFA (`"(?:G)*"`, one per process) gets the
names' trie laid over the state after its opening quote: a trie node reads a name's next byte to its child,
the closing quote after a whole name to the dead state, and every other byte as that state does. The regex
path composed the look-ahead's trie with the string body anew for every such key (~1.3 ms cold, the cost of a
terminal ten times its size).

Invariants of the result, shared with `pda.regex.dfa`: state 0 is the start (the
trie root), the dead state is last and absorbs every class, `accept` and `live`
have one column, and `live` is true on every state but the dead one (every trie
node leads to the end of some string).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from pda.arrays import stable_order
from pda.errors import LimitExceeded
from pda.kernels.partition import minimal_dfa
from pda.kernels.product import reachable
from pda.kernels.trie import string_trie
from pda.grammar.ir import TerminalDef
from pda.regex.dfa import DEFAULT_MAX_DFA_STATES, LexerDFA
from pda.regex.hashing import hash_weights, mix
from pda.regex.literals import literal_alternatives

# Below this many alternatives the trie's numpy passes cost more than the regex path did (~10 ms
# each, docs/finite_set.md); a few ASCII literals are now `pda.regex.dfa.literal_set_dfa`'s, the
# regex path's own DFA, so moving the bound renumbers those DFAs' states.
FINITE_SET_MIN_CHOICES = 8
# A trie of at most this many nodes is minimised node by node in Python (`_blocks_by_signature`: ~1 us a node,
# against ~1 ms for the numpy passes below ~1,500 nodes), a larger one
# level by level in numpy (`_blocks_by_height`); both give the same partition, so the same DFA.
PYTHON_MAX_NODES = 1024


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


class LiteralTrie:
    """The trie of a sorted, duplicate-free list of byte strings (root = node 0)."""

    def __init__(self, strings: list[bytes]) -> None:
        trie = string_trie(strings)
        self.n_nodes = len(trie.parent)
        self.parent, self.byte, self.depth = trie.parent, trie.byte, trie.depth
        self.accept = np.zeros(self.n_nodes, dtype=bool)
        self.accept[trie.end_node] = True  # the empty string ends at the root

    def heights(self) -> np.ndarray:
        """Longest path from each node down to a leaf (a leaf has height 0)."""
        height = np.zeros(self.n_nodes, dtype=np.int64)
        # Children have larger depth; propagate deepest level first.
        order = stable_order(self.depth.max() - self.depth[1:]) + 1
        depth_sorted = self.depth[order]
        bounds = np.flatnonzero(np.diff(depth_sorted)) + 1
        for level in np.split(order, bounds):
            np.maximum.at(height, self.parent[level], height[level] + 1)
        return height


def finite_set_dfa(t: TerminalDef, *, max_states: int = DEFAULT_MAX_DFA_STATES) -> LexerDFA | None:
    """The terminal's DFA built as a literal trie, or None when it is not a finite literal set.

    Only strings that are valid UTF-8 (no lone surrogates) qualify: the byte-level
    regex path would never match the others, and the trie would.
    """
    if t.lazy or t.automaton is not None:  # an automaton's `pattern` only describes it
        return None
    strings = literal_alternatives(t.pattern, t.flags)
    if strings is None or len(strings) < FINITE_SET_MIN_CHOICES:
        return None
    try:
        encoded = [s.encode("utf-8") for s in strings]
    except UnicodeEncodeError:
        return None
    return build_literal_dfa(encoded, name=t.name, max_states=max_states)


def build_literal_dfa(
    strings: Iterable[str | bytes],
    *,
    name: str = "<literals>",
    max_states: int = DEFAULT_MAX_DFA_STATES,
) -> LexerDFA:
    """The minimal DFA of exactly the given strings (str is UTF-8 encoded).

    Raises `LimitExceeded` when the minimal DFA has more than `max_states` states.
    """
    encoded = sorted({s.encode("utf-8") if isinstance(s, str) else bytes(s) for s in strings})
    trie = LiteralTrie(encoded)
    n = trie.n_nodes
    # Byte classes: one per byte that labels an edge, one for every other byte.
    used = np.zeros(256, dtype=bool)
    used[trie.byte[1:]] = True
    byte_class = np.full(256, int(used.sum()), dtype=np.int32)
    byte_class[used] = np.arange(int(used.sum()), dtype=np.int32)
    n_classes = int(used.sum()) + 1
    edge_class = byte_class[trie.byte].astype(np.int64)
    if n <= PYTHON_MAX_NODES:
        block, n_blocks = _blocks_by_signature(trie, edge_class)
    else:
        block, n_blocks = _blocks_by_height(trie, edge_class, n_classes)
    if n_blocks + 1 > max_states:
        raise LimitExceeded(
            f"finite-set DFA for terminal {name} has {n_blocks + 1} states (max_states={max_states})"
        )
    children = np.arange(1, n)
    # Renumber: the root's block first (start = 0), then the others; the dead state last.
    reps = np.full(n_blocks, -1, dtype=np.int64)
    reps[block[::-1]] = np.arange(n - 1, -1, -1)  # the first node (preorder) of each block
    rank = np.argsort(reps, kind="stable")  # blocks in preorder of their representatives
    new_id = np.empty(n_blocks, dtype=np.int64)
    new_id[rank] = np.arange(n_blocks)
    dead = n_blocks
    trans = np.full((n_blocks + 1, n_classes), dead, dtype=np.int32)
    # Every edge of every node; equivalent nodes write the same targets.
    src = new_id[block[trie.parent[children]]]
    trans[src, edge_class[children]] = new_id[block[children]]
    accept = np.zeros((n_blocks + 1, 1), dtype=bool)
    accept[new_id[block[trie.accept]], 0] = True
    live = np.ones((n_blocks + 1, 1), dtype=bool)
    live[dead, 0] = False
    return LexerDFA(
        n_states=n_blocks + 1,
        start=0,
        dead=dead,
        byte_class=_frozen(byte_class),
        trans=_frozen(trans),
        accept=_frozen(accept),
        live=_frozen(live),
        names=(name,),
    )


def _blocks_by_signature(trie: LiteralTrie, edge_class: np.ndarray) -> tuple[np.ndarray, int]:
    """Each trie node's block of the minimal DFA, children before parents (reverse preorder): a node's block is
    its acceptance and its children's (class, block) pairs, interned exactly. One dict lookup a node: a JSON
    Schema enum of a few dozen values (~150 nodes) in ~0.1 ms, where `_blocks_by_height`'s numpy passes per
    level cost ~1.5-4 ms."""
    parent = trie.parent.tolist()
    classes = edge_class.tolist()
    accept = trie.accept.tolist()
    n = len(parent)
    children: list[list[int]] = [[] for _ in range(n)]
    for child in range(1, n):  # preorder: a node's children in byte order
        children[parent[child]].append(child)
    block = [0] * n
    ids: dict[tuple, int] = {}
    for node in range(n - 1, -1, -1):
        key = (accept[node], *((classes[c], block[c]) for c in children[node]))
        block[node] = ids.setdefault(key, len(ids))
    return np.array(block, dtype=np.int64), len(ids)


def _blocks_by_height(trie: LiteralTrie, edge_class: np.ndarray, n_classes: int) -> tuple[np.ndarray, int]:
    """Each trie node's block of the minimal DFA, bottom-up by height: the nodes of one height at a time, by
    two hashes of their signatures (a false merge needs both 64-bit hashes to collide); for large sets."""
    n = trie.n_nodes
    height = trie.heights()
    class_w = hash_weights(0x7E1E, (2, n_classes))
    block_w = hash_weights(0x7E1F, (2, 2))
    block = np.full(n, -1, dtype=np.int64)
    sig = np.zeros((2, n), dtype=np.uint64)
    acc = trie.accept.astype(np.uint64)
    for h in range(2):
        sig[h] = acc * block_w[h, 0]
    order = stable_order(height)
    bounds = np.flatnonzero(np.diff(height[order])) + 1
    n_blocks = 0
    # A child's contribution to its parent's signature: mix(class, block of child).
    for level in np.split(order, bounds):
        inverse = _group(sig[0, level], sig[1, level])
        block[level] = inverse + n_blocks
        n_blocks += int(inverse.max()) + 1
        kids = level[level != 0]
        if len(kids):
            b = (block[kids].astype(np.uint64) + np.uint64(1)) * block_w[0, 1]
            for h in range(2):
                term = mix(b ^ class_w[h, edge_class[kids]])
                np.add.at(sig[h], trie.parent[kids], term)
    return block, n_blocks


def _group(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Group ids (0..k-1) of the pairs (first[i], second[i]); numpy's row sort only on a collision."""
    _, index, inverse = np.unique(first, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    if (second[index[inverse]] == second).all():
        return inverse
    _, inverse = np.unique(np.stack([first, second], axis=1), axis=0, return_inverse=True)
    return inverse.reshape(-1)


def excluding_dfa(free: LexerDFA, strings: Iterable[bytes], *, name: str = "<regex>", quote: int = 0x22,
                  max_states: int = DEFAULT_MAX_DFA_STATES) -> LexerDFA | None:
    """The minimal DFA of `free`'s language minus the strings that start with `quote` s `quote` for s in
    `strings` (`"(?!(?:s1|s2)")` before the rest of `free`'s pattern), or None where the trie cannot simply be
    laid over `free`: unless `free` reads `quote` first and only, and every byte of the strings is a whole
    character that leads the state after it back to itself (a JSON string's printable ASCII but `"`, `\\`,
    `/`, which no escape spells: the string is a name exactly while its bytes follow the trie). Same
    language as the regex path's, states numbered otherwise (as `minimal_dfa` numbers this table's)."""
    k = free.n_classes
    after = int(free.trans[free.start, free.byte_class[quote]])
    others = np.ones(k, dtype=bool)
    others[free.byte_class[quote]] = False
    if free.dead != free.n_states - 1 or after == free.dead or (free.trans[free.start, others] != free.dead).any():
        return None
    # The strings' trie (preorder, root 0), each node's edge from its parent.
    trie = string_trie(list(strings))
    reads = np.bincount(trie.byte[1:], minlength=256) > 0
    if (free.trans[after, free.byte_class[reads]] != after).any():
        return None
    reads[quote] = True
    used = np.flatnonzero(reads)
    # Columns: `free`'s classes, then one of its own for each byte the trie reads and for the quote.
    classes = free.byte_class.astype(np.int64)
    classes[used] = np.arange(k, k + len(used))
    m = len(trie.parent)
    base = 1 + m  # state 0 the start, 1.. the trie's nodes (the root first), then `free`'s states; dead last
    dead = base + free.n_states - 1
    rows = np.take(free.trans, np.concatenate([np.arange(k), free.byte_class[used]]), axis=1).astype(np.int64)
    rows = np.where(rows == free.dead, dead, rows + base)
    table = np.empty((base + free.n_states, rows.shape[1]), dtype=np.int64)
    table[base:] = rows
    table[0] = rows[free.start]
    table[0, classes[quote]] = 1
    table[1:base] = rows[after]
    table[trie.parent[1:] + 1, classes[trie.byte[1:]]] = np.arange(2, m + 1)
    table[trie.end_node + 1, classes[quote]] = dead
    accept = np.zeros(len(table), dtype=bool)
    accept[base:] = free.accept[:, 0]
    accept[0] = free.accept[free.start, 0]
    accept[1:base] = free.accept[after, 0]
    is_dead = np.zeros(len(table), dtype=bool)
    is_dead[dead] = True
    kept = reachable(table, is_dead, np.zeros(1, dtype=np.int64))  # ascending: the start first
    renumber = np.full(len(table), -1, dtype=np.int64)
    renumber[kept] = np.arange(len(kept))
    byte_class, trans, accepting = minimal_dfa(renumber[table[kept]], accept[kept], classes)
    n = len(trans) - 1  # the dead state is last
    if n >= max_states:
        raise LimitExceeded(f"lexer DFA for terminal {name} exceeds max_states={max_states} ({n} states)")
    live = np.ones((n + 1, 1), dtype=bool)
    live[n, 0] = False
    live[0, 0] = n > 1 or bool(accepting[0])
    return LexerDFA(n_states=n + 1, start=0, dead=n, byte_class=byte_class, trans=trans,
                    accept=_frozen(accepting.reshape(n + 1, 1)), live=_frozen(live), names=(name,))
