"""The scanner's byte loop, one compiled module (`pda.kernels._scan`, pda/kernels/_scan.c).

`ByteLoop(tables_of, best, ignore)` is the base type of `pda.scanner.Scanner`, which owns
its meaning (the module docstring there): `tables_of(candidates)` gives a candidate set's
`LexerTables` (`Lexer.tables`), `best(matched)` the top-priority terminals among those a
lexeme matches (`Lexer.best`), `ignore` the `%ignore` terminals as an int bitmask.

* `scan(node, q, data)` -> `(node, q, consumed)`: feed bytes from parser node `node` and
  lexer state `q` until one is refused (`consumed` of them); the state before that byte.
* `feed(node, q, data)` -> `(node, q)`, or None if some byte is refused.

Per byte it reads the candidate set's tables in place: `trans` (int32 [rows, classes]),
`cls`, `start` (the row START reads), `live_flags` and `extends` (a bytearray or a tuple).
Where the Python loop would call the tables (a lazy entry not filled yet, a negative
transition: `row(q)[c]`; a view's `UNKNOWN` flag: `live_flag(q)`) it calls them; a
lexeme's commit is `Scanner.commit` (`accept_at`, `best`, the node's `advance`), with
the typed terminals, and whether the node takes them, memoised per (allowed set, state).
Nodes are anything with `allowed` and `advance` (an Earley `Node`, an `IndentedNode`).
`pda.reference.reference_scan` is the plain-Python loop the tests compare it to.

Why C: accepting a token is this loop over its bytes, with a commit at most lexeme
boundaries; in Python it cost ~1.6 µs a token warm (JSON Schema documents, ~3 bytes a
token), most of it interpreter work around a few table reads.
"""

from __future__ import annotations

from pda.kernels._scan import ByteLoop

__all__ = ["ByteLoop"]
