"""The scanner's byte loop, one compiled module (`pda.kernels._scan`, pda/kernels/_scan.c).

`ByteLoop(tables_of, priority, ignore, basic)` is the base type of `pda.scanner.Scanner`,
which owns its meaning (the module docstring there): `tables_of(candidates)` gives a
candidate set's `LexerTables` (`Lexer.tables`), `priority` the terminals' priorities
(`Lexer.priority`), `ignore` the `%ignore` terminals as an int bitmask, `basic` whether
the tables' `extends` can differ from liveness (the basic lexer mode).

* `scan(node, q, data)` -> `(node, q, consumed)`: feed bytes from parser node `node` and
  lexer state `q` until one is refused (`consumed` of them); the state before that byte.
* `feed(node, q, data)` -> `(node, q)`, or None if some byte is refused.
* `commit(node, q)` -> the parser node after the lexeme pending in state `q` ends (`node`
  itself at START), None if it cannot; `can_end(node, q)` -> whether the text may end
  there (that node exists and `accepting`).

It reads a candidate set's tables in place: `trans` (int32 [rows, classes]; a negative
entry, a lazy terminal's not filled yet, is asked of `row(q)[c]`), `cls`, `start` (the row
START reads), `extends` in the basic mode, and what `packed_rows()` hands the walk kernel:
per row the live terminals and the accept row, and the distinct accept rows, as 64-bit
words. A state is live where a candidate is (`live_flag`); a lexeme ending in q is typed
as the top-priority candidates of its accept row (`Lexer.best` of `accept_at`), and the
node advances by them where it takes some (`Scanner.commit`). Those commits are memoised
per (allowed set, state); a node is anything with `allowed` and `advance` (an Earley
`Node`, an `IndentedNode`). `pda.reference.reference_scan` is the plain-Python loop the
tests compare it to (`reference_commit`, `reference_can_end` the others').

Why C: accepting a token is this loop over its bytes, with a commit at most lexeme
boundaries. In Python it cost ~1.6 µs a token warm (JSON Schema documents, ~3 bytes a
token; here ~0.25 µs), and cold most of the first document's accept time went to
working out per-state flags and accept sets through the tables' Python methods; the
masks ask `can_end` at nearly every new state.
"""

from __future__ import annotations

from pda.kernels._scan import ByteLoop

__all__ = ["ByteLoop"]
