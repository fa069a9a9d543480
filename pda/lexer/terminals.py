"""How one terminal's DFA is built: the finite-set trie, a single literal, or the regex path; memoised by pattern.

The constructions live in `pda.regex` (`finite_set_dfa`, `literal_dfa`,
`compile_regex`, `build_lexer_dfa`); this module picks the first that applies, which only changes
how fast the DFA is built, never its language: an alternation of at least
`FINITE_SET_MIN_CHOICES` literals becomes a minimal trie DFA, one plain literal
a chain, fewer ASCII literals the regex path's DFA built directly (`literal_set_dfa`),
an alternation of whole patterns (`(?:(?:P1)|(?:P2))`, `pda.grammar.alternatives`) the union of
the parts' terminal DFAs (`union_dfa`: the parts are memoised here, most often built before, and the
whole pattern is never parsed), a free JSON key with exclusions (`"(?!(?:a|b)")(?:G)*"`) the free key's
DFA with the names' trie laid over it (`excluding_dfa`, before the disk cache is asked: it is built in less
time than a lookup takes), a numeric range the front end described (`pda.regex.ranges.remembered`) built digit by
digit (`range_dfa`, also before the disk cache), anything else goes through regex → NFA → DFA. A terminal given as an
automaton (`TerminalDef.automaton`) always takes the NFA path, from its automaton
(its `pattern` only describes it). Results are cached in
memory (a byte-bounded LRU shared by every grammar), by the pattern (or the
automaton's digest), its flags and laziness (literals by their text alone), and on disk when building one took
at least `DISK_MIN_SECONDS` of CPU time (a JSON Schema has hundreds of key literals: each is built in a few µs,
less than a disk-cache round trip, and writing them made up most of a cold compile's disk time; literals are
never looked up there either).

A regex terminal with a repeat counted at least `LAZY_MIN_COUNT` times (a JSON Schema
`maxLength`, `.{n}`), or whose eager DFA passes `max_states`, is built lazily instead
(`pda.regex.lazy`: a `LazyDFA`, states made when first stepped to; the lexer's shared
product serves it, see `pda.regex.product.SharedProduct`), unless the caller needs every
state up front (`lazy=False`: the basic lexer mode's all-terminal DFA). A lazy DFA is
memoised in memory like the others, never on disk (its states are numbered as first
reached, which differs between processes).
"""

from __future__ import annotations

import functools
import hashlib
import re
import time
from dataclasses import replace

from pda import cache
from pda.errors import LimitExceeded, RegexError
from pda.grammar.ir import TerminalDef
from pda.lru import budget_cache, register_budget
from pda.regex.dfa import (DEFAULT_MAX_DFA_STATES, LexerDFA, build_lexer_dfa, compile_regex, literal_dfa,
                           literal_set_dfa, union_dfa)
from pda.regex.finite_set import FINITE_SET_MIN_CHOICES, excluding_dfa, finite_set_dfa
from pda.regex.lazy import LazyDFA, has_count, lazy_terminal
from pda.regex.ranges import range_dfa, remembered
from pda.regex.literals import alternation_parts, excluded_alternatives, literal_alternatives, single_literal
from pda.regex.syntax import translate

# Terminal DFAs by pattern, shared by every grammar that uses the pattern; bounded, as a
# server sees ever new patterns (a lexer keeps the DFAs it uses whatever is evicted).
TERMINAL_DFAS_MAX_BYTES = 256 << 20
register_budget("terminal_dfas", TERMINAL_DFAS_MAX_BYTES)
_memory = budget_cache("terminal_dfas")
# A DFA that took at least this much of the thread's CPU time to build is also written to the disk cache (reading
# one back costs ~0.1-0.5 ms); a single literal's is never looked up there. CPU time, as the lexer's product
# measures it: wall time counts waits for the GIL and the processor, and on a loaded machine small builds (an
# integer range's, ~0.3 ms) passed 2 ms, each store another turn of the writer thread in the middle of a compile.
DISK_MIN_SECONDS = 0.002
# What the terminal memo counts a lazy DFA as (its states live in the `lazy_dfa_states` arena, budgeted there).
LAZY_DFA_BYTES = 1 << 10
# A terminal with a repeat counted at least this many times is built lazily (0: every terminal the
# regex path builds; tests use it to run the engine with lazy terminals throughout). Lower saves compile but
# costs more in the first document (docs/profile.md, "Thirty-seventh profile"): at 16 (JSON strings of
# maxLength 16-128 lazy), CPU ms of compile / first-document masks on first use (s5/req.py), against 200:
# sp_73 3.5/24.7, 3.2/18.0 against 8.0/11.9, 8.7/11.5; o39514 2.0/4.2, 2.4/4.8 against 4.0/2.6, 7.0/3.7.
# Such a lexer has no all-terminal DFA, and each new lexer's shared product makes and fills a row per lazy
# state its candidate sets and walks reach, where an eager single's rows copy its memoised DFA's table.
LAZY_MIN_COUNT = 200
_COUNTS = re.compile(r"\{(\d+)(?:,(\d*))?\}")  # a repeat's counts as the pattern spells them


