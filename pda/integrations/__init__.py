"""Integrations with serving stacks: packed bitmask helpers (`bitmask`), transformers (`transformers`)."""

from pda.integrations import bitmask

__all__ = ["bitmask"]
