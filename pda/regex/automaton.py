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
  literal alternations trie-shaped). A `Graph` (a terminal given as an automaton
  over regexes, `pda.grammar.ir.TerminalAutomaton`) is built the same way: a fresh
  NFA state per automaton state, each edge's regex built between its two states,
  ε from s to the start and from each accepting state to e; so its NFA is as large
  as the automaton plus its labels' fragments.
- A DFA state is the set of "important" NFA states (with atom edges, or final)
  of an ε-closure (the subset construction is compiled: `pda.kernels.subsets`,
  its oracle `pda.reference.reference_subsets`). A lazy terminal's NFA states
  stop moving once the set holds that terminal's final state: this prunes exactly
  the first-match language (UTF-8 is a prefix code, so first match over
  characters is first match over bytes).
- Minimisation (`pda.regex.dfa._minimise`) is Hopcroft's algorithm, compiled
  (`pda.kernels.partition`), on the partial DFA (states that can still accept
  something, transitions into the dead state left out), with every initial
  block in the worklist, which is what partial DFAs need.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from pda.errors import LimitExceeded
from pda.kernels import subsets
from pda.regex import charset as cs
from pda.regex.syntax import Alt, Chars, FirstMatch, Guard, Node, Repeat, Seq, drive


@dataclass(frozen=True, eq=False)
class Graph:
    """A terminal automaton with its edge regexes translated: states 0..n_states-1, edge j going from
    `source[j]` to `target[j]` on the regex `labels[label[j]]` (int64 arrays; `labels` distinct, in the
    order the edges first use them)."""

    n_states: int
    start: int
    accept: tuple[int, ...]
    labels: tuple[Node, ...]
    source: np.ndarray
    label: np.ndarray
    target: np.ndarray


class _Template(NamedTuple):
    """A node's fragment as its first build added it, to add again between other endpoints.

    Targets are -1 for the fragment's end, else the offset of an inner state from the first
    state the build made (no fragment edge enters its start: the `NFA.build` invariant).
    """

    n_states: int
    start_eps: list[int]
    start_edges: list[tuple[tuple[int, ...], int]]
    eps: list[list[int]]
    edges: list[list[tuple[tuple[int, ...], int]]]