def terminal_dfa(t: TerminalDef, *, max_states: int = DEFAULT_MAX_DFA_STATES,
                 lazy: bool = True) -> LexerDFA | LazyDFA:
    """One terminal's DFA, cached by (pattern or automaton, flags, lazy): minimal and whole, or (when `lazy`
    allows and the terminal has a large count or passes `max_states` eagerly) a `LazyDFA`."""
    # Literals (a JSON Schema's keys: most terminals) are never lazy, and are memoised by their text alone.
    strings = None
    if t.automaton is None:
        only = single_literal(t.pattern, t.flags)  # most are one plain literal: no list, no memo of the scan
        strings = [only] if only is not None else literal_alternatives(t.pattern, t.flags)
        if strings is not None:
            found = _one_literal(t, only) if only else _literal_terminal(t, strings, max_states)
            if found is not None:
                return found
    automaton = None if t.automaton is None else t.automaton.digest
    language = ("automaton", automaton) if automaton is not None else t.pattern
    key = hashlib.sha256(repr((language, t.flags, t.lazy)).encode()).hexdigest()[:32]
    lazy_key = f"{key}-lazy{LAZY_MIN_COUNT}-{max_states}"  # the lazy DFA, or False: built eagerly
    if lazy and automaton is None and strings is None:
        chosen = _memory.get(lazy_key)
        if chosen is None:
            chosen = lazy_terminal(t, max_states=max_states) if _counted(t) else False
            _memory.put(lazy_key, chosen, LAZY_DFA_BYTES)
        if chosen is not False:
            return chosen
    dfa = _memory.get(key)
    if dfa is not None:
        return dfa
    # A free key with exclusions, or a numeric range, is built in less time than the disk lookup takes (neither
    # is written there).
    dfa = None if automaton is not None else _excluding(t, max_states) or _numeric_range(t, max_states)
    if dfa is not None:
        _memory.put(key, dfa, dfa.nbytes)
        return dfa
    # The pattern by its hash: an enum's can be megabytes, and the key is in every file's header.
    disk_key = ({"automaton_sha256": automaton} if automaton is not None else
                {"pattern_sha256": hashlib.sha256(t.pattern.encode("utf-8", "surrogatepass")).hexdigest()})
    disk_key.update(flags=t.flags, lazy=t.lazy)
    dfa = cache.load("dfa", disk_key, _one_terminal_dfa)
    if dfa is None:
        start = time.thread_time()
        if automaton is not None:
            dfa = build_lexer_dfa([t], max_states=max_states)
        else:
            try:
                # Issue 9: an alternation of literal strings is built directly as a minimal trie DFA.
                dfa = finite_set_dfa(t, max_states=max_states) or _union_of_parts(t, max_states) or compile_regex(
                    t.pattern, t.flags, name=t.name, lazy=t.lazy, max_states=max_states
                )
            except LimitExceeded:
                if not lazy:
                    raise
                dfa = lazy_terminal(t, max_states=max_states)
                _memory.put(lazy_key, dfa, LAZY_DFA_BYTES)
                return dfa
        if time.thread_time() - start >= DISK_MIN_SECONDS:
            cache.store("dfa", disk_key, *dfa.to_arrays())
    _memory.put(key, dfa, dfa.nbytes)
    return dfa


def _counted(t: TerminalDef) -> bool:
    """Whether the terminal is built lazily by its counts (`LAZY_MIN_COUNT`; 0: always). The pattern's text is
    read first: only one with a large enough `{n}`/`{n,m}` is parsed (wp_124 has hundreds of terminals)."""
    if LAZY_MIN_COUNT <= 0:
        return True
    # A count of LAZY_MIN_COUNT or more is written with at least as many digits (a C-speed search first: a JSON
    # string's pattern has a few `{n}` per character class, each read and converted below).
    if not _long_count(len(str(LAZY_MIN_COUNT))).search(t.pattern):
        return False
    counts = (int(n) for m in _COUNTS.finditer(t.pattern) for n in m.groups() if n)
    return any(n >= LAZY_MIN_COUNT for n in counts) and has_count(translate(t.pattern, t.flags, name=t.name),
                                                                    LAZY_MIN_COUNT)


@functools.lru_cache(maxsize=4)
def _long_count(digits: int) -> re.Pattern:
    """What finds a repeat count of at least `digits` digits (`{n`, `{n,m` or `,m}`) in a pattern's text."""
    return re.compile(r"[{,]\d{%d}" % digits)


