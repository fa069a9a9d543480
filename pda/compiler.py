"""`pda.compile`: bind a grammar to a vocabulary, once, and share the result (the compile-time half).

A `CompiledGrammar` owns the recogniser (parser + lexer), the vocabulary trie,
the token index with its finite-set lookup, and the serve-time masks
(`pda.masks.StepMasks`, the hot path, which memoises each (parser node, lexer
state) pair's mask on the node: computed once per distinct state and reused by
every matcher that reaches it). Here is the work before serving: the compile
memo, the warm-up that precomputes the masks near the grammar's start, and the
token index's disk snapshot.

Invariants:
* A compiled grammar is fixed by (grammar IR, vocabulary, mask width, `Limits`):
  `compile` memoises on exactly that, and pickling ships exactly that (`__reduce__`
  rebuilds through `compile`, so the receiving process hits its caches).
* Its recogniser is `Grammar.recognizer` under the default parser and lexer
  limits, else one built for those limits (shared by compiles with equal ones).
"""

from __future__ import annotations

import sys
import threading
import time
import weakref
from collections import deque
from typing import Any, Literal

import numpy as np

from pda import cache, collector
from pda.arrays import distinct
from pda.errors import LimitExceeded
from pda.grammar.grammar import Grammar
from pda.index.token_index import TokenIndex
from pda.index.trie import TokenTrie
from pda.lexer.lexer import START
from pda.limits import DEFAULT_LIMITS, Limits
from pda.lru import budget_cache, register_budget
from pda.masks import StepMasks
from pda.parser.earley import Node
from pda.recognizer import Recognizer
from pda.trie.lookup import FiniteSetLookup, PlainRows
from pda.vocab import Vocabulary

_tries: "weakref.WeakKeyDictionary[Vocabulary, TokenTrie]" = weakref.WeakKeyDictionary()
# The compile memo holds every live compiled grammar weakly (one nobody uses is freed) and
# the most recently asked for strongly, up to the `compiled_grammars` budget (each weighs its
# `nbytes()`, which grows as it serves: all are weighed again on every `compile`), so a server
# that compiles the same schema per request and drops it still hits the memo. Recognizers for
# non-default limits live as long as a compiled grammar uses them.
COMPILED_MAX_BYTES = 64 << 20
register_budget("compiled_grammars", COMPILED_MAX_BYTES)
# What a compiled grammar weighs before it serves: its lexer, parser and index objects, which
# `nbytes` does not walk (measured with tracemalloc, tiny vocabulary: json.lark 337 KiB, a small
# JSON Schema 656 KiB). It also caps how many the memo keeps: 128 under the default budget.
COMPILED_BASE_BYTES = 512 << 10
_compiled: "weakref.WeakValueDictionary[tuple[str, str, int, Limits], CompiledGrammar]" = weakref.WeakValueDictionary()
_kept = budget_cache("compiled_grammars")
_recognizers: "weakref.WeakValueDictionary[tuple[str, Limits], Recognizer]" = weakref.WeakValueDictionary()
_lock = threading.Lock()




def vocabulary_trie(vocab: Vocabulary) -> TokenTrie:
    """The vocabulary's byte trie: built once per vocabulary, cached in memory and on disk."""
    with _lock:
        trie = _tries.get(vocab)
        if trie is None:
            key = {"vocab": vocab.content_hash}
            trie = cache.load("trie", key, lambda meta, arrays: TokenTrie.from_arrays(meta, arrays, vocab.size))
            if trie is None:
                trie = TokenTrie(vocab)
                cache.store("trie", key, *trie.to_arrays())
            _tries[vocab] = trie
        return trie


# Per vocabulary and mask width, its EOS ids (int32, ascending) and their packed row, read-only: the same for every
# grammar compiled for them (~10-20 us a compile to make again).
_eos_rows: "weakref.WeakKeyDictionary[Vocabulary, dict[int, tuple[np.ndarray, np.ndarray]]]" = weakref.WeakKeyDictionary()


