"""Differential tests: every terminal of the corpus' Lark grammars, DFA vs Python's `re`.

The oracle per terminal (`re`; `regex` where `re` backtracks for too long):
- plain patterns: `re.fullmatch` on the decoded text (invalid UTF-8 never matches);
- the escaped-string idiom: `re.match` returns exactly the whole text (lazy, first match);
- lazy quantifiers (built with `lazy=True`): the text fullmatches and no proper
  prefix does (first-match semantics).
Samples come from the regex itself (hypothesis `from_regex`), edited copies of
those, arbitrary text (incl. multi-byte UTF-8) and arbitrary bytes (mostly
invalid UTF-8), drawn in batches and judged by the DFA in one vectorised walk.
The default run checks 200 strings on each of 40 terminals spread over the
corpus; `--long` checks at least 1,000 on every terminal (docs/regex_differential.md).
"""

from __future__ import annotations

import re
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import regex
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from lark.exceptions import LarkError
from lark.load_grammar import GrammarBuilder

from pda.errors import RegexError
from pda.regex import LexerDFA, compile_regex, has_lazy_quantifier, sample_from_dfa
from pda.regex.syntax import has_string_idiom
from tests.conftest import CORPUS, GRAMMARS
from tests.test_regex import assert_minimal

FLAG_BITS = {"i": re.I, "s": re.S, "m": re.M, "x": re.X, "a": re.A, "u": re.U}


@dataclass(frozen=True)
class Term:
    grammar: str
    name: str
    pattern: str
    flags: str

    @property
    def id(self) -> str:
        return f"{self.grammar}:{self.name}"


def _grammar_files() -> list[Path]:
    files = sorted((CORPUS / "grammars").rglob("*.lark")) if CORPUS.exists() else []
    return files + (sorted(GRAMMARS.glob("*.lark")) if GRAMMARS.exists() else [])


def load_terminals(path: Path) -> list[Term]:
    """All terminals a grammar defines (imported ones and unused ones too), as lark expands them."""
    builder = GrammarBuilder(import_paths=[str(path.parent)])
    builder.load_grammar(path.read_text(), str(path))
    terminals, _, _ = builder.build().compile([], set(builder._definitions))
    label = f"{path.parent.name}/{path.name}"
    return [
        Term(label, t.name, t.pattern.to_regexp(), "".join(sorted(t.pattern.flags)))
        for t in terminals
    ]


def corpus_terminals() -> list[Term]:
    seen: dict[tuple[str, str], Term] = {}
    for path in _grammar_files():
        try:
            terms = load_terminals(path)
        except LarkError:  # a grammar being edited in the tree; its own tests report it
            continue
        for t in terms:
            seen.setdefault((t.pattern, t.flags), t)  # identical patterns are tested once
    return list(seen.values())


TERMS = corpus_terminals()


class _Slow(Exception):
    """`re` ran past its CPU budget on one string."""


@contextmanager
def cpu_budget(seconds: float) -> Iterator[None]:
    """Interrupt `re` (its matcher checks for signals) after `seconds` of CPU time."""
    def expire(signum: int, frame: object) -> None:
        raise _Slow

    previous = signal.signal(signal.SIGVTALRM, expire)
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)


class Oracle:
    """Judges byte strings for one terminal the way its DFA must.

    `re` is the reference. Some corpus patterns nest quantifiers
    (`(?:[a-z](?:[a-z0-9]?)*)+`) and make `re` backtrack for minutes on a short
    non-matching string; when `re` runs past its CPU budget the `regex` module
    (which avoids most of that backtracking) judges instead, and a string
    neither can judge in time is screened out (counted, not checked).
    """

    def __init__(self, term: Term) -> None:
        fl = 0
        for ch in term.flags:
            fl |= FLAG_BITS[ch]
        self.rx = re.compile(term.pattern, fl)
        self.alt = regex.compile(term.pattern, fl | regex.V0)
        self.idiom = has_string_idiom(term.pattern, term.flags)
        self.lazy = not self.idiom and has_lazy_quantifier(term.pattern, term.flags)
        self.judged_by_regex = 0  # `re` too slow on these: `regex` judged them
        self.regex_differs = 0  # `regex` and `re` disagree here (Unicode tables): `re` counts

    def verdict(self, rx: re.Pattern | regex.Pattern, text: str, **timeout: float) -> bool:
        if self.idiom:  # the escaped-string idiom means what `re.match` returns
            m = rx.match(text, **timeout)
            return m is not None and m.end() == len(text)
        if rx.fullmatch(text, **timeout) is None:
            return False
        # lazy terminals have first-match semantics: no proper prefix matches
        return not self.lazy or not any(rx.fullmatch(text, 0, k, **timeout) for k in range(len(text)))

    def __call__(self, data: bytes) -> bool | None:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return False
        try:
            alt = self.verdict(self.alt, text, timeout=0.05)
        except TimeoutError:
            alt = None
        try:
            with cpu_budget(0.02):
                want = self.verdict(self.rx, text)
        except _Slow:
            self.judged_by_regex += alt is not None
            return alt
        self.regex_differs += alt is not None and alt != want
        return want


