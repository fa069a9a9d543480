"""Vocabularies the tests build themselves (no hub downloads here)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest


def train_sentencepiece(folder: Path, model_type: str, model_file: str):
    """Train a small SentencePiece model with byte fallback on generated text and stdlib source."""
    spm = pytest.importorskip("sentencepiece")
    import json

    rng = random.Random(1)
    words = ["hello", "world", "北京", "欢迎", "naïve", "Straße", "код", "the", "grammar", "token", "of"]
    lines = [" ".join(rng.choice(words) for _ in range(rng.randint(3, 12))) for _ in range(500)]
    lines += [line for line in Path(json.__file__).read_text().splitlines() if line.strip()][:300]
    (folder / "train.txt").write_text("\n".join(lines), encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(folder / "train.txt"),
        model_prefix=str(folder / "sp"),
        vocab_size=600 if model_type == "bpe" else 500,
        model_type=model_type,
        byte_fallback=True,
        character_coverage=1.0,
        minloglevel=2,
    )
    (folder / "sp.model").rename(folder / model_file)
    return spm.SentencePieceProcessor(model_file=str(folder / model_file))


def byte_pieces(texts: list[str], *, seed: int, pieces: int, longest: int) -> set[bytes]:
    """Every single byte and `pieces` random cuts of `texts` (UTF-8) at any byte, up to `longest` bytes
    (so characters are split among them): the base of the tests' synthetic vocabularies."""
    rng = random.Random(seed)
    data = [t.encode() for t in texts]
    tokens = {bytes([b]) for b in range(256)}
    for _ in range(pieces):
        t = rng.choice(data)
        i = rng.randrange(len(t))
        tokens.add(t[i : rng.randint(i + 1, min(len(t), i + longest))])
    return tokens
