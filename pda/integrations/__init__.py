"""Integrations with serving stacks: packed bitmask helpers, transformers."""