_DFAS: dict[Term, object] = {}


def dfa_for(term: Term):
    if term not in _DFAS:
        lazy = has_lazy_quantifier(term.pattern, term.flags)
        try:
            _DFAS[term] = compile_regex(term.pattern, term.flags, name=term.name, lazy=lazy)
        except RegexError as e:
            _DFAS[term] = e
    got = _DFAS[term]
    if isinstance(got, RegexError):
        pytest.skip(f"refused: {got}")
    return got


# One hypothesis example is a batch: regex strings, edited copies of them, and noise.
REGEX_STRINGS, EDITS, NOISE = 12, 24, 14
BATCH = REGEX_STRINGS + EDITS + NOISE


# hypothesis' `from_regex` needs minutes per string on the generated keyword-excluding
# NAME patterns (30,000+ characters of nested alternatives): those draw lexemes by a
# seeded walk of the DFA instead (`sample_from_dfa`), which `re` must then accept.
FROM_REGEX_MAX_CHARS = 20_000


def batches(rx: re.Pattern, dfa: LexerDFA) -> st.SearchStrategy[list[bytes]]:
    """Lists of BATCH byte strings: drawn from the regex (hypothesis `from_regex`), edited
    copies of those (cut, extended, a character dropped, a character split), arbitrary
    text (any code point, and the pattern's own characters) and arbitrary bytes."""
    own = "".join(sorted(set(rx.pattern[:64]))) or "a"
    text = st.text(st.characters(codec="utf-8"), max_size=12) | st.text(alphabet=own, max_size=12)
    noise = st.lists(
        text.map(lambda s: s.encode("utf-8")) | st.binary(max_size=12), min_size=NOISE, max_size=NOISE
    )
    if len(rx.pattern) <= FROM_REGEX_MAX_CHARS:
        regex_text = st.from_regex(re.compile(bounded_repeats(rx.pattern), rx.flags), fullmatch=True)
    else:
        regex_text = st.randoms(use_true_random=False).map(
            lambda rnd: sample_from_dfa(dfa, 0, rnd, max_len=24).decode("utf-8")
        )
    edits = st.lists(st.tuples(st.integers(0, 2**16), text), min_size=EDITS, max_size=EDITS)
    regex_strings = st.lists(regex_text, min_size=REGEX_STRINGS, max_size=REGEX_STRINGS)
    return st.tuples(regex_strings, edits, noise).map(_assemble)


def bounded_repeats(pattern: str, most: int = 4) -> str:
    """The pattern with every unbounded repeat capped at `most` more copies.

    Its language is a subset of the pattern's, so its strings still match; hypothesis
    draws from nested unbounded repeats (`(?:/+[^*/]|\\*+[^*/])*`) blow up to
    thousands of characters and overrun its example budget, which capped repeats avoid.
    """
    out: list[str] = []
    i, n, in_class = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            # a "]" first in the class (after an optional "^") is a literal
            j = i + 1 + (pattern[i + 1 : i + 2] == "^")
            if pattern[j : j + 1] == "]":
                out.append(pattern[i : j + 1])
                i = j + 1
                continue
        elif c == "*" or c == "+":
            out.append("{%d,%d}" % (0 if c == "*" else 1, most + (c == "+")))
            i += 1
            continue
        elif c == "{":
            m = re.match(r"\{(\d+),\}", pattern[i:])
            if m:
                lo = int(m.group(1))
                out.append("{%d,%d}" % (lo, lo + most))
                i += m.end()
                continue
        out.append(c)
        i += 1
    bounded = "".join(out)
    try:
        re.compile(bounded)
    except re.error:  # a construct the scan does not know: draw from the pattern itself
        return pattern
    return bounded


