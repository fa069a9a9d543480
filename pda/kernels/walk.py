"""The token index's trie walk, one compiled call per walk (`pda.kernels._walk`, pda/kernels/_walk.c).

A walk classifies every token below some trie nodes (`roots`) from a DFA state:

* **inside** — every byte keeps the DFA live: its id is set in the packed int32
  mask (bit i % 32 of word i // 32 is token i);
* **boundary** — at some node the next state is not live but `stops` there and the
  state before the byte ends a lexeme (`ends_as[state] >= 0`): the node is reported
  under that terminal-set index (the rest of the token starts a new lexeme);
* **dead** — otherwise: nothing is reported.

Inputs (all C-contiguous numpy arrays; the kernel checks dtypes and shapes up front and
every index it reads as it goes, so corrupt input raises ValueError, never crashes):

* `TrieArrays` — the vocabulary trie in preorder (`pda.index.trie.TokenTrie`) as one
  record per node, `nodes` int32 [n + 1, 4]: (end, first token, byte | below << 8 |
  rest << 16, depth | level << 24). v's subtree is the node range [v, end); the tokens
  ending at v are at sorted positions [first token of v, first token of v + 1) of
  `token_ids` (int64), and `token_chars` (uint8 per token position, its non-continuation
  bytes, or None); `below`, `rest` and the letter `level` are the cut's (0 without
  one), `depth` the node's (the root's 0). The last record closes the token positions. A
  visit reads one record, 16 bytes (never across two cache lines), where the seven
  arrays it replaced cost a cache miss each: small walks over cold memory (most walks
  after a boundary) took 20-33 us, 4-5 us warm;
* `TableArrays` — the walk tables of one DFA (`pda.index.token_index._WalkTables`):
  `trans` int32 [n_states, n_classes], `byte_class` int32 [256], `live`, `stops` bool
  [n_states], `ends_as` int32 [n_states] (-1 or an index below `n_sets`); or
  `PackedTableArrays`, the same DFA's flags left to the kernel (a contextual candidate
  set): `live_bits` uint64 [n_states, words] (the terminals live per state),
  `candidates` uint64 [words], `accept_row` int32 [n_states] (-1 or a row) and
  `row_bits` uint64 [rows, words] (each row's accepted terminals): live =
  any(live_bits & candidates), stops = not live, ends_as = accept_row where that row
  meets the candidates, else -1 — set indices are accept rows (`n_sets` the number of
  rows), which the caller maps to terminal sets; each worked out on a state's first
  visit and kept with the opened tables for every later walk; and `lazy`, None or the filler of a shared product's lazy singles
  (`pda.kernels.product.LazyRows.capsule`): an `UNFILLED` (-1) entry of `trans` is filled
  through it (`_product._LAZY_API`, no GIL) when the walk reads it, and a filler's failure
  raises its error (`LimitExceeded`); its rows' flags are written before their ids, so a
  state met is read as any other;
* the trie and the tables may each be passed `opened` (`opened(arrays)`): their buffers acquired
  and arrays checked once, not on every call (a walk after a boundary spent ~1 us of its ~4 in them);
  an opened trie also keeps every token's bit (a walk holding most tokens builds its mask as those
  less the ones outside it) and a copy of its first level's records (a walk from the trie's root
  reads them there, not from 256 places across the trie); opened tables keep what walks work out
  about them: each state's flags (one byte a state, on its first visit) and a search's moves per
  automaton state (on the first search; the opened tables then take no other cut automaton);
* `roots` (nodes other than the trie's root; taken as int64), `root_state`, `mask_words`;
* optionally `SliceArrays`, the cut (pda/index/slices.py; its per-node `below`, `rest` and
  `level` are in the trie's records): `plain_body` int8 [PROOF_ROWS, 256], the cut's automaton
  (`slices.CUT_AUTOMATON`: the plain body's 8 states, moving among themselves, then one state per
  letter slice), the trie's `depth`, the subtree size under which no proof is searched for
  (`SEARCH_MIN_NODES`), and a per-table proof buffer `proof` int16 [n_states, PROOF_ROWS]
  (`new_proof`: zeros, every pair unknown; a cell holds 1 + what is proven, see
  `proven_depths`; a DFA state's pairs side by side, so that a walk reading a state's
  plain-body and letter pairs, and a search meeting its pairs, touch one cache line), which
  the caller keeps across walks: what it holds is only true of the tables, automaton and
  depth that filled it.

Outputs: the mask (None when no token is inside) and the boundaries as (set index,
int64 nodes) pairs, ascending by set index, each set's nodes ascending and unique; node
arrays (and `walk_states`' and `pack`'s results) are read-only views of the kernel's `bytes`,
which the garbage collector does not track (a `bytearray` costs two tracked objects). The
int64 dtype is part of the contract: a boundary group's key is its nodes' bytes, which
must equal between walks, the shared classifications and the disk cache.

Invariants: the walk visits nodes depth first in preorder (each root's subtree as one
scan of its records, a node's parent being the last node met one level up), so with
roots ascending and subtrees disjoint (a trie's first level, a group's nodes) outputs
come out sorted; otherwise the kernel sorts them. The cut changes nothing in the result,
only the nodes visited: it takes a node's whole subtree as inside when the plain-body
automaton state `u` carried down the path (a refused byte restarts it at 0) has every
path below the node in the plain body (`below[node] >> u & 1`) and the pair (u, DFA
state) is proven live at least `rest[node]` characters deep (proofs and `rest` count the
characters a path touches, as a counted string's `maxLength` does: `slices.chars_below`), or
when the node's letter slice (`level`, the first of `slices.LETTER_SLICES` holding every byte
below it) has its pair (that slice's state, DFA state) proven so; a node with nothing below
it is taken as it is. Where the plain-body pair is proven *exactly* d deep (every path one
character deeper kills the lexeme, from a state ending none: `exact_proofs`) but the subtree
goes deeper, a walk from the trie's first level takes its tokens by their characters
(`TrieArrays.token_chars`): those touching at most d past the node are inside, the others
dead (a `maxLength: 20` string with a few characters left visited up to 159k of Qwen2's
333k nodes; now at most ~6k). Proofs are searched breadth-first over (u, state) pairs on
demand, at most 8,192 pairs a search and 65,536 a walk, and memoised in `proof` (a pair's
own search is final; other threads may write it concurrently, and every value any of them
writes is sound). The walk runs without the GIL.

With `sparse_max`, a walk that finds at most that many tokens inside returns them as
`tokens`, their int32 ids ascending, instead of a mask: a walk after a boundary finds a
few (a replay of 31 JSON Schemas on Qwen2: 6,014 such walks, p50 3 tokens, p99 412),
and a dense mask is a 19 KB allocation to write, keep and OR (`pda.kernels.compose`
scatters the ids). Above it the kernel returns the mask, built from the same ranges.

`walk_states` is the same walk without the cut under the basic lexer mode, keeping
per-node states; `pack` packs the tokens ending at given nodes (`pack_sparse`: as a sparse
walk gives them, few as ids). `chain_walk` is a sparse walk from the trie's first level where
a terminal's own DFA goes on one byte at a time to the lexeme's end (a key literal's rest):
it follows that path down the trie's children (CSR, bisected by byte) instead of reading
every child's record, and declines (None) from any other state.

`IndexWalks(trie, mask_words, sparse_max, suffixes, tables_of, best, classify, types)` makes
the token index's walks as its own objects, resolved in C with no Python frame in the
common case (a JSON Schema's first document computes most of its masks: traefik-v2's
groups' misses took 106 ms in Python over 3,064 calls, the walks' kernel under a third
of it). Walk tables are handed to it as a tuple (opened walk tables, n_sets, root state,
rows, hand, handed): with `rows` None, set k is handed as the terminal set `hand` (an int)
or `hand[k]` (a list); else `rows` is a list of ints and accept row k is handed as
`best(rows[k] & hand)`, memoised in the dict `handed` (the index's, one per candidate
set). Sets handed as the same terminals have their nodes merged (ascending, unique), one
group per terminal set, in order of their first set.

* Called as `after_boundary(group, live_set)`, it is the index's suffix classification of
  a boundary group: `group.after[live_set]` when there, else `suffixes[(group.key,
  live_set)]`, else it makes it and records it in both (`suffixes` is the index's dict;
  the bytes of what it made, as `Classification.nbytes` counts them, are its `nbytes`).
  It makes it by `classify(group, live_set)` when `classify` is not None (the basic lexer
  mode), else by a sparse walk without the cut from `group.nodes` (int64, or int32 taken
  as such) on the live set's tables: `tables_of(live_set)`, asked on the set's first walk
  and kept in the object, returns None (no candidate can start a lexeme: no token inside,
  no group) or the tables' tuple, its root state the one a lexeme starts from.
* `classify(tables, roots, slices, sparse_max=None)` is one walk from `roots` on the tables'
  tuple, with the plain-body cut when `slices` is (plain_body, proof, depth, search_min_nodes)
  as `walk` takes them, as a classification whose inside tokens are a mask (a writable
  `numpy.zeros` array, None when none), or with `sparse_max` a count, at most that many as
  `tokens` (int32 ids, more as a read-only mask); it records nothing.

Its `counts` are (walks, nodes visited, subtrees cut, pairs searched), summed over the
walks it made (as `Walked` reports them per walk).

`types` is (Classification, BoundaryGroup): the kernel makes them as `object.__new__` does
and sets every slot (`inside`, `tokens`, `groups`; `terminals`, `nodes` a read-only int64
array, `key` its bytes, `after` an empty dict), as the constructors would; a sparse walk's
inside tokens are `tokens` (int32 ids) when at most `sparse_max`, else the `inside` mask.
Bad input raises naming it: tables of another shape are a TypeError, a set outside `rows`
or `hand`, a root outside the trie or a corrupt table a ValueError. It holds the GIL but
for the walk itself (whose inputs are the opened arrays, which do not change, and the
walk's own buffers); the dicts are read and written under it, so threads that miss on
the same group at once both walk and the last one's equal result is kept, as in Python.

`content_tag(content, order, numbers)` is the token index's disk tag of a root walk's content
(`pda.index.token_index.TokenIndex._content_tag`), asked on every root-walk miss: per live
terminal (digest, priority, state), terminal id `order[i]`, h = (h ^ number ^ state *
0x9E3779B97F4A7C15) * 0x100000001B3 mod 2**64 from h = 0, a terminal's number being its digest's
first 16 hex digits ^ priority * 0x100000001B3 mod 2**64 (memoised in the dict `numbers` by
terminal id); as 16 hex digits. In C: the Python loop's big-int operations cost ~2.3 us a miss,
now ~0.3. A content entry that is not (hex digest, int, int), or an order of another length, is a
ValueError.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from pda.kernels import _walk

if TYPE_CHECKING:
    from pda.index.trie import TokenTrie

# The cut's automaton states (`pda.index.slices.CUT_AUTOMATON`: the plain body's 8, then the letter slices' 2): the
# first dimension of a proof buffer.
PROOF_ROWS = 10
# The dtypes arrays are made and read in, passed to numpy as objects and by position: keyword
# parsing and a dtype looked up from a type took `np.frombuffer` 0.56 us a call, positional 0.29 (numpy 2.4).
_INT64 = np.dtype(np.int64)
_INT32 = np.dtype(np.int32)


class TrieArrays(NamedTuple):
    """The trie as the kernel reads it: one int32 record per node (and a last one), the token ids, and per token
    position its characters (its bytes that are not UTF-8 continuation bytes, at most 255; None: no exact cut)."""

    nodes: np.ndarray
    token_ids: np.ndarray
    token_chars: np.ndarray | None = None

    @classmethod
    def of(cls, trie: TokenTrie, cut: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
           token_chars: np.ndarray | None = None) -> "TrieArrays":
        """The records of `trie`, with the cut's per-node (`below` uint8, `rest` int16, letter `level` uint8) if
        given (`pda.index.slices.PlainBody`), and its tokens' characters (`pda.index.slices.token_chars`)."""
        n = trie.n_nodes
        if trie.max_depth >= MAX_TRIE_DEPTH:
            raise ValueError(f"the vocabulary has a token of {trie.max_depth} bytes, over {MAX_TRIE_DEPTH - 1}")
        nodes = np.zeros((n + 1, 4), dtype=np.int32)
        nodes[:n, 0] = trie.end
        nodes[n, 0] = n
        nodes[:, 1] = trie.token_ptr
        meta = np.asarray(trie.byte, dtype=np.int32)
        deep = np.asarray(trie.depth, dtype=np.int32)
        if cut is not None:
            below, rest, level = cut
            meta = meta | np.asarray(below, dtype=np.int32) << 8 | np.asarray(rest, dtype=np.int32) << 16
            deep = deep | np.asarray(level, dtype=np.int32) << 24
        nodes[:n, 2] = meta
        nodes[:n, 3] = deep
        return cls(nodes, np.ascontiguousarray(trie.token_ids, dtype=np.int64), token_chars)


