"""A translation's characters (`pda.regex.syntax._Translator.leaf`): each (opcode, character, flags) made once
per pattern and shared, equal to what `pda.regex.charset` says the character matches, errors as before.

The IR is compared with sets built from `charset` directly, and the DFAs of random patterns of repeated
characters under every flag with `re.fullmatch`.
"""

from __future__ import annotations

import random
import re

import pytest

from pda.errors import RegexError
from pda.regex import charset as cs
from pda.regex import compile_regex
from pda.regex.syntax import Chars, Seq, translate


def chars_of(node: object) -> list[Chars]:
    assert isinstance(node, Seq)
    assert all(isinstance(x, Chars) for x in node.items)
    return list(node.items)


@pytest.mark.parametrize(("flags", "ignorecase", "ascii_only"), [("", False, False), ("i", True, False),
                                                                   ("ia", True, True), ("b", False, True)])
def test_repeated_characters_are_one_shared_set(flags: str, ignorecase: bool, ascii_only: bool) -> None:
    text = "kKkék-é-k" if flags == "b" else "kKk\u212ak-é-k"  # (byte mode names bytes only)
    items = chars_of(translate(re.escape(text), flags))
    for c, item in zip(text, items):
        expected = cs.literal_set(ord(c), ignorecase, ascii_only)
        if flags == "b":
            expected = cs.intersect(expected, ((0, 0xFF),))
        assert item.chars == expected, (c, flags)
    by_char: dict[str, Chars] = {}
    for c, item in zip(text, items):
        assert by_char.setdefault(c, item) is item  # made once


def test_negated_characters_and_surrogates() -> None:
    a, b, c = chars_of(translate(r"[^a][^a]\ud800"))
    assert a is b and a.chars == cs.complement(cs.literal_set(ord("a"), False, False))
    assert c.chars == ()  # a surrogate matches nothing in UTF-8
    assert cs.literal_set(0xD800, False, False) == cs.normalise([(0xD800, 0xD800)]) == ()
    assert cs.literal_set(0xE000, False, False) == cs.normalise([(0xE000, 0xE000)]) == ((0xE000, 0xE000),)


def test_a_repeated_character_past_a_byte_still_fails_in_byte_mode() -> None:
    with pytest.raises(RegexError, match="only name bytes"):
        translate("aa€", "b")
    with pytest.raises(RegexError, match="only name bytes"):
        translate("€€a", "b")


def test_random_patterns_of_repeated_characters_match_re() -> None:
    rng = random.Random(9)
    alphabet = ["a", "A", "b", "é", "É", "k", "K", "\u212a", "-", "."]
    for _ in range(60):
        atoms = [re.escape(rng.choice(alphabet)) if rng.random() < 0.7 else f"[^{rng.choice('aAb')}]"
                 for _ in range(rng.randint(1, 6))]
        pattern = "".join(a + rng.choice(["", "", "?", "*", "{1,2}"]) for a in atoms)
        flags = rng.choice(["", "i", "ia"])
        dfa = compile_regex(pattern, flags)
        compiled = re.compile(pattern, sum(getattr(re, f.upper()) for f in flags))
        for _ in range(40):
            text = "".join(rng.choice(alphabet + ["c", "Z"]) for _ in range(rng.randint(0, 7)))
            assert bool(dfa.accepts(text.encode())) == (compiled.fullmatch(text) is not None), (pattern, flags, text)
