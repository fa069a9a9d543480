"""Stateless helpers for the packed int32 token bitmask shared by serving engines.

Layout: `[batch, ceil(V/32)]` int32; bit `i % 32` of word `i // 32` is token i.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _count(value: Any, what: str) -> int:
    """A size argument as an int >= 0: TypeError for bool, float and the like, ValueError if negative."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an integer, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{what} must be >= 0, got {value}")
    return int(value)


def bitmask_width(vocab_size: int) -> int:
    """Words per row for a vocabulary (or logits) of `vocab_size`."""
    return (_count(vocab_size, "vocab_size") + 31) // 32


def allocate_token_bitmask(batch_size: int, vocab_size: int, *, torch_tensor: bool = False) -> Any:
    """A fresh bitmask with every token allowed (all ones), numpy or torch."""
    batch_size = _count(batch_size, "batch_size")
    if torch_tensor:
        import torch

        return torch.full((batch_size, bitmask_width(vocab_size)), -1, dtype=torch.int32)
    return np.full((batch_size, bitmask_width(vocab_size)), -1, dtype=np.int32)


def unpack_bitmask(bitmask: np.ndarray, vocab_size: int) -> np.ndarray:
    """Bool `[batch, vocab_size]` view of a packed numpy bitmask."""
    bits = np.unpackbits(np.ascontiguousarray(bitmask).view(np.uint8), axis=-1, bitorder="little")
    return bits[..., :vocab_size].astype(bool)


def apply_token_bitmask_inplace(logits: Any, bitmask: Any) -> None:
    """Set disallowed logits to -inf in place; `logits` is `[batch, V]` (torch or numpy).

    Columns past the bitmask's width are disallowed too.
    """
    if isinstance(logits, np.ndarray):
        allowed = unpack_bitmask(np.asarray(bitmask), logits.shape[-1])
        logits[~allowed] = -np.inf
        return
    import torch

    vocab = logits.shape[-1]
    mask = bitmask.to(logits.device) if bitmask.device != logits.device else bitmask
    shifts = torch.arange(32, device=logits.device, dtype=torch.int32)
    bits = ((mask.unsqueeze(-1) >> shifts) & 1).reshape(mask.shape[0], -1)
    allowed = torch.zeros(logits.shape, dtype=torch.bool, device=logits.device)
    n = min(vocab, bits.shape[-1])
    allowed[:, :n] = bits[:, :n].bool()
    logits.masked_fill_(~allowed, float("-inf"))
