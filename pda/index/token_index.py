"""The per-lexer-state token index (docs/design.md, "The token index").

From a lexer state `q` with live terminal set `A`, every token is one of:

* **inside** — all its bytes extend the current lexeme: allowed whatever the stack;
* **dead** — some byte can neither extend the lexeme nor follow a lexeme end;
* **boundary** — the lexeme ends inside the token (the next byte cannot extend
  it, and it matches terminal set `E`); the rest of the token starts a new
  lexeme, which depends on the parser node after `E`.

Boundary tokens are kept as `BoundaryGroup`s: the trie nodes where the lexeme
ended, grouped by `E`. Classifications and groups are compiled objects that the
garbage collector does not track (`pda.kernels.compose`: tens of thousands per
first document of a JSON Schema, which every old-generation collection read). Classifying a group's suffixes from the lexer's start
state under the next live set `A2` is again independent of the stack, so it is
cached on the group by `A2`. Only `node.advance(E)` at serve time depends on
the stack. A walk is one call of a compiled kernel (`pda.kernels.walk`): depth
first over the vocabulary trie, with one exact shortcut, subtrees of plain string
body in a state proven to keep them live taken whole (`pda.index.slices`). From
inside a JSON string it visits a few thousand of Qwen2's 330k trie nodes.

A walk depends on the grammar only through the terminals live where it starts:
their DFAs, their priorities and their states (contextual lexer). Walks from the
trie's root are therefore also kept by that *content* (`SharedClassifications`,
one per vocabulary trie, in memory and, for walks worth it, on disk), with the
terminals named by position instead of by the grammar's terminal ids: a second
grammar with the same frame literals, string or number terminals (a JSON Schema
with other properties, an enum with other values) finds them there. Walks after
a boundary are short, and cost less than that key: they are made, and recorded,
by the kernel's `IndexWalks` (`TokenIndex.after_boundary`), which asks Python
only for what it has never met. A walk where one terminal is live runs on that
terminal's own DFA, so its tables are shared too.
"""

from __future__ import annotations

import hashlib
import time
import weakref
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from pda import cache
from pda.lru import budget_cache, register_budget
from pda.grammar.ir import CONTEXTUAL
from pda.index.slices import CUT_AUTOMATON, PlainBody, plain_body
from pda.index.trie import TokenTrie
from pda.kernels import walk as kernel
from pda.kernels.compose import BoundaryGroup, Classification, fingerprint
from pda.lexer.lexer import START, Lexer, LexerTables, SharedTables
from pda.bits import iter_bits
from pda.regex.dfa import LexerDFA
from pda.rows import same_words

if TYPE_CHECKING:
    from pda.index.lookup import StateLookup


# Shared classifications: at most this many bytes of masks and node arrays per vocabulary
# (least recently used dropped first). A Qwen2 mask is 19 KB, so ~3,500 full entries.
SHARED_MAX_BYTES = 64 * 2**20
register_budget("token_walks", SHARED_MAX_BYTES)
# What a shared entry weighs besides its arrays' data (its key's and its own tuples, the arrays' headers, the
# store's links), about: most root walks' entries are a few ids now (`ROOT_SPARSE_SHARE`), so this, not their
# masks, bounds how many the budget holds.
SHARED_ENTRY_BYTES = 512
# Walks at least this slow are also written to the disk cache, one file each (reading one
# back costs ~0.1 ms; most walks on Qwen2 take 0.01-0.5 ms, a few, deep in a long counter, more).
DISK_MIN_SECONDS = 0.002
# Only walks from the trie's root touch the disk, and only over a vocabulary of at least this
# many tokens: a lookup (~20-130 us: the key's hash and the listing) costs more than most walks.
# Measured on a replay of 32 JSON Schemas (Qwen2): of 2,205 root walks 117 were slow enough to
# store; of 1,848 boundary groups' suffix walks over 4,096+ tokens, 1.
DISK_MIN_TOKENS = 4096
# How long a root walk's miss trusts the last read of the disk entries' tags (`TokenIndex._disk_tags`); asked
# on every miss, the cache's answer (it reads the environment) was 3% of a cold JSON Schema replay's mask time.
DISK_TAGS_RECHECK_SECONDS = 0.5
# A walk after a boundary returns its inside tokens as ids when they take at most 1/this of the mask's
# bytes (Qwen2: up to 1,187 of 151,936): such walks find few (31 JSON Schemas: p50 3 tokens, p99 412),
# and a 19 KB mask each was allocated, kept and ORed into every step mask composed from it.
SPARSE_INSIDE_SHARE = 4
# Ranked states and content digests kept per index (`TokenIndex._ranked_components`, `_content_digest`; one
# lists up to all of a grammar's terminals), cleared when full.
SIGNATURES_KEPT = 1024
# A signature of the all-terminal DFA's state where at most this many terminals are live is made from theirs
# alone (`TokenIndex._few_components`), not picked from the state's every component ranked (`_ranked_components`).
FEW_LIVE_MAX = 16
# `SharedClassifications._insides` is swept of dead masks' entries when it reaches this many, or twice the live.
INSIDES_SWEEP_MIN = 256
# A walk from the trie's root returns its inside tokens as ids when they are at most 1/this of the mask's words
# (Qwen2: 296), as a composed step mask keeps them (`pda.masks.EXTENDED_MAX_SHARE`: writing that many ids into a
# row costs what a dense copy does): of 31 JSON Schemas' first documents' 2,130 root walks, 1,895 find 1-32 (a
# literal's or a key's next byte), and each made, hashed, kept and copied into every row a 19 KB mask.
ROOT_SPARSE_SHARE = 16
# Basic lexer mode: the per-node walks kept to filter candidate sets' classifications from
# (`TokenIndex._basic_classify`), at most this many bytes per index (8 bytes a node where tokens end).
BASIC_WALKS_MAX_BYTES = 64 << 20
register_budget("basic_walks", BASIC_WALKS_MAX_BYTES)


def allowed_mask(found: Classification, words: int) -> np.ndarray | None:
    """The tokens `found` allows outright as a packed int32 mask of `words` words: its `inside`, or one made from
    its `tokens` (on each call), or None when it allows none."""
    if found.tokens is None:
        return found.inside
    mask = np.zeros(words, dtype=np.uint32)
    np.bitwise_or.at(mask, found.tokens >> 5, np.left_shift(np.uint32(1), (found.tokens & 31).astype(np.uint32)))
    return mask.view(np.int32)


# The terminal sets of a terminal's own tables (`_WalkTables.sets`): one list all share, which nothing changes.
_OWN_SETS = [1]


