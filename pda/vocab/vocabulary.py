"""The vocabulary as the engine sees it: every token id's exact bytes.

Invariants:
- `tokens[i]` is the byte string token i adds to the text, or None when token i
  never adds text: special/control tokens (EOS, BOS, chat markers, `<unk>`,
  `<pad>`) and ids the tokenizer leaves unused.
- `special_ids` contains every EOS id; no special id has bytes.
- The object is immutable: `content_hash` is computed once and keys the compile
  caches. `tokens` is a tuple, which the cyclic garbage collector stops tracking
  (its items are bytes and None): as a list of Qwen2's 151,646 tokens it was visited
  by every full collection, ~20 ms each in a process that compiles new grammars.

The adapters that read real tokenizers live next to this module (`hf.py`,
`tiktoken_files.py`); they all end in `Vocabulary._build`.
"""

from __future__ import annotations

import hashlib
import operator
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cached_property
from typing import Any

from pda.errors import PdaError, TokenRejected

Encoder = Callable[[str], "list[int] | None"]


class VocabularyError(PdaError, ValueError):
    """A vocabulary cannot be built: unsupported tokenizer, inconsistent ids, bad arguments."""


class Vocabulary:
    """Every token id's exact bytes, with special and EOS ids kept apart from text."""

    tokens: tuple[bytes | None, ...]
    eos_ids: frozenset[int]
    special_ids: frozenset[int]
    size: int
    tokenizer: Any
    """The HF tokenizer or tiktoken encoding this vocabulary was read from, if any."""

    def __init__(
        self,
        tokens: Sequence[bytes | None],
        *,
        eos_ids: frozenset[int],
        special_ids: frozenset[int],
        special_names: Mapping[int, str] | None = None,
        tokenizer: Any = None,
        encoder: Encoder | None = None,
    ) -> None:
        """Take already-validated parts; use the `from_*` constructors instead."""
        self.tokens = tuple(tokens)
        self.eos_ids = eos_ids
        self.special_ids = special_ids
        self.size = len(tokens)
        self.tokenizer = tokenizer
        self._special_names = dict(special_names or {})
        self._encoder = encoder

    # ----------------------------------------------------------- constructors

    @classmethod
    def _build(
        cls,
        tokens: list[bytes | None],
        *,
        eos_ids: Iterable[int],
        special_ids: Iterable[int],
        special_names: Mapping[int, str] | None = None,
        tokenizer: Any = None,
        encoder: Encoder | None = None,
    ) -> Vocabulary:
        """Check the ids, blank special tokens' bytes, and make the vocabulary.

        The ids of `special_names` count as special too.
        """
        size = len(tokens)
        if size == 0:
            raise VocabularyError("a vocabulary needs at least one token; got an empty token list")
        eos = frozenset(_checked_ids(eos_ids, size, "EOS"))
        special = frozenset(_checked_ids(special_ids, size, "special")) | eos
        special |= frozenset(_checked_ids(special_names or {}, size, "special"))
        for i in special:
            tokens[i] = None
        return cls(
            tokens,
            eos_ids=eos,
            special_ids=special,
            special_names=special_names,
            tokenizer=tokenizer,
            encoder=encoder,
        )

    @classmethod
    def from_tokens(
        cls,
        tokens: Sequence[bytes | str | None],
        *,
        eos_ids: Iterable[int] = (),
        special_ids: Iterable[int] = (),
    ) -> Vocabulary:
        """A vocabulary from each id's bytes (a `str` stands for its UTF-8); None marks a non-text id.

        EOS and special ids become None whatever bytes were given for them.
        """
        out: list[bytes | None] = []
        for i, t in enumerate(tokens):
            if t is None or isinstance(t, bytes):
                out.append(t)
            elif isinstance(t, str):
                out.append(t.encode("utf-8"))
            elif isinstance(t, (bytearray, memoryview)):
                out.append(bytes(t))
            else:
                raise VocabularyError(f"token {i} is a {type(t).__name__}; expected bytes, str or None")
        return cls._build(out, eos_ids=eos_ids, special_ids=special_ids)

    @classmethod
    def from_hf(cls, tokenizer: Any, *, eos_ids: Iterable[int] | None = None) -> Vocabulary:
        """A vocabulary from a transformers tokenizer, decoding each token to its exact bytes.

        The family (byte-level BPE, SentencePiece `▁`/`<0xNN>`, plain UTF-8) is read
        from the tokenizer's own decoder, never guessed from a model name. Added
        tokens marked special become special ids; EOS is `tokenizer.eos_token_id`
        plus `eos_ids`. See `pda.vocab.hf` for the rules.
        """
        from pda.vocab.hf import vocabulary_from_hf

        return vocabulary_from_hf(cls, tokenizer, eos_ids=eos_ids)

    @classmethod
    def from_tiktoken(
        cls,
        path_or_encoding: str | os.PathLike[str] | Any,
        *,
        eos_ids: Iterable[int] = (),
        special_tokens: Mapping[str, int] | None = None,
        pat_str: str | None = None,
    ) -> Vocabulary:
        """A vocabulary from a tiktoken rank file (base64 token, rank per line) or a `tiktoken.Encoding`.

        A string that is not a file is taken as an encoding name for
        `tiktoken.get_encoding`. `special_tokens` (name to id) adds special ids;
        an Encoding's own special tokens are always included and its
        `<|endoftext|>` is an EOS id. `pat_str`, the pre-tokenizer regex, lets a
        vocabulary read from a file also `encode` text.
        """
        from pda.vocab.tiktoken_files import vocabulary_from_tiktoken

        return vocabulary_from_tiktoken(
            cls, path_or_encoding, eos_ids=eos_ids, special_tokens=special_tokens, pat_str=pat_str
        )

    # ----------------------------------------------------------------- access

    def token_bytes(self, i: int) -> bytes:
        """Token i's bytes; raises TokenRejected for ids that are out of range, special or unused."""
        i = _as_id(i, TokenRejected, "token")
        if not 0 <= i < self.size:
            raise TokenRejected(f"token id {i} is outside the vocabulary (ids 0..{self.size - 1})")
        t = self.tokens[i]
        if t is None:
            raise TokenRejected(f"token {self.describe(i)} has no text")
        return t

    def describe(self, i: int) -> str:
        """A short printable description of token i for error messages."""
        if not 0 <= i < self.size:
            return f"{i} (outside the vocabulary of {self.size})"
        if i in self.special_ids:
            kind = "EOS" if i in self.eos_ids else "special"
            name = self._special_names.get(i)
            return f"{i} {name} ({kind})" if name else f"{i} ({kind})"
        t = self.tokens[i]
        return f"{i} (unused id)" if t is None else f"{i} {t!r}"

    def encode(self, text: str) -> list[int] | None:
        """The tokenizer's canonical tokenisation of `text`, as plain text (special markers are not parsed).

        The ids' bytes concatenate to exactly `text`'s UTF-8. None when this
        vocabulary has no tokenizer to ask, or when the tokenizer's own encoding
        does not reproduce the text byte for byte (its normalizer changed it).
        """
        if self._encoder is None:
            return None
        ids = self._encoder(text)
        if ids is None:
            return None
        want = text.encode("utf-8")
        got = [self.tokens[i] if 0 <= i < self.size else None for i in ids]
        if any(t is None for t in got) or b"".join(got) != want:  # type: ignore[arg-type]
            return None
        return ids

    def with_size(self, n: int) -> Vocabulary:
        """This vocabulary padded with unused ids up to `n` (a model whose logits are wider than the tokenizer)."""
        if n < self.size:
            raise VocabularyError(f"cannot shrink a vocabulary of {self.size} tokens to {n}")
        if n == self.size:
            return self
        return type(self)(
            self.tokens + (None,) * (n - self.size),
            eos_ids=self.eos_ids,
            special_ids=self.special_ids,
            special_names=self._special_names,
            tokenizer=self.tokenizer,
            encoder=self._encoder,
        )

    @cached_property
    def content_hash(self) -> str:
        """sha256 over every token's bytes and the EOS and special ids: the compile-cache key."""
        h = hashlib.sha256(b"pda-vocabulary-v1\0")
        h.update(self.size.to_bytes(8, "little"))
        # Length-prefixed records (0 for None, else len + 1) keep the encoding unambiguous.
        h.update(
            b"".join(
                b"\0\0\0\0" if t is None else (len(t) + 1).to_bytes(4, "little") + t for t in self.tokens
            )
        )
        for ids in (self.eos_ids, self.special_ids):
            h.update(len(ids).to_bytes(8, "little"))
            h.update(b"".join(i.to_bytes(8, "little") for i in sorted(ids)))
        return h.hexdigest()

    def __len__(self) -> int:
        return self.size

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vocabulary):
            return NotImplemented
        return self.content_hash == other.content_hash

    def __hash__(self) -> int:
        return hash(self.content_hash)

    def __repr__(self) -> str:
        text = sum(t is not None for t in self.tokens)
        return (
            f"Vocabulary(size={self.size}, text_tokens={text}, special={len(self.special_ids)}, "
            f"eos={sorted(self.eos_ids)})"
        )


def _checked_ids(ids: Iterable[int], size: int, what: str) -> list[int]:
    """The ids as a list, each an int in range; a clear error otherwise."""
    out = []
    for raw in ids:
        i = _as_id(raw, VocabularyError, what)
        if not 0 <= i < size:
            raise VocabularyError(f"{what} id {i} is outside the vocabulary (ids 0..{size - 1})")
        out.append(i)
    return out


def _as_id(i: Any, error: type[PdaError], what: str) -> int:
    """`i` as a Python int (numpy and torch integers included); `error` if it is not an integer."""
    if isinstance(i, bool):
        raise error(f"{what} id {i!r} is not an integer")
    try:
        return operator.index(i)
    except TypeError:
        raise error(f"{what} id {i!r} is not an integer") from None
