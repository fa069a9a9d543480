"""Per-vocabulary look-ups shared above the vocabulary: the tokens by their bytes, and one
`Vocabulary` per tokenizer object. Both are built once and held weakly (dropped with their key)."""

from __future__ import annotations

import bisect
import threading
import weakref
from typing import Any

import numpy as np

from pda.vocab.vocabulary import Vocabulary


class TokenPrefixIndex:
    """The vocabulary's token bytes sorted, for "tokens starting with b" and "tokens that prefix b".

    Built once per vocabulary (a sort of the byte strings); each query is a
    binary search, never a loop over the vocabulary.
    """

    def __init__(self, vocab: Vocabulary) -> None:
        pairs = sorted((t, i) for i, t in enumerate(vocab.tokens) if t)
        self._keys = [t for t, _ in pairs]
        self._ids = np.fromiter((i for _, i in pairs), dtype=np.int64, count=len(pairs))

    def starting_with(self, prefix: bytes) -> np.ndarray:
        """Ids of the tokens whose bytes start with `prefix` (`prefix` itself included)."""
        lo = bisect.bisect_left(self._keys, prefix)
        hi = lo
        upper = _successor(prefix)
        hi = len(self._keys) if upper is None else bisect.bisect_left(self._keys, upper, lo)
        return self._ids[lo:hi]

    def prefixes_of(self, data: bytes) -> np.ndarray:
        """Ids of the tokens whose bytes are a non-empty prefix of `data` (`data` itself included)."""
        out = []
        for k in range(1, len(data) + 1):
            piece = data[:k]
            at = bisect.bisect_left(self._keys, piece)
            while at < len(self._keys) and self._keys[at] == piece:
                out.append(int(self._ids[at]))
                at += 1
        return np.array(out, dtype=np.int64)


def _successor(prefix: bytes) -> bytes | None:
    """The smallest byte string greater than every string starting with `prefix` (None: no bound)."""
    trimmed = prefix.rstrip(b"\xff")
    if not trimmed:
        return None
    return trimmed[:-1] + bytes([trimmed[-1] + 1])


_prefix_indexes: "weakref.WeakKeyDictionary[Vocabulary, TokenPrefixIndex]" = weakref.WeakKeyDictionary()
_vocabularies: "weakref.WeakKeyDictionary[Any, Vocabulary]" = weakref.WeakKeyDictionary()
_vocabularies_lock = threading.Lock()  # serving engines compile on thread pools


def prefix_index(vocab: Vocabulary) -> TokenPrefixIndex:
    """The vocabulary's `TokenPrefixIndex`, built on first use."""
    index = _prefix_indexes.get(vocab)
    if index is None:
        index = _prefix_indexes[vocab] = TokenPrefixIndex(vocab)
    return index


def vocabulary_for(tokenizer: Any) -> Vocabulary:
    """`Vocabulary.from_hf(tokenizer)`, built once per tokenizer object (an unhashable one: each time)."""
    with _vocabularies_lock:
        try:
            vocab = _vocabularies.get(tokenizer)
        except TypeError:
            return Vocabulary.from_hf(tokenizer)
        if vocab is None:
            vocab = _vocabularies[tokenizer] = Vocabulary.from_hf(tokenizer)
        return vocab
