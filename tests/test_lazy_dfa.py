"""Lazy DFAs by derivatives (`pda.regex.lazy`, `pda.kernels.derive`) against the eager DFAs (`pda.regex.dfa`).

The lockstep walk: from the two starts, every reachable pair (eager state, lazy state) by every byte,
accept and live equal, and each lazy state always meets the same eager state (the eager DFA is
minimal, so a live lazy state's language is exactly one eager state's). Cases: random regexes over the IR's
features, the regex differential corpus' terminals, JSON Schema terminals; then counted strings too
large for the eager path, threads, the arena's budget and its normal forms.
"""

from __future__ import annotations

import json
import random
import re
import threading
import warnings
from functools import lru_cache

import numpy as np
import pytest

import pda
from pda.errors import LimitExceeded, RegexError
from pda.grammar.ir import TerminalAutomaton, TerminalDef
from pda.kernels.derive import Arena, Lazy
from pda.regex import compile_regex, has_lazy_quantifier
from pda.regex.lazy import LazyDFA, compile_lazy, lazy_terminal, utf8_sequences
from tests.conftest import corpus_path

# Pairs walked per case, at most: enough to cover every random regex's DFA, and a bound on the big ones.
MAX_PAIRS = 3000


def lockstep(pattern: str, flags: str = "", lazy: bool = False, max_pairs: int = MAX_PAIRS) -> int:
    """Walk the eager and lazy DFAs of one regex in lockstep (see the module's docstring); the pairs met.

    A pattern the eager path refuses must be refused alike (same translation); past the eager
    path's state limit there is nothing to compare with, and the lazy DFA must still build.
    """
    try:
        eager = compile_regex(pattern, flags, lazy=lazy)
    except RegexError:
        with pytest.raises(RegexError):
            compile_lazy(pattern, flags, lazy=lazy)
        return 0
    except LimitExceeded:
        compile_lazy(pattern, flags, lazy=lazy)
        return 0
    got = compile_lazy(pattern, flags, lazy=lazy)
    classes = eager.byte_class
    partner: dict[int, int] = {}
    todo = [(0, 0)]
    seen = {(0, 0)}
    while todo:
        e, s = todo.pop()
        where = f"/{pattern}/{flags} lazy={lazy}: eager {e}, lazy {s}"
        if s != got.dead:  # (an empty language's eager start is a state apart from its dead one)
            assert partner.setdefault(s, e) == e, f"{where}: the lazy state also met eager {partner[s]}"
        assert bool(eager.accept[e, 0]) == got.accept(s), where
        assert bool(eager.live[e, 0]) == got.live(s), where
        if len(seen) >= max_pairs:
            continue
        row = np.frombuffer(got.successors(s), dtype=np.int32)
        for pair in set(zip(eager.trans[e, classes].tolist(), row.tolist())):
            if pair not in seen:
                seen.add(pair)
                todo.append(pair)
    return len(seen)


# ---------------------------------------------------------------- random regexes

_ATOMS = [
    "a", "b", "c", "x", "é", "É", "ß", "ſ", "k", "\u212a", "→", "😀", "\\.", "\\-", "\\n",
    "[a-c]", "[^a]", "[^\\n]", "[abc\\d]", "\\d", "\\w", "\\s", "\\W", "\\D", ".",
    "[\\u0400-\\u04ff]", "[\\U0001F600-\\U0001F64F]", "[\\u00e0-\\u00ff]", "[^\\u0080-\\u07ff]",
    "[\\ud7f0-\\ue010]", "[\\u07f0-\\u0810]", "[\\uffe0-\\U00010020]", "[^\\x00-\\x7f]", "\\u00ff",
]
_BYTE_ATOMS = ["a", "b", "\\x00", "\\xff", "[\\x80-\\xff]", "[^a]", ".", "\\d", "[\\x7f-\\x81]", "\\W"]
_QUANTIFIERS = ["?", "*", "+", "{2}", "{0,3}", "{1,4}", "{2,}", "??", "*?", "+?", "{1,3}?", "{5,9}", "{12}"]


def _random_body(rng: random.Random, atoms: list[str], depth: int) -> str:
    roll = rng.random()
    if depth > 3 or roll < 0.35:
        return rng.choice(atoms)
    if roll < 0.65:
        return "".join(_random_body(rng, atoms, depth + 1) for _ in range(rng.randint(1, 4)))
    if roll < 0.8:
        return "(?:" + "|".join(_random_body(rng, atoms, depth + 1) for _ in range(rng.randint(2, 3))) + ")"
    return "(?:" + _random_body(rng, atoms, depth + 1) + ")" + rng.choice(_QUANTIFIERS)


