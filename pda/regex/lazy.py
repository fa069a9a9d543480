"""A terminal's DFA made lazily: its regex IR as derivative terms (`pda.kernels.derive`), a state made
the first time a step reaches it.

Why: the eager path (`pda.regex.dfa`) builds every state at compile, so a counted string costs its
count times its body (`.{50000}` passes the 200,000-state limit; Github_hard---o79409's counted
string builds 76,004 states). Here a counted repeat stays one term and a state costs
when it is visited.

The same language as `dfa.compile_regex` / `dfa.build_lexer_dfa` for one terminal, state by state
(tests/test_lazy_dfa.py walks both in lockstep):
- a code-point set is its UTF-8 byte sequences as a trie of byte ranges (`utf8_sequences`: no
  overlong forms, no surrogates, nothing past U+10FFFF), or in byte mode (flag `b`) one byte set;
- `Seq`, `Alt`, `Repeat` are CONCAT, OR, REPEAT (counts kept symbolic);
- `FirstMatch(x)`, and a lazy terminal (`TerminalDef.lazy`) as a whole, are FIRST(x);
- `Guard(negate, look, body)` is body AND look·FULL (negated: body AND NOT(look·FULL)), the
  eager path's body ∩ look·Σ* (`compose.guard_product`): body's words are valid UTF-8 already.

Invariants: terms live in a module-level arena shared by every terminal (equal sub-terms are one
term), bounded by the memory budget `lazy_dfa_states`; a `LazyDFA` holds its arena alive, and a
new terminal starts a fresh arena once the current one holds half its budget (or the budget
changed), so a full arena only stops the DFAs already on it from making new states
(`LimitExceeded`), never grows past its budget. Terminals given as automata
(`TerminalDef.automaton`) are not built here yet (NotImplementedError).
"""

from __future__ import annotations

import collections
import functools
import itertools
import threading
from collections.abc import Generator, Sequence
from typing import Any

import numpy as np

from pda.errors import LimitExceeded
from pda.grammar.ir import TerminalDef
from pda.kernels.derive import Arena, Lazy
from pda.lru import budget_cache, register_budget
from pda.regex import charset as cs
from pda.regex.dfa import DEFAULT_MAX_DFA_STATES
from pda.regex.syntax import BYTE_MODE, Alt, Chars, FirstMatch, Guard, Node, Repeat, Seq, drive, translate

# The arena's budget: terms, their memos and every lazy DFA's rows (~1 KB a state). o79409's
# counted string, stepped by every Qwen2 token from three states, holds ~1 MB.
LAZY_DFA_MAX_BYTES = 64 << 20
register_budget("lazy_dfa_states", LAZY_DFA_MAX_BYTES)
# Holds the current arena, only to follow the budget's limit (resized by `pda.set_memory_budget`):
# the arena bounds its own bytes.
_arenas = budget_cache("lazy_dfa_states")
_arena_lock = threading.Lock()
# Counts the C core takes (int32, below its largest).
MAX_COUNT = 2**31 - 2
_serials = itertools.count()  # `LazyDFA.digest`
# The most states `LazyDFA.shortest` makes looking for an example lexeme (error messages).
SHORTEST_MAX_STATES = 4096


