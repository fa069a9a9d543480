"""Regex translation memoised by pattern, with long groups translated once on their own
(`pda.regex.syntax._translate_cut`): the same IR and the same errors as one whole parse."""

from __future__ import annotations

import warnings
from contextlib import contextmanager

from hypothesis import given, settings
from hypothesis import strategies as st

from pda.errors import RegexError
from pda.grammar.ecma_regex import ANY_STRING_BODY, ANY_UNIT
from pda.lru import ByteLRU
from pda.regex import syntax


@contextmanager
def fresh_memo(min_chars: int | None = None):
    """An empty translation memo (and optionally a smaller cut threshold) for the block."""
    saved = syntax._translations, syntax.CUT_MIN_CHARS
    syntax._translations = ByteLRU(1 << 24)
    if min_chars is not None:
        syntax.CUT_MIN_CHARS = min_chars
    try:
        yield
    finally:
        syntax._translations, syntax.CUT_MIN_CHARS = saved


def outcome(fn, *args):
    """The result or the error, and the warnings `re._parser` gave (their positions are the pattern's)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = fn(*args)
        except Exception as e:  # the error itself is what is compared
            result = type(e), str(e)
    return result, [str(w.message) for w in caught]


def whole(pattern: str, flags: str):
    return syntax._translate_whole(pattern, flags, "T", 7)[0]


def memoised(pattern: str, flags: str):
    return syntax.translate(pattern, flags, name="T", line=7)


_LEAVES = ["a", "b", '"', "\\\\", "[a-c]", "[^x]", ".", "\\d", "\\w", "[\\\\b]", "\\x41", "{", "}", "{}", "1"]
_ODD = ["^", "$", "\\b", "\\1", "(?i)", "(?i:a)", "(?<=a)", "(?<!\\\\)", ")", "(", "*", "(?P<n>a)", "(?#c)", "\\p{L}",
        "[[a]", "[a--b]", "[a&&b]", "[a-]"]


def _regexes() -> st.SearchStrategy[str]:
    leaf = st.sampled_from(_LEAVES) | st.sampled_from(_ODD)
    quantifier = st.sampled_from(["", "", "*", "+", "?", "{2}", "{1,3}", "{,2}", "*?", "*+", "{x}", "{3,1}"])

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        group = st.tuples(st.sampled_from(["(?:", "(?:", "(", "(?=", "(?!"]), inner, quantifier).map(
            lambda t: t[0] + t[1] + ")" + t[2])
        return (st.lists(inner, min_size=2, max_size=4).map("".join)
                | st.lists(inner, min_size=2, max_size=4).map("|".join)
                | group)

    return st.recursive(leaf, extend, max_leaves=24)


@settings(max_examples=600, deadline=None)
@given(_regexes(), st.sampled_from(["", "i", "s", "b", "x", "is"]))
def test_cut_translation_is_the_whole_translation(pattern: str, flags: str) -> None:
    # a threshold of 4 characters cuts most groups of these small patterns
    with fresh_memo(min_chars=4):
        syntax.release_parses()
        expected = outcome(whole, pattern, flags)
        syntax.release_parses()
        assert outcome(memoised, pattern, flags) == expected
        # from the memo: the same IR or error (a memoised IR warns no more, as a memoised parse did not)
        assert outcome(memoised, pattern, flags)[0] == expected[0]


def test_json_string_patterns_are_cut_and_unchanged() -> None:
    body = ANY_STRING_BODY
    patterns = [
        '"' + body + '"',
        '"(?!(?:newsletter_id|newsletter_send_id|newsletter_user_list_id)")' + body + '"',
        '"' + ANY_UNIT + "{2,5}" + '"',
        "(?:" + ANY_UNIT + '|x)"',
    ]
    for pattern in patterns:
        with fresh_memo():
            assert syntax._translate_cut(pattern, "", "T", None, 0) is not None
            assert memoised(pattern, "") == whole(pattern, "")


def test_a_group_that_would_be_unpacked_is_not_cut() -> None:
    # `(?:G)` followed by more pattern, G a sequence: `re._parser` splices G's items in place
    names = "(?:newsletter_id|newsletter_send_id|newsletter_user_list_id)"
    assert syntax._cuttable_groups(names + '"')
    with fresh_memo():
        assert syntax._translate_cut(names + '"' + "x" * 60, "", "T", None, 0) is None
        assert memoised(names + '"', "") == whole(names + '"', "")


def test_errors_name_the_whole_pattern_and_its_positions() -> None:
    pattern = '"' + ANY_STRING_BODY + '"' + "(?:" + ANY_UNIT + ")**"
    with fresh_memo():
        try:
            memoised(pattern, "")
        except RegexError as e:
            message = str(e)
        else:
            raise AssertionError("a multiple repeat is an error")
    assert f"invalid regex /{pattern}/: multiple repeat at position {len(pattern) - 1}" in message
    assert outcome(whole, pattern, "") == ((RegexError, message), [])


def test_memo_is_bounded_by_its_budget() -> None:
    with fresh_memo():
        syntax._translations.resize(4096)
        for k in range(50):
            memoised(f"(?:a{k}|b)" * 8, "")
        assert syntax._translations.nbytes <= 4096 or len(syntax._translations) == 1


def test_a_pattern_past_the_memo_length_is_translated_but_not_kept() -> None:
    """A terminal's own long pattern leaves no IR behind (its objects would burden every full collection)."""
    unit = "(?:" + ANY_UNIT + ")"
    long = "(?:" + "|".join(f'"{k}"' + unit + "{2,5}" for k in range(syntax.MEMO_MAX_CHARS // len(unit) + 1)) + ")"
    assert len(long) > syntax.MEMO_MAX_CHARS
    with fresh_memo():
        assert memoised(long, "") == whole(long, "")
        assert syntax._translations.get((long, "")) is None
        assert syntax._translations.get((unit, "")) is not None  # its groups, short, are kept
        assert memoised('"' + unit + "*", "") is syntax._translations.get(('"' + unit + "*", ""))