def _assemble(parts: tuple[list[str], list[tuple[int, str]], list[bytes]]) -> list[bytes]:
    strings, edits, noise = parts
    out = [s.encode("utf-8") for s in strings]
    out += [_edit(strings[i % len(strings)], k, extra) for i, (k, extra) in enumerate(edits)]
    return out + noise


def _edit(s: str, k: int, extra: str) -> bytes:
    """An edited copy of a matching string: the edits that find boundary bugs."""
    at = k % (len(s) + 1)
    choice = (k >> 8) % 4
    if choice == 0:
        out = s[:at]
    elif choice == 1:
        out = s + extra
    elif choice == 2:
        out = s[:at] + extra + s[at:]
    else:
        out = s[:at] + s[at + 1 :]
    data = out.encode("utf-8")
    return data[:-1] if (k >> 10) % 5 == 4 and data else data  # sometimes split a character


@dataclass
class Tally:
    checked: int = 0
    screened_out: int = 0
    judged_by_regex: int = 0
    regex_differs: int = 0


def check_terminal(term: Term, n: int) -> Tally:
    """At least n sampled byte strings: the terminal's DFA must agree with the oracle on each.

    Hypothesis draws lists of BATCH strings (its per-example overhead dwarfs the
    check itself); the DFA judges a whole list in one vectorised walk. Strings the
    oracle cannot judge in time do not count: another seeded round makes up for them.
    """
    dfa = dfa_for(term)
    judge = Oracle(term)
    tally = Tally()

    def check(strings: list[bytes]) -> None:
        got = dfa.accepts_many(strings).tolist()
        for data, verdict in zip(strings, got):
            want = judge(data)
            if want is None:
                tally.screened_out += 1
                continue
            tally.checked += 1
            assert verdict == want, (term.id, term.pattern[:300], data)

    for round_seed in range(12345, 12348):
        if tally.checked >= n:
            break
        seed(round_seed)(
            settings(
                max_examples=-(-(n - tally.checked) // BATCH) + 1,
                deadline=None,
                suppress_health_check=list(HealthCheck),
                database=None,
            )(given(batches(judge.rx, dfa))(check))
        )()
    tally.judged_by_regex = judge.judged_by_regex
    tally.regex_differs = judge.regex_differs
    assert tally.checked >= n, (term.id, tally)
    return tally


def _ci_sample(terms: list[Term], k: int) -> list[Term]:
    """A fixed spread of terminals for the default run: every grammar, short and long patterns."""
    ordered = sorted(terms, key=lambda t: (len(t.pattern), t.id))
    step = max(1, len(ordered) // k)
    return ordered[::step][:k]


QUICK = _ci_sample(TERMS, 40)


def _record(record_property, term: Term, tally: Tally) -> None:
    """Tallies land in `--junitxml` output (docs/regex_differential.md is written from them)."""
    dfa = dfa_for(term)
    record_property("pattern_chars", len(term.pattern))
    record_property("dfa_states", dfa.n_states)
    for field in ("checked", "screened_out", "judged_by_regex", "regex_differs"):
        record_property(field, getattr(tally, field))


@pytest.mark.parametrize("term", QUICK, ids=[t.id for t in QUICK])
def test_corpus_terminal(term: Term, record_property) -> None:
    _record(record_property, term, check_terminal(term, 200))
    assert_minimal(dfa_for(term))


@pytest.mark.slow
@pytest.mark.parametrize("term", TERMS, ids=[t.id for t in TERMS])
def test_corpus_terminal_long(term: Term, record_property) -> None:
    _record(record_property, term, check_terminal(term, 1000))
    assert_minimal(dfa_for(term))


def test_corpus_present_or_skipped() -> None:
    if not (CORPUS / "grammars").exists():
        pytest.skip(f"test corpus not available: {CORPUS / 'grammars'}")
    assert len(TERMS) > 100
