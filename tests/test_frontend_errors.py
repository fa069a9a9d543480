"""Front ends fail with `GrammarError`s that say where, and never with a RecursionError.

Covers GBNF, Lark (through Lark's own loader), terminal regexes and `Grammar.from_regex`,
including nesting far deeper than Python's call stack.
"""

from __future__ import annotations

import pytest

import pda
from pda.errors import GrammarError, RegexError
from pda.grammar.lark_frontend import MAX_LARK_NESTING

G = pda.Grammar


# ---------------------------------------------------------------- nesting


@pytest.mark.parametrize("depth", [300, 5000])
def test_gbnf_nesting_of_any_depth_parses(depth: int) -> None:
    """The GBNF parser and emitter run on a heap stack; deep groups become rules of their own."""
    g = G.from_gbnf("root ::= " + '("a" ' * depth + '"b"' + ")" * depth)
    assert g.accepts("a" * depth + "b")
    assert not g.accepts("a" * (depth - 1) + "b")


def test_gbnf_deep_alternations_and_repeats() -> None:
    depth = 300
    g = G.from_gbnf("root ::= " + '("a" | ' * depth + '"b"' + ")*" * depth)
    assert g.accepts("") and g.accepts("abba") and not g.accepts("abc")


def test_gbnf_unclosed_deep_group_names_its_place() -> None:
    with pytest.raises(GrammarError, match="expecting '\\)'") as info:
        G.from_gbnf("root ::= " + "(" * 3000 + '"b"')
    assert info.value.line == 1 and info.value.column is not None


def test_lark_nesting_up_to_the_limit_loads() -> None:
    depth = MAX_LARK_NESTING
    g = G.from_lark("start: " + "(" * depth + '"a"' + ")" * depth)
    assert g.accepts("a")


@pytest.mark.parametrize("depth", [MAX_LARK_NESTING + 1, 500, 5000])
def test_lark_nesting_past_the_limit_is_a_grammar_error(depth: int) -> None:
    text = "start: x\nx: " + "[" * depth + '"a"' + "]" * depth
    with pytest.raises(GrammarError, match="nested more than") as info:
        G.from_lark(text)
    assert info.value.line == 2
    assert info.value.column == 4 + MAX_LARK_NESTING


def test_brackets_inside_strings_regexes_and_comments_do_not_count() -> None:
    deep = "(" * 1000
    text = f'start: "{deep}" | A  // {deep}\nA: /\\(+{"(?:" * 600}x{")" * 600}/'
    g = G.from_lark(text)
    assert g.accepts(deep) and g.accepts("((x")


@pytest.mark.parametrize("depth", [500, 5000])
def test_deep_regex_terminal_in_lark(depth: int) -> None:
    g = G.from_lark("start: A\nA: /" + "(?:" * depth + "a|b" + ")+" * depth + "/")
    assert g.accepts("abba") and not g.accepts("abc")


def test_deep_regex_in_from_regex() -> None:
    g = G.from_regex("(?:" * 5000 + "ab" + ")" * 5000)
    assert g.accepts("ab") and not g.accepts("a")


# ---------------------------------------------------------------- Lark loader errors


def test_missing_import_is_a_grammar_error_with_line() -> None:
    with pytest.raises(GrammarError, match="nonexistent") as info:
        G.from_lark("start: FOO\n%import nonexistent.FOO\n")
    assert info.value.line == 2


def test_surrogate_literal_names_terminal_and_line() -> None:
    with pytest.raises(GrammarError, match="surrogate U\\+D800") as info:
        G.from_lark('start: A\nA: "x\\ud800"\n')
    assert (info.value.terminal, info.value.line) == ("A", 2)


def test_bad_escape_in_literal_says_which_escape() -> None:
    with pytest.raises(GrammarError, match=r"bad escape in the literal \\x"):
        G.from_lark('start: "\\x"')


def test_regex_error_names_terminal_and_line() -> None:
    with pytest.raises(RegexError) as info:
        G.from_lark("start: A\n\nWORD: /(?P=x)+/\nA: WORD\n")
    assert (info.value.terminal, info.value.line) == ("A", 4)  # Lark inlines WORD into A


