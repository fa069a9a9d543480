"""Counted repeats written directly (`pda.kernels.repeat`) and finished without a partition when known minimal.

The DFA of every counted pattern must be the one the construction before it built, byte for
byte (tables, accepting and live columns, numbering): that construction is kept here as the
reference, the numpy chain of copies (`reference_repeat`) concatenated after what comes before
it, and the full minimisation (`minimal_dfa` without `settled`). Patterns: random counted
repeats of small bodies (multi-byte characters among them; counts 0, 1, equal, open), every
counted pattern the JSON Schema corpus's front end makes, and the formats'.
"""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

import pda
from pda.errors import LimitExceeded
from pda.grammar.ir import TerminalDef
from pda.grammar.json_schema.formats import FORMATS
from pda.kernels import partition
from pda.kernels.repeat import extended
from pda.lru import ByteLRU
from pda.regex import build_lexer_dfa, compose, dfa
from tests.conftest import corpus_schema_irs

JSON_CHAR = r'(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))'


def reference_repeat(x: compose.Partial, lo: int, hi: int | None) -> compose.Partial | None:
    """X{lo,hi} as the numpy chain of copies the kernel replaced (the layout the kernel must write)."""
    t, acc = compose._fresh_start(x)
    m = len(t)
    finals = np.flatnonzero(acc)
    opens = np.flatnonzero(t[0] >= 0)
    if acc[0] or (t[finals][:, opens] >= 0).any():
        return None
    copies = hi if hi is not None else max(lo, 1)
    if copies == 0:
        return np.full((1, t.shape[1]), -1, dtype=np.int32), np.ones(1, dtype=bool)
    base = np.arange(copies, dtype=np.int64) * (m - 1) + 1
    n = m + (copies - 1) * (m - 1)
    trans = np.empty((n, t.shape[1]), dtype=np.int64)
    trans[:m] = t
    for k in range(1, copies):
        trans[base[k]: base[k] + m - 1] = np.where(t[1:] >= 0, t[1:] + base[k] - 1, -1)
    ends = finals[None, :] + base[:, None] - 1
    opened = t[0, opens].astype(np.int64)
    for k in range(copies - 1):
        trans[ends[k][:, None], opens[None, :]] = (base[k + 1] + opened - 1)[None, :]
    if hi is None:
        trans[ends[-1][:, None], opens[None, :]] = (base[-1] + opened - 1)[None, :]
    accept = np.zeros(n, dtype=bool)
    accept[0] = lo == 0
    for k in range(copies):
        accept[ends[k]] = k + 1 >= lo
    return trans.astype(np.int32), accept


def reference_prefixed(x: compose.Partial, lo: int, hi: int | None,
                       prefix: compose.Partial | None = None, room: int = 0) -> compose.Partial | None:
    """What `compose.repeat` built before the kernel: the chain, then (with a prefix) its concatenation; with
    `room` more rows (unset) at the end, as `compose.repeat` leaves them."""
    chain = reference_repeat(x, lo, hi)
    if chain is not None and prefix is not None:
        chain = compose.concat(prefix, chain)
    if chain is None or not room:
        return chain
    trans, accept = chain
    return (np.concatenate([trans, np.zeros((room, trans.shape[1]), dtype=trans.dtype)]),
            np.concatenate([accept, np.zeros(room, dtype=bool)]))


def random_partial(rng: random.Random, m: int, k: int, density: float) -> compose.Partial:
    trans = np.full((m, k), -1, dtype=np.int32)
    for q in range(m):
        for c in range(k):
            if rng.random() < density:
                trans[q, c] = rng.randrange(m)
    return trans, np.array([rng.random() < 0.4 for _ in range(m)])


def test_the_kernel_writes_the_reference_chain() -> None:
    """Random bodies and prefixes, counts 0..5 and open: the same tables, or None both ways."""
    rng = random.Random(5)
    applied = refused = 0
    for _ in range(3000):
        k = rng.randrange(1, 5)
        body = random_partial(rng, rng.randrange(1, 6), k, 0.3)
        prefix = random_partial(rng, rng.randrange(1, 4), k, 0.3) if rng.random() < 0.6 else None
        lo = rng.randrange(0, 4)
        hi = None if rng.random() < 0.25 else lo + rng.randrange(0, 3)
        want = reference_prefixed(body, lo, hi, prefix)
        got = compose.repeat(body, lo, hi, prefix)
        if want is None:
            refused += 1
            assert got is None
            continue
        applied += 1
        assert got is not None
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    assert applied > 300 and refused > 300


def test_bad_inputs_are_refused() -> None:
    body = (np.array([[1, -1], [-1, -1]], dtype=np.int32), np.array([False, True]))
    empty = (np.full((1, 2), -1, dtype=np.int32), np.ones(1, dtype=bool))
    with pytest.raises(ValueError, match="body holds 0"):
        extended(empty, (np.array([[1, -1], [0, -1]], dtype=np.int32), body[1]), 1, 2)
    with pytest.raises(ValueError, match="body"):
        extended(empty, (body[0][:, :1], body[1]), 1, 2)
    with pytest.raises(ValueError, match="prefix holds 5"):
        extended((np.array([[5, -1]], dtype=np.int32), np.ones(1, dtype=bool)), body, 1, 2)
    with pytest.raises(ValueError, match="counts"):
        extended(empty, body, 3, 2)


