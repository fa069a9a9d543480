"""Hugging Face tokenizers: each token id's exact bytes, read from the tokenizer itself.

The family is read from the fast tokenizer's own pipeline (its decoder, else its
pre-tokenizer), never from a model name:

- byte-level BPE (GPT-2, Llama 3, Qwen2): a `ByteLevel` decoder. Token strings
  are over GPT-2's 256-character byte alphabet; see `byte_level.py`.
- SentencePiece style (Llama 2, Mistral, Gemma, T5): a `Metaspace` decoder or a
  `Replace("▁", " ")` one. `▁` stands for a space; with byte fallback a token
  `<0xNN>` is the single byte 0xNN. Leading-space rule: such a tokenizer
  prepends `▁` to the text before tokenizing (the "dummy prefix") and its
  decoder strips one leading space from a whole decoded text. pda keeps the
  space in the token's bytes (`▁hello` is b" hello"), because in the middle of
  a generation that is the text the token adds; `Vocabulary.encode`
  tokenises without the dummy prefix, so its ids' bytes are exactly the text.
  Pipelines that split on whitespace and drop it (T5, XLM-R: WhitespaceSplit,
  then "▁" before every word) cannot write a text without a leading space or
  with repeated spaces; `encode` returns None for such texts.
- plain: no decoder (or only `Fuse`/`ByteFallback`/`Strip`): a token is its
  string's UTF-8.
- WordPiece (BERT) and suffix-marked BPE (CLIP's `</w>`) are refused: their
  decoders insert spaces depending on the neighbouring token, so a token has no
  fixed bytes.

Added tokens marked special (`<|im_start|>`, `<s>`, `</s>`, `<unk>`, `<pad>`)
and the tokenizer's `all_special_ids` become special ids with no bytes. Added
tokens not marked special (Qwen2.5's `<tool_call>`) are text: the model writes
them, and decoding them gives their content.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from pda.vocab.byte_level import bytes_to_unicode, decode_byte_level
from pda.vocab.vocabulary import VocabularyError

if TYPE_CHECKING:
    from pda.vocab.vocabulary import Vocabulary

_BYTE_FALLBACK_HEX = frozenset("0123456789ABCDEFabcdef")
_BYTE_ALPHABET = {c: b for b, c in bytes_to_unicode().items()}


class _Family:
    """How one tokenizer writes token bytes as strings."""

    def __init__(self, kind: str, *, space: str = "", byte_fallback: bool = False) -> None:
        self.kind = kind  # "byte_level", "metaspace" or "plain"
        self.space = space  # the character that stands for a space ("▁"), metaspace only
        self.byte_fallback = byte_fallback  # whether "<0xNN>" is the byte 0xNN

    def decode(self, strings: list[str]) -> list[bytes]:
        """The bytes of each model-vocabulary token string."""
        if self.kind == "byte_level":
            try:
                return decode_byte_level(strings)
            except ValueError as exc:
                raise VocabularyError(f"byte-level tokenizer with a token outside the byte alphabet: {exc}") from None
        out = []
        for s in strings:
            if self.byte_fallback and _is_byte_piece(s):
                out.append(bytes([int(s[3:5], 16)]))
            elif self.space:
                out.append(s.replace(self.space, " ").encode("utf-8"))
            else:
                out.append(s.encode("utf-8"))
        return out

    def decode_added(self, content: str) -> bytes:
        """The bytes of a non-special added token, as the tokenizer's decoder produces them."""
        if self.kind == "byte_level":
            # tokenizers' ByteLevel decoder maps a string wholly in the alphabet, else keeps its UTF-8.
            if all(c in _BYTE_ALPHABET for c in content):
                return bytes(_BYTE_ALPHABET[c] for c in content)
            return content.encode("utf-8")
        return self.decode([content])[0]


def _is_byte_piece(s: str) -> bool:
    """Whether `s` is a byte-fallback piece `<0xNN>`."""
    return len(s) == 6 and s.startswith("<0x") and s.endswith(">") and _BYTE_FALLBACK_HEX.issuperset(s[3:5])


def _state(component: Any) -> dict[str, Any] | None:
    """A tokenizers pipeline component (normalizer, pre-tokenizer, decoder) as its JSON dict."""
    if component is None:
        return None
    return json.loads(component.__getstate__())


def _parts(node: dict[str, Any] | None) -> Iterator[dict[str, Any]]:
    """The leaf components of a (possibly nested) Sequence."""
    if node is None:
        return
    if node.get("type") == "Sequence":
        for key in ("decoders", "pretokenizers", "normalizers"):
            for child in node.get(key) or ():
                yield from _parts(child)
    else:
        yield node


def _is_space_replace(part: dict[str, Any]) -> bool:
    return part.get("type") == "Replace" and part.get("content") == " " and "String" in (part.get("pattern") or {})


