"""Plain string body in the vocabulary trie: subtrees a lexer state provably keeps whole, cut instead of walked.

A JSON string body's DFA loops on almost every byte, so from a state inside a
string nearly the whole vocabulary is inside; walking its ~330k trie nodes
(Qwen2) cost ~25 ms for every such state of every new schema. A *slice*
(llguidance's name) is a byte language `U` fixed per vocabulary; here `U` is the
plain string body: UTF-8 of code points >= U+0020 other than `"` and `\\`
(a token may end inside a character: any prefix of a string of `U` counts),
read by an 8-state automaton (`PLAIN_BODY`; its state 0 is between characters).

Two facts, one per side, make a cut exact:

* the trie knows, per node `n` and automaton state `u`, whether every path below
  `n` is a prefix of a string of `U` read from `u` (`clean_below`: bits per node,
  once per vocabulary, with the disk cache), how many bytes the longest path below
  `n` has (`bytes_below`), and per token byte, how far the token stays plain
  (`next_dirty`);
* the walk knows, per pair (`u`, DFA state `s`), how many bytes deep every such
  path is proven to keep the lexeme live from `s` (`SliceStates.proven_depth`, up
  to the longest token's length: a bounded search of the product of the two
  automata, which also settles the pairs it meets: a counter such as `maxLength`
  is a chain of states, each proven as deep as its count allows). Below a pair
  proven d bytes deep, a node reached by a slice byte is proven d - 1 deep (its
  paths are the rest of the parent's), so the walk carries a proof down the trie
  instead of searching at every node.

When both hold at a node the walk reaches, its pair proven at least as deep as
its subtree goes, every token of its subtree is inside (no byte below it can kill
the lexeme, so none is a boundary nor dead): its tokens are one contiguous range,
taken whole, and the subtree is not walked.
Where a DFA state also returns to itself after every plain character
(`SliceStates.loops`: a string body), a token's walk may skip to its next
character that is not plain: the state there is known.
"""

from __future__ import annotations

import weakref

import numpy as np

from pda import cache
from pda.index.trie import TokenPaths, TokenTrie, stable_order

# The plain string body as a UTF-8 automaton (Unicode Table 3-7): state 0 is between
# characters; the others wait for continuation bytes. Every state of it is a prefix state.
_DEAD = -1


def _plain_body_automaton() -> np.ndarray:
    """`next[u, b]` of the plain-string-body byte automaton (`_DEAD` where `b` is refused)."""
    nxt = np.full((8, 256), _DEAD, dtype=np.int64)
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


def clean_below(trie: TokenTrie, automaton: np.ndarray = PLAIN_BODY) -> tuple[np.ndarray, np.ndarray]:
    """Per trie node, as bits of automaton states: from which states are all byte paths below it kept
    alive (`below`), and from which states at its parent are its own byte and those paths (`edge`)?

    Bottom-up by depth, with the automaton's states as bits of a byte (at most 8):
    a node's edge passes the states `u` whose move on its byte lands in `below[n]`
    (one table lookup per node); a parent keeps the states all its children pass.
    """
    n_states = automaton.shape[0]
    assert n_states <= 8, "automaton states are bits of a byte"
    # passes[b, m]: the states u whose move on byte b is not refused and lands in a state of the set m.
    target = np.where(automaton >= 0, automaton, 0)  # [u, b]
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
    return below, passes[trie.byte, below]


def bytes_below(trie: TokenTrie) -> np.ndarray:
    """Per trie node: the most bytes a token in its subtree has past the node (0 where none goes deeper)."""
    rest = np.zeros(trie.n_nodes, dtype=np.int16)
    order = stable_order(trie.depth)  # ids ascending within a depth: parents ascending too (preorder)
    bounds = np.searchsorted(trie.depth[order], np.arange(trie.max_depth + 2))
    for d in range(trie.max_depth, 0, -1):
        nodes = order[bounds[d] : bounds[d + 1]]
        parents = trie.parent[nodes]
        starts = np.flatnonzero(np.diff(parents, prepend=-1))
        rest[parents[starts]] = np.maximum.reduceat(rest[nodes] + 1, starts)
    return rest