class TableArrays(NamedTuple):
    """One DFA's walk tables, in the dtypes the kernel takes."""

    trans: np.ndarray
    byte_class: np.ndarray
    live: np.ndarray
    stops: np.ndarray
    ends_as: np.ndarray


class PackedTableArrays(NamedTuple):
    """A contextual candidate set's walk tables as packed terminal bits (the flags worked out per state met)."""

    trans: np.ndarray
    byte_class: np.ndarray
    live_bits: np.ndarray
    candidates: np.ndarray
    accept_row: np.ndarray
    row_bits: np.ndarray
    lazy: object = None  # the capsule of a shared product's lazy singles' filler (`pda.kernels.product.LazyRows`)


# Proof buffers of at least this many bytes are anonymous memory maps (`new_proof`). `numpy.zeros` of a large
# buffer came from the heap once glibc's mmap threshold had grown with the frees of larger arrays, and calloc then
# wrote all of it: a replay of 44 JSON Schemas (json_schema_bench.py, pda) peaked at 458 MiB with them, 408 mapped.
MAPPED_PROOF_BYTES = 1 << 16

# A node's depth takes the low 24 bits of its record's last word (its letter level the high 8).
MAX_TRIE_DEPTH = 1 << 24
# Proofs go at most this many characters deep (a cell's int16 holds the depth beside its exact flag): the cut's
# depth is the trie's, capped at it (a deeper subtree is then walked, never cut unproven).
MAX_PROOF_DEPTH = 16000