class _WalkTables:
    """A DFA as arrays for the walk: transitions, byte classes, and per state liveness and lexeme ends.

    `arrays` are the tables as the kernel takes them (`pda.kernels.walk`; walks pass them
    opened, `kernel_tables`): a terminal's own DFA, and every candidate set under the
    basic lexer mode, as per-state flags whose ends index `sets`; a contextual candidate
    set as its DFA's packed terminal bits with the candidates' words, whose ends are
    accept rows, mapped to terminal sets for the rows a walk met (`kernel_view`): no pass over
    the DFA's states or its accept rows is paid per set (a JSON Schema meets hundreds of
    sets, most walked once or twice).
    `live`, `stops`, `ends_as` and `sets` are the flags as arrays, derived from the
    lexer's tables when first read (the basic mode's filtering and the reference walk
    read them). `trans` must send every state that is not live to a state that is not
    live (the candidate set's tables get a sink row; a terminal's own DFA and a shared
    table have their dead state). `proof(depth)` is the kernel's memo of plain-body
    proofs for these tables (the views of a shared table share their product's). A view of a
    shared table (`SharedTables`) hands the kernel the shared rows as they are, and a walk
    from START starts at its start row (`kernel_state`).

    A compiled grammar keeps its index's tables as long as it is cached, so they hold few
    objects the garbage collector tracks (each costs a traversal at every full collection:
    docs/profile.md, "Twenty-eighth profile"): `arrays` is kept as the exact tuple of its
    arrays (untracked) and built when read, the flags as a tuple of arrays beside their
    `sets` (a terminal's own tables share one list), the lexer and its tables in two slots.
    """

    __slots__ = ("_trans", "byte_class", "_arrays", "kernel_tables", "n_sets", "root", "_rows", "_handed", "_flags",
                 "_sets", "_lexer", "_tables", "_proof", "__weakref__")

    @classmethod
    def of_candidates(cls, lexer: Lexer, tables: LexerTables, sinks: dict) -> "_WalkTables":
        """The walk tables of one candidate set's DFA (one grammar's terminal ids in its groups)."""
        self = cls.__new__(cls)
        self.byte_class = np.ascontiguousarray(tables.byte_class, dtype=np.int32)
        self._lexer, self._tables = lexer, tables
        self._flags = self._sets = self._proof = self._rows = None
        self._handed: dict[int, int] = {}
        self.root = tables.start
        if isinstance(tables, SharedTables):  # the shared rows as they are: its dead row is the sink
            self._trans = None  # `trans`, START's row included, is built only if read
            live_bits, candidates, accept, row_bits, rows = tables.packed_rows()
            self._rows, self.n_sets = rows, len(rows)
            filler = tables.shared.lazy_filler()
            self._arrays = (tables.trans, self.byte_class, live_bits, candidates, accept, row_bits,
                            None if filler is None else filler.capsule)
            self.kernel_tables = kernel.opened(self._arrays)
            return self
        n = tables.n_states
        # Views of one DFA share its transition table (with a sink row added) and its packed rows.
        arrays = sinks.get(id(tables.trans))
        if arrays is None:
            trans = np.ascontiguousarray(np.vstack([tables.trans, np.full((1, tables.trans.shape[1]), n, np.int32)]))
            arrays = [tables.trans, trans, None]
            sinks[id(tables.trans)] = arrays
        self._trans = arrays[1]
        if lexer.mode != CONTEXTUAL:
            live, stops, ends_as, sets = self._flag_arrays()
            self._arrays, self.n_sets = (self._trans, self.byte_class, live, stops, ends_as), len(sets)
            self.kernel_tables = kernel.opened(self._arrays)
            return self
        live_bits, candidates, accept_row, row_bits, rows = tables.packed_rows()
        if arrays[2] is None or arrays[2][0] is not live_bits:  # the sink row's bits and accept row, once per DFA
            arrays[2] = (live_bits, np.vstack([live_bits, np.zeros((1, live_bits.shape[1]), dtype="<u8")]),
                         np.append(accept_row, np.int32(-1)), np.ascontiguousarray(row_bits))
        _, bits, accept, row_bits = arrays[2]
        self._rows = rows
        self.n_sets = len(rows)
        self._arrays = (self._trans, self.byte_class, bits, candidates, accept, row_bits, None)
        self.kernel_tables = kernel.opened(self._arrays)
        return self

    @classmethod
    def of_terminal(cls, dfa: LexerDFA) -> "_WalkTables":
        """The walk tables of one terminal's own DFA (contextual mode; the set is position 0: `sets == [1]`)."""
        self = cls.__new__(cls)
        self._trans = np.ascontiguousarray(dfa.trans, dtype=np.int32)
        self.root = None  # its states are the terminal's own: none stands for START
        self.byte_class = np.ascontiguousarray(dfa.byte_class, dtype=np.int32)
        live, accept = np.asarray(dfa.live, dtype=bool), np.asarray(dfa.accept, dtype=bool)
        # one column, a terminal's own: read it as it is (`any` over it cost ~2 us a table, thousands of key literals)
        live = np.ascontiguousarray(live[:, 0] if live.shape[1] == 1 else live.any(axis=1))
        ends_as = (accept[:, 0] if accept.shape[1] == 1 else accept.any(axis=1)).astype(np.int32) - 1  # 0 or -1
        self._flags, self._sets = (live, ~live, ends_as), _OWN_SETS
        self._lexer = self._tables = self._proof = self._rows = self._handed = None
        self.n_sets = 1
        self._arrays = (self._trans, self.byte_class, *self._flags)
        self.kernel_tables = kernel.opened(self._arrays)
        return self

    @property
    def arrays(self) -> kernel.TableArrays | kernel.PackedTableArrays:
        """The tables as the kernel takes them: flags (`TableArrays`) or packed (`PackedTableArrays`)."""
        return (kernel.TableArrays if len(self._arrays) == 5 else kernel.PackedTableArrays)(*self._arrays)

    @property
    def trans(self) -> np.ndarray:
        """The DFA's transitions with lexer state START's row at row START (what the reference walk reads): the
        kernel's own for a DFA of the set's own, a copy of the shared rows with the start's row on top for a view
        of a `SharedProduct`, made on first read (the kernel walks the shared rows from `root`)."""
        if self._trans is None:
            trans = self._arrays[0].copy()
            trans[START] = trans[self.root]
            self._trans = trans
        return self._trans

    def kernel_state(self, q: int) -> int:
        """The row the kernel walks from for lexer state q (START: the set's start row)."""
        return self.root if q == START and self.root is not None else q

    def kernel_view(self, q: int) -> tuple:
        """These tables as the index's walk kernel takes them (`pda.kernels.walk.IndexWalks`) for a walk from
        lexer state q: (opened tables, n_sets, the row walked from, rows, hand, handed). Packed tables' set
        indices are accept rows, each handed as the top-priority candidates it accepts, `lexer.best(rows[k] &
        candidates)`, worked out on the row's first walk and kept in `handed` (rows, candidates, handed); flag
        tables' are positions in `sets` (None, sets, None).
        """
        if self._rows is None:
            return self.kernel_tables, self.n_sets, self.kernel_state(q), None, self._sets, None
        return self.kernel_tables, self.n_sets, self.kernel_state(q), self._rows, self._tables.candidates, self._handed

    def _flag_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]:
        """(live, stops, ends_as, sets) over the states, the sink row included, from the lexer's tables.

        Read off `LexerTables.state_flags` (a pass over every state), not off the packed rows
        the kernel reads, which the reference walk checks them against; sets numbered by the
        first state (in state order) that ends as each.
        """
        found = self._flags
        if found is None:
            lexer, tables = self._lexer, self._tables
            n = tables.n_states
            live, extends, ends, masks, which = tables.state_flags()
            handed = [lexer.best(m) for m in masks]
            number: dict[int, int] = {}
            for k in which.tolist():  # the ending states in state order
                number.setdefault(handed[k], len(number))
            ends_as = np.full(n + 1, -1, dtype=np.int32)
            if len(ends):
                ends_as[ends] = np.asarray([number[t] for t in handed], dtype=np.int32)[which]
            found = self._flags = (np.append(live, False), ~np.append(extends, False), ends_as)
            self._sets = list(number)
        return (*found, self._sets)

    @property
    def live(self) -> np.ndarray:
        return self._flag_arrays()[0]

    @property
    def stops(self) -> np.ndarray:
        return self._flag_arrays()[1]

    @property
    def ends_as(self) -> np.ndarray:
        return self._flag_arrays()[2]

    @property
    def sets(self) -> list[int]:
        """The terminal set each index of `ends_as` stands for."""
        return self._flag_arrays()[3]

    def proof(self, depth: int) -> np.ndarray:
        """The kernel's plain-body proofs for these tables under a trie `depth` bytes deep (made on first use).

        A view of a `SharedProduct` takes its rows of the product's one buffer for that depth, which every
        view shares: a proof reads only rows' liveness, any(live bits & candidates), and a row reachable from
        a view's start has its live bits within the view's candidates (its live terminals are among the
        start's, and a step never adds one), so that liveness is the row's own, the same in every view that
        walks it (the byte loop's `live_flags` are shared so too); an exact proof also reads whether a row ends a
        lexeme, and a row's accepted terminals are among its live ones, so within every such view's candidates
        too. Every value any view writes is then sound for all. A new depth's buffer is set once (`setdefault`): threads that make one at once keep the same.
        """
        found = self._proof
        if found is None or found[0] != depth:
            n = self._arrays[0].shape[0]
            tables = self._tables
            if isinstance(tables, SharedTables):
                proofs = tables.shared.walk_proofs
                whole = proofs.get(depth)
                if whole is None:
                    whole = proofs.setdefault(depth, kernel.new_proof(len(tables.shared.trans)))
                found = self._proof = (depth, whole[:n])
            else:
                found = self._proof = (depth, kernel.new_proof(n))
        return found[1]


