"""One combined, minimised, byte-level DFA for a set of terminals.

State 0 is the start; `dead` is the one state with no way out (every class
maps it to itself) and it never accepts. `accept[s, j]`: the bytes read so
far are a whole lexeme of terminal j. `live[s, j]`: some continuation (maybe
the empty one) reaches `accept[., j]`. A byte string is accepted for terminal
j iff it is valid UTF-8 and its decoding `re.fullmatch`es j's pattern (for
lazy terminals and the escaped-string idiom: iff `re.match` returns exactly
it; see `pda.regex.syntax`). A byte-mode terminal (flag `b`) reads the bytes
themselves, as a Python bytes regex would (`utf8.expand_bytes`). A terminal given
as an automaton (`TerminalDef.automaton`) is its edges' regexes translated one by
one and spliced between the automaton's states in the NFA (`automaton.Graph`), so
its DFA costs what its automaton's size does, never a regex spelling it out.

Pipeline: regex → IR (`syntax`) → NFA over atoms, the classes of code points
that all of the regex's character classes treat alike (`charset.Alphabet`) →
subset construction (`automaton`) and Hopcroft minimisation (`pda.kernels.partition`) over atoms →
UTF-8 expansion into bytes with shared suffixes (`utf8`), which keeps the
result minimal → byte classes, dead state, live rows.
"""

from __future__ import annotations

import functools
import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from pda.arrays import distinct
from pda.cache import Invalid, take
from pda.errors import LimitExceeded
from pda.grammar.ir import TerminalDef
from pda.regex import charset as cs
from pda.regex import compose, utf8
from pda.kernels.partition import coaccessible, coarsest_partition, column_groups, minimal_dfa, row_groups
from pda.kernels.trie import literal_tables
from pda.regex.automaton import NFA, Graph, determinise
from pda.lru import budget_cache, register_budget
from pda.regex.syntax import (BYTE_MODE, EMPTY, Alt, Chars, FirstMatch, Guard, Node, Repeat, Seq, alternation_key,
                              structure_key, translate)