# A pair is searched for only under a subtree of at least this many nodes (what is already
# proven is used at any size): a search meets ~100-1,000 (u, state) pairs, more than walking a
# small subtree costs. Measured on a JSON Schema replay (32 schemas, Qwen2): walks that visit
# under 100 nodes (half of them, mostly after a boundary) took 40 us without a search and
# 120-330 us with one; at 64 they search no more, and the kernel's total fell 11%.
SEARCH_MIN_NODES = 64


class SliceArrays(NamedTuple):
    """The plain-body cut's automaton and bounds (`pda.index.slices`; its per-node bits are in `TrieArrays`)."""

    plain_body: np.ndarray
    depth: int
    search_min_nodes: int = SEARCH_MIN_NODES


class Walked(NamedTuple):
    """A walk's result, and how much it visited (nodes, subtrees cut, pairs searched for proofs).

    The inside tokens are `inside`, a packed mask, or (a sparse walk's few) `tokens`, int32 ids
    ascending; at most one of them is not None.
    """

    inside: np.ndarray | None
    boundaries: list[tuple[int, np.ndarray]]
    visited: int
    cut: int
    searched: int
    tokens: np.ndarray | None = None


Opened = _walk.Opened
IndexWalks = _walk.IndexWalks


def opened(arrays: TrieArrays | TableArrays | PackedTableArrays) -> Opened:
    """A trie's or walk tables' arrays acquired and checked once, for `walk`, `walk_states` and `pack` to take
    where the arrays go: each call otherwise asks numpy for every array's buffer (~70 ns each) and checks the
    tables' byte classes again; a trie's every-token mask and first level are made then (Qwen2: 0.25 ms, 27 KB).
    It holds the arrays, which must not change while it is in use."""
    return _walk.opened(arrays)


