"""`pda.compile`: bind a grammar to a vocabulary, once, and share the result.

A `CompiledGrammar` owns the recogniser (parser + lexer), the vocabulary trie
and the token index, and computes masks for (parser node, lexer state) pairs.
Masks are memoised on the parser node, which is the parser's whole
configuration, so a mask is computed once per distinct state and reused by
every matcher that reaches it.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from pda.grammar.grammar import Grammar
from pda.index.token_index import TokenIndex
from pda.index.trie import TokenTrie
from pda.lexer.lexer import START
from pda.parser.earley import Node
from pda.vocab import Vocabulary

_tries: "weakref.WeakKeyDictionary[Vocabulary, TokenTrie]" = weakref.WeakKeyDictionary()
_compiled: dict[tuple[str, str, int], "CompiledGrammar"] = {}
_lock = threading.Lock()


def vocabulary_trie(vocab: Vocabulary) -> TokenTrie:
    """The vocabulary's byte trie, built once per Vocabulary object."""
    with _lock:
        trie = _tries.get(vocab)
        if trie is None:
            trie = TokenTrie(vocab)
            _tries[vocab] = trie
        return trie


class CompiledGrammar:
    """A grammar bound to a vocabulary: immutable from the outside, shareable by matchers."""

    def __init__(self, grammar: Grammar, vocab: Vocabulary, *, mask_width: int | None = None) -> None:
        width = max(vocab.size, mask_width or 0)
        self.grammar = grammar
        self.vocab = vocab
        self.vocab_size = width
        self.mask_words = (width + 31) // 32
        self.recognizer = grammar.recognizer
        self.lexer = self.recognizer.lexer
        self.eos_ids = np.array(sorted(i for i in vocab.eos_ids if i < width), dtype=np.int64)
        self.index = TokenIndex(self.lexer, vocabulary_trie(vocab), self.mask_words)
        self._empty = np.zeros(self.mask_words, dtype=np.int32)
        eos_mask = np.zeros(self.mask_words * 32, dtype=bool)
        eos_mask[self.eos_ids] = True
        self.eos_mask = np.packbits(eos_mask, bitorder="little").view(np.int32)

    @property
    def root(self) -> Node:
        return self.recognizer.root

    def text_mask(self, node: Node, q: int) -> np.ndarray:
        """Packed mask of the text tokens allowed at (node, q); EOS not included. Memoised."""
        mask = node.cache.get(q)
        if mask is None:
            mask = self._compute_mask(node, q)
            node.cache[q] = mask
        return mask

    # Hot path on a cache miss: OR precomputed classifications; only boundary groups touch the parser.
    def _compute_mask(self, node: Node, q: int) -> np.ndarray:
        lexer, index = self.lexer, self.index
        ignore = lexer.ignore
        root = index.at_state(q, node.allowed | ignore)
        acc = root.inside.copy() if root.inside is not None else self._empty.copy()
        stack = [(node, root.groups)]
        while stack:
            at, groups = stack.pop()
            for group in groups:
                terminals = group.terminals
                after = at.advance(terminals) if terminals & at.allowed else at
                if after is None:
                    continue
                sub = index.after_boundary(group, after.allowed | ignore)
                if sub.inside is not None:
                    np.bitwise_or(acc, sub.inside, out=acc)
                if sub.groups:
                    stack.append((after, sub.groups))
        return acc

    def can_end(self, node: Node, q: int) -> bool:
        key = ("end", q)
        end = node.cache.get(key)
        if end is None:
            end = self.lexer.can_end(node, q)
            node.cache[key] = end
        return end

    def initial_state(self) -> tuple[Node, int]:
        return self.recognizer.root, START


def compile(grammar: Grammar, vocab: Vocabulary, *, mask_width: int | None = None) -> CompiledGrammar:
    """Compile `grammar` for `vocab` (memoised on the grammar's and vocabulary's content)."""
    key = (grammar.ir.content_hash, vocab.content_hash, mask_width or 0)
    with _lock:
        found = _compiled.get(key)
    if found is not None:
        return found
    compiled = CompiledGrammar(grammar, vocab, mask_width=mask_width)
    with _lock:
        _compiled[key] = compiled
    return compiled
