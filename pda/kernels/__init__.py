"""Compiled kernels: `walk` wraps `_walk` (pda/kernels/_walk.c), the token index's trie walk."""