class NFA:
    """An ε-NFA over atoms; `edges[q]` holds (atoms, target).

    A node built a second time (a counted repeat's copies, an automaton's edges with one
    label) is a copy of its first build's fragment, states and edges in the same order:
    the NFA is the one building every copy afresh would give, at a fraction of the cost
    (o79409's 3,070-edge string automaton: ~111k `_build` steps).
    """

    def __init__(self, alphabet: cs.Alphabet, max_states: int) -> None:
        self.alphabet = alphabet
        self.eps: list[list[int]] = []
        self.edges: list[list[tuple[tuple[int, ...], int]]] = []
        self.max_states = max_states
        self.subdfa = None  # set by the caller: Node -> atom DFA (trans [n, atoms], accept)
        # by id(node), for nodes of the tree being built: where its first build is
        # (start, end, marks before, marks after), then its `_Template` once copied (None: not copyable)
        self._built: dict[int, tuple | _Template | None] = {}

    def state(self) -> int:
        self.eps.append([])
        self.edges.append([])
        if len(self.eps) > self.max_states:
            raise LimitExceeded(f"NFA has more than {self.max_states} states")
        return len(self.eps) - 1

    def build(self, node: Node | Graph, s: int, e: int) -> None:
        if isinstance(node, Graph):
            ids = [self.state() for _ in range(node.n_states)]
            self.eps[s].append(ids[node.start])
            for q in node.accept:
                self.eps[ids[q]].append(e)
            for q, i, r in zip(node.source.tolist(), node.label.tolist(), node.target.tolist()):
                if not self._placed(node.labels[i], ids[q], ids[r]):
                    drive(self._fresh(node.labels[i], ids[q], ids[r]))
            return
        drive(self._build(node, s, e))

    def _marks(self, s: int) -> tuple[int, int, int]:
        return len(self.eps), len(self.eps[s]), len(self.edges[s])

    def _placed(self, node: Node, s: int, e: int) -> bool:
        """Add the node between s and e at once where that takes no recursion: a character set's edge, or a
        copy of the node's first build (`_copied`); False when it must be built (`_fresh`, run by `drive` or
        yielded to it). Most nodes are character sets: a generator apiece cost about as much as the rest of
        the build."""
        if isinstance(node, Chars):
            atoms = self.alphabet.atoms(node.chars)
            if atoms:
                self.edges[s].append((atoms, e))
            return True
        return self._copied(node, s, e)

    def _fresh(self, node: Node, s: int, e: int) -> Generator[Any, None, None]:
        """`_build`, its first build's marks recorded for later copies."""
        before = self._marks(s)
        yield self._build(node, s, e)
        self._built.setdefault(id(node), (s, e, before, self._marks(s)))

    def _copied(self, node: Node, s: int, e: int) -> bool:
        """Add the node's fragment between s and e as a copy of its first build; False when it has none."""
        made = self._built.get(id(node))
        if made is None:
            return False
        if not isinstance(made, _Template):
            made = self._built[id(node)] = self._template(*made)
            if made is None:
                return False
        base = len(self.eps)
        if base + made.n_states > self.max_states:
            raise LimitExceeded(f"NFA has more than {self.max_states} states")
        self.eps[s].extend([e if t < 0 else t + base for t in made.start_eps])
        self.edges[s].extend([(atoms, e if t < 0 else t + base) for atoms, t in made.start_edges])
        self.eps.extend([[e if t < 0 else t + base for t in out] for out in made.eps])
        self.edges.extend([[(atoms, e if t < 0 else t + base) for atoms, t in out] for out in made.edges])
        return True

    def _template(self, s: int, e: int, before: tuple[int, int, int], after: tuple[int, int, int]) -> _Template | None:
        """The fragment a first build added (its marks before and after), or None if it reaches
        states outside itself (its start, or any older state but its end)."""
        base, end = before[0], after[0]

        def local(t: int) -> int:
            if t == e:
                return -1
            if not base <= t < end:
                raise ValueError
            return t - base

        try:
            return _Template(
                end - base,
                [local(t) for t in self.eps[s][before[1]:after[1]]],
                [(atoms, local(t)) for atoms, t in self.edges[s][before[2]:after[2]]],
                [[local(t) for t in out] for out in self.eps[base:end]],
                [[(atoms, local(t)) for atoms, t in out] for out in self.edges[base:end]],
            )
        except ValueError:
            return None

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
            last = len(node.items) - 1
            for i, item in enumerate(node.items):
                nxt = e if i == last else self.state()
                if not self._placed(item, cur, nxt):
                    yield self._fresh(item, cur, nxt)
                cur = nxt
        elif isinstance(node, Alt):
            for item in node.items:
                if not self._placed(item, s, e):
                    yield self._fresh(item, s, e)
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
            if not self._placed(item, cur, nxt):
                yield self._fresh(item, cur, nxt)
            cur = nxt
        if hi is None:
            # (lo-1) copies then X+ (or X* when lo == 0), with fresh hub states.
            a, b = self.state(), self.state()
            self.eps[cur].append(a)
            if not self._placed(item, a, b):
                yield self._fresh(item, a, b)
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
            if not self._placed(item, cur, nxt):
                yield self._fresh(item, cur, nxt)
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
    """Subset construction (compiled: `pda.kernels.subsets`). Returns (trans [n, atoms] with -1 for dead, accept [n, t])."""
    found = subsets.determinise(nfa_arrays(nfa, finals, owner, lazy), start, nfa.alphabet.n_atoms, len(finals),
                                max_states)
    if found is None:
        raise LimitExceeded(
            f"lexer DFA for terminal(s) {', '.join(names)} exceeds max_states={max_states} (before minimisation)"
        )
    return found


def nfa_arrays(nfa: NFA, finals: Sequence[int], owner: Sequence[int], lazy: Sequence[bool]) -> subsets.NFAArrays:
    """The NFA in the kernel's CSR form: `finals[j]` is terminal j's final state, `owner[q]` q's terminal (-1: none)."""
    m = len(nfa.eps)
    final_term = np.full(m, -1, dtype=np.int64)
    final_term[np.asarray(finals, dtype=np.int64)] = np.arange(len(finals))
    owners = np.full(m, -1, dtype=np.int64)
    owners[: len(owner)] = owner
    return subsets.NFAArrays(*subsets.csr(nfa.eps, nfa.edges), final_term=final_term, owner=owners,
                             lazy=np.asarray(lazy, dtype=bool).reshape(-1))
