"""`GrammarBuilder`'s lazy-quantifier test is remembered only for short regexes, and answers alike either way."""

from __future__ import annotations

from pda.grammar import builder


def test_short_regexes_are_remembered_and_long_ones_are_not() -> None:
    builder._lazy_memo.cache_clear()
    short = "a+?b"
    long = "(?:x)" * (builder.LAZY_MEMO_MAX_CHARS // 5 + 1) + "c*?"
    assert len(long) > builder.LAZY_MEMO_MAX_CHARS
    assert builder._is_lazy(short) and builder._is_lazy(long)
    assert builder._lazy_memo.cache_info().currsize == 1
    assert builder._is_lazy(short)
    assert builder._lazy_memo.cache_info().hits == 1


def test_the_memo_and_the_direct_test_agree() -> None:
    for regex in ["a+", "a+?", r"\+?x", r"\\+?x", r"\\\+?x", "[+?]", "(?:ab)*?", "x{2,3}?", "x{2,3}"]:
        for padded in (regex, "(?:y)" * 300 + regex):
            assert builder._is_lazy(padded) == builder._lazy_quantified(padded), padded
