"""Bit helpers for the terminal sets that lexer, parser, index and finite-set lookup pass around.

A terminal set is a Python int with bit j set for terminal j (any size); these
helpers read such sets and import nothing from pda, so every layer may use them.
"""

from __future__ import annotations

from collections.abc import Iterator


def iter_bits(mask: int) -> Iterator[int]:
    """Indices of the set bits of `mask`, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low
