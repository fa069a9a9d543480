"""A counted repeat and the part after it in a sequence (`"C{0,64}"`'s closing quote) are written in one table
(`compose._repeated` with a suffix: the repeat leaves rows for the suffix, `_concat_into` writes them): the DFA
must be the one the repeat then a concatenation built (`compose.concat`, copying the repeat's table), byte for
byte, or None both ways."""

from __future__ import annotations

import random

import numpy as np
import pytest

from pda.errors import LimitExceeded
from pda.lru import ByteLRU
from pda.regex import compile_regex, compose, dfa
from pda.regex.syntax import Repeat, Seq

_ORIGINAL = compose.composed


def unfused(node, leaf, max_states):
    """`compose.composed` as it was: each part of a sequence after a repeat concatenated on its own."""
    if not (isinstance(node, Seq) and compose.worth_composing(node)) or compose.ascii_dfa(node) is not None:
        return _ORIGINAL(node, leaf, max_states)
    out = None
    for item in node.items:
        if isinstance(item, Repeat) and compose.worth_composing(item):
            joined = compose._repeated(out, item, leaf, max_states)
        else:
            part = unfused(item, leaf, max_states)
            if part is None:
                return None
            if out is None:
                out = part
                continue
            a, b = compose._aligned(out, part)
            pair = compose.concat(a[:2], b[:2])
            joined = None if pair is None else compose.Classed(*pair, a.classes,
                                                               a.minimal_acyclic and b.minimal_acyclic)
        if joined is None or len(joined.trans) > max_states:
            return None
        out = joined
    return out


def build(pattern: str, monkeypatch: pytest.MonkeyPatch, fused: bool):
    with monkeypatch.context() as m:
        m.setattr(dfa, "_leaves", ByteLRU(1 << 24))
        if not fused:
            m.setattr(compose, "composed", unfused)
        try:
            return compile_regex(pattern, max_states=20_000)
        except LimitExceeded as e:
            return type(e)


BODIES = [r"(?:[^\"\\]|\\[\"\\/bfnrt])", "[a-z]", "é", r"(?:ab|c)", "[0-9]", "(?:[^x]|xy)", "[\u0100-\u07ff]"]
AFTER = ['"', "", "x", "é", "[a-c]", "(?:y|zz)", "[^a]", "(?:[0-9]){3}", "a*"]


def test_fused_suffix_gives_the_concatenated_dfa(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(3)
    compared = 0
    for _ in range(250):
        lo = rng.choice([0, 1, 3, 16, 20])
        hi = rng.choice([lo, lo + 2, lo + 17, None])
        counts = f"{{{lo},{'' if hi is None else hi}}}"
        pattern = rng.choice(['"', "", "ab", "é"]) + rng.choice(BODIES) + counts + rng.choice(AFTER)
        if rng.random() < 0.3:
            pattern += rng.choice(BODIES) + f"{{0,{rng.randrange(16, 24)}}}" + rng.choice(AFTER)
        new, old = build(pattern, monkeypatch, True), build(pattern, monkeypatch, False)
        if isinstance(new, type):
            assert new is old, pattern
            continue
        compared += 1
        for name in ("trans", "byte_class", "accept", "live"):
            np.testing.assert_array_equal(getattr(new, name), getattr(old, name), err_msg=pattern)
    assert compared > 200