def _union_of_parts(t: TerminalDef, max_states: int) -> LexerDFA | None:
    """The DFA of a terminal whose pattern is an alternation of whole patterns (`(?:(?:P1)|(?:P2))`, what
    `pda.grammar.alternatives` writes for a JSON Schema `anyOf` of a string and a number), as the union of
    the parts' terminal DFAs (`union_dfa`): each is memoised here by its pattern, most often built before as a
    terminal of its own, so the whole pattern is never parsed. None (the regex path decides, errors included)
    for any other pattern, a lazy terminal, or where a part is lazy, fails to build or the union passes
    `max_states`."""
    parts = None if t.lazy else alternation_parts(t.pattern, t.flags)
    if parts is None:
        return None
    dfas = []
    for part in parts:
        try:
            dfa = terminal_dfa(replace(t, pattern=part, literal=False), max_states=max_states)
        except (RegexError, LimitExceeded):
            return None
        if not isinstance(dfa, LexerDFA):
            return None
        dfas.append(dfa)
    return union_dfa(dfas, name=t.name, max_states=max_states)


def _excluding(t: TerminalDef, max_states: int) -> LexerDFA | None:
    """The DFA of a free key with exclusions, `"(?!(?:a|b)")(?:G)*"` (`excluded_alternatives`): the free
    pattern's terminal DFA (`"(?:G)*"`, memoised here: one per process) with the names' trie laid over it
    (`excluding_dfa`). None (the regex path decides) for any other pattern, a lazy terminal, a name that is
    not valid UTF-8, where the trie cannot simply be laid over the free pattern's DFA, or past `max_states`."""
    found = None if t.lazy else excluded_alternatives(t.pattern, t.flags)
    if found is None:
        return None
    strings, free_pattern = found
    try:
        names = [s.encode("utf-8") for s in strings]
        free = terminal_dfa(replace(t, pattern=free_pattern, literal=False), max_states=max_states)
    except (UnicodeEncodeError, RegexError, LimitExceeded):
        return None
    if not isinstance(free, LexerDFA):
        return None
    try:
        return excluding_dfa(free, names, name=t.name, max_states=max_states)
    except LimitExceeded:
        return None


def _numeric_range(t: TerminalDef, max_states: int) -> LexerDFA | None:
    """The DFA of a numeric range terminal the front end described (`pda.regex.ranges.remembered`), built digit
    by digit (`range_dfa`: the regex path's automaton); None (the regex path decides) for any other pattern, flags
    or a lazy terminal."""
    described = None if t.lazy or t.flags else remembered(t.pattern)
    if described is None:
        return None
    try:
        return range_dfa(described, name=t.name, max_states=max_states)
    except LimitExceeded:
        return None


def _one_terminal_dfa(meta: dict, arrays: dict) -> LexerDFA:
    """A terminal's DFA read back from the disk cache (`LexerDFA.from_arrays`), refused (`cache.Invalid`) unless it
    has the one accepting column every terminal's DFA has (the lexer reads `accept[start, 0]`)."""
    dfa = LexerDFA.from_arrays(meta, arrays)
    if dfa.accept.shape[1] != 1:
        raise cache.Invalid("a terminal's DFA has one accepting column")
    return dfa


def _one_literal(t: TerminalDef, only: str) -> LexerDFA | None:
    """The chain DFA of the non-empty string `only` (`literal_dfa`), memoised by its text; None when it is not
    valid UTF-8 (a lone surrogate: the regex path decides)."""
    key = ("literal", only)
    found = _memory.get(key)
    if found is None:
        try:
            found = literal_dfa(only.encode("utf-8"), name=t.name)
        except UnicodeEncodeError:
            return None
        _memory.put(key, found, found.nbytes + len(only))
    return found


def _literal_terminal(t: TerminalDef, strings: list[str], max_states: int) -> LexerDFA | None:
    """The DFA of a terminal whose pattern is the alternation of `strings`, memoised by the strings (their DFA does
    not depend on the terminal's flags or laziness), or None when it takes the general path: not one plain
    literal (valid UTF-8) nor fewer than `FINITE_SET_MIN_CHOICES` ASCII literals of a terminal that is not lazy.

    One literal is a chain (`literal_dfa`), a few ASCII ones the regex path's DFA built directly (`literal_set_dfa`).
    A JSON Schema has hundreds of key literals: no digest of the pattern is taken, nor is the disk cache asked."""
    distinct = set(strings)
    if len(distinct) == 1:
        (only,) = distinct
        return _one_literal(t, only) if only else None
    if t.lazy or len(distinct) >= FINITE_SET_MIN_CHOICES or not all(s.isascii() for s in distinct):
        return None
    key = ("literals", *sorted(distinct))
    found = _memory.get(key)
    if found is None:
        found = literal_set_dfa([s.encode("ascii") for s in key[1:]], name=t.name, max_states=max_states)
        _memory.put(key, found, found.nbytes + sum(map(len, distinct)))
    return found