def random_regex(rng: random.Random) -> tuple[str, str, bool]:
    """(pattern, flags, lazy): classes, Unicode ranges, counted repeats, alternation, optional, star,
    look-aheads, the i/s/a flags and byte mode."""
    byte_mode = rng.random() < 0.1
    flags = "".join(f for f in "isa" if rng.random() < 0.15) + ("b" if byte_mode else "")
    atoms = _BYTE_ATOMS if byte_mode else _ATOMS
    body = _random_body(rng, atoms, 0)
    if rng.random() < 0.15:
        look = _random_body(rng, atoms, 2)
        body = f"(?{rng.choice('=!')}{look}){_random_body(rng, atoms, 1)}"
    return body, flags, rng.random() < 0.15


def _random_cases(n: int, seed: str) -> list[tuple[str, str, bool]]:
    rng = random.Random(seed)
    return [random_regex(rng) for _ in range(n)]


def test_random_regexes_short() -> None:
    for pattern, flags, lazy in _random_cases(150, "lazy-dfa:short"):
        lockstep(pattern, flags, lazy)


@pytest.mark.slow
def test_random_regexes_long() -> None:
    checked = 0
    for pattern, flags, lazy in _random_cases(1000, "lazy-dfa:long"):
        checked += lockstep(pattern, flags, lazy) > 0
    assert checked > 900


@pytest.mark.parametrize("pattern,flags,lazy", [
    ("ab*?", "", True), ("(?=a)\\w+", "", False), ("(?!ab)[a-c]{0,3}", "", False), ("(?!)x", "", False),
    ('"(?:[^"\\\\]|\\\\.)*"', "", False), ('".*?(?<!\\\\)(\\\\\\\\)*?"', "", False), ("é{2,}", "i", False),
    ("[^\\x00-\\x7f]{3}", "", False), ("\\xe9+", "b", False), ("(?:a|ab)(?:c|bcd)", "", True),
    ("x{0}", "", False), ("", "", False), ("[^\\s\\S]", "", False), ("(?:a*)*b", "", False),
])
def test_named_cases(pattern: str, flags: str, lazy: bool) -> None:
    assert lockstep(pattern, flags, lazy) > 0


# ---------------------------------------------------------------- the regex differential corpus


def _corpus_terms() -> list:
    from tests.test_regex_corpus import TERMS

    return TERMS


def _check_term(term) -> int:
    lazy = has_lazy_quantifier(term.pattern, term.flags)
    return lockstep(term.pattern, term.flags, lazy)


def test_corpus_terminals_short() -> None:
    corpus_path("grammars")
    terms = _corpus_terms()
    for term in random.Random("lazy-dfa:corpus").sample(terms, min(40, len(terms))):
        _check_term(term)


@pytest.mark.slow
def test_corpus_terminals_long() -> None:
    corpus_path("grammars")
    assert sum(_check_term(term) > 0 for term in _corpus_terms()) > 100


# ---------------------------------------------------------------- JSON Schema terminals


@lru_cache(maxsize=1)
def schema_terminals() -> tuple[TerminalDef, ...]:
    """The regex terminals of a seeded sample of JSONSchemaBench schemas (5 per category), one per pattern."""
    folder = corpus_path("jsonschemabench", "schemas")
    found: dict[tuple, TerminalDef] = {}
    for path in sorted(folder.glob("*.jsonl")):
        rows = [json.loads(line) for line in path.open()]
        for row in random.Random(f"lazy-dfa:{path.stem}").sample(rows, min(5, len(rows))):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    grammar = pda.Grammar.from_json_schema(row["schema"])
            except pda.PdaError:
                continue
            for t in grammar.ir.terminals:
                if t.automaton is None:
                    found.setdefault((t.pattern, t.flags, t.lazy), t)
    return tuple(found.values())


def _check_terminal(t: TerminalDef) -> int:
    return lockstep(t.pattern, t.flags, t.lazy)


def test_json_schema_terminals_short() -> None:
    terms = schema_terminals()
    for t in random.Random("lazy-dfa:schemas").sample(terms, min(120, len(terms))):
        _check_terminal(t)


@pytest.mark.slow
def test_json_schema_terminals_long() -> None:
    terms = schema_terminals()
    assert len(terms) > 800
    for t in terms:
        _check_terminal(t)