class LazyDFA:
    """One terminal's DFA, states made when first stepped to: start 0, `dead` the dead state.

    Every state but `dead` is live (some continuation is a lexeme), so `live(s)` is `s != dead`.
    `byte_class` (int32 [256], numbered by lowest byte) puts bytes together that no byte set of
    the regex tells apart, so every state steps them alike (a derivative holds only the regex's
    own byte sets): what a product of terminals needs of it. `digest` names this object's state
    numbering, unique in the process (states are numbered in the order first reached, so two
    DFAs of one pattern, or two processes, number them differently): caches keyed by states
    include it, and none of them goes to disk.
    """

    __slots__ = ("core", "name", "byte_class", "max_states", "digest")
    start = 0

    def __init__(self, core: Lazy, name: str, byte_class: np.ndarray, max_states: int) -> None:
        self.core = core
        self.name = name
        self.byte_class = byte_class
        self.max_states = max_states  # the most states the core makes (then a step raises LimitExceeded)
        self.digest = f"lazy-{next(_serials)}"

    @property
    def dead(self) -> int:
        return self.core.dead

    @property
    def n_states(self) -> int:
        """States made so far."""
        return self.core.n_states



    def step(self, state: int, byte: int) -> int:
        return self.core.step(state, byte)

    def run(self, state: int, data: bytes) -> int:
        """The state after `data` from `state` (`dead` as soon as the walk dies)."""
        return self.core.run(state, data)

    def run_many(self, state: int, data: Sequence[bytes]) -> bytes:
        """The state after each byte string from `state` (native int32), in one call."""
        return self.core.run_many(state, data)

    def successors(self, state: int) -> bytes:
        """The state's successors by byte 0..255 (256 native int32, made if new)."""
        return self.core.successors(state)

    def accept(self, state: int) -> bool:
        """Are the bytes read so far a whole lexeme?"""
        return self.core.accept(state)

    def live(self, state: int) -> bool:
        return self.core.live(state)

    def accepts(self, data: bytes) -> bool:
        """Is `data` one whole lexeme?"""
        return self.core.accept(self.core.run(0, data))

    def shortest(self, most: int = SHORTEST_MAX_STATES) -> bytes | None:
        """A shortest lexeme (breadth-first over each state's distinct successors), or None when none is found
        within `most` states (a search makes the states it meets: `.{50000}`'s would make ~200,000)."""
        seen = {0: b""}
        queue = collections.deque([0])
        while queue and len(seen) <= most:
            q = queue.popleft()
            if self.core.accept(q):
                return seen[q]
            successors = memoryview(self.core.successors(q)).cast("i").tolist()
            for b, q2 in enumerate(successors):
                if q2 not in seen and q2 != self.dead:
                    seen[q2] = seen[q] + bytes([b])
                    queue.append(q2)
        return None


def current_arena() -> Arena:
    """The arena new terminals are built on (a fresh one past half its budget or when the budget changed)."""
    with _arena_lock:
        limit = _arenas.max_bytes
        arena = _arenas.get("arena")
        if arena is None or arena.max_bytes != limit or arena.nbytes > limit // 2:
            arena = Arena(max_bytes=limit)
        _arenas.put("arena", arena, arena.nbytes)  # what `pda.memory_budgets()` reports (as of now)
        return arena


def compile_lazy(pattern: str, flags: str = "", *, name: str = "<regex>", lazy: bool = False,
                 max_states: int = DEFAULT_MAX_DFA_STATES, arena: Arena | None = None) -> LazyDFA:
    """The lazy DFA of one regex (as `dfa.compile_regex`); on `arena` if given, else the shared one."""
    node = translate(pattern, flags, name=name)
    arena = arena if arena is not None else current_arena()
    try:
        term = ir_term(arena, node, BYTE_MODE in flags)
        if lazy:
            term = arena.first(term)
        return LazyDFA(Lazy(arena, term, max_states), name, byte_classes(node, BYTE_MODE in flags), max_states)
    except LimitExceeded as e:
        raise LimitExceeded(f"{e} (terminal {name})") from None


def lazy_terminal(t: TerminalDef, *, max_states: int = DEFAULT_MAX_DFA_STATES) -> LazyDFA:
    """The lazy DFA of one terminal (as `dfa.build_lexer_dfa([t])`)."""
    if t.automaton is not None:
        raise NotImplementedError(f"terminal {t.name}: lazy DFAs of terminals given as automata are not built yet")
    return compile_lazy(t.pattern, t.flags, name=t.name, lazy=t.lazy, max_states=max_states)


def ir_term(arena: Arena, node: Node, byte_mode: bool) -> int:
    """The term of an IR tree (code-point sets as UTF-8, or as bytes in byte mode); an explicit stack."""
    return drive(_term(arena, node, byte_mode, {}, _set_terms(arena, byte_mode)))


# Terms of code-point sets by their code points, kept for the arena last built on: a JSON string's character class
# is a trie of a few dozen byte-range terms, which every string terminal made again (about half of a lazy
# string's build). At most `SET_TERMS_MAX` sets, then started afresh; a new arena starts afresh too.
SET_TERMS_MAX = 4096
_set_memo: tuple[Arena, dict[tuple[bool, cs.CharSet], int]] | None = None


