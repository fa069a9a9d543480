"""An indenter state's probe over a parser lexeme, one compiled module (`pda.kernels._indent`, pda/kernels/_indent.c).

Two base types for `pda.parser.indent`, which subclasses them and owns their meaning:

* `IndenterTables`: the bit sets a probe reads, as attributes the subclass's `__init__`
  sets (Python ints): `special` (terminals whose lexeme is not just a parser lexeme:
  newlines, continuations, the first line's indentation, ignored text after a
  continuation), `brackets`, `opens`, `not_parser_only`, `in_brackets`, `newline`,
  `continuation`; and `line_mode`, the mode of a state after a parser lexeme.
* `IndentedState`: a state's fields as attributes (`indenter`, an `IndenterTables`;
  `earley`, `stack`, `depth`, `line_start`, `mode`, `may_end`, `continued`, `allowed`,
  `_next`, `_accepting`, `_cache`; one not set reads None) and `probe(terminals)`.

`probe(terminals)` is the subclass's `_step(terminals & allowed, probe=True)` (None when
that set is empty; the `_next` dict's entry when there is one): for a lexeme of parser
terminals only, the Earley node's `probe`, the bracket depth moved, and a new state of
the same type with the same stack, mode `line_mode`, `line_start`, `may_end` and
`continued` False, and its `allowed` set (the subclass's `_allowed()` when the depth is
0 and the parser can take a newline: those rules read the stack). Other lexemes call
`_step`. Nothing is memoised or interned.

Why C: a mask probes every lexeme boundary its tokens cross, python.lark ~230 of them a
computed mask, and in Python the wrapper around the Earley probe (three calls, a class
call, a dozen attribute writes) cost twice the probe itself.
"""

from __future__ import annotations

from pda.kernels._indent import IndentedState, IndenterTables

__all__ = ["IndentedState", "IndenterTables"]
