"""Plain string body in the vocabulary trie: the per-trie half of the walk's cut (`pda.kernels.walk`).

A JSON string body's DFA loops on almost every byte, so from a state inside a
string nearly the whole vocabulary is inside; visiting all of Qwen2's 330k trie
nodes costs ~4 ms even in C, for every such state of every new schema. A *slice*
(llguidance's name) is a byte language `U` fixed per vocabulary; here `U` is the
plain string body: UTF-8 of code points >= U+0020 other than `"` and `\\`
(a token may end inside a character: any prefix of a string of `U` counts),
read by an 8-state automaton (`PLAIN_BODY`; its state 0 is between characters).

Two facts, one per side, make a cut exact:

* the trie knows, per node `n` and automaton state `u`, whether every path below
  `n` is a prefix of a string of `U` read from `u` (`clean_below`: bits per node)
  and how many characters the longest path below `n` touches (`chars_below`):
  `PlainBody`, built once per trie and kept in the disk cache;
* the walk knows, per pair (`u`, DFA state `s`), how many characters deep every
  path of `U` from `u` is proven to keep the lexeme live from `s`: the kernel
  searches the product of the two automata on demand, up to the longest token's
  length, and memoises the result per walk table (pda/kernels/_walk.c, `search`).
  Below a pair proven d characters deep, a node reached by a byte of `U` that ends
  a character is proven d - 1 deep, one reached by a byte inside a character d
  (its paths are the rest of the parent's), so the walk carries a proof down the
  trie instead of searching at every node: a counter such as `maxLength` is a
  chain of states, each proven as deep as its count allows. Characters, not
  bytes, because the counters count characters: a proof in bytes took no subtree
  of multi-byte characters deeper than the count left. Where a pair's proof is
  exact (one character more kills every path, from a state that ends no lexeme:
  a counter's last count), a subtree deeper than it is decided by its tokens'
  characters (`token_chars`), not walked.

When both hold at a node the walk reaches, its pair proven at least as deep as
its subtree goes, every token of its subtree is inside (no byte below it can kill
the lexeme, so none is a boundary nor dead): its tokens are one contiguous range,
taken whole, and the subtree is not walked. The walk carries `u` down each path
and restarts it at 0 after a byte `U` refuses: any automaton state is sound for a
node (a cut needs the node's bits and the pair's proof for that same `u`), and
restarting lets a subtree after a quote or an escape be cut again.

A string whose pattern refuses some byte of `U` (a word class, a hostname, an email,
`[-0-9A-Z_a-z]+`) proves nothing from `U`: every path of `U` meets a refused byte at
once. For those, two more slices, nested byte sets read by one-state automata:
lowercase letters, and letters (`LETTER_SLICES`). A node's `level` is the first of
them holding every byte below it (0: neither); the cut takes such a node's subtree
when the pair (that slice, DFA state) is proven live as deep as the subtree goes,
searched for and memoised as `U`'s pairs are (the slice's rows follow `U`'s in
`CUT_AUTOMATON` and in the proof buffer). Most of Qwen2's subtrees under a word's
first bytes are letters only: a walk inside a word-character string of up to 200 characters visited 280k of
the trie's 333k nodes, since every pair of `U` failed.
"""

from __future__ import annotations

import weakref

import numpy as np

from pda import cache
from pda.arrays import stable_order
from pda.index.trie import TokenTrie
from pda.kernels.walk import PROOF_ROWS

# The plain string body as a UTF-8 automaton (Unicode Table 3-7): state 0 is between
# characters; the others wait for continuation bytes. Every state of it is a prefix state.
_DEAD = -1


def _plain_body_automaton() -> np.ndarray:
    """`next[u, b]` of the plain-string-body byte automaton (`_DEAD` where `b` is refused), int8 as the kernel reads it."""
    nxt = np.full((8, 256), _DEAD, dtype=np.int8)
    ascii_ok = [b for b in range(0x20, 0x80) if b not in (0x22, 0x5C)]
    nxt[0, ascii_ok] = 0
    nxt[0, 0xC2:0xE0] = 1  # two-byte lead: one continuation left
    nxt[0, 0xE0] = 2  # E0 A0..BF (no overlongs)
    nxt[0, 0xE1:0xED] = 3
    nxt[0, 0xEE:0xF0] = 3
    nxt[0, 0xED] = 4  # ED 80..9F (no surrogates)
    nxt[0, 0xF0] = 5  # F0 90..BF
    nxt[0, 0xF1:0xF4] = 6
    nxt[0, 0xF4] = 7  # F4 80..8F (up to U+10FFFF)
    nxt[1, 0x80:0xC0] = 0
    nxt[2, 0xA0:0xC0] = 1
    nxt[3, 0x80:0xC0] = 1
    nxt[4, 0x80:0xA0] = 1
    nxt[5, 0x90:0xC0] = 3
    nxt[6, 0x80:0xC0] = 3
    nxt[7, 0x80:0x90] = 3
    return nxt