def test_unicode_property_terminal_loads() -> None:
    """Formerly refused with the regex as the terminal name; now supported (see test_regex.py)."""
    g = G.from_lark("start: WORD (\" \" WORD)*\nWORD: /\\p{L}+/\n")
    assert g.accepts("naïve Ωμέγα") and not g.accepts("n4ive")


def test_unknown_unicode_property_names_terminal_and_line() -> None:
    with pytest.raises(RegexError, match="unknown Unicode property") as info:
        G.from_lark("start: WORD\n\nWORD: /\\p{Klingon}+/\n")
    assert (info.value.terminal, info.value.line) == ("WORD", 3)


def test_bytes_directive_names_must_be_terminals() -> None:
    with pytest.raises(GrammarError, match="not a terminal"):
        G.from_lark("// pda: bytes=NOPE\nstart: A\nA: /[^x]/\n")


def test_bytes_directive_makes_a_terminal_read_bytes() -> None:
    g = G.from_lark("// pda: bytes=STR\nstart: STR\nSTR: /'[^']*'/\n")
    assert g.accepts(b"'\xe9\xff'") and g.accepts("'é'")
    assert not G.from_lark("start: STR\nSTR: /'[^']*'/\n").accepts(b"'\xe9'")


# ---------------------------------------------------------------- from_regex


@pytest.mark.parametrize(
    "pattern, yes, no",
    [
        (r'\\"', ['\\"'], ['"', "\\"]),
        (r"\\\\", ["\\\\"], ["\\"]),
        (r'"[^"]*"', ['""', '"a b"'], ['"', 'a"']),
        (r"a/b", ["a/b"], ["ab"]),
        (r"[\x5d]+", ["]]"], ["\\"]),
    ],
)
def test_from_regex_keeps_escapes(pattern: str, yes: list[str], no: list[str]) -> None:
    g = G.from_regex(pattern)
    assert all(g.accepts(s) for s in yes)
    assert not any(g.accepts(s) for s in no)


@pytest.mark.parametrize(
    "pattern, yes, no",
    [
        ("a*", ["", "a", "aaa"], ["b", "ab"]),
        (".*", ["", "x y", "é"], ["\n"]),
        ("a|", ["", "a"], ["aa"]),
        ("", [""], ["a"]),
        ("(?:)", [""], ["a"]),
        ("(?i)a?b?", ["", "A", "Ab", "B"], ["ba"]),
        (r"^a*$", ["", "aa"], ["b"]),
        (r"\Aab?\Z", ["a", "ab"], ["", "b"]),
    ],
)
def test_from_regex_matching_the_empty_string(pattern: str, yes: list[str], no: list[str]) -> None:
    g = G.from_regex(pattern)
    assert [g.accepts(s) for s in yes] == [True] * len(yes)
    assert [g.accepts(s) for s in no] == [False] * len(no)


def test_from_regex_is_fullmatch_even_with_lazy_quantifiers() -> None:
    g = G.from_regex("a+?")
    assert g.accepts("aaa")


def test_from_regex_errors_are_regex_errors() -> None:
    with pytest.raises(RegexError):
        G.from_regex("(a")
    with pytest.raises(RegexError, match="back-reference"):
        G.from_regex(r"(a)\1")


# ---------------------------------------------------------------- JSON Schema patterns (ecma_regex)


def test_deep_json_schema_pattern_and_unicode_property() -> None:
    deep = "^" + "(?:a" * 3000 + ")?" * 3000 + "$"
    g = G.from_json_schema({"type": "string", "pattern": deep})
    assert g.accepts('"aaa"') and not g.accepts('"b"')
    g = G.from_json_schema({"type": "string", "pattern": "^\\p{L}+$"})
    assert g.accepts('"Ωé"') and not g.accepts('"1"')


def test_from_choices_checks_its_values() -> None:
    """A choice that is not a str is a TypeError; one UTF-8 cannot encode is a GrammarError naming it."""
    with pytest.raises(TypeError, match="choice 1 is a int"):
        G.from_choices(["x", 1])
    with pytest.raises(TypeError, match="not one string"):
        G.from_choices("abc")
    with pytest.raises(GrammarError, match=r"choice 0 .*not valid Unicode"):
        G.from_choices(["a\ud800"])
    assert G.from_choices(["a", "b", "a"]).accepts("b")
