"""The subset construction of an epsilon-NFA over atoms, one compiled call (`pda.kernels._subsets`, pda/kernels/_subsets.c).

`determinise(nfa, start, n_atoms, n_terms, max_states)` takes the NFA as `NFAArrays`
(CSR arrays, all int64 but `lazy`):

* `eps_dst[eps_ptr[q]:eps_ptr[q+1]]`: q's epsilon successors;
* edges `edge_ptr[q]..edge_ptr[q+1]`: q's atom edges, edge e going to `edge_dst[e]` on
  the atoms `atoms[atom_ptr[e]:atom_ptr[e+1]]`;
* `final_term[q]`: the terminal whose final state q is, or -1; `owner[q]`: the
  terminal q belongs to, or -1; `lazy[j]`: terminal j stops at its first match.

A DFA state is the sorted set of "important" NFA states (with an atom edge, or final)
of an epsilon-closure. The first is the start's closure; the others are numbered as
they are met, states in id order and atoms in increasing order. Where a set holds a
lazy terminal's final state, that terminal's NFA states take no edge (first match).
Returns (trans int64 [n, n_atoms] with -1 for "no successor", accept bool [n, n_terms]),
or None when a state id would reach `max_states`. The kernel checks every index up
front (ValueError) and runs without the GIL. `pda.reference.reference_subsets` is the
plain-Python construction the tests compare it to, state for state.

`csr(eps, edges)` is the first six arrays of an NFA held as Python lists (`pda.regex.automaton.NFA`:
`eps[q]` q's epsilon successors, `edges[q]` its (atoms tuple, target) pairs), read in one compiled pass.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from pda.kernels import _subsets


class NFAArrays(NamedTuple):
    """An epsilon-NFA over atoms in CSR form (see the module docstring)."""

    eps_ptr: np.ndarray
    eps_dst: np.ndarray
    edge_ptr: np.ndarray
    atom_ptr: np.ndarray
    atoms: np.ndarray
    edge_dst: np.ndarray
    final_term: np.ndarray
    owner: np.ndarray
    lazy: np.ndarray


def csr(eps: list[list[int]], edges: list[list[tuple[tuple[int, ...], int]]]) -> tuple[np.ndarray, ...]:
    """(eps_ptr, eps_dst, edge_ptr, atom_ptr, atoms, edge_dst), int64, of an NFA held as lists (see above)."""
    return tuple(np.frombuffer(b, dtype=np.int64) for b in _subsets.csr(eps, edges))


def determinise(
    nfa: NFAArrays, start: int, n_atoms: int, n_terms: int, max_states: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """The subset construction (see the module docstring)."""
    arrays = [np.ascontiguousarray(a, dtype=np.int64) for a in nfa[:8]]
    lazy = np.ascontiguousarray(nfa.lazy, dtype=np.uint8)
    found = _subsets.determinise(*arrays, lazy, int(start), int(n_atoms), int(n_terms), int(max_states))
    if found is None:
        return None
    n, trans, accept = found
    return (np.frombuffer(trans, dtype=np.int64).reshape(n, n_atoms),
            np.frombuffer(accept, dtype=np.uint8).reshape(n, n_terms).astype(bool))
