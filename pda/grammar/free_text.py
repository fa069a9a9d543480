"""Free text as a terminal: any text in which none of some strings occurs, optionally up to the first one.

Agents interleave prose with constrained islands (`<tool_call>{...}</tool_call>`).
The prose is "any text that does not contain a trigger", and it ends where a trigger
begins. A greedy lexer cannot end a lexeme *before* bytes it has already read (the
prose `hi <tool_call` is still prose until `>` completes the trigger), so the
trigger is part of the same lexeme: `free_text_automaton(stops, until=t)` is the text up
to and including the first occurrence of any stop string, which must be `t`. The
lexeme then ends by itself (no string of the language extends another), and a
token that straddles the trigger is classified exactly like any other token that
crosses a lexeme boundary. `until=None` gives the text that holds no stop string at
all (prose that ends the output, or a tag body that must not contain its end).

The language is regular: an Aho-Corasick automaton over the stop strings' characters
(one class per such character, one for every other code point) tracks the longest
suffix that is a prefix of a stop string; reaching the end of a stop string is the
lexeme's end (`until`) or death. The terminal is that automaton, minimised
(`ecma_regex.dfa_automaton`, edges labelled with the code points themselves), which
pda's DFA builder reads at its size: its regex by state elimination grew much faster
(one 11-character trigger: ~3,300 characters; three triggers of 10-14: ~9,000-19,000).
`MAX_FREE_TEXT_STATES` bounds the automaton.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from pda.errors import GrammarError
from pda.grammar import ecma_regex as er
from pda.grammar.ir import TerminalAutomaton

MAX_FREE_TEXT_STATES = 10_000
"""Most states of a free-text automaton before minimisation (the stop strings' trie, so about
their total length); past it the stop strings are refused. Measured: 833 tags of 9,900
characters in all minimise to 5,057 states in 0.4 s, and their DFA takes 0.5 s more."""

_TEXT: er.Ranges = ((0, er.SURROGATES[0] - 1), (er.SURROGATES[1] + 1, er.MAX_CP))  # every encodable code point


def free_text_automaton(stops: Sequence[str], *, until: str | None = None,
                        non_empty: bool = True) -> TerminalAutomaton:
    """The terminal automaton of text in which no string of `stops` occurs; with `until` (one of
    `stops`), that text followed by `until`, which is then the first stop string in the whole lexeme.

    `non_empty` leaves out the empty text (a lexeme is never empty; with `until` it never is).
    """
    stops = list(dict.fromkeys(stops))
    if any(not s for s in stops):
        raise GrammarError("a stop string of free text is empty")
    if until is not None and until not in stops:
        raise ValueError("until must be one of the stop strings")
    chars = sorted({c for s in stops for c in s})
    other = er.subtract(_TEXT, tuple((ord(c), ord(c)) for c in chars))
    classes = [((ord(c), ord(c)),) for c in chars] + ([other] if other else [])
    goto, ends = _trie(stops)
    if len(goto) + 3 > MAX_FREE_TEXT_STATES:
        raise GrammarError(f"free text excluding {len(stops)} strings of {sum(map(len, stops))} characters needs "
                           f"an automaton of over MAX_FREE_TEXT_STATES = {MAX_FREE_TEXT_STATES} states")
    fail = _failure_links(goto, ends)

    def step(s: int, c: str) -> int:
        while s and c not in goto[s]:
            s = fail[s]
        return goto[s].get(c, 0)

    # States: 0 a fresh start (nothing read yet), 1 + trie node, then dead and done.
    n = len(goto)
    dead, done = n + 1, n + 2
    rows = []
    for s in range(n):
        row = []
        for c in chars:
            t = step(s, c)
            row.append((done if until in ends[t] else dead) if ends[t] else 1 + t)
        if other:
            row.append(1)  # a character of no stop string: back to the root
        rows.append(row)
    width = len(classes)
    trans = [list(rows[0])] + rows + [[dead] * width, [dead] * width]
    accept = [until is None and not non_empty] + [until is None] * n + [False, until is not None]
    automaton = er.dfa_automaton(classes, trans, accept, unit=er.raw_class_regex)
    if automaton is None:
        raise GrammarError(f"no free text can end with {until!r}: another stop string always occurs first")
    return automaton


def _trie(stops: list[str]) -> tuple[list[dict[str, int]], list[set[str]]]:
    """The stop strings' trie: children per node, and the strings that end at each node."""
    goto: list[dict[str, int]] = [{}]
    ends: list[set[str]] = [set()]
    for s in stops:
        node = 0
        for c in s:
            nxt = goto[node].get(c)
            if nxt is None:
                nxt = goto[node][c] = len(goto)
                goto.append({})
                ends.append(set())
            node = nxt
        ends[node].add(s)
    return goto, ends


def _failure_links(goto: list[dict[str, int]], ends: list[set[str]]) -> list[int]:
    """Aho-Corasick failure links (breadth first); each node's `ends` gains those of its suffixes."""
    fail = [0] * len(goto)
    queue = deque(goto[0].values())
    while queue:
        s = queue.popleft()
        for c, t in goto[s].items():
            f = fail[s]
            while f and c not in goto[f]:
                f = fail[f]
            fail[t] = goto[f][c] if s and c in goto[f] else 0
            ends[t] |= ends[fail[t]]
            queue.append(t)
    return fail