def _second_byte_ranges() -> tuple[np.ndarray, np.ndarray]:
    """Per lead byte: the range its first continuation byte must fall in (no overlongs, surrogates, > U+10FFFF)."""
    lo, hi = np.full(256, 0x80, dtype=np.uint8), np.full(256, 0xBF, dtype=np.uint8)
    for lead, first, last in ((0xE0, 0xA0, 0xBF), (0xED, 0x80, 0x9F), (0xF0, 0x90, 0xBF), (0xF4, 0x80, 0x8F)):
        lo[lead], hi[lead] = first, last
    return lo, hi


def next_dirty(paths: TokenPaths) -> tuple[np.ndarray, np.ndarray]:
    """Per byte of the concatenated tokens: does a character start there, and where is the first character
    at or after it that is not plain body (the token's end if none)?

    So from a character start `x`, the token's bytes up to `next_dirty[x]` are whole
    plain characters, and the rest of the token is a slice path iff that is its end.
    The same language as `PLAIN_BODY`, read per character (the tests check both
    against Python's UTF-8 decoder).
    """
    data = paths.data
    total = len(data)
    index = np.arange(total, dtype=np.int32)
    end = np.repeat((paths.start + paths.length).astype(np.int32), paths.length)
    starts = (data & 0xC0) != 0x80
    # A character's continuation run: up to the next character start or the token's end.
    stop = np.where(starts, index, np.int32(total))
    stop[paths.start] = paths.start
    after = np.minimum.accumulate(np.append(stop[1:], np.int32(total))[::-1])[::-1]
    np.minimum(after, end, out=after)
    run = after - index - 1
    size = np.zeros(256, dtype=np.int32)  # a plain character's length by its first byte (0: not plain)
    size[[b for b in range(0x20, 0x80) if b not in (0x22, 0x5C)]] = 1
    size[0xC2:0xE0], size[0xE0:0xF0], size[0xF0:0xF5] = 2, 3, 4
    need = size[data] - 1  # continuation bytes a plain character needs (-1: not plain, never good)
    lo, hi = _second_byte_ranges()
    second = np.append(data[1:], np.uint8(0x80))
    good = (run == need) | ((after == end) & (run < need))
    good &= (run == 0) | ((second >= lo[data]) & (second <= hi[data]))
    dirty = np.where(starts & ~good, index, np.int32(total))
    return starts, np.minimum(np.minimum.accumulate(dirty[::-1])[::-1], end)


class PlainBody:
    """The plain-string-body slice of one trie: per node (`clean_below`) and per token byte (`next_dirty`).

    `rest[n]` is the most bytes a token below node n has past it. `step[u, b]` is the
    automaton's move, except that a refused byte restarts it at state 0: any state a
    walk assigns to a node is sound (a cut needs both the node's bits and the DFA
    state's proof from that same automaton state); restarting lets a subtree after a
    quote or an escape be cut again. `paths` are the trie's token bytes.
    """

    def __init__(self, trie: TokenTrie) -> None:
        self.below, self.edge = clean_below(trie)
        self.rest = bytes_below(trie)
        self.step = np.where(PLAIN_BODY >= 0, PLAIN_BODY, 0).astype(np.int8)
        self.continues = PLAIN_BODY >= 0  # [u, b]: does byte b continue a slice path from u (no restart)?
        self.paths = TokenPaths(trie)
        self.char_start, self.next_dirty = next_dirty(self.paths)

    def to_arrays(self) -> tuple[dict, dict[str, np.ndarray]]:
        """(meta, arrays) for the disk cache; `step` and `continues` are rebuilt from `PLAIN_BODY`."""
        arrays = {f"paths.{name}": a for name, a in self.paths.to_arrays().items()}
        arrays.update(below=self.below, edge=self.edge, rest=self.rest, char_start=self.char_start,
                      next_dirty=self.next_dirty)
        return {}, arrays

    @classmethod
    def from_arrays(cls, meta: dict, arrays: dict[str, np.ndarray], trie: TokenTrie) -> "PlainBody":
        """The slice `to_arrays` wrote for `trie`, checked against its sizes; raises `cache.Invalid`."""
        self = cls.__new__(cls)
        n = trie.n_nodes
        self.below = cache.take(arrays, "below", np.uint8, (n,))
        self.edge = cache.take(arrays, "edge", np.uint8, (n,))
        self.rest = cache.take(arrays, "rest", np.int16, (n,), (0, trie.max_depth + 1))
        self.step = np.where(PLAIN_BODY >= 0, PLAIN_BODY, 0).astype(np.int8)
        self.continues = PLAIN_BODY >= 0
        prefix = "paths."
        self.paths = TokenPaths.from_arrays(
            {name[len(prefix):]: a for name, a in arrays.items() if name.startswith(prefix)}, trie
        )
        total = len(self.paths.data)
        self.char_start = cache.take(arrays, "char_start", bool, (total,))
        self.next_dirty = cache.take(arrays, "next_dirty", np.int32, (total,), (0, total + 1))
        return self