def _set_terms(arena: Arena, byte_mode: bool) -> dict[tuple[bool, cs.CharSet], int]:
    """The set-term memo of `arena` (keys: (byte mode, code points)), fresh when the arena is not the last one."""
    global _set_memo
    memo = _set_memo
    if memo is None or memo[0] is not arena or len(memo[1]) >= SET_TERMS_MAX:
        memo = _set_memo = (arena, {})
    return memo[1]


def _term(arena: Arena, node: Node, byte_mode: bool, memo: dict[int, int],
          sets: dict[tuple[bool, cs.CharSet], int]) -> Generator[Any, int, int]:
    """The term of `node`; `memo` holds the terms made so far by node identity, `sets` a set's by its code points
    (a JSON string's escapes repeat one hex-digit class hundreds of times, as distinct nodes)."""
    found = memo.get(id(node))
    if found is not None:
        return found
    if isinstance(node, Chars):
        key = (byte_mode, node.chars)
        t = sets.get(key)
        if t is None:
            t = sets[key] = _bytes_term(arena, node.chars) if byte_mode else chars_term(arena, node.chars)
    elif isinstance(node, (Seq, Alt)):
        parts = []
        for item in node.items:
            parts.append((yield _term(arena, item, byte_mode, memo, sets)))
        if isinstance(node, Alt):
            t = arena.or_(*parts)
        else:
            t = arena.eps()
            for part in reversed(parts):
                t = arena.concat(part, t)
    elif isinstance(node, Repeat):
        if node.lo > MAX_COUNT or (node.hi is not None and node.hi > MAX_COUNT):
            raise LimitExceeded(f"a repeat count over {MAX_COUNT} ({{{node.lo},{node.hi}}})")
        inner = yield _term(arena, node.item, byte_mode, memo, sets)
        t = arena.repeat(inner, node.lo, -1 if node.hi is None else node.hi)
    elif isinstance(node, FirstMatch):
        t = arena.first((yield _term(arena, node.item, byte_mode, memo, sets)))
    else:
        assert isinstance(node, Guard)
        look = yield _term(arena, node.look, byte_mode, memo, sets)
        body = yield _term(arena, node.body, byte_mode, memo, sets)
        ahead = arena.concat(look, arena.full())
        t = arena.and_(body, arena.not_(ahead) if node.negate else ahead)
    memo[id(node)] = t
    return t


def has_count(node: Node, least: int) -> bool:
    """Whether some repeat in the IR tree has a finite count (lower or upper) of at least `least`."""
    stack = [node]
    while stack:
        node = stack.pop()
        if isinstance(node, Repeat):
            if node.lo >= least or (node.hi is not None and node.hi >= least):
                return True
            stack.append(node.item)
        elif isinstance(node, (Seq, Alt)):
            stack.extend(node.items)
        elif isinstance(node, FirstMatch):
            stack.append(node.item)
        elif isinstance(node, Guard):
            stack += [node.look, node.body]
    return False


def byte_classes(node: Node, byte_mode: bool) -> np.ndarray:
    """int32 [256]: bytes in the same byte sets of the tree's terms (`_term`'s BYTES), numbered by lowest byte."""
    sets: set[cs.CharSet] = set()  # each distinct set once (a JSON string's escapes repeat one class)
    stack = [node]
    while stack:
        node = stack.pop()
        if isinstance(node, Chars):
            sets.add(node.chars)
        elif isinstance(node, (Seq, Alt)):
            stack.extend(node.items)
        elif isinstance(node, (Repeat, FirstMatch)):
            stack.append(node.item)
        elif isinstance(node, Guard):
            stack += [node.look, node.body]
    return _set_classes(frozenset(sets), byte_mode)


@functools.lru_cache(maxsize=256)
def _set_classes(sets: frozenset[cs.CharSet], byte_mode: bool) -> np.ndarray:
    """`byte_classes` of a tree with these distinct sets, read-only (every string terminal of a JSON Schema has
    the same few sets: their UTF-8 byte ranges' masks cost ~0.2 ms a terminal)."""
    masks: set[int] = set()
    for chars in sets:
        if byte_mode:
            masks.add(_mask(chars))
        else:
            for seq in utf8_sequences(chars):
                masks.update(_mask((r,)) for r in seq)
    # Every set's 256 bits in one array (a Unicode class's UTF-8 has hundreds of byte ranges: one numpy call
    # per set cost ~3 ms of o79409's 10 KB string).
    packed = np.frombuffer(b"".join(mask.to_bytes(32, "little") for mask in masks) or bytes(32), dtype=np.uint8)
    bits = np.unpackbits(packed.reshape(-1, 32), axis=1, bitorder="little")
    columns = np.packbits(bits, axis=0).T  # per byte, its membership in every set
    number: dict[bytes, int] = {}
    out = np.array([number.setdefault(column.tobytes(), len(number)) for column in columns], dtype=np.int32)
    out.setflags(write=False)
    return out


