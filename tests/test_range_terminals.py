"""Numeric range terminals built digit by digit (`pda.regex.ranges`) against the regex path's DFA of the pattern the
front end writes: the same automaton (both minimal), compared state by state over every byte."""

import glob
import json
import os
import random
from decimal import Decimal

import pytest
import warnings

from pda.grammar.json_schema.numbers import int_regex, number_regex
from pda.regex import ranges
from pda.regex.dfa import LexerDFA, compile_regex
from pda.regex.ranges import DecimalRange, range_dfa

CORPUS = "/work/shared/corpus/jsonschemabench/schemas"


def same_automaton(a: LexerDFA, b: LexerDFA) -> bool:
    """Whether two minimal DFAs are one automaton up to state numbering."""
    pairs, seen, todo = {a.start: b.start}, {b.start}, [a.start]
    while todo:
        s = todo.pop()
        t = pairs[s]
        if bool(a.accept[s, 0]) != bool(b.accept[t, 0]) or bool(a.live[s, 0]) != bool(b.live[t, 0]):
            return False
        for byte in range(256):
            s2, t2 = a.step(s, byte), b.step(t, byte)
            if s2 in pairs:
                if pairs[s2] != t2:
                    return False
            elif t2 in seen:
                return False
            else:
                pairs[s2] = t2
                seen.add(t2)
                todo.append(s2)
    return a.n_states == b.n_states


class _Ctx:
    """`number_regex`'s context: a widened side raises (such ranges are never remembered)."""

    def unsupported(self, *args: object) -> None:
        raise ValueError("widened")


def _value(rng: random.Random, fraction: bool) -> Decimal:
    v = Decimal(rng.randrange(10 ** rng.choice([1, 1, 2, 3, 5, 20]))) * rng.choice([1, -1])
    if fraction and rng.random() < 0.6:
        v += Decimal(rng.randrange(1, 1000)).scaleb(-rng.randrange(1, 4)) * (1 if v >= 0 else -1)
    return v


def _random_ranges(seed: int, n: int) -> list[tuple[str, DecimalRange]]:
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        integer = rng.random() < 0.5
        lo = _value(rng, not integer) if rng.random() < 0.85 else None
        hi = _value(rng, not integer) if rng.random() < 0.85 else None
        if lo is not None and hi is not None and lo > hi:
            lo, hi = hi, lo
        if lo is None and hi is None or lo is not None and lo == hi:
            continue
        if integer:
            exact = rng.random() < 0.5
            pattern = int_regex(None if lo is None else int(lo), None if hi is None else int(hi), exact)
            out.append((pattern, DecimalRange(lo, False, hi, False, integer=True, zero_fraction=exact,
                                              negative_zero=exact)))
            continue
        lo_ex, hi_ex = rng.random() < 0.5, rng.random() < 0.5
        try:
            pattern = number_regex(_Ctx(), lo, lo_ex, hi, hi_ex, ())
        except ValueError:
            continue
        if pattern is not None:
            out.append((pattern, DecimalRange(lo, lo_ex, hi, hi_ex)))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_random_ranges_match_regex_path(seed):
    for pattern, described in _random_ranges(seed, 150):
        assert same_automaton(compile_regex(pattern), range_dfa(described)), (pattern, described)


@pytest.mark.parametrize("pattern,described", [
    (int_regex(0, 0, False), DecimalRange(Decimal(0), False, Decimal(0), False, integer=True, zero_fraction=False,
                                          negative_zero=False)),
    (int_regex(0, 0, True), DecimalRange(Decimal(0), False, Decimal(0), False, integer=True)),
    (int_regex(-10**19, 10**20 - 1, False), DecimalRange(Decimal(-10**19), False, Decimal(10**20 - 1), False,
                                                         integer=True, zero_fraction=False, negative_zero=False)),
    (number_regex(_Ctx(), Decimal(0), True, Decimal(1), True, ()), DecimalRange(Decimal(0), True, Decimal(1), True)),
    (number_regex(_Ctx(), Decimal(-1), True, Decimal(0), True, ()), DecimalRange(Decimal(-1), True, Decimal(0), True)),
    (number_regex(_Ctx(), Decimal("-0.5"), False, None, False, ()), DecimalRange(Decimal("-0.5"), False, None, False)),
])
def test_edge_ranges_match_regex_path(pattern, described):
    assert same_automaton(compile_regex(pattern), range_dfa(described))


@pytest.mark.skipif(not os.path.isdir(CORPUS), reason="the JSONSchemaBench corpus (/work/shared/corpus) is absent")
def test_corpus_range_terminals_match_regex_path(monkeypatch):
    import pda

    seen: dict[str, DecimalRange] = {}
    original = ranges.remember

    def record(pattern: str, described: DecimalRange) -> None:
        seen[pattern] = described
        original(pattern, described)

    monkeypatch.setattr(ranges, "remember", record)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for path in sorted(glob.glob(os.path.join(CORPUS, "*.jsonl"))):
            with open(path) as f:
                for line in f:
                    schema = json.loads(line)["schema"]
                    try:
                        pda.Grammar.from_json_schema(schema, whitespace="flexible")
                    except (pda.PdaError, RecursionError):
                        continue
    assert len(seen) > 50
    for pattern, described in seen.items():
        assert same_automaton(compile_regex(pattern), range_dfa(described)), (pattern, described)