_plain: "weakref.WeakKeyDictionary[TokenTrie, PlainBody]" = weakref.WeakKeyDictionary()


def plain_body(trie: TokenTrie, vocab_key: str | None = None) -> PlainBody:
    """The trie's `PlainBody`: once per trie (~50 ms for Qwen2), from the disk cache given the vocabulary's key."""
    found = _plain.get(trie)
    if found is None:
        key = {"vocab": vocab_key, "nodes": trie.n_nodes}
        if vocab_key:
            found = cache.load("slices", key, lambda meta, arrays: PlainBody.from_arrays(meta, arrays, trie))
        if found is None:
            found = PlainBody(trie)
            if vocab_key:
                cache.store("slices", key, *found.to_arrays())
        _plain[trie] = found
    return found


# One search stops after MAX_PAIRS pairs (a huge DFA): what it proved holds, the rest stays
# unknown. All searches on one DFA together see at most SEARCH_BUDGET pairs (~5 us each:
# ~0.15 s); then its unknown pairs are not proven and the walks just proceed. Searches on
# JSON strings and keys see tens to hundreds of pairs; a counter (maxLength) about eight
# per level, 2 * depth levels per search, each search proving `depth` of its states.
MAX_PAIRS = 1 << 13
SEARCH_BUDGET = 1 << 15