# A shared entry: the inside mask, the groups as (terminal set, nodes, key), each terminal set a bitmask over
# the positions of the signature's terminals (not over a grammar's terminal ids), the key the nodes' bytes (a
# group made from the entry takes it as it is: `BoundaryGroup` would copy the nodes into a new one), and the
# inside tokens as ids where the walk gave them so (then the mask is None: `Classification.tokens`).
SharedEntry = tuple[np.ndarray | None, tuple[tuple[int, np.ndarray, bytes], ...], np.ndarray | None]


class SharedClassifications:
    """Walk results of one vocabulary trie keyed by content, shared by every grammar (LRU by bytes).

    Holds walks from the trie's root (a suffix walk after a boundary is cheaper than its
    key, `TokenIndex._suffix_tables`). A key is (mask words, signature): the signature
    lists the live terminals as (DFA digest, priority, state) in sorted order, which is
    all a contextual walk reads.
    Also holds each terminal DFA's walk tables by digest, weakly: the indexes that
    use them keep them (a 100,000-value enum's are megabytes).
    """

    def __init__(self) -> None:
        self.walks = budget_cache("token_walks")
        self.terminal_tables: weakref.WeakValueDictionary[str, _WalkTables] = weakref.WeakValueDictionary()
        self._kernel_trie: tuple[kernel.TrieArrays, kernel.Opened] | None = None
        # Root walks' inside masks by content (`fingerprint`, confirmed word for word), each while a walk holds it:
        # of a 44-schema replay's 2,693, 1,449 differ (a value's start under many candidate sets, a string's body).
        # Weak references in a plain dict, the dead ones swept when it has doubled since the last sweep: a
        # `WeakValueDictionary`'s store is Python code (a keyed reference and its callback), ~1 us more a mask.
        self._insides: dict[int, weakref.ref] = {}
        self._sweep_at = INSIDES_SWEEP_MIN

    def same_inside(self, inside: np.ndarray) -> np.ndarray:
        """`inside`, or an equal mask a walk made before (then `inside` is freed: its memory goes to the next)."""
        key = fingerprint(inside)
        insides = self._insides
        ref = insides.get(key)
        if ref is not None:
            found = ref()
            if found is not None and same_words(found, inside):
                return found
        elif len(insides) >= self._sweep_at:
            for k, r in list(insides.items()):  # a copy taken at once: another thread may store meanwhile
                if r() is None:
                    insides.pop(k, None)
            self._sweep_at = max(INSIDES_SWEEP_MIN, 2 * len(insides))
        insides[key] = weakref.ref(inside)
        return inside

    def kernel_trie(self, trie: TokenTrie, plain: PlainBody) -> tuple[kernel.TrieArrays, kernel.Opened]:
        """The kernel records of this vocabulary's `trie` with the plain-body cut's bits, and them opened for the
        kernel's calls (`pda.kernels.walk.opened`; made on first use)."""
        if self._kernel_trie is None:
            arrays = kernel.TrieArrays.of(trie, (plain.below, plain.rest, plain.level), plain.chars)
            self._kernel_trie = (arrays, kernel.opened(arrays))
        return self._kernel_trie

    def get(self, key: tuple) -> SharedEntry | None:
        return self.walks.get(key)

    def put(self, key: tuple, entry: SharedEntry) -> None:
        inside, groups, tokens = entry
        size = SHARED_ENTRY_BYTES + (0 if inside is None else inside.nbytes) + (0 if tokens is None else tokens.nbytes)
        for _, nodes, _ in groups:
            size += nodes.nbytes
        self.walks.put(key, entry, size)