PLAIN_BODY = _plain_body_automaton()

# The letter slices, nested (each holds the one before): a node's level is the first that holds every byte below
# it. Lowercase comes first: most of a vocabulary's word pieces are, and many patterns (`[a-z0-9-]`) hold no
# uppercase letter.
LETTER_SLICES = (b"abcdefghijklmnopqrstuvwxyz", b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def _cut_automaton() -> np.ndarray:
    """The walk's automaton rows: the plain body's 8 states, then one state per letter slice (its bytes lead back
    to it, every other byte is refused); int8, as the kernel reads it."""
    rows = [PLAIN_BODY]
    for i, letters in enumerate(LETTER_SLICES):
        row = np.full((1, 256), _DEAD, dtype=np.int8)
        row[0, list(letters)] = len(PLAIN_BODY) + i
        rows.append(row)
    return np.vstack(rows)


CUT_AUTOMATON = _cut_automaton()
assert CUT_AUTOMATON.shape[0] == PROOF_ROWS, "the proof buffers have a row per automaton state"


def clean_below(trie: TokenTrie, automaton: np.ndarray = PLAIN_BODY) -> np.ndarray:
    """Per trie node, as bits of automaton states: from which states are all byte paths below it kept alive?

    Bottom-up by depth, with the automaton's states as bits of a byte (at most 8):
    a node passes the states `u` at its parent whose move on its byte lands in the
    node's own set (one table lookup per node); a parent keeps the states all its
    children pass. A node with no children keeps every state.
    """
    n_states = automaton.shape[0]
    assert n_states <= 8, "automaton states are bits of a byte"
    # passes[b, m]: the states u whose move on byte b is not refused and lands in a state of the set m.
    target = np.where(automaton >= 0, automaton, 0).astype(np.int64)  # [u, b]
    lands = (np.arange(256)[None, :, None] >> target.T[:, None, :]) & 1  # [b, m, u]
    lands &= (automaton.T >= 0)[:, None, :]
    passes = (lands << np.arange(n_states)).sum(axis=2).astype(np.uint8)
    below = np.full(trie.n_nodes, 255, dtype=np.uint8)
    order = stable_order(trie.depth)  # ids ascending within a depth: parents ascending too (preorder)
    bounds = np.searchsorted(trie.depth[order], np.arange(trie.max_depth + 2))
    for d in range(trie.max_depth, 0, -1):
        nodes = order[bounds[d] : bounds[d + 1]]
        edge = passes[trie.byte[nodes], below[nodes]]
        parents = trie.parent[nodes]
        starts = np.flatnonzero(np.diff(parents, prepend=-1))
        below[parents[starts]] = np.bitwise_and.reduceat(edge, starts)
    return below


def letter_levels(trie: TokenTrie) -> np.ndarray:
    """Per trie node, uint8: 1 + the first letter slice holding every byte below it (`LETTER_SLICES`), 0 if none.

    One `clean_below` pass over an automaton with a state per slice, each looping on the slice's bytes: a node's
    bit i is set when every path below it stays in slice i.
    """
    loops = np.full((len(LETTER_SLICES), 256), _DEAD, dtype=np.int8)
    for i, letters in enumerate(LETTER_SLICES):
        loops[i, list(letters)] = i
    clean = clean_below(trie, loops)
    first = np.zeros(256, dtype=np.uint8)  # per set of clean slices: 1 + its lowest (0: none)
    for bits in range(1, 256):
        first[bits] = (bits & -bits).bit_length()
    return first[clean]


def chars_below(trie: TokenTrie) -> np.ndarray:
    """Per trie node: the most characters a token in its subtree touches past the node (0 where none goes deeper).

    A path's characters are its bytes that are not UTF-8 continuation bytes (0x80-0xBF), and one more where it
    starts with one (it goes on with a character the node's own bytes left open): on a path of the cut's automaton
    that is the measure its proofs count (pda/kernels/_walk.c, `search`), and on a path of letters its bytes. Per
    node, 1 + the most non-continuation bytes on a path below any child (each child's own byte touches a character,
    its own or the open one).
    """
    opens = np.zeros(trie.n_nodes, dtype=np.int16)  # the most non-continuation bytes on a path below the node
    rest = np.zeros(trie.n_nodes, dtype=np.int16)
    starts_char = ((trie.byte < 0x80) | (trie.byte >= 0xC0)).astype(np.int16)
    order = stable_order(trie.depth)  # ids ascending within a depth: parents ascending too (preorder)
    bounds = np.searchsorted(trie.depth[order], np.arange(trie.max_depth + 2))
    for d in range(trie.max_depth, 0, -1):
        nodes = order[bounds[d] : bounds[d + 1]]
        parents = trie.parent[nodes]
        starts = np.flatnonzero(np.diff(parents, prepend=-1))
        deepest = np.maximum.reduceat(opens[nodes], starts)
        rest[parents[starts]] = deepest + 1
        opens[parents[starts]] = np.maximum.reduceat(opens[nodes] + starts_char[nodes], starts)
    return rest


def token_chars(trie: TokenTrie) -> np.ndarray:
    """Per token position (`trie.token_ids`' order), the characters of its bytes: those that are not UTF-8
    continuation bytes (0x80-0xBF), at most 255 (uint8: the walk kernel reads no count that may be clipped). What
    the kernel filters a subtree's tokens by where a pair's proof is exact (pda/kernels/_walk.c, `exact_tokens`)."""
    chars = np.zeros(trie.n_nodes, dtype=np.int32)
    starts = ((trie.byte < 0x80) | (trie.byte >= 0xC0)).astype(np.int32)
    order = stable_order(trie.depth)
    bounds = np.searchsorted(trie.depth[order], np.arange(trie.max_depth + 2))
    for d in range(1, trie.max_depth + 1):  # parents first: a node's count is its parent's and its byte's
        nodes = order[bounds[d] : bounds[d + 1]]
        chars[nodes] = chars[trie.parent[nodes]] + starts[nodes]
    return np.minimum(chars[trie.token_end], 255).astype(np.uint8)


class PlainBody:
    """The slices of one trie: `below[n]`, the automaton states from which every path below node n is plain body
    (`clean_below`), `rest[n]`, the most characters a token below n touches past it (`chars_below`), `level[n]`,
    the first letter slice holding every byte below n (`letter_levels`), and `chars[p]`, the characters of the
    token at position p (`token_chars`)."""

    def __init__(self, trie: TokenTrie) -> None:
        self.below = clean_below(trie)
        self.rest = chars_below(trie)
        self.level = letter_levels(trie)
        self.chars = token_chars(trie)

    def to_arrays(self) -> tuple[dict, dict[str, np.ndarray]]:
        """(meta, arrays) for the disk cache."""
        return {}, {"below": self.below, "rest": self.rest, "level": self.level, "chars": self.chars}

    @classmethod
    def from_arrays(cls, meta: dict, arrays: dict[str, np.ndarray], trie: TokenTrie) -> "PlainBody":
        """The slice `to_arrays` wrote for `trie`, checked against its sizes; raises `cache.Invalid`."""
        self = cls.__new__(cls)
        n = trie.n_nodes
        self.below = cache.take(arrays, "below", np.uint8, (n,))
        self.rest = cache.take(arrays, "rest", np.int16, (n,), (0, trie.max_depth + 1))
        self.level = cache.take(arrays, "level", np.uint8, (n,), (0, len(LETTER_SLICES) + 1))
        self.chars = cache.take(arrays, "chars", np.uint8, (len(trie.token_ids),))
        return self


_plain: "weakref.WeakKeyDictionary[TokenTrie, PlainBody]" = weakref.WeakKeyDictionary()


def plain_body(trie: TokenTrie, vocab_key: str | None = None) -> PlainBody:
    """The trie's `PlainBody`: once per trie (~50 ms for Qwen2), from the disk cache given the vocabulary's key."""
    found = _plain.get(trie)
    if found is None:
        key = {"vocab": vocab_key, "nodes": trie.n_nodes, "rest": "characters"}
        if vocab_key:
            found = cache.load("slices", key, lambda meta, arrays: PlainBody.from_arrays(meta, arrays, trie))
        if found is None:
            found = PlainBody(trie)
            if vocab_key:
                cache.store("slices", key, *found.to_arrays())
        _plain[trie] = found
    return found