# The compiled function itself (asked on every root-walk miss: no wrapper frame); see the module docstring.
content_tag: Callable[[tuple, list[int], dict[int, int]], str] = _walk.content_tag


def new_proof(n_states: int) -> np.ndarray:
    """An empty proof buffer for a DFA of `n_states` states (every pair unknown).

    Zeros, and from `MAPPED_PROOF_BYTES` on an anonymous memory map, whose pages are mapped only
    where walks write: a candidate set's view of a JSON Schema's shared product has ~80k states,
    a 1.6 MB buffer of which walks meet a few hundred pairs.
    """
    size = n_states * PROOF_ROWS * 2
    if size < MAPPED_PROOF_BYTES:
        return np.zeros((n_states, PROOF_ROWS), dtype=np.int16)
    return np.frombuffer(mmap.mmap(-1, size), dtype=np.int16).reshape(n_states, PROOF_ROWS)


# A proof cell's flag of an exact final value (pda/kernels/_walk.c, `proof_exact`).
_EXACT = 0x4000


def proven_depths(proof: np.ndarray) -> np.ndarray:
    """What a proof buffer says per (u, state) (indexed so, [PROOF_ROWS, n_states]): -1 unknown, d >= 0 proven
    final d characters deep, v <= -2 proven -2 - v characters deep so far (a search from the pair may prove more)."""
    raw = proof.astype(np.int32)
    return (np.where(raw > 0, raw & (_EXACT - 1), raw) - 1).T


