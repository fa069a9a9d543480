"""JSON Schema's `multipleOf` as one terminal automaton: plain decimals that are multiples of p/10^s within bounds.

The numerals whose value is a multiple of an integer p form a regular language: a DFA
reading the digits left to right keeps the value mod p (`(10r + d) mod p`). A decimal
step p/10^s is the same condition on the value scaled by 10^s: the integer digits, then
the first s fraction digits (missing ones are zeros), and zeros after them. So the
signed multiples are one DFA over `-.0123456789`: a `-` in front, then residue classes
(residues no digit string tells apart share a class: p = 1000 has 4) times fraction
positions.

Bounds are look-ahead regexes, multiplied in: `x ≥ lo` is `(?=GE(lo))` when lo > 0 and
`(?!-GT(-lo))` otherwise, `x ≤ hi` likewise, and a look-ahead followed by the numeral
means numeral ∩ look·Σ*, exact here because "|x| ≥ c" is closed under extending a
canonical numeral (more digits only make it larger). pda's DFA builder compiles the
look-aheads (with a caller's own, such as "no fraction") into one DFA over the same
twelve characters; its product with the residue DFA, minimised and trimmed, is the
terminal's automaton (`TerminalAutomaton`), each edge a class of those characters.

Why an automaton and not a regex: the regex of the residue DFA grows exponentially with
the part of p prime to 10 (p = 7: 44,000 characters, 9: 700,000, 11 and 13 over a
million), so while terminals were regex text, steps like 9, 13 or 97 were approximated.
The automaton has at most (residue classes) x (fraction digits + 1) x (bound DFA
states) states, and the lexer builds its DFA in time proportional to that
(`pda.regex.dfa`). Past `MAX_MULTIPLE_MODULUS` or `MAX_MULTIPLE_STATES`,
`MultiplesTooLarge`: the caller enumerates a small bounded range or approximates.
"""

from __future__ import annotations

import functools
import re

import numpy as np

from pda.grammar import ecma_regex as er
from pda.grammar.ir import TerminalAutomaton
from pda.kernels.partition import coarsest_partition
from pda.regex import compile_regex

MAX_MULTIPLE_MODULUS = 100_000
"""Largest p whose residue classes are computed (0.17 s at 99,991; p = 10^6 would be a million
residues to refine). Few p this large have few enough classes: 10^5 has 6, 2^16 2,829."""

MAX_MULTIPLE_STATES = 5_000
"""Largest DFA explored (residue classes x fraction positions, times the bound DFA's states
when there are bounds), before minimisation. Measured from schema to compiled grammar over the
Qwen2 vocabulary: p = 97 with 0..10^12 (1,189 states explored, 890 kept) ~60 ms; 999 (1,007)
~80 ms; 4987 (4,995, the largest prime within) 0.43 s, about the 0.4 s the longest multiples
regex (0.07) cost before automata."""

# The alphabet: the sign, the decimal point, the digits.
_CHARS = "-.0123456789"
_ANY_NUMERAL = f"[{re.escape(_CHARS)}]*"
_CLASSES: list[er.Ranges] = [((ord(c), ord(c)),) for c in _CHARS]


class MultiplesTooLarge(Exception):
    """The multiples of this step have no automaton within the limits."""


