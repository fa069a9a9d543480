"""The IR pass that merges a rule's single-terminal alternatives (`pda.grammar.alternatives`).

The merged grammar must accept exactly what the grammar without the pass accepts
(`Recognizer(..., merge_terminals=False)`).
"""

from __future__ import annotations

import json
import random

import pytest

import pda
from pda.grammar.alternatives import merge_alternative_terminals
from pda.recognizer import Recognizer
from pda.reference import mask_mismatches, random_walk_states
from tests.test_masks import synthetic_vocab


def test_a_literal_alternation_becomes_one_finite_set_terminal() -> None:
    ir = pda.Grammar.from_lark('start: "ab" | "cd" | "ef"').ir
    merged = merge_alternative_terminals(ir)
    assert [t.pattern for t in merged.terminals] == ["(?:ab|cd|ef)"]
    assert [(r.lhs, r.rhs) for r in merged.rules] == [("start", (merged.terminals[0].name,))]
    assert pda.Grammar.from_lark('start: "ab" | "cd" | "ef"').recognizer.lexer_ir.terminals == merged.terminals


@pytest.mark.parametrize("text", [
    'start: "ab" | "cd" | x\nx: "ab" "cd"',  # used elsewhere too
    'start: A | B\nA.2: "ab"\nB: "cd"',  # different priorities
    'start: "ab" | WS\nWS: " "\n%ignore WS',  # ignored
    'start: "ab" -> one | "cd" -> two',  # aliased alternatives
    'start: A | B\nA: /a+?b/\nB: "cd"',  # lazy
    'start: A | B\nA: /(?i)ab/\nB: "cd"',  # global inline flags
])
def test_terminals_that_may_differ_are_left_apart(text: str) -> None:
    ir = pda.Grammar.from_lark(text).ir
    merged = merge_alternative_terminals(ir)
    assert len(merged.terminals) == len(ir.terminals)


def _random_grammar(rng: random.Random) -> tuple[str, list[str]]:
    words = sorted({"".join(rng.choice("abc") for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(2, 9))})
    prio = rng.choice(["", ".2", ".-1"])
    lines = [
        "start: item (SEP item)*",
        "item: kw | NAME" + (" | kw2" if rng.random() < 0.5 else ""),
        "kw: " + " | ".join(json.dumps(w) for w in words),
        "kw2: K1 | K2",
        f"K1{prio}: /a[bc]?/",
        f"K2{prio}: /(?:cb)+/",
        "NAME: /[abc]+/" if rng.random() < 0.5 else "NAME: /[a-c]{2,3}/",
        'SEP: " "',
    ]
    return "\n".join(lines), words


@pytest.mark.parametrize("lexer", ["contextual", "basic"])
def test_merged_grammars_accept_what_the_unmerged_ones_do(lexer: str) -> None:
    rng = random.Random(lexer)
    for _ in range(40):
        text, _ = _random_grammar(rng)
        ir = pda.Grammar.from_lark(text, lexer=lexer).ir
        merged, apart = Recognizer(ir), Recognizer(ir, merge_terminals=False)
        assert len(merged.lexer_ir.terminals) < len(apart.lexer_ir.terminals)
        for _ in range(60):
            s = "".join(rng.choice("abc  ") for _ in range(rng.randint(0, 9))).encode()
            assert merged.accepts(s) == apart.accepts(s), (text, s)
            assert merged.accepts(s, prefix=True) == apart.accepts(s, prefix=True), (text, s)


def test_an_enum_of_numbers_is_one_terminal_and_its_masks_are_exact() -> None:
    grammar = pda.Grammar.from_json_schema({"enum": list(range(300)) + ["x", 2.5]}, exact=True)  # "17.00" spells 17
    terminals = grammar.recognizer.lexer_ir.terminals
    assert len(terminals) < 10
    for text in ["0", "17", "299", "17.00", '"x"', "2.5"]:
        assert grammar.accepts(text), text
    for text in ["300", "017", "1.5", '"y"', "-1"]:
        assert not grammar.accepts(text), text
    compiled = pda.compile(grammar, synthetic_vocab())
    rng = random.Random(5)
    for _ in range(30):
        for node, q, _ in random_walk_states(compiled, rng, max_steps=6):
            assert mask_mismatches(compiled, node, q) == []


def test_only_the_alternatives_used_nowhere_else_merge() -> None:
    """Uses are counted for the candidates alone: "ab" is used in `x` too and stays its own terminal, while
    "cd" and "ef" (each used once) merge; the rule `x` keeps "ab"."""
    ir = pda.Grammar.from_lark('start: "ab" | "cd" | "ef" | x\nx: "ab" "zz"').ir
    merged = merge_alternative_terminals(ir)
    assert len(merged.terminals) == len(ir.terminals) - 1
    by_pattern = {t.pattern: t.name for t in ir.terminals}
    kept = {t.name for t in merged.terminals}
    assert by_pattern["ab"] in kept and by_pattern["zz"] in kept
    assert by_pattern["cd"] not in kept and by_pattern["ef"] not in kept
    assert pda.Grammar(merged).accepts("cd") and pda.Grammar(merged).accepts("abzz")
    assert not pda.Grammar(merged).accepts("zz")
