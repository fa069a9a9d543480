"""Byte regexes as hash-consed terms, their Brzozowski derivatives, and DFAs whose states are made when first
reached (`pda.kernels._derive`, pda/kernels/_derive.c).

Why: an eager terminal DFA is built whole at compile, so a counted string (`.{50000}`, a JSON Schema
`maxLength`) costs its count times its body before one byte is read. Here a state is a term, the
derivative of the start by the bytes read so far, made the first time a step reaches it; a counted
repeat stays one symbolic term (`REPEAT(a, lo, hi)`), so what is paid is what is visited.

`Arena(max_bytes=unbounded)` holds terms, hash-consed (equal terms are one int id, whichever DFA or
grammar made them), their byte classes and their derivatives, memoised. Constructors, each returning
a term id: `empty()` (no word), `eps()` (the empty word), `full()` (every byte string),
`bytes_(mask)` (one byte from a set: an int whose bit b is byte b, or 32 bytes, bit b % 8 of byte
b // 8), `concat(a, b)`, `or_(*ts)` (EMPTY for none), `and_(*ts)` (FULL for none), `not_(t)` (the
complement among all byte strings), `repeat(t, lo, hi)` (t{lo,hi}; hi -1: unbounded; never
unrolled), `first(t)` (the words of t with no proper prefix in t: first match). Queries:
`nullable(t)`, `live(t)` (t holds some word), `derivative(t, byte)`; `n_terms`, `nbytes` (what the
arena and its DFAs hold), `max_bytes`. Constructors normalise (OR/AND flat, sorted, deduplicated,
EMPTY/FULL absorbed, one-byte sets merged; CONCAT right-nested without EPS; NOT NOT a = a; ...), so
a term's derivatives are finitely many.

`Lazy(arena, term, max_states=2**31-1)` is the DFA of a term: state 0 the start, `dead` the state of
the empty language (0 when the start's language is empty, else 1), and every state not dead has a
word ahead (a derivative whose language is empty goes to `dead`). `step(state, byte)`;
`successors(state)` (its 256 successors as native int32 bytes, made if new); `run(state, data)`
(the state after `data`, stopping at `dead`; inputs of 256 bytes or more run without the GIL);
`run_many(state, data)` (the state after each bytes object of a sequence, from `state`, as native
int32 bytes: a vocabulary in one call); `accept(state)` (nullable); `live(state)` (not dead);
`term(state)`; `n_states`; `arena`. A transition is computed once, for every byte of its class,
and read without a lock from then on; making terms or states takes the arena's lock (not the
GIL), so threads may step DFAs of one arena at once.

Failures: a new term, memo or state that would take the arena past `max_bytes` raises
`pda.errors.LimitExceeded` naming the budget (the arena stays usable for everything already made),
as does a DFA past `max_states` or a term nesting deeper than 1,000 levels (derivatives recurse
through a term: ~160 bytes of C stack a level, so 1,000 levels run in a thread of 256 KB);
MemoryError when an allocation fails. Arguments that are not terms of the arena, states of the DFA or bytes raise
ValueError.

The C interface (`_derive._C_API`, a capsule named "pda.kernels._derive._C_API" pointing to a
struct of four functions, in this order):
    void *core(PyObject *lazy)        the DFA's core (NULL and TypeError if not a Lazy); needs the GIL,
                                      valid while the Lazy lives
    int step(void *core, int32_t state, int byte, int32_t *out)
                                      0 and the next state in *out, or a failure code: 1 no memory,
                                      2 arena budget, 3 max_states, 4 nesting; no GIL needed
    int accept(void *core, int32_t state)
    int32_t dead(void *core)
A caller passes only states the DFA gave it (they are not checked).
"""

from __future__ import annotations

from pda.kernels import _derive

Arena = _derive.Arena
Lazy = _derive.Lazy
