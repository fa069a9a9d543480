"""Compiled kernels, each a C module (`_name`, pda/kernels/_name.c) behind a Python module that documents it:
`walk` (the token index's trie walk), `trie` (the trie of byte strings), `subsets` (the subset construction),
`partition` (DFA minimisation's partition refinement), `repeat` (a counted repeat written copy by copy),
`product` (the lexer's product DFA), `earley` (the Earley step), `tables` (the Earley parser's static tables),
`compose` (a mask's boundary groups composed), `scan` (the scanner's byte loop)."""
