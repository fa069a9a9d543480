"""Deterministic composition (`pda.regex.compose`) builds the same minimal DFA as the NFA path.

Terminal automata too (`compose.automaton`): random deterministic ones whose edges are JSON
string units, JSON Schema pattern sets with lengths, and automata whose labels are no prefix
code (which composition must leave to the NFA path).

Every pattern here is one composition takes (a counted repeat large enough, a
look-ahead, a repeat of a character beyond ASCII); its DFA is built both ways (composition switched off by patching `worth_composing`) and the
two must be the same automaton up to the numbering of states: equal once both are
renumbered breadth first over bytes 0..255. Patterns where composition must refuse
(a byte readable two ways) are among them, and must still come out right.
"""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from pda.errors import LimitExceeded
from pda.grammar.ecma_regex.automata import pattern_set_automaton
from pda.grammar.ecma_regex.json_units import unit_regex
from pda.grammar.ecma_regex.ranges import normalize
from pda.grammar.ir import TerminalAutomaton, TerminalDef
from pda.regex import build_lexer_dfa, compose
from pda.regex.dfa import LexerDFA, _translated

JSON_CHAR = r'(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))'
PATTERNS = [
    rf'"{JSON_CHAR}{{0,40}}"', rf'"{JSON_CHAR}{{3,255}}"', rf'"{JSON_CHAR}{{16}}', rf'{JSON_CHAR}{{17,}}"',
    r"[0-9]{16,20}", r"(?:ab){20}", r"x{0,30}y", r"(?:é|ü|€|😀){5,40}", r'"(?:[a-z]{2}){10,}"',
    r"(?:a|bc){16}", r"a{20}", r"(?:\d{3}-){5}\d{4}", r"(?:[a-f]{2}:){16,17}[a-f]{2}",
    r"a{0,20}a", r"(?:ab|a){20}", r"(?:a*b){16}", r"(?:x?y){20,30}", r"[ab]{16}(?:ab)?", r"(?:){20}z",
    r"(?:[^\x00-\x7f]){16,18}", r"(?:q|[^q]{2}){16}", r"\d{16,}\.\d{0,20}",
    # JSON Schema's shapes: strings, keys other than the declared ones, lengths as a look-ahead.
    rf'"{JSON_CHAR}*"', rf'"(?!(?:name|price|quantity)"){JSON_CHAR}*"', rf'"(?!(?:a|ab|abc|b\-c)"){JSON_CHAR}*"',
    rf'"(?=(?:{JSON_CHAR}){{2,5}}")[a-zé]*"', r'(?!(?:x|yy))(?:é|[a-z])*', r"(?=a)(?:ab|ba|a)*",
    r"(?!ab)[ab]{0,3}", r"(?:é|ü)*z", r"(?:€|[a-c])+", r'"(?!(?:)")x*"', rf'"(?!(?:k){{3}}"){JSON_CHAR}*"',
]


def canonical(d: LexerDFA) -> tuple[bytes, bytes, bytes]:
    order = {d.start: 0}
    queue = [d.start]
    rows = []
    for q in queue:
        row = []
        for b in range(256):
            t = int(d.trans[q, d.byte_class[b]])
            if t not in order:
                order[t] = len(queue)
                queue.append(t)
            row.append(order[t])
        rows.append(row)
    return np.array(rows).tobytes(), d.accept[queue].tobytes(), d.live[queue].tobytes()


def both_ways(pattern: str, monkeypatch: pytest.MonkeyPatch) -> tuple[LexerDFA, LexerDFA]:
    terminal = TerminalDef("T", pattern)
    fast = build_lexer_dfa([terminal])
    with monkeypatch.context() as m:
        m.setattr(compose, "worth_composing", lambda node: False)
        slow = build_lexer_dfa([terminal])
    return fast, slow