def eos_rows(vocab: Vocabulary, width: int) -> tuple[np.ndarray, np.ndarray]:
    """The EOS ids of `vocab` below `width` (int32, ascending: what `StepMasks` adds where the text can end) and
    their packed int32 row over `width` tokens, both read-only and shared by every grammar compiled for them."""
    with _lock:
        found = _eos_rows.setdefault(vocab, {}).get(width)
    if found is None:
        ids = np.array(sorted(i for i in vocab.eos_ids if i < width), dtype=np.int32)
        row = _packed_ids(ids.tolist(), (width + 31) // 32)
        ids.flags.writeable = row.flags.writeable = False
        with _lock:
            found = _eos_rows.setdefault(vocab, {}).setdefault(width, (ids, row))
    return found


def _packed_ids(ids: list[int], words: int) -> np.ndarray:
    """A packed int32 mask of `words` words with the bits of `ids` set (bit i of byte i // 8, little-endian
    words), written byte by byte: a bool row over the vocabulary and `np.packbits` cost ~30 us a compile.
    ValueError past the size that row could have (numpy's limit), as it raised."""
    if 32 * words > sys.maxsize:
        raise ValueError(f"a mask of {32 * words} bits is too large for an array")
    packed = bytearray(4 * words)
    for i in ids:
        packed[i >> 3] |= 1 << (i & 7)
    return np.frombuffer(packed, dtype=np.int32)


def _recognizer(grammar: Grammar, limits: Limits) -> Recognizer:
    """The grammar's recogniser under `limits`' parser and lexer budgets (built once per distinct budgets)."""
    # The usual calls: the default limits, or equal ones made per request (`pda.Limits()`): no copy of the limits
    # to compare (`recognizer_limits`, a `dataclasses.replace`: ~7 us warm a compile, against ~0.15 for `==`).
    if limits is DEFAULT_LIMITS or limits == DEFAULT_LIMITS:
        return grammar.recognizer
    own = limits.recognizer_limits()
    if own == DEFAULT_LIMITS:
        return grammar.recognizer
    key = (grammar.ir.content_hash, own)
    with _lock:
        found = _recognizers.get(key)
    if found is None:
        found = Recognizer(grammar.ir, limits=own)
        with _lock:
            found = _recognizers.setdefault(key, found)
    return found


# Hex digits of the lexer's content hash that tag a token-index snapshot's disk entry (`cache.tags`).
SNAPSHOT_TAG_CHARS = 16

# The widest mask a grammar is compiled for: token ids are int32 in every kernel (walks, rows, compose).
MAX_MASK_WIDTH = 2**31


def _checked_arguments(grammar: Any, vocab: Any, mask_width: Any, limits: Any) -> int | None:
    """Check `compile`'s arguments (TypeError/ValueError naming the bad one); the mask width as an int or None."""
    if not isinstance(grammar, Grammar):
        raise TypeError(f"grammar must be a pda.Grammar, got {type(grammar).__name__}")
    if not isinstance(vocab, Vocabulary):
        raise TypeError(f"vocab must be a pda.Vocabulary, got {type(vocab).__name__}")
    if not isinstance(limits, Limits):
        raise TypeError(f"limits must be a pda.Limits, got {type(limits).__name__}")
    if mask_width is None:
        return None
    if isinstance(mask_width, (bool, np.bool_)) or not isinstance(mask_width, (int, np.integer)):
        raise TypeError(f"mask_width must be an int or None, got {type(mask_width).__name__}")
    if mask_width < 0:
        raise ValueError(f"mask_width must be >= 0, got {mask_width}")
    if mask_width > MAX_MASK_WIDTH:
        raise ValueError(f"mask_width {mask_width} is too large: token ids are 32-bit, at most {MAX_MASK_WIDTH}")
    return int(mask_width)


class CompiledGrammar:
    """A grammar bound to a vocabulary: immutable from the outside, shareable by matchers.

    Copies are the object itself; pickling ships (grammar, vocabulary, mask width, limits)
    and rebuilds with `pda.compile` on the other side.
    """

    def __init__(
        self,
        grammar: Grammar,
        vocab: Vocabulary,
        *,
        mask_width: int | None = None,
        limits: Limits = DEFAULT_LIMITS,
        warmup_seconds: float | None = None,
        disk_cache: bool = True,
    ) -> None:
        """`warmup_seconds` overrides `limits.warmup_seconds` (0: no warm-up, e.g. in tests)."""
        mask_width = _checked_arguments(grammar, vocab, mask_width, limits)
        width = max(vocab.size, mask_width or 0)
        self.grammar = grammar
        self.vocab = vocab
        self.mask_width = mask_width
        self.limits = limits
        if warmup_seconds is None:
            warmup_seconds = limits.warmup_seconds
        self.vocab_size = width
        self.mask_words = (width + 31) // 32
        self.recognizer = _recognizer(grammar, limits)
        self.lexer = self.recognizer.lexer
        self.scanner = self.recognizer.scanner
        self.eos_ids, self.eos_mask = eos_rows(vocab, width)
        self.index = TokenIndex(self.lexer, vocabulary_trie(vocab), self.mask_words, vocab.content_hash)
        with collector.paused():
            self.finite_sets = FiniteSetLookup(self.index, self.recognizer.lexer_ir.terminals, vocab.content_hash)
        self.index.finite_sets = self.finite_sets
        self.masks = StepMasks(self.scanner, self.index, self.finite_sets, self.eos_mask, self.eos_ids)
        self._snapshot_key = (
            {"lexer": self.lexer.content_hash, "grammar": grammar.ir.content_hash, "vocab": vocab.content_hash,
             "mask_words": self.mask_words}
            # A lazy terminal's states are numbered as first reached in this process: no snapshot names them.
            if disk_cache and not self.lexer.has_lazy
            else None
        )
        self._snapshot_tag = self.lexer.content_hash[:SNAPSHOT_TAG_CHARS]
        # A snapshot's entry is tagged by its lexer's content hash: a grammar never saved is a miss decided from the
        # folder's listing, without hashing the key (~20 us a compile).
        restored = (self._snapshot_key is not None and self._snapshot_tag in cache.tags("index")
                    and cache.load("index", self._snapshot_key, self.index.restore, self._snapshot_tag))
        if not restored and warmup_seconds > 0:
            with collector.paused():
                self.warm_up(seconds=warmup_seconds)
            self.save_index()

    def save_index(self) -> None:
        """Write the token index's classifications to the disk cache (a warm start next time)."""
        if self._snapshot_key is not None:
            cache.store("index", self._snapshot_key, *self.index.snapshot(), tag=self._snapshot_tag)

    def __reduce__(self) -> tuple:
        return _rebuild, (Grammar(self.grammar.ir), self.vocab, self.mask_width, self.limits)

    def __copy__(self) -> "CompiledGrammar":
        return self

    def __deepcopy__(self, memo: dict) -> "CompiledGrammar":
        return self

    def warm_up(self, *, seconds: float | None = None, max_nodes: int | None = None) -> int:
        """Precompute the masks of the states near the start of the grammar; returns nodes explored.

        Breadth-first over parser nodes: for each, the mask of every lexer state reachable
        inside one lexeme is computed and memoised (but plain finite-set states, which
        `Matcher.fill_bitmask` writes from `plain_rows`). Bounded by time and node count
        (`Limits.warmup_seconds`, `Limits.warmup_nodes` unless given); the rest is lazy.
        """
        seconds = self.limits.warmup_seconds if seconds is None else seconds
        max_nodes = self.limits.warmup_nodes if max_nodes is None else max_nodes
        deadline = time.perf_counter() + seconds
        seen = {id(self.root)}
        queue = deque([self.root])
        explored = 0
        while queue and explored < max_nodes and time.perf_counter() < deadline:
            node = queue.popleft()
            explored += 1
            try:
                successors = self._warm_node(node, deadline)
            except LimitExceeded:  # left to serve time, where it puts the matcher in its error state
                continue
            for nxt in successors:
                if id(nxt) not in seen:
                    seen.add(id(nxt))
                    queue.append(nxt)
        return explored

    def _warm_node(self, node: Node, deadline: float) -> list[Node]:
        """`warm_up`'s work on one parser node: memoise its masks; its successors, one per terminal."""
        lexer, masks = self.lexer, self.masks
        masks.step_mask(node, START)
        live_set = node.allowed | lexer.ignore
        lookup = self.finite_sets
        # A lexeme of one finite-set terminal alone: its plain states are written from
        # `plain_rows`; only the few where the lexeme can end need masks (and their boundary
        # groups' suffixes, shared by the states).
        if lookup.answers_lexemes(live_set):
            lexemes = lookup.ending_states(live_set).tolist()
        else:
            lexemes = self._lexeme_states(live_set)
        plain = masks.plain_rows(node.allowed)
        for q in lexemes:
            if time.perf_counter() >= deadline:
                break
            if not plain or plain.lo[q] < 0:
                masks.step_mask(node, q)  # memoised: the first document's steps find it
        successors = []
        for t in range(len(lexer.names)):
            if node.allowed >> t & 1:
                nxt = node.advance(lexer.best(1 << t))
                if nxt is not None:
                    successors.append(nxt)
        return successors

    def _lexeme_states(self, live_set: int) -> list[int]:
        """States of the candidate set's DFA reachable from the start inside one lexeme, nearest first.

        Breadth first over the rows met (a view of a shared table has many more rows than
        its set reaches); the start row itself is listed only where a lexeme returns to it.
        """
        tables = self.lexer.tables(live_set)
        classes = distinct(tables.byte_class)
        seen = np.zeros(tables.n_states, dtype=bool)
        order = []
        frontier = np.array([tables.resolve(START)])
        while len(frontier):
            reached = distinct(tables.trans[frontier][:, classes])
            reached = reached[reached >= 0]  # a lazy terminal's UNFILLED entries: not followed (nothing is made here)
            frontier = reached[tables.live_of(reached) & ~seen[reached]]
            seen[frontier] = True
            order.extend(frontier.tolist())
        return order

    @property
    def root(self) -> Node:
        return self.recognizer.root

    def nbytes(self) -> int:
        """What the compile memo's budget weighs this grammar as: `COMPILED_BASE_BYTES` for its
        objects, its EOS row and its index's own classifications, which grow as it serves (the masks
        on parser nodes are under `recent_masks`)."""
        return COMPILED_BASE_BYTES + self.eos_mask.nbytes + self.index.nbytes()

    # The serve-time API, answered by `self.masks` (pda/masks.py).
    def text_mask(self, node: Node, q: int) -> np.ndarray:
        """Packed mask of the text tokens allowed at (node, q); EOS not included. Memoised."""
        return self.masks.text_mask(node, q)

    def step_mask(self, node: Node, q: int) -> np.ndarray:
        """`text_mask` with EOS added where the text can end: what a matcher serves. Memoised."""
        return self.masks.step_mask(node, q)

    def can_end(self, node: Node, q: int) -> bool:
        """Whether the text may end at (node, q). Memoised."""
        return self.masks.can_end(node, q)

    def plain_rows(self, allowed: int) -> PlainRows | Literal[False]:
        """The finite-set lookup's plain rows for parser nodes allowing `allowed` (False: none); memoised."""
        return self.masks.plain_rows(allowed)

    def initial_state(self) -> tuple[Node, int]:
        return self.recognizer.root, START


def compile(
    grammar: Grammar, vocab: Vocabulary, *, mask_width: int | None = None, limits: Limits = DEFAULT_LIMITS
) -> CompiledGrammar:
    """Compile `grammar` for `vocab` (memoised on the grammar's and vocabulary's content, the width and `limits`).

    The vocabulary trie and the token index are cached on disk (see `pda.cache`),
    so a second process compiles the same pair from the cache.
    """
    mask_width = _checked_arguments(grammar, vocab, mask_width, limits)
    key = (grammar.ir.content_hash, vocab.content_hash, mask_width or 0, limits)
    with _lock:
        found = _compiled.get(key)
    if found is None:
        built = CompiledGrammar(grammar, vocab, mask_width=mask_width, limits=limits)
        with _lock:
            found = _compiled.setdefault(key, built)
    _kept.put(key, found, found.nbytes())
    _kept.reweigh(CompiledGrammar.nbytes)
    return found


def _rebuild(grammar: Grammar, vocab: Vocabulary, mask_width: int | None, limits: Limits) -> CompiledGrammar:
    """Unpickling a `CompiledGrammar`: `compile` again (a memo or disk-cache hit where it was built before)."""
    return compile(grammar, vocab, mask_width=mask_width, limits=limits)