class SliceStates:
    """For one walk DFA: per (automaton state, DFA state) pair, how many bytes deep every slice path from it
    is proven to keep the lexeme live (`proven`: -1 unknown, else 0 .. `depth`; `depth` = any token).

    `trans` must send every state that is not live to a state that is not live, as
    the walk tables do. A pair proven to a depth at least the bytes a trie node has
    below it lets the walk take that node's clean subtree whole (a short counter,
    `maxLength: 20`, cuts its short tokens); `safe` is the full proof.
    """

    __slots__ = ("trans", "live", "depth", "proven", "loop", "moves", "budget")

    def __init__(self, trans: np.ndarray, byte_class: np.ndarray, live: np.ndarray, depth: int,
                 automaton: np.ndarray = PLAIN_BODY) -> None:
        self.trans = trans
        self.live = live
        self.depth = depth
        self.proven = np.full((automaton.shape[0], trans.shape[0]), -1, dtype=np.int16)
        # loop[s]: from (0, s) every whole character of the slice leads back to s (-1 unknown).
        self.loop = np.full(trans.shape[0], -1, dtype=np.int8)
        self.budget = SEARCH_BUDGET
        # Per automaton state: its distinct (next automaton state, DFA byte class) moves.
        n_classes = int(byte_class.max()) + 1
        self.moves = []
        for u in range(automaton.shape[0]):
            ok = np.flatnonzero(automaton[u] != _DEAD)
            codes = np.flatnonzero(np.bincount(automaton[u, ok] * n_classes + byte_class[ok]))
            self.moves.append((codes // n_classes, codes % n_classes))

    def safe(self, autos: np.ndarray, states: np.ndarray) -> np.ndarray:
        """A bool per pair (autos[i], states[i]): is every slice path from it (any token's length) proven live?"""
        return self.proven_depth(autos, states) >= self.depth

    def proven_depth(self, autos: np.ndarray, states: np.ndarray) -> np.ndarray:
        """Per pair (autos[i], states[i]): how many bytes deep its slice paths are proven live (searching if unknown)."""
        proven = self.proven
        known = proven[autos, states]
        unknown = known < 0
        if unknown.any():
            n = self.trans.shape[0]
            pairs = np.flatnonzero(np.bincount(autos[unknown].astype(np.int64) * n + states[unknown]))
            for u in np.flatnonzero(np.bincount(pairs // n)).tolist():
                todo = pairs[pairs // n == u] % n
                # One byte deep for all of them at once: a pair that a byte kills is proven to depth 0.
                quick = self.live[self.trans[todo][:, self.moves[u][1]]].all(axis=1)
                proven[u, todo[~quick]] = 0
                for s in todo[quick].tolist():
                    self._search(u, s)
            known = proven[autos, states]
        return known

    def loops(self, states: np.ndarray) -> np.ndarray:
        """A bool per state: do slice paths from it stay live and return to it after every whole character?"""
        known = self.loop[states]
        unknown = known < 0
        if unknown.any():
            todo = np.flatnonzero(np.bincount(states[unknown]))
            # One character deep first: a state that some one-byte character leaves (a counter's
            # step) does not loop, with no search.
            targets, classes = self.moves[0]
            back = (self.trans[todo][:, classes[targets == 0]] == todo[:, None]).all(axis=1)
            self.loop[todo[~back]] = 0
            for s in todo[back].tolist():
                self._search(0, s)
            known = self.loop[states]
        return known == 1

    def _search(self, u: int, s: int) -> None:
        """Breadth-first over (automaton state, DFA state) pairs from (u, s), up to `2 * depth` bytes; sets `proven`.

        A pair first met at level k has every slice path of up to m bytes among the
        search's paths of k + m bytes, its pairs met no later than that: so when the search
        checked `levels` levels all live, the pair is proven to depth `levels - k`. Near a
        kill that is final (a short counter: each pair's distance to its end); cut by the
        horizon or `MAX_PAIRS` (a long counter), only full proofs are kept and the rest stays
        unknown, so that a walk rooted there searches on from it. A search that runs out of
        new pairs checked everything reachable, all live: every pair it met is safe. From
        automaton state 0 it also settles `loop[s]`: whether state 0 only ever met DFA state s.
        """
        if u == 0:
            self.loop[s] = 0
        if self.budget <= 0:
            self.proven[u, s] = 0
            return
        n = self.trans.shape[0]
        root = u * n + s
        seen = {root}
        levels = [np.array([root], dtype=np.int64)]  # the codes first met at each level
        frontier_u = np.array([u], dtype=np.int64)
        frontier_s = np.array([s], dtype=np.int64)
        for checked in range(2 * self.depth):
            next_codes = []
            for v in np.flatnonzero(np.bincount(frontier_u)).tolist():
                targets, classes = self.moves[v]
                reached = self.trans[frontier_s[frontier_u == v]][:, classes]
                if not self.live[reached].all():
                    self._settle(levels, checked, final=True)
                    return
                next_codes.append((targets * n + reached).ravel())
            fresh = set(np.concatenate(next_codes).tolist()) - seen
            if not fresh:
                codes = np.fromiter(seen, dtype=np.int64, count=len(seen))
                self.proven[codes // n, codes % n] = self.depth
                if u == 0:
                    self.loop[s] = all(c == s for c in seen if c < n)
                return
            seen |= fresh
            self.budget -= len(fresh)
            if len(seen) > MAX_PAIRS:
                self._settle(levels, checked + 1, final=False)
                return
            codes = np.fromiter(fresh, dtype=np.int64, count=len(fresh))
            levels.append(codes)
            frontier_u, frontier_s = codes // n, codes % n
        self._settle(levels, 2 * self.depth, final=False)

    def _settle(self, levels: list[np.ndarray], checked: int, *, final: bool) -> None:
        """After a search that checked `checked` levels all live: a pair first met at level k is proven to depth
        `checked - k` (at most `depth`); kept where `final`, where that is the full proof, and for the root
        (which is not searched again)."""
        n = self.trans.shape[0]
        for k, codes in enumerate(levels):
            depth = min(checked - k, self.depth)
            if final or depth == self.depth or k == 0:
                pairs = (codes // n, codes % n)
                self.proven[pairs] = np.maximum(self.proven[pairs], depth)
