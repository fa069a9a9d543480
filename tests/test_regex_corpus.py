"""Differential tests: every terminal of the corpus' Lark grammars, DFA vs Python's `re`.

The oracle per terminal:
- plain patterns: `re.fullmatch` on the decoded text (invalid UTF-8 never matches);
- the escaped-string idiom: `re.match` returns exactly the whole text (lazy, first match);
- lazy quantifiers (built with `lazy=True`): the text fullmatches and no proper
  prefix does (first-match semantics).
Samples come from the regex itself (hypothesis `from_regex`), mutated copies of
those, arbitrary text (incl. multi-byte UTF-8) and arbitrary bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import regex
from hypothesis import HealthCheck, assume, given, seed, settings
from hypothesis import strategies as st
from lark.exceptions import LarkError
from lark.load_grammar import GrammarBuilder

from pda.errors import RegexError
from pda.regex import compile_regex, has_lazy_quantifier
from pda.regex.syntax import has_string_idiom
from tests.conftest import CORPUS, GRAMMARS

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


def oracle(term: Term):
    """The function bytes -> bool that the terminal's DFA must agree with."""
    fl = 0
    for ch in term.flags:
        fl |= FLAG_BITS[ch]
    rx = re.compile(term.pattern, fl)
    if has_string_idiom(term.pattern, term.flags):
        def accepts(text: str) -> bool:
            m = rx.match(text)
            return m is not None and m.end() == len(text)
    elif has_lazy_quantifier(term.pattern, term.flags):
        def accepts(text: str) -> bool:
            return rx.fullmatch(text) is not None and not any(
                rx.fullmatch(text, 0, k) for k in range(len(text))
            )
    else:
        def accepts(text: str) -> bool:
            return rx.fullmatch(text) is not None

    # Some corpus patterns backtrack exponentially in `re` (nested quantifiers):
    # `regex` with a timeout screens out the inputs `re` could hang on.
    gate = regex.compile(term.pattern, fl | regex.V0)
    lazy = has_lazy_quantifier(term.pattern, term.flags)

    def on_bytes(data: bytes) -> bool:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return False
        try:
            gate.fullmatch(text, timeout=0.05)
            if lazy:
                for k in range(len(text)):
                    gate.fullmatch(text, 0, k, timeout=0.05)
        except TimeoutError:
            assume(False)
        return accepts(text)

    return rx, on_bytes


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


def _samples(rx: re.Pattern) -> st.SearchStrategy[bytes]:
    text = st.text(
        alphabet=st.characters(codec="utf-8") | st.sampled_from(list(rx.pattern[:64] or "a")),
        max_size=12,
    )
    sources = [text.map(lambda s: s.encode("utf-8")), st.binary(max_size=12)]
    try:
        regex_text = st.from_regex(rx, fullmatch=True)
        sources.insert(0, regex_text.map(lambda s: s.encode("utf-8")))
        sources.insert(0, st.tuples(regex_text, st.integers(0, 20), text).map(_mutate))
    except Exception:  # hypothesis cannot generate from look-behind patterns
        pass
    return st.one_of(*sources)


def _mutate(args: tuple[str, int, str]) -> bytes:
    s, k, extra = args
    k = min(k, len(s))
    choice = k % 4
    if choice == 0:
        out = s[:k]
    elif choice == 1:
        out = s + extra
    elif choice == 2:
        out = s[:k] + extra + s[k:]
    else:
        out = s[:k] + s[k + 1 :]
    data = out.encode("utf-8")
    return data[: len(data) - 1] if k % 5 == 4 and data else data  # sometimes split a character


def _check(term: Term, n: int) -> None:
    dfa = dfa_for(term)
    rx, expected = oracle(term)

    @seed(12345)
    @settings(
        max_examples=n,
        deadline=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(_samples(rx))
    def run(data: bytes) -> None:
        assert dfa.accepts(data) == expected(data), (term.id, term.pattern, data)

    run()


# Generated keyword-excluding NAME patterns (thousands of characters, hundreds of
# Unicode classes) take seconds to compile each: they run in the long variant only.
QUICK = [t for t in TERMS if len(t.pattern) <= 600]


@pytest.mark.parametrize("term", QUICK, ids=[t.id for t in QUICK])
def test_corpus_terminal(term: Term) -> None:
    _check(term, 20)


@pytest.mark.slow
@pytest.mark.parametrize("term", TERMS, ids=[t.id for t in TERMS])
def test_corpus_terminal_long(term: Term) -> None:
    _check(term, 1000)


def test_corpus_present_or_skipped() -> None:
    if not (CORPUS / "grammars").exists():
        pytest.skip(f"test corpus not available: {CORPUS / 'grammars'}")
    assert len(TERMS) > 100