def test_settled_marks_only_minimal_acyclic_parts() -> None:
    classes = np.zeros(256, dtype=np.int32)
    classes[ord("b")] = 1
    chain = compose.Classed(np.array([[1, -1], [-1, 2], [-1, -1]], dtype=np.int32), np.array([False, False, True]),
                            classes)
    assert compose.settled(chain).minimal_acyclic
    loop = chain._replace(trans=np.array([[1, -1], [-1, 2], [1, -1]], dtype=np.int32))
    assert not compose.settled(loop).minimal_acyclic
    twins = compose.Classed(np.array([[1, 2], [3, -1], [3, -1], [-1, -1]], dtype=np.int32),
                            np.array([False, False, False, True]), classes)  # (a|b)a: states 1 and 2 are one
    assert not compose.settled(twins).minimal_acyclic
    assert not compose.settled(chain._replace(accept=np.zeros(3, dtype=bool))).minimal_acyclic


SETTLED: list[bool] = []  # per minimisation of the new construction, whether it was only finished


def _build_both(pattern: str, flags: str, monkeypatch: pytest.MonkeyPatch, memos: tuple[ByteLRU, ByteLRU]):
    """(the DFA now, the DFA by the reference construction), each a LexerDFA or LimitExceeded; each way with a
    memo of its own parts."""
    out = []
    for old, memo in zip((False, True), memos):
        with monkeypatch.context() as m:
            m.setattr(dfa, "_leaves", memo)
            if not old:
                m.setattr(dfa, "minimal_dfa", lambda t, a, c, settled=False: SETTLED.append(settled) or
                          partition.minimal_dfa(t, a, c, settled))
            else:
                m.setattr(compose, "repeat", reference_prefixed)
                m.setattr(dfa, "minimal_dfa", lambda t, a, c, settled=False: partition.minimal_dfa(t, a, c))
            try:
                out.append(build_lexer_dfa([TerminalDef("T", pattern, flags=flags)], max_states=20_000))
            except LimitExceeded as e:
                out.append(e)
    return out


def assert_same(pattern: str, flags: str, monkeypatch: pytest.MonkeyPatch, memos: tuple[ByteLRU, ByteLRU]) -> None:
    new, old = _build_both(pattern, flags, monkeypatch, memos)
    if isinstance(old, LimitExceeded):
        assert isinstance(new, LimitExceeded), pattern
        return
    assert not isinstance(new, LimitExceeded), pattern
    assert (new.n_states, new.start, new.dead) == (old.n_states, old.start, old.dead), pattern
    for name in ("byte_class", "trans", "accept", "live"):
        np.testing.assert_array_equal(getattr(new, name), getattr(old, name), err_msg=f"{name} of {pattern!r}")


@pytest.fixture
def memos() -> tuple[ByteLRU, ByteLRU]:
    return ByteLRU(64 << 20), ByteLRU(64 << 20)


def test_random_counted_patterns_are_the_reference_dfas(monkeypatch: pytest.MonkeyPatch, memos) -> None:
    rng = random.Random(23)
    bodies = ["a", "[ab]", "é", "[à-ÿ]", "(?:é|ü|€|😀)", "[^a]", "(?:ab|c)", "(?:a|bc)", "\\d", "(?:x?y)",
              "(?:[a-c]{2})", "(?:a*b)", JSON_CHAR, "(?:[\u0100-\u07ff]z)", "(?:q|[^q]{2})", "(?:ab|a)"]
    around = ["", '"', "x", "é", "[0-9]", "(?:ab|cd)", "z+"]
    for _ in range(150):
        lo = rng.choice([0, 0, 1, 2, 5, 16, 17])
        hi = rng.choice([lo, lo + 1, lo + 15, lo + 40, None])
        counts = f"{{{lo}}}" if hi == lo and rng.random() < 0.5 else f"{{{lo},{'' if hi is None else hi}}}"
        pattern = rng.choice(around) + rng.choice(bodies) + counts + rng.choice(around)
        if rng.random() < 0.3:
            pattern += rng.choice(bodies) + f"{{0,{rng.randrange(16, 30)}}}" + rng.choice(around)
        assert_same(pattern, "", monkeypatch, memos)
    assert SETTLED.count(True) > 10 and SETTLED.count(False) > 10  # both ways of finishing were taken


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_format_patterns_are_the_reference_dfas(name: str, monkeypatch: pytest.MonkeyPatch, memos) -> None:
    ir = pda.Grammar.from_json_schema({"type": "string", "format": name}).ir
    for t in ir.terminals:
        if t.automaton is None:
            assert_same(t.pattern, t.flags, monkeypatch, memos)


def _corpus_counted_patterns() -> list[tuple[str, str]]:
    """Every distinct counted pattern the front end makes of the JSON Schema corpus."""
    found: set[tuple[str, str]] = set()
    for ir in corpus_schema_irs():
        found.update((t.pattern, t.flags) for t in ir.terminals
                     if t.automaton is None and re.search(r"\{\d+(?:,\d*)?\}", t.pattern))
    return sorted(found)


def test_every_counted_pattern_of_the_json_schema_corpus_is_the_reference_dfa(monkeypatch: pytest.MonkeyPatch,
                                                                               memos) -> None:
    patterns = _corpus_counted_patterns()
    assert len(patterns) > 500
    SETTLED.clear()
    for pattern, flags in patterns:
        assert_same(pattern, flags, monkeypatch, memos)
    assert SETTLED.count(True) > 100  # the JSON strings of a maxLength