def detect_family(backend: Any) -> _Family:
    """The token-string family of a `tokenizers.Tokenizer`, from its decoder (else its pre-tokenizer)."""
    model_type = type(backend.model).__name__
    model_fallback = bool(getattr(backend.model, "byte_fallback", False))
    decoder = list(_parts(_state(backend.decoder)))
    pre = list(_parts(_state(backend.pre_tokenizer)))
    types = {p["type"] for p in decoder}
    if model_type in ("WordPiece", "WordLevel") or "WordPiece" in types:
        raise VocabularyError(
            f"{model_type} tokenizers are not supported: their decoder joins tokens with spaces that depend on "
            "the next token ('##' continuations), so a token has no fixed bytes"
        )
    if "ByteLevel" in types or (not decoder and any(p["type"] == "ByteLevel" for p in pre)):
        return _Family("byte_level")
    fallback = model_fallback or "ByteFallback" in types
    for p in decoder or pre:
        if p["type"] == "Metaspace":
            return _Family("metaspace", space=p.get("replacement", "▁"), byte_fallback=fallback)
        if _is_space_replace(p):
            return _Family("metaspace", space=p["pattern"]["String"], byte_fallback=fallback)
    unsupported = sorted(types - {"Fuse", "ByteFallback", "Strip"})
    if unsupported:
        raise VocabularyError(
            f"unsupported tokenizer decoder {', '.join(unsupported)}: pda reads byte-level BPE, "
            "SentencePiece-style (Metaspace, byte fallback) and plain UTF-8 vocabularies"
        )
    return _Family("plain", byte_fallback=fallback)


def vocabulary_from_hf(cls: type[Vocabulary], tokenizer: Any, *, eos_ids: Iterable[int] | None) -> Vocabulary:
    """See `Vocabulary.from_hf`. Accepts a transformers fast tokenizer or a bare `tokenizers.Tokenizer`."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None and hasattr(tokenizer, "get_added_tokens_decoder") and hasattr(tokenizer, "decoder"):
        backend = tokenizer  # a bare tokenizers.Tokenizer
    if backend is None:
        raise VocabularyError(
            f"{type(tokenizer).__name__} has no `backend_tokenizer`: pass a fast tokenizer "
            "(AutoTokenizer.from_pretrained(..., use_fast=True)) or a tokenizers.Tokenizer"
        )
    family = detect_family(backend)
    model_vocab: dict[str, int] = backend.get_vocab(with_added_tokens=False)
    added = backend.get_added_tokens_decoder()

    strings = list(model_vocab)
    ids = list(model_vocab.values())
    size = max([*ids, *added]) + 1
    tokens: list[bytes | None] = [None] * size
    for i, b in zip(ids, family.decode(strings), strict=True):
        tokens[i] = b

    names: dict[int, str] = {}
    for i, tok in added.items():
        if tok.special:
            names[i] = tok.content
        else:
            tokens[i] = family.decode_added(tok.content)
    for i in getattr(tokenizer, "all_special_ids", None) or ():
        if 0 <= i < size and i not in names:
            names[i] = _id_name(backend, i)

    eos = set(eos_ids or ())
    eos_id = getattr(tokenizer, "eos_token_id", None)
    if isinstance(eos_id, int):
        eos.add(eos_id)
    for i in eos:
        if 0 <= i < size and i not in names:
            names[i] = _id_name(backend, i)

    return cls._build(
        tokens,
        eos_ids=eos,
        special_ids=names.keys(),
        special_names=names,
        tokenizer=tokenizer,
        encoder=_PlainTextEncoder(backend),
    )


def _id_name(backend: Any, i: int) -> str:
    name = backend.id_to_token(i)
    return name if name is not None else f"<id {i}>"


class _PlainTextEncoder:
    """Canonical tokenisation of plain text: no special markers parsed, no dummy prefix.

    Works on a private copy of the tokenizer pipeline (built on first use: a copy
    of a 150k vocabulary takes a fraction of a second), so the caller's
    tokenizer is never mutated.
    """

    def __init__(self, backend: Any) -> None:
        self._backend = backend
        self._copy: Any = None

    def __call__(self, text: str) -> list[int]:
        if self._copy is None:
            self._copy = _plain_text_copy(self._backend)
        return self._copy.encode(text, add_special_tokens=False).ids


def _plain_text_copy(backend: Any) -> Any:
    """A copy of `backend` that treats special-token text as text and adds no SentencePiece dummy prefix."""
    from tokenizers import Tokenizer

    # A pipeline that splits on whitespace and drops it (XLM-R: WhitespaceSplit then Metaspace
    # "always") writes every space as a prefix "▁": that prefix must stay.
    lossy_split = ("WhitespaceSplit", "Whitespace")

    def strip_prefix(node: dict[str, Any] | None, after_lossy_split: bool = False) -> dict[str, Any] | None:
        if node is None:
            return None
        if node.get("type") == "Sequence":
            for key in ("pretokenizers", "normalizers"):
                children = []
                for child in node.get(key) or ():
                    child = strip_prefix(child, after_lossy_split)
                    if child is not None:
                        children.append(child)
                        after_lossy_split |= child.get("type") in lossy_split
                if key in node:
                    node[key] = children
            return node
        if node.get("type") == "Metaspace" and not after_lossy_split:
            node["prepend_scheme"] = "never"
            if "add_prefix_space" in node:  # older serialisations
                node["add_prefix_space"] = False
        if node.get("type") == "ByteLevel" and "add_prefix_space" in node:
            node["add_prefix_space"] = False
        if node.get("type") == "Prepend":  # legacy Llama normalizer: Prepend("▁") then Replace(" ", "▁")
            return None
        return node

    # Only the small pipeline components are edited as JSON; the vocabulary is copied once, natively.
    shell = {
        "version": "1.0",
        "model": {"type": "BPE", "vocab": {}, "merges": []},
        "normalizer": strip_prefix(_state(backend.normalizer)),
        "pre_tokenizer": strip_prefix(_state(backend.pre_tokenizer)),
    }
    edited = Tokenizer.from_str(json.dumps(shell))
    copy = Tokenizer.from_str(backend.to_str())
    copy.normalizer = edited.normalizer
    copy.pre_tokenizer = edited.pre_tokenizer
    copy.post_processor = None
    copy.encode_special_tokens = True
    return copy
