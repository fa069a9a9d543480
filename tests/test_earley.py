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


def _random_rules(rng) -> tuple[list[TerminalDef], list[Rule], str]:
    """Rules over a few terminals and nonterminals: empty and nullable ones, unproductive loops, undefined names."""
    terminals = [TerminalDef(f"T{i}", chr(97 + i)) for i in range(rng.randint(1, 4))]
    nts = [f"N{i}" for i in range(rng.randint(1, 7))]
    symbols = [t.name for t in terminals] + nts + ["UNDEFINED"]
    rules = [Rule(rng.choice(nts), tuple(rng.choice(symbols) for _ in range(rng.choice([0, 1, 1, 2, 3, 5]))))
             for _ in range(rng.randint(1, 14))]
    return terminals, rules, nts[0]


def _closed(start: set, grow) -> set:
    """The least fixpoint: `start` plus whatever `grow(current)` adds, until nothing does."""
    done = set(start)
    while True:
        more = grow(done) - done
        if not more:
            return done
        done |= more


@pytest.mark.parametrize("seed", range(300))
def test_tables_match_their_definitions(seed: int) -> None:
    """The vectorised tables against the definitions spelled out rule by rule on random grammars."""
    import random

    rng = random.Random(seed)
    terminals, rules, start = _random_rules(rng)
    names = {t.name for t in terminals}
    productive = _closed(names, lambda p: {r.lhs for r in rules if all(s in p for s in r.rhs)}) - names
    if start not in productive:
        with pytest.raises(GrammarError, match="empty"):
            build_tables(GrammarIR(terminals=tuple(terminals), rules=tuple(rules), start=start))
        return
    tables = build_tables(GrammarIR(terminals=tuple(terminals), rules=tuple(rules), start=start))
    kept = [r for r in rules if r.lhs in productive and all(s in names or s in productive for s in r.rhs)]
    t = len(terminals)
    assert tables.nonterminal_names == (*sorted(productive, key=lambda n: (n != start, n)), "$start")
    name = tables.symbol_name
    assert [(name(a), tuple(name(s) for s in rhs)) for a, rhs in zip(tables.lhs, tables.rhs)] == [
        (r.lhs, r.rhs) for r in kept] + [("$start", (start,))]
    nullable = _closed(set(), lambda n: {tables.lhs[r] for r, rhs in enumerate(tables.rhs) if all(s in n for s in rhs)})
    p = 0
    for r, rhs in enumerate(tables.rhs):
        assert tables.rule_start[r] == p
        for d in range(len(rhs) + 1):
            e = d
            while e < len(rhs) and rhs[e] in nullable:
                e += 1
            assert tables.skip[r][d] == tuple(range(d, e + 1))
            assert tables.pos_rule[p] == r and tables.is_end[p] == (d == len(rhs))
            assert tables.next_sym[p] == (rhs[d] if d < len(rhs) else -1)
            assert tables.penultimate[p] == (d == len(rhs) - 1)
            assert tables.term_bit[p] == (1 << rhs[d] if d < len(rhs) and rhs[d] < t else 0)
            assert tables.step[p] == (tuple(p - d + x for x in tables.skip[r][d + 1]) if d < len(rhs) else ())
            p += 1
    direct = {a: {rhs[d] for r, rhs in enumerate(tables.rhs) if tables.lhs[r] == a
                  for d in tables.skip[r][0] if d < len(rhs) and rhs[d] >= t} for a in range(t, t + len(tables.nonterminal_names))}
    for a in direct:
        assert tables.closure[a - t] == frozenset(_closed({a}, lambda c: set().union(*(direct[b] for b in c))))
        assert tables.rules_of[a - t] == tuple(r for r, b in enumerate(tables.lhs) if b == a)
    kernel = tables.kernel
    assert kernel["next_sym"].tolist() == list(tables.next_sym)
    assert kernel["lhs_of"].tolist() == [tables.lhs[r] for r in tables.pos_rule]
    ptr, starts = kernel["starts_ptr"].tolist(), kernel["starts"].tolist()
    for a in range(len(tables.nonterminal_names)):
        assert starts[ptr[a]:ptr[a + 1]] == [tables.rule_start[r] + d for r in tables.rules_of[a] for d in tables.skip[r][0]]
    assert tables.accept_pos == tables.rule_start[tables.start_rule] + 1 == kernel["accept_pos"]


def test_a_rule_named_like_a_terminal_is_refused() -> None:
    ir = GrammarIR(terminals=(TerminalDef("A", "a"),), rules=(Rule("S", ("A",)), Rule("A", ())), start="S")
    with pytest.raises(GrammarError, match="both a terminal and a rule"):
        build_tables(ir)
