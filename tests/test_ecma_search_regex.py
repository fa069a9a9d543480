"""`python_search_regex`: an ECMA pattern compiled for Python's `re` with its wide classes negated
(``.`` as ``[^\\x0a\\x0d\\u2028-\\u2029]``) matches exactly what `re.compile(ecma_to_python(p))`
matches, and fails exactly as it fails."""

from __future__ import annotations

import glob
import json
import re
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pda.errors import RegexError
from pda.grammar.ecma_regex import ecma_to_python, python_search_regex

# Every class escape and `.`, outside and inside brackets, quantified, with anchors and groups.
PATTERNS = [
    ".", ".*", "^.+$", "a.b", "\\S", "^\\S+$", "\\D", "\\W", "\\s", "\\d", "\\w", "[\\S]", "[^\\S]", "[\\D\\s]",
    "^[^]$", "[]", ".{2,3}x", "(?:.|\\n)*", "^(a|.b)\\W*$", "\\W\\D\\S.", "[.]", "\\.", "x\\S*?y",
    "^[A-Za-z\\u00c0-\\u00ff .'-]+$", "^(?<name>.)(a)\\2.$",
]
TEXTS = ["", "a", "ab", "a\nb", "a\rb", "x\u2028y", "\u2029", "9", "_", " ", "\t", "\u00a0", "\ufeff", "é",
         "\ud800", "\U0001f600", "a.b", "xy", "x  y", "[]", "aab", "\u3000x", "A'b-c", "\U0010ffff"]


def _both(pattern: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    return python_search_regex(pattern), re.compile(ecma_to_python(pattern))


@pytest.mark.parametrize("pattern", PATTERNS)
def test_same_matches_as_the_plain_translation(pattern: str) -> None:
    fast, plain = _both(pattern)
    for text in TEXTS:
        found, expected = fast.search(text), plain.search(text)
        assert (found and found.span()) == (expected and expected.span()), (pattern, text)


def test_wide_classes_are_negated() -> None:
    assert python_search_regex(".*").pattern == "[^\\x0a\\x0d\\u2028-\\u2029]*"
    assert python_search_regex("^\\D\\W$").pattern == "^[^0-9][^0-9A-Z_a-z]\\Z"
    # Inside brackets, and narrow classes, are written as the plain translation writes them.
    for pattern in ("[\\S]", "\\d\\s\\w", "[^]"):
        assert python_search_regex(pattern).pattern == ecma_to_python(pattern)


@pytest.mark.parametrize("pattern", [".*(", "\\S(?<", "(?<x>.)(?<x>.)", ".{2,1}", "a)."])
def test_same_errors_as_the_plain_translation(pattern: str) -> None:
    with pytest.raises(re.error) as plain:
        re.compile(ecma_to_python(pattern))
    with pytest.raises(re.error) as fast:
        python_search_regex(pattern)
    assert str(fast.value) == str(plain.value)


def test_translation_errors_are_the_same() -> None:
    with pytest.raises(RegexError) as plain:
        ecma_to_python("ab\\")
    with pytest.raises(RegexError) as fast:
        python_search_regex("ab\\")
    assert str(fast.value) == str(plain.value)


def _corpus_patterns() -> list[str]:
    found: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "pattern" and isinstance(value, str):
                    found.add(value)
                if key == "patternProperties" and isinstance(value, dict):
                    found.update(k for k in value if isinstance(k, str))
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for path in sorted(glob.glob("/work/shared/corpus/jsonschemabench/schemas/*.jsonl")):
        with open(path) as f:
            for line in f:
                walk(json.loads(line)["schema"])
    return sorted(found)


def test_corpus_patterns_match_alike() -> None:
    """Every pattern of the JSONSchemaBench corpus: compiled alike or failing alike, and matching
    the same texts."""
    patterns = _corpus_patterns()
    if not patterns:
        pytest.skip("JSONSchemaBench corpus not present")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # `re`'s notes on a few patterns' nested sets
        for pattern in patterns:
            _assert_alike(pattern, TEXTS + ["name", "x-foo", "2020-01-01", "abc123", "a b\nc"])


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab.\\SDWsdw[]^$*+?()|{}2,-\n") + ["\u2028", "é"]), max_size=8),
       st.lists(st.text(max_size=6), max_size=6))
def test_generated_patterns_match_alike(pattern: str, texts: list[str]) -> None:
    _assert_alike(pattern, texts + TEXTS)


def _assert_alike(pattern: str, texts: list[str]) -> None:
    """`python_search_regex(pattern)` fails as `re.compile(ecma_to_python(pattern))` does (same error type and
    message), or finds the same span in every text."""
    try:
        plain = re.compile(ecma_to_python(pattern))
    except (re.error, RegexError) as exc:
        with pytest.raises(type(exc)) as fast_exc:
            python_search_regex(pattern)
        assert str(fast_exc.value) == str(exc)
        return
    fast = python_search_regex(pattern)
    for text in texts:
        found, expected = fast.search(text), plain.search(text)
        assert (found and found.span()) == (expected and expected.span()), (pattern, text)