# ---------------------------------------------------------------- counted strings the eager path refuses


def test_dot_50000_from_few_states() -> None:
    pattern = ".{50000}"
    with pytest.raises(LimitExceeded):
        compile_regex(pattern)
    dfa = compile_lazy(pattern)
    text = ("abé→😀" * 100)[:300]
    s = dfa.run(0, text.encode())
    assert dfa.live(s) and not dfa.accept(s)
    assert dfa.n_states <= len(text.encode()) + 2  # one state a byte read, the dead one, no more
    for sample in ["x" * 50000, "é" * 49999 + "x", "x" * 49999, "x" * 50001, "\n" + "x" * 49999]:
        expected = re.fullmatch(pattern, sample) is not None
        assert dfa.accepts(sample.encode()) == expected, sample[:3]
    assert dfa.run(0, b"\xff") == dfa.dead  # invalid UTF-8


def test_json_string_max_length_50000() -> None:
    pattern = '"(?:[^"\\\\\\x00-\\x1f]|\\\\["\\\\/bfnrt]|\\\\u[0-9a-fA-F]{4}){0,50000}"'
    dfa = compile_lazy(pattern)
    s = dfa.run(0, b'"' + "aé\\n\\u00e9".encode() * 40)
    assert dfa.live(s) and not dfa.accept(s) and dfa.n_states < 600
    body = re.compile(pattern)
    for sample in ['"' + "a" * 50000 + '"', '"' + "a" * 50001 + '"', '"' + "é\\t" * 16000 + '"', '"ab\\x"']:
        assert dfa.accepts(sample.encode()) == (body.fullmatch(sample) is not None), sample[:5]


# ---------------------------------------------------------------- threads, sharing, budget, normal forms