@pytest.mark.parametrize("pattern", PATTERNS)
def test_composition_builds_the_nfa_paths_dfa(pattern: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fast, slow = both_ways(pattern, monkeypatch)
    assert fast.n_states == slow.n_states
    assert canonical(fast) == canonical(slow)


def test_random_counted_patterns(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(17)
    atoms = ["a", "b", "[ab]", "[^a]", "(?:ab)", "(?:a|bc)", "é", "\\d", "(?:x?)", "(?:[a-c]{2})"]
    for _ in range(60):
        parts = []
        for _ in range(rng.randint(1, 3)):
            atom = rng.choice(atoms)
            lo = rng.choice([0, 1, 3, 16, 17])
            hi = rng.choice([lo, lo + 1, lo + 20, None])
            parts.append(f"{atom}{{{lo},{'' if hi is None else hi}}}" if rng.random() < 0.8 else atom)
        pattern = "".join(parts)
        fast, slow = both_ways(pattern, monkeypatch)
        assert canonical(fast) == canonical(slow), pattern
        for text in ("", "a" * 17, "ab" * 20, "é" * 16, "b" * 40):
            assert bool(fast.accepts(text.encode())) == (re.fullmatch(pattern, text) is not None), (pattern, text)


def test_random_look_aheads_and_unicode_repeats(monkeypatch: pytest.MonkeyPatch) -> None:
    """Look-aheads (finite key sets, counted, Unicode) in front of repeats of multi-byte characters."""
    rng = random.Random(23)
    words = ["a", "ab", "b", "é", "x-y", "ba", "abc"]
    bodies = ["(?:é|[a-c])*", "[a-c]*", "(?:ab|é)*", "[^x]{0,4}", "(?:[a-z]|ü)+", "(?:é|a){2,18}"]
    texts = ["", "a", "ab", "abc", "é", "éa", "b", "ba", "x-y", "aaa", "üa", "éééé", "abab", "é" * 17]
    for _ in range(60):
        sign = rng.choice("=!")
        look = "|".join(rng.sample(words, rng.randint(1, 4)))
        if rng.random() < 0.3:
            look = f"(?:{look}){{{rng.randint(1, 3)}}}"
        pattern = f"{rng.choice(['', 'q'])}(?{sign}(?:{look})){rng.choice(bodies)}"
        fast, slow = both_ways(pattern, monkeypatch)
        assert canonical(fast) == canonical(slow), pattern
        for text in texts:
            for full in (text, "q" + text):
                assert bool(fast.accepts(full.encode())) == (re.fullmatch(pattern, full) is not None), (pattern, full)


def test_the_state_limit_holds_for_composed_patterns() -> None:
    with pytest.raises(LimitExceeded, match="max_states=500"):
        build_lexer_dfa([TerminalDef("T", rf'"{JSON_CHAR}{{0,255}}"')], max_states=500)


def test_refused_compositions_are_none() -> None:
    one = np.full((2, 256), -1, dtype=np.int32)
    one[0, ord("a")] = 1
    x = (one, np.array([False, True]))
    loop = one.copy()
    loop[1, ord("a")] = 1  # a+: its accepting state reads what its start reads
    plus = (loop, np.array([False, True]))
    assert compose.repeat(plus, 2, 20) is None
    assert compose.concat(plus, x) is None  # a+ then a: the second a could be read by either
    trans, accept = compose.repeat(x, 2, 3)
    assert accept.tolist() == [False, False, True, True]


def test_a_start_that_is_entered_again_is_split_off() -> None:
    """concat(a, any*): B's start loops to itself, so a copy of it is merged into A's end instead."""
    one = np.full((2, 256), -1, dtype=np.int32)
    one[0, ord("a")] = 1
    anything = (np.array([[0] * 256], dtype=np.int32), np.array([True]))
    trans, accept = compose.concat((one, np.array([False, True])), anything)

    def accepts(text: bytes) -> bool:
        q = 0
        for b in text:
            q = int(trans[q, b])
            if q < 0:
                return False
        return bool(accept[q])

    assert [accepts(t) for t in (b"", b"a", b"ab", b"aaa", b"b", b"ba")] == [False, True, True, True, False, False]


def _record_taken(monkeypatch: pytest.MonkeyPatch, name: str) -> list[bool]:
    """Wrap `compose.<name>` so that each call appends whether it composed (returned something) to the list."""
    taken: list[bool] = []
    real = getattr(compose, name)

    def recorded(*args):
        found = real(*args)
        taken.append(found is not None)
        return found

    monkeypatch.setattr(compose, name, recorded)
    return taken


def test_counted_json_strings_are_composed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shape composition is for (JSON Schema's maxLength) does take it, and ambiguous repeats do not."""
    taken = _record_taken(monkeypatch, "repeat")
    build_lexer_dfa([TerminalDef("T", rf'"{JSON_CHAR}{{3,255}}"')])
    build_lexer_dfa([TerminalDef("U", r"(?:a+){16}")])  # a+ reads at its end what its start reads
    assert taken == [True, False]


def test_json_schema_key_exclusions_are_composed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A string other than the declared keys is a product of two memoised parts, not an NFA."""
    products: list[int] = []
    real = compose.guard_product

    def recorded(body, look, negate, max_states):
        found = real(body, look, negate, max_states)
        products.append(len(found[0]))
        return found

    monkeypatch.setattr(compose, "guard_product", recorded)
    dfa = build_lexer_dfa([TerminalDef("K", rf'"(?!(?:name|price)"){JSON_CHAR}*"')])
    assert len(products) == 1
    assert [dfa.accepts(t.encode()) for t in ('"x"', '"name"', '"names"', '"nam"', '"price"', '""')] == [
        True, False, True, True, False, True]


def _random_automaton(rng: random.Random) -> TerminalAutomaton:
    """A random deterministic automaton over a few classes of code points, each edge a JSON string unit (the
    shape of a JSON Schema's pattern set): per state, some of the classes, split among random targets; some state
    reachable from the start accepts."""
    cuts = sorted(rng.sample([0x22, 0x30, 0x41, 0x5C, 0x61, 0x7F, 0xE9, 0x800, 0xFFFF, 0x1F600], rng.randint(2, 5)))
    bounds = [0, *cuts, 0x110000]
    classes = [((lo, hi - 1),) for lo, hi in zip(bounds, bounds[1:])]
    n = rng.randint(1, 8)
    edges = []
    for q in range(n):
        targets: dict[int, list[tuple[int, int]]] = {}
        for c in classes:
            if rng.random() < 0.7:
                targets.setdefault(rng.randrange(n), []).extend(c)
        for r, ranges in targets.items():
            label = unit_regex(normalize(ranges))
            if label is not None:
                edges.append((q, label, r))
    reached = [0]  # some of the states reachable from the start accept: a language that is not empty
    for q in reached:
        reached += [r for p, _, r in edges if p == q and r not in reached]
    accept = tuple(sorted(rng.sample(reached, rng.randint(1, len(reached)))))
    return TerminalAutomaton(n, 0, accept, tuple(edges))


def _automaton_both_ways(a: TerminalAutomaton, monkeypatch: pytest.MonkeyPatch) -> tuple[LexerDFA, LexerDFA, bool]:
    """The automaton's DFA composed (whatever its edges per label) and through the NFA; whether it was composed."""
    terminal = TerminalDef("A", a.describe(), automaton=a)
    with monkeypatch.context() as m:
        m.setattr(compose, "AUTOMATON_EDGES_PER_LABEL", 0)
        taken = _record_taken(m, "automaton")
        fast = build_lexer_dfa([terminal])
    with monkeypatch.context() as m:
        m.setattr(compose, "worth_composing", lambda node: False)
        slow = build_lexer_dfa([terminal])
    return fast, slow, taken == [True]


def test_random_json_unit_automata_are_composed_as_the_nfa_builds_them(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(23)
    for _ in range(150):
        fast, slow, composed = _automaton_both_ways(_random_automaton(rng), monkeypatch)
        assert composed
        assert canonical(fast) == canonical(slow)


@pytest.mark.parametrize("positive, lo, hi", [
    ([r"\d+-[A-Fa-f0-9]*-[A-Fa-f0-9]{4}"], 12, 40),  # o79409's shape, shorter: unanchored, lengths counted
    ([r"^[a-z]+$", "x"], 1, 30),
    ([r"é|\u20ac"], 0, 20),
])
def test_pattern_set_automata_are_composed(positive: list[str], lo: int, hi: int,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    a = pattern_set_automaton(positive, [], min_len=lo, max_len=hi)
    fast, slow, composed = _automaton_both_ways(a, monkeypatch)
    assert composed
    assert canonical(fast) == canonical(slow)


@pytest.mark.parametrize("a", [
    TerminalAutomaton(2, 0, (1,), ((0, "a", 1), (0, "[ab]", 0))),  # two edges read "a"
    TerminalAutomaton(3, 0, (2,), ((0, "ab|a", 1), (1, "c", 2), (0, "b", 2))),  # "a" and "ab": not a prefix code
    TerminalAutomaton(2, 0, (1,), ((0, "a*", 1),)),  # the empty word
    TerminalAutomaton(2, 0, (1,), ((0, "(?:xy)+", 1), (1, "z", 0))),  # a label that reads on past its word
])
def test_automata_whose_labels_are_no_prefix_code_are_left_to_the_nfa(a: TerminalAutomaton,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    fast, slow, composed = _automaton_both_ways(a, monkeypatch)
    assert not composed
    assert canonical(fast) == canonical(slow)


def test_few_edges_per_label_take_the_nfa_path() -> None:
    """A key set's automaton, each edge a label of its own, is built in one pass by the NFA path."""
    a = pattern_set_automaton(["^(?:ab|cd)e"], [])
    assert isinstance(a, TerminalAutomaton) and len(a.edges) < compose.AUTOMATON_EDGES_PER_LABEL
    assert compose.automaton(_translated(TerminalDef("A", a.describe(), automaton=a)), lambda node: None, 1000) is None
