"""Key terminals built without the general regex path equal its DFAs.

A JSON Schema object's free keys with exclusions (`"(?!(?:a|b)")(?:C)*"`, `strings.not_in_set`) are built
by laying the names' trie over the free key's DFA (`pda.regex.finite_set.excluding_dfa`). Its states are
numbered otherwise than the regex path's, so the two are compared as automata: both minimal, and
isomorphic (the same language), on random name lists (escapes, multi-byte characters, names that are
prefixes of each other, the empty name, no names) and on every such key of the JSON Schema corpus.
"""

from __future__ import annotations

import random

import pytest

from pda.grammar.ir import TerminalDef
from pda.grammar.json_schema.strings import not_in_set
from pda.lexer.terminals import terminal_dfa
from pda.regex.dfa import LexerDFA, compile_regex
from pda.regex.finite_set import excluding_dfa
from pda.regex.literals import excluded_alternatives
from tests.conftest import corpus_schema_irs

# Characters of random names: single-spelling ASCII (the direct construction's), then characters that a JSON
# string may also spell with an escape or in several bytes (the regex path's).
SIMPLE = "abcxyz_-.09 A~[]{}()*+?|^$#"
OTHER = '"\\/\n\t\x01\x7féß中😀'


def _isomorphic(a: LexerDFA, b: LexerDFA) -> bool:
    """Whether two complete one-terminal DFAs are the same automaton up to the numbering of their states
    (for minimal DFAs: whether they have the same language)."""
    if a.n_states != b.n_states:
        return False
    pairs = {a.start: b.start}
    stack = [a.start]
    while stack:
        p = stack.pop()
        q = pairs[p]
        if a.accept[p, 0] != b.accept[q, 0]:
            return False
        for byte in range(256):
            x, y = int(a.trans[p, a.byte_class[byte]]), int(b.trans[q, b.byte_class[byte]])
            if x not in pairs:
                pairs[x] = y
                stack.append(x)
            elif pairs[x] != y:
                return False
    return len(set(pairs.values())) == len(pairs)


def _key_pattern(names: list[str]) -> str:
    return '"' + not_in_set(names) + '"'


def _random_names(rng: random.Random, alphabet: str) -> list[str]:
    names = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6))) for _ in range(rng.randint(0, 7))]
    # names that are prefixes of each other
    names += [n[: rng.randint(0, len(n))] for n in names if n and rng.random() < 0.5]
    return names


def _direct(pattern: str) -> LexerDFA | None:
    """The direct construction alone (the free key's DFA through the regex path), or None where it declines."""
    found = excluded_alternatives(pattern)
    if found is None:
        return None
    strings, free_pattern = found
    return excluding_dfa(compile_regex(free_pattern), [s.encode("utf-8") for s in strings])


def test_excluded_alternatives_reads_the_key_pattern_back() -> None:
    """The names and the free pattern come back exactly; other shapes are not read."""
    body = not_in_set([])
    assert excluded_alternatives(_key_pattern(["b", "a-b", "a.c"])) == (["a-b", "a.c", "b"], '"' + body + '"')
    assert excluded_alternatives(_key_pattern([""])) == ([""], '"' + body + '"')
    assert excluded_alternatives(_key_pattern([])) is None  # no look-ahead at all
    assert excluded_alternatives('"(?!(?:a)")(?:b)*"|c"') is None  # the rest is not one repeated group
    assert excluded_alternatives('"(?!(?:a)")(?:b)"(?:c)*"') is None
    assert excluded_alternatives('"(?!(?:a|[bc])")(?:b)*"') is None  # not literals
    assert excluded_alternatives('"(?!(?:a)")(?:b)*"', "i") is None  # a flag that changes the names


@pytest.mark.parametrize("seed", range(40))
def test_random_simple_names_take_the_direct_construction(seed: int) -> None:
    rng = random.Random(seed)
    names = _random_names(rng, SIMPLE)
    if not names:
        names = [""]
    pattern = _key_pattern(names)
    direct = _direct(pattern)
    assert direct is not None
    assert _isomorphic(direct, compile_regex(pattern))


@pytest.mark.parametrize("seed", range(40))
def test_random_names_equal_the_regex_path(seed: int) -> None:
    """Any names (escapes, multi-byte characters): the terminal's DFA, whichever path built it, and the direct
    construction where it does not decline, equal the regex path's."""
    rng = random.Random(1000 + seed)
    names = _random_names(rng, SIMPLE + OTHER)
    pattern = _key_pattern(names)
    expected = compile_regex(pattern)
    direct = _direct(pattern)
    if direct is not None:
        assert _isomorphic(direct, expected)
    if names and all(c in SIMPLE for n in names for c in n):
        assert direct is not None
    built = terminal_dfa(TerminalDef(name="KEY", pattern=pattern), lazy=False)  # eager under --lazy-everywhere too
    assert isinstance(built, LexerDFA) and _isomorphic(built, expected)


def test_isomorphism_tells_languages_apart() -> None:
    """The comparison can fail: other names, or one name more, are another automaton."""
    direct = _direct(_key_pattern(["ab", "b"]))
    assert direct is not None
    assert _isomorphic(direct, compile_regex(_key_pattern(["ab", "b"])))
    assert not _isomorphic(direct, compile_regex(_key_pattern(["ab", "c"])))
    assert not _isomorphic(direct, compile_regex(_key_pattern(["ab"])))


def test_names_spelled_otherwise_are_declined() -> None:
    """A name with a character that an escape also spells, or that takes several bytes, is the regex path's."""
    for name in ("a/b", 'q"', "back\\slash", "tab\t", "é", "中"):
        assert _direct(_key_pattern(["plain", name])) is None


def test_direct_construction_is_deterministic() -> None:
    """The same names in any order give the same tables (the trie is sorted, never hashed)."""
    names = ["b", "ab", "a", "abc", "zz"]
    first = _direct(_key_pattern(names))
    again = excluding_dfa(compile_regex('"' + not_in_set([]) + '"'), [n.encode() for n in reversed(names)])
    assert first is not None and again is not None and first.digest == again.digest


def _corpus_key_terminals() -> list[TerminalDef]:
    found: dict[tuple[str, str], TerminalDef] = {}
    for ir in corpus_schema_irs(("Snowplow", "JsonSchemaStore", "Github_medium", "Github_hard", "Kubernetes"), 120):
        for t in ir.terminals:
            if t.automaton is None and t.pattern.startswith('"(?!'):
                found.setdefault((t.pattern, t.flags), t)
    return list(found.values())


def test_corpus_key_terminals_equal_the_regex_path() -> None:
    """Every free key with exclusions of the corpus schemas read here takes the direct construction, and its
    DFA is the regex path's."""
    terminals = _corpus_key_terminals()
    assert len(terminals) >= 20
    for t in terminals:
        direct = _direct(t.pattern)
        assert direct is not None, t.pattern[:200]
        assert _isomorphic(direct, compile_regex(t.pattern, t.flags)), t.pattern[:200]
