"""Which product a contextual lexer keeps (`pda.lexer.lexer.all_terminals_limit`), and cheap reads of the shared one.

An all-terminal DFA much larger than its terminals' own DFAs together is overlap
blow-up: the lexer then grows its shared product instead, and every candidate set's
DFA, lexing and masks stay what they were through the all-terminal DFA. Also: the
shared product numbers its accept rows as met.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import pda
from pda.lexer import lexer as lexer_module, terminals as terminals_module
from pda.lexer.lexer import all_terminals_limit
from pda.lexer.terminals import terminal_dfa
from pda.grammar.ir import TerminalDef
from pda.regex.product import SharedProduct, combine
from tests.lockstep import assert_same_masks_in_lockstep

# Cycles of 5, 7, 11 and 13 letters run in lockstep: 5,005 product states from DFAs of ~40 states in all.
CYCLES = r"""
start: (A | B | C | D | WORD)+
A: /(?:[ab]{5})+!/
B: /(?:[ab]{7})+\?/
C: /(?:[ab]{11})+;/
D: /(?:[ab]{13})+:/
WORD: /b[a-z]{0,3}/
"""


def vocabulary() -> pda.Vocabulary:
    tokens = sorted({"a", "b", "!", "?", ";", ":", "ab", "ba", "aaaaa", "bbbbbbb", "x", "bxy"})
    return pda.Vocabulary.from_tokens(tokens + [None], eos_ids=[len(tokens)])


def test_limit_is_relative_to_the_terminals_own_states(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small own DFAs get the floor; big ones their own total; never above the caps; terminals whose own
    states together exceed the cap get no all-terminal DFA at all (eager terminals: a lazy one has none)."""
    monkeypatch.setattr(terminals_module, "LAZY_MIN_COUNT", 10**9)
    small = [terminal_dfa(TerminalDef(name=f"T{i}", pattern=f"x{{{i}}}")) for i in range(1, 4)]
    assert all_terminals_limit(small, 200_000) == lexer_module.ALL_TERMINALS_MIN_LIMIT
    big = [terminal_dfa(TerminalDef(name=f"T{i}", pattern=f"[a-z]{{{3000 + i}}}")) for i in range(3)]
    own = sum(d.n_states for d in big)
    assert lexer_module.ALL_TERMINALS_MIN_LIMIT < own < lexer_module.ALL_TERMINALS_MAX_STATES
    assert all_terminals_limit(big, 200_000) == own
    assert all_terminals_limit(big, 100) == 100
    five = big[:2] * 2 + big[:1]
    assert sum(d.n_states for d in five) < lexer_module.ALL_TERMINALS_MAX_STATES < 3 * own
    assert all_terminals_limit(five, 200_000) == sum(d.n_states for d in five)
    assert all_terminals_limit(big * 3, 200_000) == 0  # its terminals alone are past the cap: not explored


def test_a_blown_up_product_takes_the_shared_path_with_the_same_masks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A product past its floor, from tiny DFAs, is not built; texts lex and mask as through the all-terminal DFA."""
    monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path / "cache"))
    grammar = pda.Grammar.from_lark(CYCLES)
    vocab = vocabulary()
    shared = pda.CompiledGrammar(grammar, vocab, warmup_seconds=0, disk_cache=False)
    lexer = shared.lexer
    assert lexer._all is None and combine(lexer.dfas).n_states > lexer_module.ALL_TERMINALS_MIN_LIMIT
    monkeypatch.setattr(lexer_module, "ALL_TERMINALS_MIN_LIMIT", lexer_module.ALL_TERMINALS_MAX_STATES)
    limits = pda.Limits(max_lexer_states=pda.Limits().max_lexer_states - 1)  # another recognizer, not the memo's
    whole = pda.CompiledGrammar(grammar, vocab, warmup_seconds=0, disk_cache=False, limits=limits)
    assert whole.lexer._all is not None
    for text in [b"ab" * 5 + b"a" * 7 + b"?" + b"b" * 65 + b":", b"a" * 55 + b";bxyb" + b"b" * 35 + b"!", b"bab" * 77,
                 b"ab" * 6 + b"!", b"b" * 14 + b"?"]:
        lexed, through_whole = shared.scanner.feed(*shared.initial_state(), text), whole.scanner.feed(
            *whole.initial_state(), text)
        assert (lexed is None) == (through_whole is None)
        assert lexed is None or shared.can_end(*lexed) == whole.can_end(*through_whole)
    rng = random.Random(3)
    for _ in range(6):
        assert_same_masks_in_lockstep(shared, whole, vocab, rng, 40)


def test_shared_accept_rows_are_numbered_as_met() -> None:
    """Each row's accept row spells its accept bits, and new masks are numbered in the order of their first row."""
    patterns = [r"[ab]*c", r"a*b", r"ab", r"abc", r"[a-c]+", r"a{2,5}", r"b[ac]{1,3}", r"c", r"(?:a|bc)+"]
    dfas = [terminal_dfa(TerminalDef(name=f"T{i}", pattern=p)) for i, p in enumerate(patterns)]
    shared = SharedProduct(dfas, 10_000)
    rng = random.Random(5)
    for _ in range(20):
        shared.start(sorted(rng.sample(range(len(dfas)), rng.randint(2, len(dfas)))))
    rows = [int.from_bytes(shared.accept_bits[q].tobytes(), "little") for q in range(shared.n_states)]
    numbered = sorted({m for m in rows[: shared.mixed_base] if m}, key=int.bit_length)  # the singles': 1 << j
    for mask in rows[shared.mixed_base :]:
        if mask and mask not in numbered:
            numbered.append(mask)
    assert shared.accept_rows == numbered and shared.n_states > shared.mixed_base + 20
    for q, mask in enumerate(rows):
        row = int(shared.accept_row[q])
        assert (row < 0) == (mask == 0) and (row < 0 or shared.accept_rows[row] == mask)
