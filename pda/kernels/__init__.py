"""Compiled kernels: `walk` wraps `_walk` (pda/kernels/_walk.c), the token index's trie walk; `partition` wraps
`_partition` (pda/kernels/_partition.c), DFA minimisation's partition refinement."""