def test_threads_step_one_arena_alike() -> None:
    arena = Arena()
    patterns = ['"(?:[^"\\\\]|\\\\.){0,3000}"', "[a-zé→]{2,5000}"]
    dfas = [compile_lazy(p, arena=arena) for p in patterns]
    rng = random.Random(7)
    alphabets = ['ab\\é→', "abzé→"]
    texts = [(('"' if i % 2 == 0 else "") + "".join(rng.choice(alphabets[i % 2]) for _ in range(2000))).encode()
             for i in range(4)]
    got: dict[int, int] = {}

    def work(i: int) -> None:
        got[i] = dfas[i % 2].run(0, texts[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, data in enumerate(texts):
        dfa = dfas[i % 2]
        alone = compile_lazy(patterns[i % 2], arena=Arena())
        expected = alone.run(0, data)
        assert (got[i] == dfa.dead) == (expected == alone.dead)
        assert dfa.accept(got[i]) == alone.accept(expected)
        # and as terms: a DFA of the same arena, stepped alone, reaches the very term
        again = compile_lazy(patterns[i % 2], arena=arena)
        assert again.core.term(again.run(0, data)) == dfa.core.term(got[i])
        assert dfa.run(0, data) == got[i]  # filled now: the same state again


def test_equal_terms_are_shared() -> None:
    arena = Arena()
    first = compile_lazy("[a-z]+@(?:x|y)", arena=arena)
    n = arena.n_terms
    second = compile_lazy("[a-z]+@(?:y|x)", arena=arena)
    assert arena.n_terms == n  # the same term: nothing new
    assert first.core.term(0) == second.core.term(0)


def test_set_terms_are_kept_per_arena() -> None:
    """A set's term is remembered for the arena it was made on (`lazy._set_terms`): terminals built in turn on
    two arenas, and back on the first, each read their own arena's terms (a stale term id reads another
    language, or none)."""
    pattern, words = "[a-z\u0400-\u04ff]{1,5}@[0-9]", ["ab@1", "жa@0", "abcdef@1", "ab@", "@1", "ab1"]
    first, second = Arena(), Arena()
    for arena in (first, second, first, second):
        got = compile_lazy(pattern, arena=arena)
        for word in words:
            assert got.accepts(word.encode()) == bool(re.fullmatch(pattern, word)), (word, arena)


def test_tiny_budget() -> None:
    base = Arena().nbytes
    arena = Arena(max_bytes=base + 20_000)
    built = []
    with pytest.raises(LimitExceeded, match="lazy_dfa_states"):
        for c in range(256):
            built.append(arena.repeat(arena.concat(arena.bytes_(1 << c), arena.bytes_(3 << 40)), 2, 7))
    assert built, "the budget allowed nothing"
    for t in built:  # terms made before still answer, and derivatives of memoised ones too
        assert not arena.nullable(t)
    again = arena.repeat(arena.concat(arena.bytes_(1 << 0), arena.bytes_(3 << 40)), 2, 7)
    assert again == built[0]
    assert arena.nbytes <= arena.max_bytes


def test_shared_budget_is_followed() -> None:
    budgets = pda.memory_budgets()["lazy_dfa_states"]
    try:
        pda.set_memory_budget("lazy_dfa_states", 4096)
        with pytest.raises(LimitExceeded, match="lazy_dfa_states"):
            compile_lazy("[a-z]{1,40}@[\\u0400-\\u04ff]+").run(0, "abc@ж".encode())
    finally:
        pda.set_memory_budget("lazy_dfa_states", budgets["max_bytes"])
    assert compile_lazy("[a-z]{1,40}").accepts(b"abc")


def test_a_full_shared_arena_is_replaced_and_its_dfas_go_on() -> None:
    budgets = pda.memory_budgets()["lazy_dfa_states"]
    try:
        pda.set_memory_budget("lazy_dfa_states", Arena().nbytes + 100_000)
        old = compile_lazy("[a-zé]{1,400}")
        arena = old.core.arena
        old.run(0, "abé".encode() * 120)  # fills the arena past half its budget
        assert arena.nbytes > arena.max_bytes // 2
        new = compile_lazy("[a-zé]{1,400}")
        assert new.core.arena is not arena  # a fresh arena for what comes next
        assert old.accepts("abé".encode() * 100) and new.accepts("abé".encode() * 100)
    finally:
        pda.set_memory_budget("lazy_dfa_states", budgets["max_bytes"])


def test_normal_forms() -> None:
    A = Arena()
    a, b, c = (A.bytes_(1 << ord(x)) for x in "abc")
    assert A.or_(a, b) == A.or_(b, a, a) == A.bytes_(1 << 97 | 1 << 98)
    assert A.or_(A.concat(a, b), A.concat(b, c)) == A.or_(A.concat(b, c), A.concat(a, b))
    assert A.concat(A.concat(a, b), c) == A.concat(a, A.concat(b, c))
    assert A.concat(A.eps(), a) == a and A.concat(a, A.empty()) == A.empty()
    assert A.not_(A.not_(a)) == a and A.not_(A.empty()) == A.full()
    assert A.and_(a, A.full()) == a and A.and_(a, A.empty()) == A.empty() and A.or_(a, A.full()) == A.full()
    assert A.repeat(a, 1, 1) == a and A.repeat(a, 0, 0) == A.eps() and A.repeat(a, 3, 2) == A.empty()
    star = A.repeat(a, 0, -1)
    assert A.repeat(star, 0, -1) == star and A.repeat(star, 2, 5) == A.repeat(star, 0, 5)
    assert A.first(A.eps()) == A.eps() and A.first(a) == a
    assert A.derivative(A.repeat(a, 50000, 50000), ord("a")) == A.repeat(a, 49999, 49999)
    assert A.nullable(star) and not A.live(A.and_(A.concat(a, star), A.concat(b, star)))
    assert A.live(A.and_(A.concat(star, b), A.not_(A.concat(a, A.full()))))
    assert A.derivative(A.first(A.concat(a, A.or_(A.eps(), b))), ord("a")) == A.eps()


def test_bad_arguments() -> None:
    A = Arena()
    with pytest.raises(ValueError):
        A.concat(0, 10**6)
    with pytest.raises(ValueError):
        A.derivative(0, 256)
    with pytest.raises(ValueError):
        A.bytes_(b"x")
    with pytest.raises(ValueError):
        A.repeat(0, -2, 3)
    dfa = Lazy(A, A.bytes_(1 << 97))
    with pytest.raises(ValueError):
        dfa.step(dfa.n_states, 97)
    with pytest.raises(ValueError):
        dfa.accept(-1)
    with pytest.raises(LimitExceeded, match="max_states=2"):
        Lazy(A, A.concat(A.bytes_(1 << 97), A.bytes_(1 << 98)), 2).step(0, 97)


def test_deep_terms_are_refused_not_crashed() -> None:
    """Derivatives recurse through a term's structure: 1,000 levels at most, which a thread of 512 KB of
    stack runs (~160 bytes a level); deeper raises LimitExceeded."""
    got: list = []

    def nested(n: int) -> str:  # X0 = a, Xi = (Xi-1)?b
        return "(?:" * n + "a" + ")?b" * n

    def work() -> None:
        deep = compile_lazy(nested(300))
        got.append(deep.accepts(b"a" + b"b" * 300) and deep.accepts(b"b") and not deep.accepts(b"ab" * 2))
        with pytest.raises(LimitExceeded, match="nests deeper"):
            compile_lazy(nested(1200)).run(0, b"a")
        got.append(True)

    previous = threading.stack_size(512 << 10)
    try:
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
    finally:
        threading.stack_size(previous)
    assert got == [True, True]


def test_automaton_terminals_not_built_yet() -> None:
    t = TerminalDef(name="A", pattern="<automaton>", automaton=TerminalAutomaton(2, 0, frozenset({1}), ((0, "a", 1),)))
    with pytest.raises(NotImplementedError):
        lazy_terminal(t)


def test_utf8_sequences_spell_exactly_the_code_points() -> None:
    rng = random.Random(3)
    for _ in range(200):
        lo = rng.randrange(0, 0x110000)
        hi = min(0x10FFFF, lo + rng.choice([0, 1, 63, 64, 4095, 70000, 1 << 20]))
        seqs = utf8_sequences(((lo, hi),))
        spelled = sum(int(np.prod([b - a + 1 for a, b in seq])) for seq in seqs)
        surrogates = max(0, min(hi, 0xDFFF) - max(lo, 0xD800) + 1)
        assert spelled == hi - lo + 1 - surrogates
        for cp in {lo, hi, rng.randint(lo, hi)} - set(range(0xD800, 0xE000)):
            data = chr(cp).encode()
            assert sum(len(seq) == len(data) and all(a <= x <= b for x, (a, b) in zip(data, seq)) for seq in seqs) == 1


def test_utf8_sequences_of_ascii_sets_are_their_ranges() -> None:
    """An ASCII set's sequences (a shortcut) are what the general splitting gives for the same ranges followed by a
    non-ASCII one, less that one's: each range one one-byte sequence, in order."""
    rng = random.Random(5)
    for _ in range(200):
        cuts = sorted(rng.sample(range(0x80), rng.choice([2, 4, 8, 16])))
        ranges = tuple((a, b) for a, b in zip(cuts[::2], cuts[1::2]))
        with_wide = utf8_sequences(ranges + ((0x100, 0x3FF),))
        assert utf8_sequences(ranges) == with_wide[: len(ranges)] == tuple(((a, b),) for a, b in ranges)
    assert utf8_sequences(()) == ()


def test_equal_sets_share_terms_and_byte_classes_see_each_set_once() -> None:
    """A pattern repeating one class as distinct nodes (a JSON string's hex escapes) gives the DFA of the same
    pattern written once, state for state."""
    repeated = compile_lazy("(?:[0-9A-Fa-f][0-9A-Fa-f]|x[0-9A-Fa-f]){1,3}z")
    once = compile_lazy("(?:[0-9A-Fa-f]{2}|x[0-9A-Fa-f]){1,3}z")
    assert repeated.byte_class.tolist() == once.byte_class.tolist()
    for data in (b"", b"0a", b"x1", b"0ax1z", b"0a0a0az", b"0a0a0a0az", b"xz", b"x1x2x3z", b"g1z"):
        assert repeated.accepts(data) == once.accepts(data) == (re.fullmatch(
            "(?:[0-9A-Fa-f][0-9A-Fa-f]|x[0-9A-Fa-f]){1,3}z", data.decode()) is not None)


def test_lazy_dfa_type() -> None:
    dfa = compile_lazy("ab")
    assert isinstance(dfa, LazyDFA) and dfa.start == 0
    assert dfa.accepts(b"ab") and not dfa.accepts(b"a") and dfa.live(dfa.run(0, b"a"))


def test_run_many_is_run_of_each() -> None:
    dfa = compile_lazy("[a-z]{2,30}é?|\\d+")
    data = [b"", b"ab", b"abc\xc3\xa9", b"abc\xc3", b"12", b"a1", b"z" * 40, b"\xff"]
    for start in (0, dfa.run(0, b"a")):
        got = np.frombuffer(dfa.run_many(start, data), dtype=np.int32).tolist()
        assert got == [dfa.run(start, x) for x in data]
    with pytest.raises(TypeError):
        dfa.run_many(0, [b"a", "a"])