# A lexer DFA this large costs ~1-2 s to build and ~1 MB per 1,000 states of
# per-state token-index work later; callers serving many grammars pass less.
DEFAULT_MAX_DFA_STATES = 200_000
# The byte DFAs of the parts that composition builds through the NFA (`_composed`), by their
# structure: the JSON string character recurs in every string terminal of every schema, and
# costs ~2 ms to build each time. Parts of more than `LEAF_KEY_MAX_NODES` nodes are not kept.
LEAF_DFAS_MAX_BYTES = 16 << 20
LEAF_KEY_MAX_NODES = 4096
# The same memo keeps each terminal's DFA of at most this many states by its structure (`_one_terminal`), for the
# alternations of terminals (JSON Schema's `anyOf` of a string and a number: ~1.2 ms through the NFA).
UNION_PART_MAX_STATES = 256
register_budget("leaf_dfas", LEAF_DFAS_MAX_BYTES)
_leaves = budget_cache("leaf_dfas")
_BYTES = np.arange(256, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class LexerDFA:
    """An immutable byte-level DFA recognising several terminals at once."""

    n_states: int
    start: int
    dead: int
    byte_class: np.ndarray  # int32 [256]
    trans: np.ndarray  # int32 [n_states, n_classes]
    accept: np.ndarray  # bool [n_states, n_terminals]
    live: np.ndarray  # bool [n_states, n_terminals]
    names: tuple[str, ...] = ()
    # The digest of a DFA whose tables are a function of something shorter, given when it is built
    # (a literal's chain: a hash of its bytes); None: `digest` hashes the tables.
    named_digest: str | None = field(default=None, compare=False, repr=False)

    @functools.cached_property
    def digest(self) -> str:
        """A content hash of the DFA, its state numbering included (hashed once per DFA object; the terminal
        cache shares DFAs between grammars). A literal's chain (`literal_dfa`) is named by a hash of its bytes
        instead: the lexer digests hundreds of keys per JSON Schema, and hashing their tables cost ~2.5 us each."""
        if self.named_digest is not None:
            return self.named_digest
        h = hashlib.sha256()
        for array in (self.trans, self.byte_class, self.accept, self.live):
            h.update(np.ascontiguousarray(array))  # its buffer, not a copy (a contiguous array is itself)
        return h.hexdigest()[:32]

    @property
    def n_classes(self) -> int:
        return int(self.trans.shape[1])

    def step(self, s: int, b: int) -> int:
        return int(self.trans[s, self.byte_class[b]])

    def run(self, s: int, data: bytes) -> int:
        """Walk `data` from state s; returns `dead` as soon as the walk dies."""
        trans, byte_class, dead = self.trans, self.byte_class, self.dead
        for b in data:
            s = int(trans[s, byte_class[b]])
            if s == dead:
                return dead
        return s

    def accepts(self, data: bytes, terminal: int = 0) -> bool:
        """Is `data` one whole lexeme of the given terminal (index into `names`)?"""
        return bool(self.accept[self.run(self.start, data), terminal])

    def run_many(self, data: Sequence[bytes]) -> np.ndarray:
        """The state after each byte string, all walked at once (for tests and fuzzers)."""
        n = len(data)
        lens = np.fromiter(map(len, data), dtype=np.int64, count=n)
        states = np.full(n, self.start, dtype=np.int64)
        if not n or not lens.max():
            return states
        # bytes laid out row by row, longest strings first, so live rows are a prefix
        order = np.argsort(-lens, kind="stable")
        lens_sorted = lens[order]
        flat = np.frombuffer(b"".join(data[i] for i in order.tolist()), dtype=np.uint8)
        starts = np.concatenate(([0], np.cumsum(lens_sorted)[:-1]))
        cur = np.full(n, self.start, dtype=np.int64)
        for i in range(int(lens_sorted[0])):
            rows = int(np.searchsorted(-lens_sorted, -i, side="left"))  # strings longer than i
            cur[:rows] = self.trans[cur[:rows], self.byte_class[flat[starts[:rows] + i]]]
        states[order] = cur
        return states

    def accepts_many(self, data: Sequence[bytes], terminal: int = 0) -> np.ndarray:
        """`accepts` for many byte strings at once: a bool array."""
        return self.accept[self.run_many(data), terminal]

    @property
    def nbytes(self) -> int:
        """Bytes of the DFA's tables (what a memo of DFAs holds)."""
        return self.trans.nbytes + self.byte_class.nbytes + self.accept.nbytes + self.live.nbytes

    def to_arrays(self) -> tuple[dict, dict[str, np.ndarray]]:
        """(meta, arrays) for the disk cache (`from_arrays` reads them back, dtypes included)."""
        meta = {"n_states": self.n_states, "start": self.start, "dead": self.dead, "names": list(self.names)}
        return meta, {"byte_class": self.byte_class, "trans": self.trans, "accept": self.accept, "live": self.live}

    @classmethod
    def from_arrays(cls, meta: dict, arrays: dict[str, np.ndarray]) -> "LexerDFA":
        """The DFA `to_arrays` wrote, checked so that every transition stays in the table; raises `cache.Invalid`."""
        n, start, dead, names = meta["n_states"], meta["start"], meta["dead"], meta["names"]
        if not (isinstance(n, int) and isinstance(start, int) and isinstance(dead, int) and 0 <= start < n and 0 <= dead < n):
            raise Invalid("bad state counts")
        if not (isinstance(names, list) and all(isinstance(x, str) for x in names)):
            raise Invalid("bad terminal names")
        trans, byte_class = arrays.get("trans"), arrays.get("byte_class")
        if trans is None or byte_class is None or trans.dtype.kind not in "iu" or byte_class.dtype.kind not in "iu":
            raise Invalid("missing or non-integer tables")
        trans = take(arrays, "trans", trans.dtype, (n, None), (0, n))
        byte_class = take(arrays, "byte_class", byte_class.dtype, (256,), (0, trans.shape[1]))
        accept = take(arrays, "accept", bool, (n, None))
        live = take(arrays, "live", bool, accept.shape)
        return cls(n_states=n, start=start, dead=dead, byte_class=byte_class, trans=trans, accept=accept, live=live,
                   names=tuple(names))


def _freeze(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _charsets(root: Node | Graph, out: list) -> list:
    """Every character set in the IR tree (sub-automata included); an explicit stack, as trees nest deep."""
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, Graph):
            stack.extend(node.labels)
        elif isinstance(node, Chars):
            out.append(node.chars)
        elif isinstance(node, (Seq, Alt)):
            stack.extend(reversed(node.items))
        elif isinstance(node, (Repeat, FirstMatch)):
            stack.append(node.item)
        else:
            stack += [node.body, node.look]
    return out


def _compile_nodes(
    nodes: Sequence[Node | Graph], lazy: Sequence[bool], names: Sequence[str], max_states: int, byte_mode: bool = False
) -> LexerDFA:
    if len(nodes) == 1 and not lazy[0] and not byte_mode:
        return _one_terminal(nodes[0], names, max_states)
    byte_trans, accept = _byte_dfa(nodes, lazy, names, max_states, byte_mode)
    return _finish(_within_limit(byte_trans, names, max_states), accept, tuple(names), trimmed=True)


def _one_terminal(node: Node | Graph, names: Sequence[str], max_states: int) -> LexerDFA:
    """The DFA of one UTF-8 terminal that is not lazy: an alternation of terminals built before by their union
    (`_known_union`), composed (`pda.regex.compose`), or through the NFA; remembered for later unions."""
    branches = ([structure_key(item, LEAF_KEY_MAX_NODES) for item in node.items]
                if isinstance(node, Alt) and len(node.items) > 1 else None)
    if branches is not None:  # (an alternation's key from its branches' keys, which `_known_union` looks up)
        key = alternation_key(branches, LEAF_KEY_MAX_NODES)
    else:
        key = structure_key(node, LEAF_KEY_MAX_NODES) if isinstance(node, Node) else None
    found = _known_union(node, branches, names, max_states) if branches is not None else None
    if found is None and compose.worth_composing(node):
        found = _composed(node, names, max_states)
    if found is None:
        found = _through_nfa(node, names, max_states)
    if key is not None and found.n_states <= UNION_PART_MAX_STATES:
        _leaves.put(("terminal", key, max_states), found, found.nbytes)
    return found


def _known_union(node: Alt, branches: Sequence[tuple | None], names: Sequence[str],
                 max_states: int) -> LexerDFA | None:
    """The DFA of an alternation whose every branch is a terminal built before (`_one_terminal` remembers them by
    their structure keys, `branches`) or a set of ASCII strings, by the union of their DFAs (`compose.union`);
    None when a branch is neither, or when every branch is ASCII strings (`literal_set_dfa` numbers their states
    as the NFA does)."""
    known = []
    # first the memo alone: most alternations are not of terminals built before
    for item, key in zip(node.items, branches):
        known.append(_leaves.get(("terminal", key, max_states)) if key is not None else None)
        if known[-1] is None and not isinstance(item, (Chars, Seq, Alt)):  # never ASCII strings
            return None
    if not any(known):
        return None
    parts = []
    built_parts = 0
    for item, dfa in zip(node.items, known):
        part = compose.ascii_dfa(item)
        if part is None:
            if dfa is None:
                return None
            part = _partial(dfa)
            built_parts += item != EMPTY  # the empty string is an ASCII string too
        parts.append(part)
    if not built_parts:
        return None
    found = compose.union(parts, max_states)
    return None if found is None else _minimal(found, names, max_states)


def union_dfa(dfas: Sequence[LexerDFA], *, name: str = "<regex>",
              max_states: int = DEFAULT_MAX_DFA_STATES) -> LexerDFA | None:
    """The minimal DFA of the union of two or more one-terminal DFAs' languages (`compose.union`), without
    their regexes; None over `max_states` states. A terminal whose pattern is an alternation of others'
    (`pda.grammar.alternatives`) is built so from their DFAs, most often built before."""
    if len(dfas) < 2 or any(d.accept.shape[1] != 1 or d.dead != d.n_states - 1 for d in dfas):
        raise ValueError("union_dfa takes two or more one-terminal DFAs, each with its dead state last")
    found = compose.union([_partial(d) for d in dfas], max_states)
    return None if found is None else _minimal(found, (name,), max_states)


def _partial(dfa: LexerDFA) -> compose.Classed:
    """A one-terminal DFA (its dead state last) as composition reads one: its dead state left out (-1)."""
    trans = dfa.trans[: dfa.dead]
    return compose.Classed(np.where(trans == dfa.dead, -1, trans).astype(np.int32), dfa.accept[: dfa.dead, 0],
                           dfa.byte_class)


def _through_nfa(node: Node | Graph, names: Sequence[str], max_states: int) -> LexerDFA:
    """The DFA of one UTF-8 terminal that is not lazy through the NFA: its atom DFA minimised, spelled in UTF-8
    bytes (`utf8.expand`) and finished. One that reads ASCII alone (numbers, enums, most formats) is minimised and
    finished in one kernel call instead (`_minimal`, over its atoms as byte classes: for ASCII, `utf8.expand` only
    gives each byte its atom's column and the others none, so the two give the same tables)."""
    alphabet = cs.Alphabet(_charsets(node, []))
    trans, accept = _determinised([node], [False], names, max_states, alphabet)
    if (trans[:, utf8.wide_atoms(alphabet)] >= 0).any():
        atom_trans, atom_accept = _minimise(trans, accept)
        byte_trans = utf8.expand(atom_trans, alphabet)
        return _finish(_within_limit(byte_trans, names, max_states), atom_accept, tuple(names), trimmed=True)
    k = alphabet.n_atoms
    classes = np.full(256, k, dtype=np.int64)  # bytes past ASCII read the column k, where nothing goes
    classes[:128] = alphabet.atom_of(_BYTES[:128])
    table = np.full((len(trans), k + 1), -1, dtype=np.int64)
    table[:, :k] = trans
    return _minimal(compose.Classed(table, accept[:, 0], classes), names, max_states)


def _byte_dfa(
    nodes: Sequence[Node | Graph], lazy: Sequence[bool], names: Sequence[str], max_states: int, byte_mode: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """The minimal atom DFA of `nodes` spelled in bytes: (trans [m, 256] with -1 for dead, accept [n <= m, t])."""
    alphabet = cs.Alphabet([c for node in nodes for c in _charsets(node, [])])
    trans, accept = _minimise(*_determinised(nodes, lazy, names, max_states, alphabet))
    return (utf8.expand_bytes if byte_mode else utf8.expand)(trans, alphabet), accept


def _within_limit(byte_trans: np.ndarray, names: Sequence[str], max_states: int) -> np.ndarray:
    """`byte_trans`, or `LimitExceeded` naming the terminals when it has `max_states` states or more."""
    if len(byte_trans) >= max_states:
        raise LimitExceeded(
            f"lexer DFA for terminal(s) {', '.join(names)} exceeds max_states={max_states} "
            f"({len(byte_trans)} states once UTF-8 is spelled out)"
        )
    return byte_trans


def _composed(node: Node | Graph, names: Sequence[str], max_states: int) -> LexerDFA | None:
    """The minimal byte DFA of one terminal by deterministic composition (`pda.regex.compose`), or None."""

    def leaf(part: Node) -> compose.Classed:
        key = structure_key(part, LEAF_KEY_MAX_NODES)
        found = _leaves.get((key, max_states)) if key is not None else None
        if found is None:
            byte_trans, accept = _byte_dfa([part], [False], names, max_states)
            byte_accept = np.zeros(len(byte_trans), dtype=bool)
            byte_accept[: len(accept)] = accept[:, 0]
            trans, accept, classes = compose.Classed.of_bytes(byte_trans.astype(np.int32), byte_accept)[:3]
            found = compose.settled(compose.Classed(_freeze(trans), _freeze(accept), _freeze(classes)))
            if key is not None:
                _leaves.put((key, max_states), found, trans.nbytes + accept.nbytes + classes.nbytes)
        return found

    found = compose.composed(node, leaf, max_states)
    return None if found is None else _minimal(found, names, max_states)


def _minimal(found: compose.Classed, names: Sequence[str], max_states: int) -> LexerDFA:
    """The minimal DFA of a composed partial DFA whose every state is reachable from its start: what `_minimise`
    and then `_finish` make of it, in one kernel call (`minimal_dfa`; only finished when known minimal)."""
    # Minimised over the composition's byte classes (a few dozen), never spelled out over 256 bytes.
    byte_class, trans, accept = minimal_dfa(found.trans, found.accept, found.classes, found.minimal_acyclic)
    n = len(trans) - 1  # the dead state is last
    _within_limit(trans[:n], names, max_states)
    # Trimmed: every state but the start reaches an accepting one, or none does (the empty language).
    live = _trimmed_live(n, bool(accept[0])) if accept.any() else np.zeros((n + 1, 1), dtype=bool)
    return LexerDFA(n_states=n + 1, start=0, dead=n, byte_class=byte_class, trans=trans,
                    accept=_freeze(accept.reshape(n + 1, 1)), live=_freeze(live), names=tuple(names))


def classed_dfa(part: compose.Classed, *, name: str = "<regex>",
                max_states: int = DEFAULT_MAX_DFA_STATES) -> LexerDFA:
    """The minimal DFA of a partial DFA over byte classes, every state reachable from its start 0 (`_minimal`;
    `pda.regex.ranges` builds numeric range terminals so)."""
    return _minimal(part, (name,), max_states)


def _determinised(
    nodes: Sequence[Node | Graph],
    lazy: Sequence[bool],
    names: Sequence[str],
    max_states: int,
    alphabet: cs.Alphabet,
) -> tuple[np.ndarray, np.ndarray]:
    """The subset construction's DFA over atoms, every state reachable from the start 0: (trans [n, atoms] with
    -1 for dead, accept [n, t]); `_minimise` of it is the minimal, trimmed DFA over atoms."""
    nfa = NFA(alphabet, max_states=max(10 * max_states, 100_000))
    nfa.subdfa = lambda node: _subdfa(node, max_states, names, alphabet)
    start = nfa.state()
    finals: list[int] = []
    owner: list[int] = [-1]
    for j, node in enumerate(nodes):
        s, e = nfa.state(), nfa.state()
        nfa.eps[start].append(s)
        nfa.build(node, s, e)
        finals.append(e)
        owner.extend([j] * (len(nfa.eps) - len(owner)))
    return determinise(nfa, start, finals, owner, lazy, max_states, names)


def _minimise(trans: np.ndarray, accept: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Trim and minimise a partial DFA (-1 = dead); the start stays state 0, others by first appearance."""
    good = coaccessible(trans, accept.any(axis=1))
    good[0] = True  # the start stays a real state even if nothing is accepted
    if not good.all():
        keep = np.flatnonzero(good)
        renum = np.full(trans.shape[0], -1, dtype=np.int64)
        renum[keep] = np.arange(len(keep))
        trans = np.where(trans >= 0, renum[trans], -1)[keep]
        accept = accept[keep]
    block_of = coarsest_partition(trans, _accept_blocks(accept))
    # the blocks renumbered by their first state (the start's block is 0), and that state of each
    block_of, rep = row_groups(block_of[:, None], np.arange(len(block_of)))
    if len(rep) == len(trans):  # already minimal: each state its own block, numbered as before
        return trans, accept
    # A row's -1 (no transition) reads the -1 appended last.
    return np.append(block_of, -1)[trans[rep]], accept[rep]


def _accept_blocks(accept: np.ndarray) -> np.ndarray:
    """Minimisation's initial blocks: states with equal accept rows together (one terminal: its column)."""
    if accept.shape[1] == 1:
        return accept[:, 0].astype(np.int64)
    if not accept.shape[1]:
        return np.zeros(len(accept), np.int64)
    return utf8.distinct_rows(np.packbits(accept, axis=1))[1]


def _finish(
    trans: np.ndarray, accept: np.ndarray, names: tuple[str, ...], *, trimmed: bool = False,
    classes: np.ndarray | None = None,
) -> LexerDFA:
    """Byte classes, the dead state (last) and live rows for a DFA with -1 for dead.

    `trans` reads bytes (256 columns), or the columns `classes` maps each byte to.
    `trimmed`: every state but the start can reach an accept (the atom DFA went through
    `_minimise`, and UTF-8 expansion only adds states on the way to such states), and
    every state is reachable from the start. Then one terminal's live rows need no search.
    """
    m = trans.shape[0]
    dead = m
    # classes numbered by their lowest byte (a column no byte reads is dropped); the dead
    # state's row and -1 read as `dead` keep equal columns equal and distinct ones distinct
    byte_class, first = column_groups(trans, _BYTES if classes is None else classes)
    out = np.empty((m + 1, len(first)), dtype=np.int32)
    # (`take`: a large table's `trans[:, first]` cost 2-5x as much)
    out[:m] = trans if np.array_equal(first, np.arange(trans.shape[1])) else np.take(trans, first, axis=1)
    as_unsigned = out.view(np.uint32)
    np.minimum(as_unsigned, dead, out=as_unsigned)  # -1 (all ones) -> dead; states are below it
    out[m] = dead
    acc = np.zeros((m + 1, accept.shape[1]), dtype=bool)
    acc[: len(accept)] = accept
    if trimmed and acc.shape[1] == 1:
        live = _trimmed_live(m, bool(acc[0, 0]))
    else:
        live = _live_rows(out, acc, dead)
    return LexerDFA(
        n_states=m + 1,
        start=0,
        dead=dead,
        byte_class=_freeze(byte_class.astype(np.int32)),
        trans=_freeze(out),
        accept=_freeze(acc),
        live=_freeze(live),
        names=names,
    )


def _trimmed_live(m: int, start_accepts: bool) -> np.ndarray:
    """The live column of a trimmed one-terminal DFA of m states and its dead state m: all live but dead, and
    the start unless it is alone and rejecting (the empty language)."""
    live = np.ones((m + 1, 1), dtype=bool)
    live[m, 0] = False
    live[0, 0] = m > 1 or start_accepts
    return live


def _live_rows(trans: np.ndarray, accept: np.ndarray, dead: int) -> np.ndarray:
    """live[s, j]: an accepting state of terminal j is reachable from s (bitset propagation)."""
    n, t = accept.shape
    bits = [int.from_bytes(np.packbits(row, bitorder="little").tobytes(), "little") for row in accept]
    src, cls = np.nonzero(trans != dead)
    tgt = trans[src, cls]
    edges = distinct(tgt.astype(np.int64) * n + src)  # (target, source) pairs, each once, in that order
    preds: list[list[int]] = [[] for _ in range(n)]
    for tq, sq in zip((edges // n).tolist(), (edges % n).tolist()):
        if tq != sq:
            preds[tq].append(sq)
    stack = [q for q in range(n) if bits[q]]
    while stack:
        q = stack.pop()
        bq = bits[q]
        for p in preds[q]:
            if bits[p] | bq != bits[p]:
                bits[p] |= bq
                stack.append(p)
    nbytes = (t + 7) // 8
    packed = np.frombuffer(
        b"".join(b.to_bytes(nbytes, "little") for b in bits), dtype=np.uint8
    ).reshape(n, nbytes)
    return np.unpackbits(packed, axis=1, bitorder="little")[:, :t].astype(bool)


def _subdfa(
    node: Node, max_states: int, names: Sequence[str], alphabet: cs.Alphabet
) -> tuple[np.ndarray, np.ndarray]:
    """The atom DFA of a FirstMatch or Guard node, ready to splice into an NFA."""
    if isinstance(node, FirstMatch):
        trans, accept = _minimise(*_determinised([node.item], [True], names, max_states, alphabet))
        return trans, accept[:, 0]
    assert isinstance(node, Guard)
    body, bacc = _minimise(*_determinised([node.body], [False], names, max_states, alphabet))
    look, lacc = _minimise(*_determinised([node.look], [True], names, max_states, alphabet))
    try:
        return compose.guard_product((body, bacc[:, 0]), (look, lacc[:, 0]), node.negate, max_states)
    except LimitExceeded:
        raise LimitExceeded(f"look-ahead product for terminal(s) {', '.join(names)} exceeds max_states={max_states}") from None


def build_lexer_dfa(
    terminals: Sequence[TerminalDef], *, max_states: int = DEFAULT_MAX_DFA_STATES
) -> LexerDFA:
    """The minimised DFA of all `terminals` (column j of accept/live is terminals[j]).

    Byte-mode terminals (flag `b`, `pda.regex.syntax.BYTE_MODE`) read raw bytes, the
    others UTF-8; one call takes terminals of one kind (`pda.regex.product` combines DFAs).
    """
    names = [t.name for t in terminals]
    byte_mode = {BYTE_MODE in t.flags for t in terminals}
    if len(byte_mode) > 1:
        raise ValueError("build_lexer_dfa: byte-mode and UTF-8 terminals are compiled separately")
    nodes = [_translated(t) for t in terminals]
    try:
        return _compile_nodes(nodes, [t.lazy for t in terminals], names, max_states, byte_mode == {True})
    except LimitExceeded as e:
        raise LimitExceeded(f"{e} (terminals: {', '.join(names)})") from None


def _translated(t: TerminalDef) -> Node | Graph:
    """The terminal's regex IR, or its automaton with each distinct edge regex translated once."""
    a = t.automaton
    if a is None:
        return translate(t.pattern, t.flags, name=t.name, line=t.line)
    sources, texts, targets = zip(*a.edges) if a.edges else ((), (), ())
    index: dict[str, int] = {}  # each label's text -> its number, in order of first use
    label = np.fromiter((index.setdefault(text, len(index)) for text in texts), dtype=np.int64, count=len(texts))
    labels = tuple(translate(text, t.flags, name=t.name, line=t.line) for text in index)
    return Graph(a.n_states, a.start, a.accept, labels, np.array(sources, dtype=np.int64), label,
                 np.array(targets, dtype=np.int64))


def literal_dfa(data: bytes, *, name: str = "<literal>") -> LexerDFA:
    """The minimal DFA of one non-empty byte string, built directly (a chain of states).

    JSON Schema grammars have hundreds of single-literal key terminals; through the
    regex path each costs ~2 ms, this a few µs: the byte classes and transition table
    come from one compiled call (`pda.kernels.trie.literal_tables`, read-only int32
    arrays over its bytes), the accepting and live columns, which depend only on the
    length, are shared read-only arrays (`_literal_columns`). Minimal: state i accepts
    exactly `data[i:]`, and those suffixes differ in length. Its `digest` is a hash of `data`.
    """
    n = len(data)
    byte_class, trans = literal_tables(data)
    accept, live = _literal_columns(n)
    # Its digest names the bytes (the tables are a function of them), apart from every table hash by the prefix.
    return LexerDFA(n_states=n + 2, start=0, dead=n + 1, byte_class=byte_class, trans=trans, accept=accept,
                    live=live, names=(name,), named_digest=hashlib.sha256(b"literal\0" + data).hexdigest()[:32])


@functools.lru_cache(maxsize=256)
def _literal_columns(n: int) -> tuple[np.ndarray, np.ndarray]:
    """An n-byte literal's accepting column (its last state but dead) and live column (all but dead), read-only."""
    accept = np.frombuffer(bytes(n) + b"\x01\x00", dtype=np.bool_).reshape(n + 2, 1)
    live = np.frombuffer(b"\x01" * (n + 1) + b"\x00", dtype=np.bool_).reshape(n + 2, 1)
    return accept, live


def literal_set_dfa(strings: Sequence[bytes], *, name: str = "<regex>",
                    max_states: int = DEFAULT_MAX_DFA_STATES) -> LexerDFA:
    """The regex path's DFA of a few ASCII strings (`(?:a|b|c)`), built without the regex path.

    A JSON Schema enum of a few values is such a terminal: through regex, NFA and subset
    construction it costs ~0.3-0.6 ms, this ~30-100 us. A state is its right language, the
    sorted suffixes still to read (the minimal DFA's states, by Myhill-Nerode), and states are
    numbered breadth first by byte from the start, as the regex path numbers them: its subset
    construction discovers states breadth first by atom, which for ASCII are in byte order, and
    minimisation numbers each block by its first state. The tables come from `_finish`, as
    there, so the DFA is the same byte for byte (`tests/test_regex.py` compares digests).
    Strings with bytes over 127 take the regex path: UTF-8 expansion numbers states otherwise.
    """
    if not all(s.isascii() for s in strings):
        raise ValueError("literal_set_dfa: the strings must be ASCII")
    states = [tuple(sorted(set(strings)))]
    number = {states[0]: 0}
    rows: list[int] = []
    columns: list[int] = []
    targets: list[int] = []
    for i, suffixes in enumerate(states):  # grows while it is read: breadth first
        for b in sorted({s[0] for s in suffixes if s}):
            after = tuple(s[1:] for s in suffixes if s and s[0] == b)
            target = number.setdefault(after, len(states))
            if target == len(states):
                states.append(after)
            rows.append(i)
            columns.append(b)
            targets.append(target)
    trans = np.full((len(states), 256), -1, dtype=np.int64)
    trans[rows, columns] = targets
    accept = np.array([[suffixes[0] == b""] for suffixes in states], dtype=bool)  # sorted: b"" first
    return _finish(_within_limit(trans, (name,), max_states), accept, (name,), trimmed=True)


def compile_regex(pattern: str, flags: str = "", *, name: str = "<regex>", lazy: bool = False,
                  max_states: int = DEFAULT_MAX_DFA_STATES) -> LexerDFA:
    """The DFA of one regex (one terminal named `name`)."""
    return build_lexer_dfa(
        [TerminalDef(name=name, pattern=pattern, flags=flags, lazy=lazy)], max_states=max_states
    )


def sample_from_dfa(
    dfa: LexerDFA,
    terminal: int = 0,
    rng: random.Random | None = None,
    *,
    max_len: int = 64,
    stop_p: float = 0.3,
) -> bytes | None:
    """A random lexeme of `terminal` (None if it has none); for fuzzers.

    Walks only through states that can still accept, stops at an accepting
    state with probability `stop_p`, and past `max_len` heads for the nearest
    accepting state, so the result is always accepted.
    """
    rng = rng or random.Random()
    if not dfa.live[dfa.start, terminal]:
        return None
    dist = _distance_to_accept(dfa, terminal)
    class_bytes = [np.flatnonzero(dfa.byte_class == c) for c in range(dfa.n_classes)]
    out = bytearray()
    s = dfa.start
    while True:
        if dfa.accept[s, terminal] and (len(out) >= max_len or rng.random() < stop_p):
            return bytes(out)
        options = [c for c in range(dfa.n_classes) if dfa.live[dfa.trans[s, c], terminal]]
        if len(out) >= max_len:
            options = [c for c in options if dist[dfa.trans[s, c]] < dist[s]]
        if not options:
            return bytes(out)
        c = rng.choice(options)
        out.append(int(rng.choice(class_bytes[c])))
        s = int(dfa.trans[s, c])


def _distance_to_accept(dfa: LexerDFA, terminal: int) -> np.ndarray:
    dist = np.where(dfa.accept[:, terminal], 0, np.iinfo(np.int64).max)
    changed = True
    while changed:
        nxt = np.minimum(dist, np.min(dist[dfa.trans], axis=1) + 1)
        nxt = np.where(dist[dfa.trans].min(axis=1) == np.iinfo(np.int64).max, dist, nxt)
        changed = bool((nxt != dist).any())
        dist = nxt
    return dist
