"""JSON Schema's `multipleOf` as one exact terminal regex: plain decimals that are multiples of p/10^s.

The numerals whose value is a multiple of an integer p form a regular language: a DFA
reading the digits left to right keeps the value mod p (`(10r + d) mod p`). A decimal
step p/10^s is the same condition on the value scaled by 10^s: the integer digits, then
the first s fraction digits (missing ones are zeros), and zeros after them. So the
unsigned multiples are one DFA over `.0123456789` (the sign stays in front), minimised
and written as a regex by state elimination (`ecma_regex.dfa_regex`), both forwards and
backwards (a backwards DFA with the concatenations reversed), keeping the shorter.

Bounds are not multiplied into that automaton: they are look-aheads in front of it,
which pda's DFA builder intersects (`(?=look)body` is body ∩ look·Σ*, exact here
because "|x| ≥ c" is closed under extending a canonical numeral: more digits only make
it larger). `x ≥ lo` is `(?=GE(lo))` when lo > 0 and `(?!-GT(-lo))` otherwise; `x ≤ hi`
likewise. So the regex is as long for 0..10^12 as for no bounds.

Its length is the limit: the regex of the mod-p DFA grows exponentially with the part
of p prime to 10 (p = 7: 44,000 characters; 9: 700,000; 11 and 13 over a million), so
p whose regex would pass `MAX_MULTIPLE_REGEX` raise `MultiplesTooLarge`, and the caller
enumerates a small bounded range or approximates.
"""

from __future__ import annotations

import functools

import numpy as np

from pda.errors import RegexError
from pda.grammar import ecma_regex as er
from pda.kernels.partition import coarsest_partition

MAX_MULTIPLE_REGEX = 100_000
"""Longest multiples regex built: p = 7 (44,000 characters, 0.2 s to a DFA), 14 and 0.07 (99,000,
0.4 s) fit; the next sizes measured, 128 (204,000, 4 s) and 9 (700,000, 5.6 s), do not."""

MAX_MULTIPLE_MODULUS = 100_000
"""Largest p whose residue DFA is built and minimised (p = 10^6 would be a million states)."""

MAX_MULTIPLE_STATES = 2000
"""Largest multiples DFA built (residue classes x fraction positions), so elimination stays quick."""

# The alphabet: '-' is outside the automaton (a sign in front), '.', then the digits.
_CLASSES: list[er.Ranges] = [((ord("."), ord(".")),)] + [((48 + d, 48 + d),) for d in range(10)]


class MultiplesTooLarge(Exception):
    """The multiples of this step have no regex within the limits."""


