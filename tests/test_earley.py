"""The Earley recogniser on terminal sequences: textbook hard cases and a brute-force oracle."""

from __future__ import annotations

import itertools

import pytest

from pda.errors import GrammarError
from pda.grammar.ir import GrammarIR, Rule, TerminalDef
from pda.parser.earley import EarleyParser
from pda.parser.tables import build_tables


def make_parser(rules: list[tuple[str, str]], terminals: str = "abc()x", start: str = "S") -> EarleyParser:
    """Rules as ("S", "S S") pairs; single lowercase letters and parens are terminals."""
    names = {ch: f"T{ord(ch)}" for ch in terminals}
    ir = GrammarIR(
        terminals=tuple(TerminalDef(names[ch], "\\" + ch if ch in "()" else ch) for ch in terminals),
        rules=tuple(
            Rule(lhs, tuple(names.get(sym, sym) for sym in rhs.split())) for lhs, rhs in rules
        ),
        start=start,
    )
    parser = EarleyParser(build_tables(ir))
    parser.symbols = {ch: 1 << i for i, ch in enumerate(terminals)}  # type: ignore[attr-defined]
    return parser


def recognise(parser: EarleyParser, text: str, *, prefix: bool = False) -> bool:
    node = parser.root
    for ch in text:
        node = node.advance(parser.symbols[ch])  # type: ignore[attr-defined]
        if node is None:
            return False
    return True if prefix else node.accepting


def brute_force_language(rules: list[tuple[str, str]], start: str, max_len: int) -> set[str]:
    """All sentences up to max_len, by breadth-first leftmost derivation (for tiny grammars)."""
    out: set[str] = set()
    frontier = {(start,)}
    seen = set(frontier)
    nts = {lhs for lhs, _ in rules}
    while frontier:
        nxt = set()
        for form in frontier:
            idx = next((i for i, s in enumerate(form) if s in nts), None)
            if idx is None:
                out.add("".join(form))
                continue
            if sum(1 for s in form if s not in nts) > max_len:
                continue
            for lhs, rhs in rules:
                if lhs == form[idx]:
                    new = form[:idx] + tuple(rhs.split()) + form[idx + 1 :]
                    if len(new) <= 2 * max_len + 4 and new not in seen:
                        seen.add(new)
                        nxt.add(new)
        frontier = nxt
    return {s for s in out if len(s) <= max_len}


GRAMMARS = {
    "ambiguous": [("S", "S S"), ("S", "a")],
    "dyck": [("S", "S S"), ("S", "( S )"), ("S", "")],
    "left": [("S", "S a"), ("S", "b")],
    "right": [("S", "a S"), ("S", "b")],
    "hidden_left": [("S", "N S a"), ("S", "b"), ("N", ""), ("N", "c")],
    "cyclic_units": [("S", "A"), ("A", "S"), ("A", "a"), ("S", "S b")],
    "nullable_chain": [("S", "A B A"), ("A", "a"), ("A", ""), ("B", "b"), ("B", "")],
}


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_matches_brute_force_language(name: str) -> None:
    rules = GRAMMARS[name]
    parser = make_parser(rules)
    alphabet = sorted({sym for _, rhs in rules for sym in rhs.split() if len(sym) == 1 and not sym.isupper()})
    language = brute_force_language(rules, "S", 6)
    for n in range(0, 7):
        for word in itertools.product(alphabet, repeat=n):
            text = "".join(word)
            assert recognise(parser, text) == (text in language), (name, text)


def test_exponential_ambiguity_is_polynomial() -> None:
    parser = make_parser(GRAMMARS["ambiguous"])
    assert recognise(parser, "a" * 300)


def test_left_recursion_10000() -> None:
    parser = make_parser(GRAMMARS["left"])
    assert recognise(parser, "b" + "a" * 10_000)
    assert not recognise(parser, "a" + "a" * 10_000)


def test_right_recursion_10000_uses_constant_kernels() -> None:
    parser = make_parser(GRAMMARS["right"])
    node = parser.root
    for _ in range(10_000):
        node = node.advance(parser.symbols["a"])
        assert len(node.kernel) <= 4  # Leo's memo keeps right recursion flat
    node = node.advance(parser.symbols["b"])
    assert node is not None and node.accepting


def test_nesting_10000_deep() -> None:
    parser = make_parser(GRAMMARS["dyck"])
    assert recognise(parser, "(" * 10_000 + ")" * 10_000)
    assert not recognise(parser, "(" * 10_000 + ")" * 9_999)
    assert recognise(parser, "(" * 10_000 + ")" * 9_999, prefix=True)


def test_nodes_are_interned_and_advance_memoised() -> None:
    parser = make_parser(GRAMMARS["left"])
    a = parser.symbols["a"]
    n1 = parser.root.advance(parser.symbols["b"]).advance(a)
    n2 = n1.advance(a)
    assert n2 is n1  # S a a ... : the item set repeats
    assert n1.advance(a) is n2


def test_empty_language_is_an_error() -> None:
    with pytest.raises(GrammarError, match="empty"):
        make_parser([("S", "S a")])