def exact_proofs(proof: np.ndarray) -> np.ndarray:
    """Per (u, state) ([PROOF_ROWS, n_states]), whether its final depth d is exact: every path of the cut's
    automaton from u touching d + 1 characters kills the DFA from the state, and no state where one does ends a
    lexeme."""
    raw = proof.astype(np.int32)
    return ((raw > 0) & (raw & _EXACT != 0)).T


def walk(trie: TrieArrays | Opened, tables: TableArrays | PackedTableArrays | Opened, n_sets: int, roots: np.ndarray,
         root_state: int, mask_words: int, slices: SliceArrays | None = None, proof: np.ndarray | None = None,
         sparse_max: int | None = None) -> Walked:
    """Classify the tokens below `roots` from `root_state`; with `slices` and `proof`, cutting plain-body subtrees;
    with `sparse_max`, at most that many inside tokens come back as `tokens` rather than a mask."""
    cut = None if slices is None else (slices.plain_body, proof, slices.depth, slices.search_min_nodes)
    roots = np.ascontiguousarray(roots, _INT64)
    if sparse_max is not None:
        groups, inside, (visited, cuts, searched) = _walk.walk(trie, tables, n_sets, roots, root_state,
                                                                (mask_words, sparse_max), cut)
        boundaries = [(k, np.frombuffer(nodes, _INT64)) for k, nodes in groups]
        if inside is None:
            return Walked(None, boundaries, visited, cuts, searched)
        dense, data = inside
        found = np.frombuffer(data, _INT32)
        return Walked(found, boundaries, visited, cuts, searched) if dense else Walked(
            None, boundaries, visited, cuts, searched, found)
    # The kernel sets bits in an array made here: no copy out, and no buffer object kept beside it.
    mask = np.zeros(mask_words, _INT32)
    groups, any_inside, (visited, cuts, searched) = _walk.walk(trie, tables, n_sets, roots, root_state, mask, cut)
    return Walked(
        mask if any_inside else None,
        [(k, np.frombuffer(nodes, _INT64)) for k, nodes in groups],
        visited, cuts, searched,
    )


def walk_states(trie: TrieArrays | Opened, tables: TableArrays | PackedTableArrays | Opened, roots: np.ndarray,
                root_state: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The walk without the cut, kept per node: the live nodes where tokens end with the state after their
    byte, and the boundary nodes with the state before theirs (int32, sorted by node then state)."""
    roots = np.ascontiguousarray(roots, _INT64)
    return tuple(np.frombuffer(a, _INT32) for a in _walk.walk_states(trie, tables, roots, root_state))


def pack(trie: TrieArrays | Opened, nodes: np.ndarray, mask_words: int) -> np.ndarray | None:
    """The tokens ending at the int32 `nodes` as a packed int32 mask, or None when there are none."""
    mask = _walk.pack(trie, nodes, mask_words)
    return None if mask is None else np.frombuffer(mask, _INT32)


def chain_walk(trie: Opened, tables: Opened, child_ptr: np.ndarray, child_ids: np.ndarray, root_state: int,
               sparse_max: int) -> tuple[bytes, int, int] | None:
    """`walk`'s sparse result from the trie's first level at `root_state` of opened flag tables (a terminal's own DFA)
    where the lexeme goes on one way only: one byte at a time (each state has one live byte class, of one byte),
    to a state that ends it and goes on no further. The walk then keeps the tokens ending on that path down the
    trie and, where the path reaches the lexeme's end, that node's every child as boundaries (set 0): what the
    full walk finds, found by bisecting each path node's children (`child_ptr`, `child_ids`: the trie's CSR,
    int64, children ascending) instead of reading every child's record. Returns None where the tables are not
    such a chain from `root_state`, or more than `sparse_max` tokens are inside; else (the inside tokens' int32
    ids ascending as bytes, lo, hi): the boundary nodes are `child_ids[lo:hi]`."""
    return _walk.chain_walk(trie, tables, child_ptr, child_ids, root_state, sparse_max)


def pack_sparse(trie: TrieArrays | Opened, nodes: np.ndarray, mask_words: int,
                sparse_max: int) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The tokens ending at the int32 `nodes` as (mask, tokens), as a sparse walk gives them: at most `sparse_max`
    as int32 ids ascending (`tokens`), more as a packed mask; (None, None) when there are none."""
    found = _walk.pack(trie, nodes, (mask_words, sparse_max))
    if found is None:
        return None, None
    dense, data = found
    values = np.frombuffer(data, _INT32)
    return (values, None) if dense else (None, values)