_shared: "weakref.WeakKeyDictionary[TokenTrie, SharedClassifications]" = weakref.WeakKeyDictionary()


def shared_classifications(trie: TokenTrie) -> SharedClassifications:
    """The content-keyed classifications of one vocabulary trie (created on first use)."""
    found = _shared.get(trie)
    if found is None:
        found = SharedClassifications()
        _shared[trie] = found
    return found


def entries_to_arrays(
    entries: Sequence[tuple[np.ndarray | None, Sequence[tuple[int, np.ndarray]]]], mask_words: int
) -> tuple[dict, dict[str, np.ndarray]]:
    """Classifications (inside mask or None, groups of (terminal bitset, trie nodes)) as flat tables.

    `masks[mask_row[e]]` is entry e's mask (-1: none); its groups are
    `group_ptr[e]:group_ptr[e + 1]`, group g's nodes `nodes[node_ptr[g]:node_ptr[g + 1]]`
    (int32 unless `wide[g]`: a group's key is its nodes' bytes, so the dtype is kept);
    terminal bitsets, which can exceed 64 bits, are hex strings in the meta.
    """
    masks = [inside for inside, _ in entries if inside is not None]
    rows, n = [], 0
    for inside, _ in entries:
        rows.append(-1 if inside is None else n)
        n += inside is not None
    groups = [group for _, gs in entries for group in gs]
    meta = {"terminals": [cache.int_to_json(terminals) for terminals, _ in groups]}
    arrays = {
        "masks": np.stack(masks).astype(np.int32) if masks else np.zeros((0, mask_words), np.int32),
        "mask_row": np.array(rows, dtype=np.int64),
        "group_ptr": np.cumsum([0] + [len(gs) for _, gs in entries], dtype=np.int64),
        "node_ptr": np.cumsum([0] + [len(nodes) for _, nodes in groups], dtype=np.int64),
        "nodes": np.concatenate([nodes.astype(np.int64) for _, nodes in groups]) if groups else np.zeros(0, np.int64),
        "wide": np.array([nodes.dtype == np.int64 for _, nodes in groups], dtype=bool),
    }
    return meta, arrays


def entries_from_arrays(
    meta: dict, arrays: dict[str, np.ndarray], mask_words: int, n_nodes: int, n_terminals: int
) -> list[tuple[np.ndarray | None, list[tuple[int, np.ndarray]]]]:
    """The inverse of `entries_to_arrays`, checked: masks of `mask_words` words, nodes of the trie, bitsets
    over `n_terminals` terminals; raises `cache.Invalid`."""
    take = cache.take
    masks = take(arrays, "masks", np.int32, (None, mask_words))
    rows = take(arrays, "mask_row", np.int64, (None,), (-1, len(masks))).tolist()
    terminals = [cache.int_from_json(x) for x in meta["terminals"]]
    if any(not 0 <= t < 1 << n_terminals for t in terminals):
        raise cache.Invalid("a group's terminal set is outside the grammar's terminals")
    group_ptr = take(arrays, "group_ptr", np.int64, (len(rows) + 1,), (0, len(terminals) + 1)).tolist()
    nodes = take(arrays, "nodes", np.int64, (None,), (0, n_nodes))
    node_ptr = take(arrays, "node_ptr", np.int64, (len(terminals) + 1,), (0, len(nodes) + 1)).tolist()
    wide = take(arrays, "wide", bool, (len(terminals),)).tolist()
    groups = []
    for g, t in enumerate(terminals):
        part = nodes[node_ptr[g] : node_ptr[g + 1]]
        groups.append((t, part if wide[g] else part.astype(np.int32)))
    return [
        (None if row < 0 else masks[row], groups[group_ptr[e] : group_ptr[e + 1]])
        for e, row in enumerate(rows)
    ]


def key_to_json(key: object) -> object:
    """A lexer-state key (nested tuples of ints and strings) as JSON, losslessly.

    Tuples become lists, ints "i<hex>" (any size), strings "s<text>".
    """
    if isinstance(key, tuple):
        return [key_to_json(k) for k in key]
    if isinstance(key, str):
        return "s" + key
    if isinstance(key, (int, np.integer)):
        return "i" + cache.int_to_json(int(key))
    raise TypeError(f"not a lexer-state key: {key!r}")


def key_from_json(value: object) -> object:
    """The inverse of `key_to_json`; raises `cache.Invalid` on anything else."""
    if isinstance(value, list):
        return tuple(key_from_json(v) for v in value)
    if isinstance(value, str) and value[:1] == "s":
        return value[1:]
    if isinstance(value, str) and value[:1] == "i":
        return cache.int_from_json(value[1:])
    raise cache.Invalid("not a lexer-state key")


def _without_keys(entry: SharedEntry, words: int) -> tuple[np.ndarray | None, list[tuple[int, np.ndarray]]]:
    """A shared entry as `entries_to_arrays` takes it: the groups' keys left out (their nodes' bytes), its inside
    tokens as a mask of `words` words."""
    inside, groups, tokens = entry
    return allowed_mask(Classification(inside, (), tokens), words), [(positions, nodes) for positions, nodes, _ in groups]


def _positions_of(terminals: int, order: list[int]) -> int:
    """A terminal set as bits over the terminals' positions in a signature's `order` (`_terminals_at`'s inverse).
    Most sets hold one terminal: looked up in the list, with no per-signature table to build (hundreds long)."""
    if terminals and not terminals & (terminals - 1):
        return 1 << order.index(terminals.bit_length() - 1)
    return sum(1 << order.index(j) for j in iter_bits(terminals))


def _terminals_at(positions: int, order: list[int]) -> int:
    """Bits over positions in a signature's `order` as the grammar's terminal set."""
    if positions and not positions & (positions - 1):
        return 1 << order[positions.bit_length() - 1]
    return sum(1 << order[i] for i in iter_bits(positions))