def multiples_automaton(p: int, scale: int, lo: int | None, hi: int | None,
                        guard: str = "") -> TerminalAutomaton | None:
    """Plain-decimal JSON numbers n/10^scale with p | n and lo <= n <= hi (None: unbounded),
    that also start with a match of the look-ahead regex `guard` if one is given.

    Spellings: an optional `-` (also `-0`, as for other integers), a canonical integer
    part, and a fraction of any length whose digits past `scale` are zeros (`14.0`,
    `0.50`). None when no multiple is spelled; `MultiplesTooLarge` past the limits.
    """
    if lo is not None and hi is not None and -(-lo // p) * p > hi:
        return None
    if lo is not None:
        guard += f"(?={_at_least(lo, scale)})" if lo > 0 else f"(?!-{_at_least(1 - lo, scale)})"
    if hi is not None:
        guard += f"(?!{_at_least(hi + 1, scale)})" if hi >= 0 else f"(?=-{_at_least(-hi, scale)})"
    found = _automaton(p, scale, guard)
    if isinstance(found, str):
        raise MultiplesTooLarge(found)
    return found


@functools.lru_cache(maxsize=256)
def _automaton(p: int, scale: int, guard: str) -> TerminalAutomaton | str | None:
    """The product of the residue DFA and the guard's DFA, minimised, or why it is over the limits.
    Cached, failures too: a schema repeats its steps, and finding out costs up to 0.3 s."""
    if p > MAX_MULTIPLE_MODULUS:
        return f"the step {p}/10^{scale} has over {MAX_MULTIPLE_MODULUS} residues to track"
    found = _signed_multiples(p, scale)
    if found is None:
        return f"the multiples of {p}/10^{scale} need an automaton of over {MAX_MULTIPLE_STATES} states"
    trans, accept = found
    if guard:
        look = compile_regex(guard + _ANY_NUMERAL, name="multipleOf bounds")
        columns = look.byte_class[[ord(c) for c in _CHARS]]
        try:
            order, product = er.explore_states(
                (0, look.start), len(_CHARS), lambda cur, c: (trans[cur[0]][c], int(look.trans[cur[1], columns[c]])),
                MAX_MULTIPLE_STATES)
        except er.AutomatonTooLarge:
            return (f"the multiples of {p}/10^{scale} within these bounds need an automaton of over "
                    f"{MAX_MULTIPLE_STATES} states")
        trans, accept = product, [accept[q] and bool(look.accept[b, 0]) for q, b in order]
    return er.dfa_automaton(_CLASSES, trans, accept, unit=er.raw_class_regex)


@functools.lru_cache(maxsize=256)
def _signed_multiples(p: int, scale: int) -> tuple[list[list[int]], list[bool]] | None:
    """The complete DFA (start 0) over `_CHARS` of the signed spellings of the multiples of p/10^scale;
    None past `MAX_MULTIPLE_STATES` (p near `MAX_MULTIPLE_MODULUS` takes 0.17 s to find out). Cached:
    each bound's product starts from it."""
    cls, step = _residue_classes(p)
    zero = cls[0]
    if 8 + len(step) * (scale + 1) > MAX_MULTIPLE_STATES:
        return None

    def padded(c: int, zeros: int) -> bool:
        """Whether residue class c is 0 once `zeros` more zero digits are read."""
        for _ in range(zeros):
            c = step[c][0]
        return c == zero

    # States: ("start",), ("signed",) after the `-`, ("zero",) after an integer part "0", ("int", c),
    # ("frac", c, j) after j < scale fraction digits, ("tail", multiple, digits) once `scale` fraction
    # digits are read (only zeros may follow; `digits`: the fraction is not empty), ("dead",).
    def successor(s: tuple, k: int) -> tuple:
        if k == 0:  # '-'
            return ("signed",) if s[0] == "start" else ("dead",)
        if k == 1:  # '.'
            if s[0] not in ("zero", "int"):
                return ("dead",)
            c = zero if s[0] == "zero" else s[1]
            return ("frac", c, 0) if scale else ("tail", c == zero, False)
        d = k - 2
        if s[0] in ("start", "signed"):
            return ("zero",) if d == 0 else ("int", step[zero][d])
        if s[0] == "int":
            return ("int", step[s[1]][d])
        if s[0] == "frac":
            _, c, j = s
            return ("frac", step[c][d], j + 1) if j + 1 < scale else ("tail", step[c][d] == zero, True)
        if s[0] == "tail":
            return ("tail", s[1], True) if d == 0 else ("dead",)
        return ("dead",)

    order, trans = er.explore_states(("start",), len(_CHARS), successor, MAX_MULTIPLE_STATES)
    accept = [s[0] == "zero" or (s[0] == "int" and padded(s[1], scale))
              or (s[0] == "frac" and s[2] >= 1 and padded(s[1], scale - s[2])) or (s[0] == "tail" and s[1] and s[2])
              for s in order]
    return trans, accept


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
