"""NFA construction over atoms, subset construction and minimisation.

Automata here read atoms (`charset.Alphabet`: classes of code points that every
character class of the regex treats alike), not bytes; `pda.regex.utf8` expands
the minimal atom-level DFA into bytes at the end. Determinising over atoms keeps
Unicode-wide classes (`\\w`, `[^"]`) one edge each instead of hundreds of
UTF-8 byte paths.

Invariants:
- `NFA.build(node, s, e)` adds paths from s to e spelling exactly node's
  language; it adds edges out of s and into e but never out of e or into s, so
  fragments may share their endpoints (alternatives share both, which keeps big
  literal alternations trie-shaped).
- A DFA state is the set of "important" NFA states (with atom edges, or final)
  of an ε-closure. A lazy terminal's NFA states stop moving once the set holds
  that terminal's final state: this prunes exactly the first-match language
  (UTF-8 is a prefix code, so first match over characters is first match over
  bytes).
- Minimisation (`pda.regex.dfa._minimise`) is Hopcroft's algorithm, compiled
  (`pda.kernels.partition`), on the partial DFA (states that can still accept
  something, transitions into the dead state left out), with every initial
  block in the worklist, which is what partial DFAs need.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

import numpy as np

from pda.errors import LimitExceeded
from pda.regex import charset as cs
from pda.regex.syntax import Alt, Chars, FirstMatch, Guard, Node, Repeat, Seq, drive


class NFA:
    """An ε-NFA over atoms; `edges[q]` holds (atoms, target)."""

    def __init__(self, alphabet: cs.Alphabet, max_states: int) -> None:
        self.alphabet = alphabet
        self.eps: list[list[int]] = []
        self.edges: list[list[tuple[tuple[int, ...], int]]] = []
        self.max_states = max_states
        self.subdfa = None  # set by the caller: Node -> atom DFA (trans [n, atoms], accept)

    def state(self) -> int:
        self.eps.append([])
        self.edges.append([])
        if len(self.eps) > self.max_states:
            raise LimitExceeded(f"NFA has more than {self.max_states} states")
        return len(self.eps) - 1

    def build(self, node: Node, s: int, e: int) -> None:
        drive(self._build(node, s, e))

    def _build(self, node: Node, s: int, e: int) -> Generator[Any, None, None]:
        """`build` as a generator that yields its sub-builds (run by `drive`: no recursion)."""
        if isinstance(node, Chars):
            atoms = self.alphabet.atoms(node.chars)
            if atoms:
                self.edges[s].append((atoms, e))
        elif isinstance(node, Seq):
            if not node.items:
                self.eps[s].append(e)
                return
            cur = s
            for i, item in enumerate(node.items):
                nxt = e if i == len(node.items) - 1 else self.state()
                yield self._build(item, cur, nxt)
                cur = nxt
        elif isinstance(node, Alt):
            for item in node.items:
                yield self._build(item, s, e)
        elif isinstance(node, Repeat):
            yield from self._repeat(node, s, e)
        elif isinstance(node, (FirstMatch, Guard)):
            trans, accept = self.subdfa(node)
            self.embed(trans, accept, s, e)
        else:  # pragma: no cover - the IR is closed
            raise TypeError(node)

    def _repeat(self, node: Repeat, s: int, e: int) -> Generator[Any, None, None]:
        item, lo, hi = node.item, node.lo, node.hi
        cur = s
        mandatory = lo if hi is not None else max(lo - 1, 0)
        for _ in range(mandatory):
            nxt = self.state()
            yield self._build(item, cur, nxt)
            cur = nxt
        if hi is None:
            # (lo-1) copies then X+ (or X* when lo == 0), with fresh hub states.
            a, b = self.state(), self.state()
            self.eps[cur].append(a)
            yield self._build(item, a, b)
            self.eps[b].append(a)
            self.eps[b].append(e)
            if lo == 0:
                self.eps[a].append(e)
            return
        if hi == lo:
            self.eps[cur].append(e)
            return
        # Nested optionals: every copy may skip straight to the end, so each
        # ε-closure stays two states wide however large the bound is.
        for i in range(hi - lo):
            nxt = e if i == hi - lo - 1 else self.state()
            self.eps[cur].append(e)
            yield self._build(item, cur, nxt)
            cur = nxt

    def embed(self, trans: np.ndarray, accept: np.ndarray, s: int, e: int) -> None:
        """Splice an atom DFA (start 0, -1 = dead) in between s and e."""
        n = trans.shape[0]
        ids = [s] + [self.state() for _ in range(n - 1)]
        if n and bool((trans == 0).any()):
            # the start state is re-entered: give it a fresh state so s gets no incoming edges
            fresh = self.state()
            self.eps[s].append(fresh)
            ids[0] = fresh
        for q in range(n):
            row = trans[q]
            order = np.argsort(row, kind="stable")
            targets, first = np.unique(row[order], return_index=True)
            for t, group in zip(targets.tolist(), np.split(order, first[1:])):
                if t >= 0:
                    self.edges[ids[q]].append((tuple(group.tolist()), ids[t]))
            if accept[q]:
                self.eps[ids[q]].append(e)


def determinise(
    nfa: NFA,
    start: int,
    finals: Sequence[int],
    owner: Sequence[int],
    lazy: Sequence[bool],
    max_states: int,
    names: Sequence[str],
) -> tuple[np.ndarray, np.ndarray]:
    """Subset construction. Returns (trans [n, atoms] with -1 for dead, accept [n, t])."""
    k = nfa.alphabet.n_atoms
    edges = nfa.edges
    final_term = {f: j for j, f in enumerate(finals)}
    important = [bool(edges[q]) or q in final_term for q in range(len(edges))]
    memo: dict[int, frozenset[int]] = {}

    def closure(q: int) -> frozenset[int]:
        got = memo.get(q)
        if got is not None:
            return got
        seen = {q}
        stack = [q]
        while stack:
            x = stack.pop()
            for y in nfa.eps[x]:
                if y not in seen:
                    seen.add(y)
                    stack.append(y)
        got = frozenset(x for x in seen if important[x])
        memo[q] = got
        return got

    any_lazy = any(lazy)
    first = closure(start)
    index: dict[frozenset[int], int] = {first: 0}
    sets = [first]
    rows: list[list[int]] = []
    i = 0
    while i < len(sets):
        S = sets[i]
        i += 1
        done: set[int] = set()
        if any_lazy:
            done = {final_term[q] for q in S if q in final_term and lazy[final_term[q]]}
        moves: dict[int, set[int]] = {}
        for q in S:
            if done and owner[q] in done:
                continue
            for atoms, t in edges[q]:
                for c in atoms:
                    m = moves.get(c)
                    if m is None:
                        moves[c] = {t}
                    else:
                        m.add(t)
        row = [-1] * k
        seen_targets: dict[frozenset[int], int] = {}
        for c, T in moves.items():
            key = frozenset(T)
            j = seen_targets.get(key)
            if j is None:
                closed = frozenset().union(*(closure(t) for t in T))
                j = index.get(closed)
                if j is None:
                    j = len(sets)
                    if j >= max_states:
                        raise LimitExceeded(
                            f"lexer DFA for terminal(s) {', '.join(names)} exceeds "
                            f"max_states={max_states} (before minimisation)"
                        )
                    index[closed] = j
                    sets.append(closed)
                seen_targets[key] = j
            row[c] = j
        rows.append(row)
    trans = np.array(rows, dtype=np.int64).reshape(len(rows), k)
    accept = np.zeros((len(sets), len(finals)), dtype=bool)
    for s_id, S in enumerate(sets):
        for q in S:
            j = final_term.get(q)
            if j is not None:
                accept[s_id, j] = True
    return trans, accept


def coaccessible(trans: np.ndarray, accept_any: np.ndarray) -> np.ndarray:
    """States from which some accepting state is reachable (trans uses -1 for dead)."""
    n = trans.shape[0]
    src, _ = np.nonzero(trans >= 0)
    tgt = trans[trans >= 0]
    order = np.argsort(tgt, kind="stable")
    src, tgt = src[order], tgt[order]
    starts = np.searchsorted(tgt, np.arange(n + 1))
    good = accept_any.copy()
    stack = list(np.flatnonzero(good))
    srcl = src.tolist()
    startl = starts.tolist()
    while stack:
        t = stack.pop()
        for p in srcl[startl[t] : startl[t + 1]]:
            if not good[p]:
                good[p] = True
                stack.append(p)
    return good
