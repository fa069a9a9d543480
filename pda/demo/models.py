"""The tiny random Qwen2 model of the demo, the tests and the benchmarks.

Nothing here downloads. The tiny model is a Qwen2-architecture causal LM with
small sizes (hidden 64, 2 layers, 4 heads), randomly initialised with a fixed
seed, around the real Qwen2 tokenizer (`pda.demo.qwen.load_qwen2_tokenizer`). Its
vocabulary is the tokenizer's full size (specials included) padded up to a
multiple of 64, as real Qwen2 checkpoints pad theirs, so its logits are wider
than the tokenizer: the padding ids must never be sampled. The weights say
nothing about language; what the model shows is that every constrained output
parses whatever the logits are, and what the constraint costs per token.

The model is saved under `pda.cache.cache_dir() / "models"` after the first
build, with a manifest of its files' hashes, and loaded from there afterwards when
they verify (identical weights either way).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from pda import cache as pda_cache
from pda.cache import cache_dir
from pda.demo.qwen import load_qwen2_tokenizer

TINY_SEED = 0
TINY_SIZES = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 4096,
}
# Bump when the config or the initialisation changes: it names the cache folder.
TINY_VERSION = "tiny-qwen2-v1"
# In the cached folder: the sha256 of every other file, checked before the folder is used.
MANIFEST = "pda-manifest.json"
VOCAB_MULTIPLE = 64


def padded_vocab_size(n: int, multiple: int = VOCAB_MULTIPLE) -> int:
    """`n` rounded up to a multiple of `multiple` (the model's logits width)."""
    return -(-n // multiple) * multiple


def tiny_model_dir() -> Path:
    """Where the tiny model is cached."""
    return cache_dir() / "models" / TINY_VERSION


def build_tiny_qwen2(tokenizer: Any) -> Any:
    """A freshly initialised tiny Qwen2ForCausalLM for `tokenizer` (seeded: the same weights every time)."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=padded_vocab_size(len(tokenizer)),
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
        **TINY_SIZES,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(TINY_SEED)
        model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.bos_token_id = None
    return model.eval()


def load_tiny_qwen2(*, cache: bool = True) -> tuple[Any, Any]:
    """The tiny random Qwen2 model and the Qwen2 tokenizer, built once and cached on disk.

    The cached folder is used only if every file matches the sha256 its manifest
    records; otherwise the model is rebuilt and the folder replaced. With `cache=False`,
    `PDA_CACHE=0` or a folder that cannot be written, the model is built in memory.
    """
    from transformers import Qwen2ForCausalLM

    tokenizer = load_qwen2_tokenizer()
    target = tiny_model_dir()
    use_cache = cache and pda_cache.enabled()
    if use_cache and _verified(target):
        model = Qwen2ForCausalLM.from_pretrained(target)
        return model.eval(), tokenizer
    model = build_tiny_qwen2(tokenizer)
    if use_cache:
        try:
            _save_atomically(model, target)
        except OSError:
            pass  # no usable cache folder: the model in memory is the same
    return model, tokenizer


def _file_hashes(folder: Path) -> dict[str, str]:
    """sha256 of every file in `folder` but the manifest, by name."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.iterdir())
        if p.is_file() and p.name != MANIFEST
    }


def _verified(folder: Path) -> bool:
    """Does `folder` hold exactly the files its manifest lists, each with the recorded hash?"""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
        return isinstance(manifest, dict) and bool(manifest) and manifest == _file_hashes(folder)
    except (OSError, ValueError):
        return False


def _save_atomically(model: Any, target: Path) -> None:
    """Write the model and its manifest to a temporary folder next to `target`, then rename it into place.

    A `target` that does not verify (a damaged or partial copy) is removed first.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}-"))
    try:
        model.save_pretrained(tmp)
        (tmp / MANIFEST).write_text(json.dumps(_file_hashes(tmp), indent=1))
        if target.exists() and not _verified(target):
            shutil.rmtree(target, ignore_errors=True)
        try:
            os.replace(tmp, target)
        except OSError:
            if not _verified(target):  # not a concurrent writer that got there first
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
