"""Models for the demo, the tests and the benchmarks: a tiny random Qwen2, or a local model.

Nothing here downloads. The tiny model is a Qwen2-architecture causal LM with
small sizes (hidden 64, 2 layers, 4 heads), randomly initialised with a fixed
seed, around the real Qwen2 tokenizer (`pda.demo.qwen.load_qwen2_tokenizer`). Its
vocabulary is the tokenizer's full size (specials included) padded up to a
multiple of 64, as real Qwen2 checkpoints pad theirs, so its logits are wider
than the tokenizer: the padding ids must never be sampled. The weights say
nothing about language; what the model shows is that every constrained output
parses whatever the logits are, and what the constraint costs per token.

The model is saved under `pda.demo.qwen.cache_dir() / "models"` after the first
build and loaded from there afterwards (identical weights either way).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from pda.demo.qwen import cache_dir, load_qwen2_tokenizer

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

    With `cache=False` the model is built in memory and nothing is written.
    """
    from transformers import Qwen2ForCausalLM

    tokenizer = load_qwen2_tokenizer()
    target = tiny_model_dir()
    if cache and (target / "config.json").is_file():
        model = Qwen2ForCausalLM.from_pretrained(target)
        return model.eval(), tokenizer
    model = build_tiny_qwen2(tokenizer)
    if cache:
        _save_atomically(model, target)
    return model, tokenizer


def _save_atomically(model: Any, target: Path) -> None:
    """Write the model to a temporary folder next to `target`, then rename it into place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}-"))
    try:
        model.save_pretrained(tmp)
        try:
            os.replace(tmp, target)
        except OSError:
            if not (target / "config.json").is_file():  # not a concurrent writer that got there first
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def load_model(path: str | os.PathLike[str] | None = None, *, device: str | None = None) -> tuple[Any, Any]:
    """`(model, tokenizer)`: a local transformers checkpoint at `path`, or the tiny random Qwen2 when None.

    A local path is read with `local_files_only=True`: nothing is downloaded.
    """
    if path is None:
        model, tokenizer = load_tiny_qwen2()
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        local = Path(path)
        if not local.is_dir():
            raise FileNotFoundError(f"--model {path}: not a local model folder (nothing is downloaded)")
        tokenizer = AutoTokenizer.from_pretrained(local, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(local, local_files_only=True).eval()
    if device is not None:
        model = model.to(device)
    return model, tokenizer
