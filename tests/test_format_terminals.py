"""The `format` regexes respelled for a cheaper lexer DFA accept exactly what their earlier spellings did.

Each earlier spelling is kept here as the reference: the DFAs built from the old and the new regex (alone, as a
quoted JSON string terminal and inside the anyOf union the lowering writes) must have the same language, checked
by walking the two DFAs in lockstep over every byte.
"""

from __future__ import annotations

import re

import pytest

import pda
from pda.grammar.json_schema.formats import FORMATS, GENERATION_FORMATS
from pda.regex.dfa import LexerDFA, compile_regex
from pda.regex.literals import patterns_alternation

_OLD_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_OLD_V4 = r"(?:(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])"
OLD = {
    "hostname": rf"{_OLD_LABEL}(?:\.{_OLD_LABEL})*",
    "email": r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
             rf"@(?:{_OLD_LABEL}(?:\.{_OLD_LABEL})*|\[{_OLD_V4}\])",
}


def same_language(a: LexerDFA, b: LexerDFA) -> bool:
    """Whether two one-terminal DFAs accept the same byte strings: every pair of states reached together by
    some input agrees on acceptance."""
    seen = {(a.start, b.start)}
    todo = [(a.start, b.start)]
    while todo:
        x, y = todo.pop()
        if a.accept[x, 0] != b.accept[y, 0]:
            return False
        for byte in range(256):
            pair = (int(a.trans[x, a.byte_class[byte]]), int(b.trans[y, b.byte_class[byte]]))
            if pair not in seen:
                seen.add(pair)
                todo.append(pair)
    return True


def test_same_language_tells_different_languages_apart():
    assert not same_language(compile_regex(OLD["hostname"]), compile_regex(r"[A-Za-z0-9]{1,63}(?:\.[A-Za-z0-9-]+)*"))


@pytest.mark.parametrize("name", sorted(OLD))
@pytest.mark.parametrize("wrap", ["{}", '"{}"'])
def test_respelled_format_keeps_its_language(name, wrap):
    for formats in (FORMATS, GENERATION_FORMATS):
        assert formats[name] != OLD[name]
        assert same_language(compile_regex(wrap.format(formats[name])), compile_regex(wrap.format(OLD[name])))


def test_union_of_formats_keeps_its_language():
    parts = ["hostname", "ipv4", "ipv6"]
    new = patterns_alternation([f'"{FORMATS[p]}"' for p in parts])
    old = patterns_alternation([f'"{OLD.get(p, FORMATS[p])}"' for p in parts])
    assert same_language(compile_regex(new), compile_regex(old))


@pytest.mark.parametrize("text, ok", [
    ("a", True), ("a-b", True), ("a" * 63, True), ("a" * 64, False), ("-a", False), ("a-", False),
    ("a." + "b" * 63 + ".c", True), ("a..b", False), ("a.", False), ("x" + "-" * 61 + "y", True),
])
def test_hostname_strings(text, ok):
    assert bool(re.fullmatch(FORMATS["hostname"], text)) is ok
    grammar = pda.Grammar.from_json_schema({"type": "string", "format": "hostname"})
    assert grammar.accepts(f'"{text}"') is ok
