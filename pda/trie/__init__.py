"""The finite-set lookup: terminals that are an alternation of many literal strings, answered by table.

A finite-set terminal's minimal DFA is built in `pda.regex.finite_set`. Here
`pda.trie.join` joins every state of such a DFA with the vocabulary trie at
once, and `pda.trie.lookup.FiniteSetLookup` answers the token index from that
table for the lexer states where the terminal alone is live (the index consults
it through `pda.index.lookup.StateLookup`; `pda.compile` wires it in). This
package sits above the token index and imports it; the index never imports this
package. See docs/finite_set.md.
"""