def _mask(ranges: tuple[tuple[int, int], ...]) -> int:
    """The int mask (bit b: byte b) of byte ranges."""
    mask = 0
    for lo, hi in ranges:
        mask |= (1 << (hi + 1)) - (1 << lo)
    return mask


def _bytes_term(arena: Arena, chars: cs.CharSet) -> int:
    return arena.bytes_(_mask(chars))


def chars_term(arena: Arena, chars: cs.CharSet) -> int:
    """The term of one character from a code-point set, spelled in UTF-8 as a trie of byte ranges.

    Sequences sharing a first byte range share one branch (two sequences' ranges at a position are
    equal or disjoint: the code points are), so a derivative by a byte meets a few dozen branches,
    not every sequence (a Unicode letter class has ~1,000: o79409's string took ~60 us a new state).
    """
    return _trie_term(arena, utf8_sequences(chars))


def _trie_term(arena: Arena, seqs: Sequence[tuple[tuple[int, int], ...]]) -> int:
    branches: dict[tuple[int, int], list[tuple[tuple[int, int], ...]]] = {}
    for seq in seqs:
        if seq:
            branches.setdefault(seq[0], []).append(seq[1:])
    alternatives = [arena.concat(arena.bytes_(_mask((first,))), _trie_term(arena, rests) if rests[0] else arena.eps())
                    for first, rests in branches.items()]
    return arena.or_(*alternatives)


# The last code point of each UTF-8 length (1 to 4 bytes).
_LENGTH_ENDS = (0x7F, 0x7FF, 0xFFFF, 0x10FFFF)


@functools.lru_cache(maxsize=1024)
def utf8_sequences(ranges: tuple[tuple[int, int], ...]) -> tuple[tuple[tuple[int, int], ...], ...]:
    """The UTF-8 encodings of code-point ranges as byte-range sequences, in code-point order.

    Each sequence `((lo1, hi1), (lo2, hi2), ...)` stands for every byte string whose i-th byte is in
    (lo_i, hi_i); together they spell exactly the well-formed UTF-8 of the ranges' code points
    (surrogates U+D800..U+DFFF and anything past U+10FFFF left out, as `pda.regex.utf8` does). A range
    is split until, within a piece, every continuation byte but the first varying one spans its whole
    block, so the piece's encodings are a product of byte ranges.
    """
    if not ranges or ranges[-1][1] < 0x80:  # ASCII (ranges ascend): each range is its own one-byte sequence
        return tuple(((lo, hi),) for lo, hi in ranges)
    out: list[tuple[tuple[int, int], ...]] = []
    pieces: list[tuple[int, int]] = []
    for lo, hi in ranges:
        hi = min(hi, cs.MAX_CP)
        for a, b in ((lo, min(hi, cs.SURROGATES[0] - 1)), (max(lo, cs.SURROGATES[1] + 1), hi)):
            if a <= b:
                pieces.append((a, b))
    stack = list(reversed(pieces))
    while stack:
        lo, hi = stack.pop()
        split = next((end for end in _LENGTH_ENDS if lo <= end < hi), None)
        if split is not None:
            stack += [(split + 1, hi), (lo, split)]
            continue
        n = len(chr(lo).encode("utf-8", "surrogatepass"))
        for i in range(1, n):
            low_bits = (1 << (6 * i)) - 1
            if lo & ~low_bits == hi & ~low_bits:
                continue  # lo and hi share everything above these i continuation bytes
            if lo & low_bits:
                stack += [((lo | low_bits) + 1, hi), (lo, lo | low_bits)]
                break
            if hi & low_bits != low_bits:
                stack += [(hi & ~low_bits, hi), (lo, (hi & ~low_bits) - 1)]
                break
        else:
            a = chr(lo).encode("utf-8")
            b = chr(hi).encode("utf-8")
            out.append(tuple(zip(a, b)))
    return tuple(out)