def multiples_regex(p: int, scale: int, lo: int | None, hi: int | None) -> str | None:
    """Plain-decimal JSON numbers n/10^scale with p | n and lo <= n <= hi (None: unbounded).

    Spellings: an optional `-` (also `-0`, as for other integers), a canonical integer
    part, and a fraction of any length whose digits past `scale` are zeros (`14.0`,
    `0.50`). None when no multiple lies in the range; `MultiplesTooLarge` past the limits.
    """
    if lo is not None and hi is not None and -(-lo // p) * p > hi:
        return None
    guards = ""
    if lo is not None:
        guards += f"(?={_at_least(lo, scale)})" if lo > 0 else f"(?!-{_at_least(1 - lo, scale)})"
    if hi is not None:
        guards += f"(?!{_at_least(hi + 1, scale)})" if hi >= 0 else f"(?=-{_at_least(-hi, scale)})"
    body = _unsigned_multiples(p, scale)
    if body is None:
        raise MultiplesTooLarge(f"the multiples of {p}/10^{scale} have no regex within the limits")
    return guards + "-?" + body


@functools.lru_cache(maxsize=256)
def _unsigned_multiples(p: int, scale: int) -> str | None:
    """The unsigned spellings of the multiples of p/10^scale, as a regex; None past the
    limits. Cached: a schema repeats its steps, and a step over the limit costs 0.1 s to find out."""
    if p > MAX_MULTIPLE_MODULUS:
        return None
    cls, step = _residue_classes(p)
    zero = cls[0]
    cap = max(scale, 1)
    if len(step) * (cap + 2) > MAX_MULTIPLE_STATES:
        return None

    def padded(c: int, zeros: int) -> bool:
        """Whether residue class c is 0 once `zeros` more zero digits are read."""
        for _ in range(zeros):
            c = step[c][0]
        return c == zero

    # States: ("start",), ("zero",) after an integer part "0", ("int", c), ("frac", c, j) after
    # j fraction digits (j capped at max(scale, 1): past `scale` only zeros may follow), ("dead",).
    index: dict[tuple, int] = {}
    order: list[tuple] = []
    trans: list[list[int]] = []

    def state(s: tuple) -> int:
        if s not in index:
            index[s] = len(order)
            order.append(s)
        return index[s]

    def successor(s: tuple, k: int) -> tuple:
        if s[0] == "dead":
            return s
        if k == 0:  # '.'
            return ("frac", zero if s[0] == "zero" else s[1], 0) if s[0] in ("zero", "int") else ("dead",)
        d = k - 1
        if s[0] == "start":
            return ("zero",) if d == 0 else ("int", step[zero][d])
        if s[0] == "int":
            return ("int", step[s[1]][d])
        if s[0] == "frac":
            _, c, j = s
            if j < scale:
                return ("frac", step[c][d], j + 1)
            return ("frac", c, min(j + 1, cap)) if d == 0 else ("dead",)
        return ("dead",)

    state(("start",))
    while len(trans) < len(order):
        s = order[len(trans)]
        trans.append([state(successor(s, k)) for k in range(len(_CLASSES))])
    accept = [s[0] == "zero" or (s[0] == "int" and padded(s[1], scale))
              or (s[0] == "frac" and s[2] >= 1 and padded(s[1], max(scale - s[2], 0))) for s in order]
    found = []
    for automaton, backwards in (((trans, accept), False), (_reversed(trans, accept), True)):
        if automaton is not None:
            try:
                found.append(er.dfa_regex(_CLASSES, *automaton, MAX_MULTIPLE_REGEX, reverse=backwards))
            except RegexError:
                continue
    return f"(?:{min(found, key=len)})" if found else None


def _reversed(trans: list[list[int]], accept: list[bool]) -> tuple[list[list[int]], list[bool]] | None:
    """A DFA reading the strings backwards (subset construction), or None past the state
    limit: divisibility by 2^a 5^b is decided by the last digits, so backwards it is nearly
    a tree (p = 16: forwards 212,000 characters of regex, backwards 4,600)."""
    back: list[list[list[int]]] = [[[] for _ in _CLASSES] for _ in trans]
    for q, row in enumerate(trans):
        for c, t in enumerate(row):
            back[t][c].append(q)
    start = frozenset(q for q, a in enumerate(accept) if a)
    try:
        order, out = er.explore_states(start, len(_CLASSES), lambda cur, c: frozenset(q for t in cur for q in back[t][c]),
                                       MAX_MULTIPLE_STATES)
    except er.AutomatonTooLarge:
        return None
    return out, [0 in st for st in order]


def _residue_classes(p: int) -> tuple[list[int], list[list[int]]]:
    """The minimal DFA of "value ≡ 0 mod p" over digits: each residue's class, and the
    classes' transitions. p = 1000 has 4 classes (trailing zeros), not 1000."""
    r = np.arange(p, dtype=np.int64)
    table = (10 * r[:, None] + np.arange(10, dtype=np.int64)[None, :]) % p
    block = coarsest_partition(table, (r == 0).astype(np.int64))
    _, first, cls = np.unique(block, return_index=True, return_inverse=True)
    cls = cls.reshape(-1)
    return cls.tolist(), cls[table[first]].tolist()


def _at_least(c: int, scale: int) -> str:
    """Unsigned canonical decimals whose value is at least c/10^scale (c >= 1), as a look-ahead:
    every string with a prefix here has that value too."""
    whole, frac = divmod(c, 10**scale)
    digits = f"{frac:0{scale}d}".rstrip("0") if scale else ""
    if not digits:
        return er.decimal_range_regex(whole, None)
    alts = [digits[:i] + f"[{int(ch) + 1}-9]" for i, ch in enumerate(digits) if ch != "9"] + [digits]
    return f"(?:{er.decimal_range_regex(whole + 1, None)}|{whole}\\.(?:{'|'.join(alts)}))"