class TokenIndex:
    """Classifications per lexer state, for one (grammar, vocabulary) pair.

    `vocab_key` (the vocabulary's content hash) enables the disk half of the shared
    classifications; without it they are shared in memory only.
    """

    def __init__(self, lexer: Lexer, trie: TokenTrie, mask_words: int, vocab_key: str | None = None) -> None:
        self.lexer = lexer
        self.trie = trie
        self.mask_words = mask_words
        self.vocab_key = vocab_key
        self.first_nodes = trie.child_ids[trie.child_ptr[0] : trie.child_ptr[1]]
        self.shared = shared_classifications(trie)
        # The vocabulary's plain-string-body slice (`pda.index.slices`): built with the first index of a vocabulary;
        # its per-node bits go in the trie's kernel records, made once per trie.
        self._trie_arrays, self._kernel_trie = self.shared.kernel_trie(trie, plain_body(trie, vocab_key))
        self._slices = kernel.SliceArrays(CUT_AUTOMATON, min(trie.max_depth, kernel.MAX_PROOF_DEPTH),
                                          kernel.SEARCH_MIN_NODES)
        # The trie's children as `_chain_walk` reads them; read-only views, so that its groups' nodes (slices) are.
        self._children = tuple(np.ascontiguousarray(a, dtype=np.int64).view() for a in (trie.child_ptr, trie.child_ids))
        for a in self._children:
            a.flags.writeable = False
        self._suffixes: dict[tuple[bytes, int], Classification] = {}
        self._walk_tables: dict[int, _WalkTables] = {}
        self._trans_with_sink: dict[int, tuple] = {}
        self._roots: dict[tuple, Classification] = {}
        # `at_state`'s answers from `_roots` by live set, then lexer state: no key to make for a state met again.
        self._at: dict[int, dict[int, Classification]] = {}
        self._own_bytes = 0  # of what `_roots` holds and `restore` put in `_suffixes` (`nbytes`)
        self._ranks: dict[int, tuple[str, int]] = {}
        # `_ranked_components`, cleared when full
        self._ranked: dict[int, tuple[tuple, list[int], int, dict[int, int]]] = {}
        self._content_digests: dict[tuple, str] = {}  # `_content_digest`, cleared when full
        self._tag_numbers: dict[int, int] = {}  # `_content_tag`'s number per terminal
        # Whether root walks may touch the disk at all (their terminals may still keep one off it: `_root_walk`).
        self._disk_walks = vocab_key is not None and len(trie.token_ids) >= DISK_MIN_TOKENS
        self._tags: set[str] | frozenset[str] = frozenset()  # `_disk_tags`, never read yet
        self._tags_read = -DISK_TAGS_RECHECK_SECONDS
        self._own_tables: dict[int, _WalkTables] = {}
        # The components of the all-terminal DFA's states (`_few_components`), read once from the lexer.
        self._all_components: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        # The terminals whose DFA is live at its start (an indenter-only terminal is not), as a bitmask.
        self._live_at_start = lexer.live_at_start
        # Lazy terminals: no table of their own (their states are the shared product's rows), so a state where
        # one alone is live is walked in its candidate set's tables; and walks naming them stay off the disk.
        self._lazy = lexer.lazy
        # Basic lexer mode: per (roots, lexer state), one walk under every terminal (`_walk_states`),
        # the least recently used dropped past BASIC_WALKS_MAX_BYTES.
        self._basic_walks = budget_cache("basic_walks")
        # Issue 9: states inside a finite-set lexeme are looked up, not walked (set by pda.compile).
        self.finite_sets: StateLookup | None = None
        # `after_boundary(group, live_set)`: a group's suffix classification, from its memo `group.after`, from
        # `_suffixes`, or walked and recorded in both by the kernel (`pda.kernels.walk.IndexWalks`: no Python
        # frame but for a live set's first tables and an accept row's first terminal set); under the basic lexer
        # mode computed by `_basic_suffix`. `pda.kernels.compose` calls it on a group's miss.
        # The same object makes the walks from a lexer state (`_walk`: its `classify`).
        self._walks = kernel.IndexWalks(
            self._kernel_trie, mask_words, mask_words // SPARSE_INSIDE_SHARE, self._suffixes, self._suffix_tables,
            lexer.best, None if lexer.mode == CONTEXTUAL else self._basic_suffix, (Classification, BoundaryGroup))
        self.after_boundary: Callable[[BoundaryGroup, int], Classification] = self._walks

    def walk_tables(self, live_set: int) -> _WalkTables:
        found = self._walk_tables.get(live_set)
        if found is None:
            found = _WalkTables.of_candidates(self.lexer, self.lexer.tables(live_set), self._trans_with_sink)
            self._walk_tables[live_set] = found
        return found

    def _terminal_tables(self, j: int) -> _WalkTables:
        found = self._own_tables.get(j)
        if found is None:
            digest = self._digest(j)
            found = self.shared.terminal_tables.get(digest)
            if found is None:
                found = _WalkTables.of_terminal(self.lexer.dfas[j])
                self.shared.terminal_tables[digest] = found
            self._own_tables[j] = found
        return found

    def _digest(self, j: int) -> str:
        return self._rank(j)[0]

    def _rank(self, j: int) -> tuple[str, int]:
        """Terminal j's (DFA digest, priority): what orders it in a signature (memoised)."""
        found = self._ranks.get(j)
        if found is None:
            found = self._ranks[j] = (self.lexer.dfas[j].digest, self.lexer.priority[j])
        return found

    # Compile-time work, paid once per (lexer state, live set) or (group, live set); cached.
    def _classify(self, roots: np.ndarray, root_state: int, live_set: int, *, cut: bool = True,
                  sparse: bool = False) -> Classification:
        """Walk the trie from `roots` under the candidate set's DFA (no cache); `cut=False` takes no shortcut,
        `sparse` gives few inside tokens as ids (`_walk`)."""
        return self._walk(self.walk_tables(live_set), roots, root_state, cut=cut, sparse=sparse)

    def _walk(self, tables: _WalkTables, roots: np.ndarray, root_state: int, *, cut: bool = True,
              sparse: bool = False) -> Classification:
        """One kernel walk from `roots` at `root_state` (`pda.kernels.walk`): the inside tokens and the boundary groups.

        With `cut`, a node whose whole subtree is plain string body, reached in a state proven
        to keep such paths live as deep as the subtree goes, is inside with all its tokens and
        not walked (`pda.index.slices`); the result is the same either way. With `sparse`, at
        most `mask_words // ROOT_SPARSE_SHARE` inside tokens come as ids (`tokens`), not a mask.
        """
        cuts = self._slices
        slices = (cuts.plain_body, tables.proof(cuts.depth), cuts.depth, cuts.search_min_nodes) if cut else None
        return self._walks.classify(tables.kernel_view(root_state), roots, slices,
                                    self.mask_words // ROOT_SPARSE_SHARE if sparse else None)

    def _signature(self, q: int, live_set: int, key: tuple | None = None) -> tuple[tuple, list[int]] | None:
        """What the walk from lexer state q depends on: (content, the live terminals in its order).

        The content is the live terminals' (DFA digest, priority, own state), sorted; a
        group's terminal set is then a bitmask over positions in that order. None under
        the basic lexer mode, where all terminals (live or not) cut the lexeme. `key` is
        `LexerTables.key(q)` when the caller has it. Not memoised: it is asked once per
        key (`at_state` keeps the walk by the same key; a memo here found none of a
        44-schema replay's 3,432).
        """
        lexer = self.lexer
        if lexer.mode != CONTEXTUAL:
            return None
        if key is None:
            key = lexer.tables(live_set).key(q)
        if key and key[0] == "all":  # a view of the all-terminal DFA: the live ones of its state's components
            _, state, kept = key
            if kept.bit_count() <= FEW_LIVE_MAX:  # most: one live (2,220 of 3,043 in a 44-schema replay), or a few
                return self._few_components(state, kept, live_set)
            content, order, every, where = self._ranked_components(state, live_set)
            kept &= every
            if kept != every:  # some of the state's components live: their positions looked up, not all filtered
                picked = sorted(where[j] for j in iter_bits(kept))
                content, order = tuple(content[i] for i in picked), [order[i] for i in picked]
            return content, order
        rank = self._rank
        entries = sorted((rank(j), s, j) for j, s in key)
        return tuple((digest, priority, s) for (digest, priority), s, _ in entries), [e[2] for e in entries]

    def _own_state(self, key: tuple, live_set: int) -> tuple[int, int] | None:
        """(j, s) where the lexer state keyed `key` (`LexerTables.key`) has one terminal j live, not lazy, in state s
        of its own DFA; else None (contextual mode)."""
        if key and key[0] == "all":  # a view of the all-terminal DFA: its one live component's state
            _, state, kept = key
            if not kept or kept & (kept - 1) or self._lazy & kept:
                return None
            j = kept.bit_length() - 1
            found = self._all_components
            if found is None:
                found = self._all_components = self.lexer.components(live_set)
            ptr, terminals, states = found
            lo, hi = ptr.item(state), ptr.item(state + 1)
            i = bisect_left(terminals, j, lo, hi)
            return (j, states.item(i)) if i < hi and terminals.item(i) == j else None
        if len(key) != 1 or self._lazy >> key[0][0] & 1:
            return None
        return key[0]

    def _few_components(self, q: int, kept: int, live_set: int) -> tuple[tuple, list[int]]:
        """The signature at state q of the all-terminal DFA where the terminals `kept` are live, a few of them: their
        own states read off q's components (ascending ids; a state's live bits are its components'), sorted by
        themselves. `_ranked_components` would rank the state's every component first (44 JSON Schemas' first
        documents: ~130 components at such a state, ~6.5 live where more than one is)."""
        found = self._all_components
        if found is None:  # every view of the all-terminal DFA reads its components (`Lexer.components`)
            found = self._all_components = self.lexer.components(live_set)
        ptr, terminals, states = found
        lo, hi = ptr.item(q), ptr.item(q + 1)  # Python ints: numpy's scalars cost ~1 us more here
        rank, entries = self._rank, []
        for j in iter_bits(kept):  # bisected in the array itself: listing q's ~130 components cost ~0.6 us more
            i = bisect_left(terminals, j, lo, hi)
            if i < hi and terminals.item(i) == j:
                entries.append((rank(j), states.item(i), j))
        entries.sort()
        return tuple((digest, priority, s) for (digest, priority), s, _ in entries), [e[2] for e in entries]

    def _ranked_components(self, q: int, live_set: int) -> tuple[tuple, list[int], int, dict[int, int]]:
        """State q of the all-terminal DFA as the signature of every terminal live there, (content, order),
        with those terminals as a bitmask and each one's position in that order (memoised per state; a state's
        components hold each terminal once): a signature takes it whole when every one is live, else picks
        the live ones' positions, instead of sorting again (a state read under many candidate sets, e.g. a
        value's start, has dozens of live terminals)."""
        found = self._ranked.get(q)
        if found is None:
            ptr, terminals, states = self.lexer.components(live_set)
            lo, hi = ptr[q : q + 2].tolist()
            rank, live = self._rank, terminals[lo:hi].tolist()
            ranked = sorted((rank(j), s, j) for j, s in zip(live, states[lo:hi].tolist()))
            order = [j for _, _, j in ranked]
            found = (tuple((digest, priority, s) for (digest, priority), s, _ in ranked), order,
                     sum(1 << j for j in order), {j: i for i, j in enumerate(order)})
            if len(self._ranked) >= SIGNATURES_KEPT:
                self._ranked.clear()
            self._ranked[q] = found
        return found

    def _root_walk(self, q: int, live_set: int, state_key: tuple | None = None) -> Classification:
        """The walk from the trie's root at lexer state q, through the shared classifications (`state_key`:
        q's `LexerTables.key`, when the caller has it); a literal's rest is walked here, before any of that.

        Where one terminal is live alone, at a state of its own DFA from which its lexeme goes on one way only
        (a key literal's next bytes), the chain walk answers in ~2 us (`_chain_walk`): the signature, the
        shared store's lookup and entry, cost more than that walk (Github_hard o56025's first document: 252 of its
        321 root walks), and a chain walk is not worth keeping across grammars."""
        if self.lexer.mode == CONTEXTUAL:
            if state_key is None:
                state_key = self.lexer.tables(live_set).key(q)
            own = self._own_state(state_key, live_set)
            if own is not None:
                j, s = own
                walked = self._chain_walk(self._terminal_tables(j), s, 1 << j)
                if walked is not None:
                    return walked
                digest, priority = self._rank(j)
                return self._shared_walk(q, live_set, ((digest, priority, s),), [j])  # its signature, as made
        found = self._signature(q, live_set, state_key)
        if found is None:
            return self._basic_classify(self.first_nodes, b"", q, live_set)
        return self._shared_walk(q, live_set, *found)

    def _shared_walk(self, q: int, live_set: int, content: tuple, order: list[int]) -> Classification:
        """The walk from the trie's root at lexer state q, whose signature is (content, order), through the shared
        classifications: found there (in memory, or on disk), else made (`_fresh_walk`) and stored."""
        key = (self.mask_words, content)
        entry = self.shared.get(key)
        if entry is None:
            # Most walks are not on disk (only slow ones are stored): a tag the disk's listing lacks is a miss
            # without the key's digests.
            on_disk = self._disk_walks and not (self._lazy and any(self._lazy >> j & 1 for j in order))
            if on_disk:
                tag = self._content_tag(content, order)
                disk_key = self._disk_key(content) if tag in self._disk_tags() else None
                entry = cache.load("classes", disk_key, self._decode_shared(len(order)), tag) if disk_key else None
                start = time.perf_counter()
            if entry is None:
                fresh = self._fresh_walk(q, live_set, content, order)
                if fresh.inside is not None:
                    fresh.inside = self.shared.same_inside(fresh.inside)
                entry = (fresh.inside, tuple([(_positions_of(g.terminals, order), g.nodes, g.key) for g in fresh.groups]),
                         fresh.tokens)
                if on_disk and time.perf_counter() - start >= DISK_MIN_SECONDS:
                    cache.store("classes", disk_key or self._disk_key(content),
                                *entries_to_arrays([_without_keys(entry, self.mask_words)], self.mask_words), tag)
                self.shared.put(key, entry)
                return fresh
            self.shared.put(key, entry)
        inside, groups, tokens = entry
        return Classification(inside, [
            BoundaryGroup(_terminals_at(positions, order), nodes, nodes_key) for positions, nodes, nodes_key in groups
        ], tokens)

    def _fresh_walk(self, q: int, live_set: int, content: tuple, order: list[int]) -> Classification:
        """The walk from the trie's root at lexer state q, made here (its groups name this grammar's terminals):
        on the live terminal's own DFA where one is live alone (not lazy), else on the candidate set's; few
        inside tokens as ids (`ROOT_SPARSE_SHARE`). A chain walk's state was asked before (`_root_walk`)."""
        if not order:  # nothing is live: every token dies at its first byte
            return Classification(None, ())
        if len(order) == 1 and not self._lazy >> order[0] & 1:
            tables = self._terminal_tables(order[0])
            walked = self._walk(tables, self.first_nodes, content[0][2], sparse=True)
            for group in walked.groups:  # its own DFA's one set is position 0: here, terminal order[0]
                group.terminals = 1 << order[0]
            return walked
        return self._classify(self.first_nodes, q, live_set, sparse=True)

    def _chain_walk(self, tables: _WalkTables, state: int, terminals: int) -> Classification | None:
        """`_walk`'s sparse result from the trie's root at `state` of a terminal's own tables where its lexeme goes on
        one way only, to its end (a key literal's or a keyword's next bytes), its boundaries named `terminals`; None
        elsewhere, or past `ROOT_SPARSE_SHARE`'s share of inside tokens (`pda.kernels.walk.chain_walk`).

        The walk then follows that path down the trie by its children's bytes: a few nodes, where the full walk
        read every child of every node on it, each a cache miss out of cache (Github_hard o56025's first document:
        243 of its 277 root walks, 11-12 us each with their Python, now ~6.5)."""
        child_ptr, child_ids = self._children
        found = kernel.chain_walk(self._kernel_trie, tables.kernel_tables, child_ptr, child_ids, state,
                                  self.mask_words // ROOT_SPARSE_SHARE)
        if found is None:
            return None
        ids, lo, hi = found
        groups = [BoundaryGroup(terminals, child_ids[lo:hi])] if hi > lo else []
        return Classification(None, groups, np.frombuffer(ids, np.int32) if ids else None)

    def _disk_tags(self) -> set[str] | frozenset[str]:
        """`cache.tags("classes")`, asked again only every `DISK_TAGS_RECHECK_SECONDS`: every root-walk miss would
        otherwise pay its ~3 us (the cache folder is read from the environment each time), and what other
        processes write is seen only with the folder's listing (`cache.LISTING_MAX_AGE`), so not sooner anyway."""
        now = time.monotonic()
        if now >= self._tags_read + DISK_TAGS_RECHECK_SECONDS:
            self._tags = cache.tags("classes")
            self._tags_read = now
        return self._tags

    def _suffix_tables(self, live_set: int) -> tuple | None:
        """What the kernel's walks of groups' suffixes under `live_set` read (`pda.kernels.walk.IndexWalks`, which
        asks once per live set): None when no candidate can start a lexeme (every suffix dies at its first byte),
        else its tables as `_WalkTables.kernel_view` gives them: where one candidate alone is live at START its
        own DFA, every boundary handed as it (rows and handed None, hand its bit); else the candidate set's.

        After a boundary most paths die within a few bytes: such a walk is ~10 us of kernel
        time, about what its content signature and the shared lookup cost, and a replay of
        43 JSON Schemas found an earlier walk there for one in five (for object keys, none);
        measured without them, that replay's steps took 3% less. The plain-body cut is not
        taken either: proving a pair (a search) cost more than the walks it shortened (the
        same replay: suffix walks' kernel time 163 -> 75 ms without it). Where one candidate
        alone is live no candidate-set DFA is built.
        """
        live = live_set & self._live_at_start
        if not live:
            return None
        if not live & (live - 1) and not live & self._lazy:
            j = live.bit_length() - 1
            own = self._terminal_tables(j)
            return own.kernel_tables, own.n_sets, self.lexer.dfas[j].start, None, live, None
        return self.walk_tables(live_set).kernel_view(START)

    def _basic_suffix(self, group: BoundaryGroup, live_set: int) -> Classification:
        """A group's suffix classification under the basic lexer mode (`after_boundary` records it)."""
        return self._basic_classify(group.nodes, group.key, START, live_set, sparse=True)

    def _basic_classify(self, roots: np.ndarray, roots_key: bytes, q: int, live_set: int, *,
                        sparse: bool = False) -> Classification:
        """`_classify` under the basic lexer mode, filtered from one walk under every terminal (`sparse`: few
        inside tokens as ids, as a contextual walk after a boundary gives them).

        There every terminal cuts the lexeme, so where a token's lexeme ends does not
        depend on the candidate set; the set only decides whether the lexeme is still
        live, and that only shrinks along a token (a state's reachable ends include its
        successors'). So a token is inside for candidate set C iff its last state is live
        under C, and crosses a boundary iff the lexeme it ends there is typed as a
        candidate: both read off the per-node states of one walk (`_walk_states`, per
        roots and lexer state), instead of walking the trie again for every set.
        """
        key = (roots_key, q)
        walked = self._basic_walks.get(key)
        if walked is None:
            walked = self._walk_states(roots, q)
            self._basic_walks.put(key, walked, sum(a.nbytes for a in walked))
        inside_nodes, inside_states, ended_nodes, ended_states = walked
        tables = self.walk_tables(live_set)
        inside = inside_nodes[tables.live[inside_states]]
        if sparse:
            mask, tokens = kernel.pack_sparse(self._kernel_trie, inside, self.mask_words,
                                              self.mask_words // SPARSE_INSIDE_SHARE)
        else:
            mask, tokens = kernel.pack(self._kernel_trie, inside, self.mask_words), None
        which = tables.ends_as[ended_states]
        kept = which >= 0
        if not kept.any():
            return Classification(mask, [], tokens)
        # By group, each group's nodes in node order (a stable sort of node-sorted ends); a node
        # repeats only where roots overlap. Int64 node ids, as walks give them (a group's key is their bytes).
        order = np.argsort(which[kept], kind="stable")
        which, nodes = which[kept][order], ended_nodes[kept][order]
        first = np.ones(len(nodes), dtype=bool)
        first[1:] = (nodes[1:] != nodes[:-1]) | (which[1:] != which[:-1])
        which, nodes = which[first], nodes[first].astype(np.int64)
        cuts = (np.flatnonzero(which[1:] != which[:-1]) + 1).tolist()
        starts, ends = [0, *cuts], [*cuts, len(which)]
        return Classification(mask, [
            BoundaryGroup(tables.sets[k], nodes[a:b]) for k, a, b in zip(which[starts].tolist(), starts, ends)
        ], tokens)

    def _walk_states(self, roots: np.ndarray, q: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The walk from `roots` at lexer state q with every terminal a candidate, kept per node (no cut).

        Returns the nodes where tokens end inside the lexeme with the state each ends in,
        and the nodes whose byte ends the lexeme with the state it ended in (before that
        byte), int32 and sorted by node; tokens that die are left out.
        """
        tables = self.walk_tables((1 << len(self.lexer.dfas)) - 1)
        return kernel.walk_states(self._kernel_trie, tables.kernel_tables, roots, tables.kernel_state(q))

    def _disk_key(self, content: tuple) -> dict:
        """The disk-cache key of a shared root walk (the vocabulary's too; needs `vocab_key`)."""
        return {"vocab": self.vocab_key, "mask_words": self.mask_words, "content": self._content_digest(content)}

    def _content_tag(self, content: tuple, order: list[int]) -> str:
        """A 64-bit fingerprint of a walk's content, its disk entry's tag (`cache.tags`): a mix of one number per
        terminal (its DFA digest's first 64 bits and its priority) and its state (`pda.kernels.walk.content_tag`,
        in C). ~0.3 us a JSON Schema replay's usual miss, where the key's digests cost ~10 us; a collision only
        costs a lookup."""
        return kernel.content_tag(content, order, self._tag_numbers)

    def _content_digest(self, content: tuple) -> str:
        """The live terminals' (DFA digest, priority, state), hashed (memoised): a key
        with hundreds of them (JSON Schema keys) would cost more to serialise than the walk it names."""
        found = self._content_digests.get(content)
        if found is None:
            found = hashlib.sha256(repr([(d, int(p), int(s)) for d, p, s in content]).encode()).hexdigest()
            if len(self._content_digests) >= SIGNATURES_KEPT:
                self._content_digests.clear()
            self._content_digests[content] = found
        return found

    def _decode_shared(self, n_live: int) -> Callable[[dict, dict], SharedEntry]:
        """Reads one shared entry back; its groups' terminal sets are bits over the `n_live` live terminals."""

        def decode(meta: dict, arrays: dict) -> SharedEntry:
            entries = entries_from_arrays(meta, arrays, self.mask_words, self.trie.n_nodes, n_live)
            if len(entries) != 1:
                raise cache.Invalid("a shared entry holds one classification")
            inside, groups = entries[0]
            return inside, tuple((positions, nodes, nodes.tobytes()) for positions, nodes in groups), None

        return decode

    def snapshot(self) -> tuple[dict, dict[str, np.ndarray]]:
        """The cached classifications as (meta, arrays) for the disk cache (`restore` reads them back)."""
        roots = list(self._roots.items())
        suffixes = list(self._suffixes.items())
        entries = [(allowed_mask(c, self.mask_words), [(g.terminals, g.nodes) for g in c.groups])
                   for _, c in roots + suffixes]
        meta, arrays = entries_to_arrays(entries, self.mask_words)
        meta["roots"] = [key_to_json(key) for key, _ in roots]
        meta["suffix_live"] = [cache.int_to_json(live_set) for (_, live_set), _ in suffixes]
        group_keys = [group_key for (group_key, _), _ in suffixes]
        arrays["suffix_key_ptr"] = np.cumsum([0] + [len(k) for k in group_keys], dtype=np.int64)
        arrays["suffix_keys"] = np.frombuffer(b"".join(group_keys), dtype=np.uint8)
        return meta, arrays

    def restore(self, meta: dict, arrays: dict[str, np.ndarray]) -> bool:
        """Adopt the classifications of a `snapshot` of the same (grammar, vocabulary); True when adopted.

        Everything is checked before anything is adopted: raises `cache.Invalid` (or an
        error of a malformed `meta`) and adopts nothing when the snapshot is inconsistent.
        """
        entries = entries_from_arrays(meta, arrays, self.mask_words, self.trie.n_nodes, len(self.lexer.dfas))
        root_keys = [key_from_json(k) for k in meta["roots"]]
        live_sets = [cache.int_from_json(x) for x in meta["suffix_live"]]
        key_bytes = cache.take(arrays, "suffix_keys", np.uint8, (None,)).tobytes()
        ptr = cache.take(arrays, "suffix_key_ptr", np.int64, (len(live_sets) + 1,), (0, len(key_bytes) + 1)).tolist()
        if len(root_keys) + len(live_sets) != len(entries):
            raise cache.Invalid("keys and classifications differ in number")
        built = [Classification(inside, [BoundaryGroup(e, nodes) for e, nodes in groups]) for inside, groups in entries]
        suffix_keys = [(key_bytes[ptr[i] : ptr[i + 1]], live_set) for i, live_set in enumerate(live_sets)]
        self._roots.update(zip(root_keys, built))
        self._suffixes.update(zip(suffix_keys, built[len(root_keys) :]))
        for found in built:
            self._count(found)
        return True

    def nbytes(self) -> int:
        """The bytes of this grammar's own classifications (inside masks and boundary nodes; those
        shared with the vocabulary's walks are counted here too, so this is an upper bound): those
        counted here and those `after_boundary` recorded."""
        return self._own_bytes + self.after_boundary.nbytes

    def _count(self, found: Classification) -> Classification:
        """`found`, its bytes added to `nbytes` (it was just stored in `_roots` or `_suffixes`)."""
        self._own_bytes += found.nbytes()
        return found

    def at_state(self, q: int, live_set: int) -> Classification:
        """Classify the whole vocabulary from lexer state `q` under live set `live_set` (hot path on a mask miss:
        half of a first document's are at a (live set, state) asked before, from another parser node)."""
        by_state = self._at.get(live_set)
        if by_state is None:
            by_state = self._at[live_set] = {}
        found = by_state.get(q)
        if found is not None:
            return found
        if self.finite_sets is not None:
            # Answered from the finite-set tables in microseconds: not worth a cached mask per state.
            found = self.finite_sets.at_state(q, live_set)
            if found is not None:
                return found
        # From a state inside a lexeme only the terminals still live there matter, so the
        # entry is keyed by their own DFA states and shared by every candidate set.
        if q == START:
            key, state_key = (live_set, START), None
        else:
            key = state_key = self.lexer.tables(live_set).key(q)
        found = self._roots.get(key)
        if found is None:
            found = self._roots[key] = self._count(self._root_walk(q, live_set, state_key))
        by_state[q] = found
        return found
