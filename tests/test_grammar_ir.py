"""`GrammarIR.content_hash`: equal for equal content, different whenever the content differs.

It keys the compile caches, so two grammars that differ anywhere (even only in
where one symbol ends and the next begins) must not share a hash.
"""

from __future__ import annotations

from dataclasses import replace

from pda.grammar.ir import BASIC, GrammarIR, IndentConfig, Rule, TerminalDef

A = TerminalDef("A", "a")
B = TerminalDef("B", "b+", priority=1)


def ir(rules: list[tuple[str, tuple[str, ...]]], terminals: tuple[TerminalDef, ...] = (A, B), **kw: object) -> GrammarIR:
    return GrammarIR(terminals, tuple(Rule(lhs, rhs) for lhs, rhs in rules), "start", **kw)  # type: ignore[arg-type]


BASE = [("start", ("x", "A")), ("x", ("B",)), ("x", ())]


def test_equal_content_gives_the_same_hash() -> None:
    assert ir(BASE).content_hash == ir(list(BASE)).content_hash
    # Neither a rule's alias, a terminal's line nor the source text is content.
    aliased = GrammarIR((replace(A, line=3), B), tuple(Rule(l, r, alias="y") for l, r in BASE), "start", source="t")
    assert aliased.content_hash == ir(BASE).content_hash
    assert len(ir(BASE).content_hash) == 64


def test_every_field_changes_the_hash() -> None:
    variants = [
        ir(BASE, terminals=(A, replace(B, pattern="b*"))),
        ir(BASE, terminals=(A, replace(B, priority=2))),
        ir(BASE, terminals=(A, replace(B, flags="i"))),
        ir(BASE, terminals=(A, replace(B, lazy=True))),
        ir(BASE, terminals=(replace(A, literal=True), B)),
        ir(BASE, terminals=(B, A)),
        ir(BASE, ignore=("B",)),
        ir(BASE, indent=IndentConfig()),
        ir(BASE, lexer=BASIC),
        ir(BASE[:2]),
        ir(BASE[::-1]),
        GrammarIR((A, B), tuple(Rule(l, r) for l, r in BASE), "x"),
    ]
    hashes = {v.content_hash for v in variants} | {ir(BASE).content_hash}
    assert len(hashes) == len(variants) + 1


def test_where_symbols_and_rules_end_is_part_of_the_hash() -> None:
    """Rules whose symbols spell the same text, split differently, hash differently."""
    splits = [
        [("start", ("ab",))],
        [("start", ("a", "b"))],
        [("starta", ("b",))],
        [("start", ("a",)), ("b", ())],
        [("start", ()), ("a", ("b",))],
        [("start", ("", "ab"))],
        [("start", ("ab", ""))],
        [("start", ("a\x00b",))],
        [("start", ("a", "\x00b"))],
        [("start", ("a\x00", "b"))],
        [("start", ("\x01['a', 'b']",))],
        [("start", ())],
        [("start", ("",))],
        [],
    ]
    hashes = {ir(rules).content_hash for rules in splits}
    assert len(hashes) == len(splits)


def test_lone_surrogates_are_hashed() -> None:
    """A pattern or a symbol holding a lone surrogate (no UTF-8 spelling) still has a hash."""
    a = ir([("start", ("\ud800",))], terminals=(TerminalDef("A", "\udc00"),))
    b = ir([("start", ("\ud801",))], terminals=(TerminalDef("A", "\udc00"),))
    assert a.content_hash != b.content_hash


def test_rules_are_held_as_untracked_rows_and_read_as_rules() -> None:
    """The IR keeps its rules as exact tuples the garbage collector stops tracking (a cached compiled grammar
    keeps its IR: docs/profile.md, "Twenty-eighth profile"); `rules` still reads, compares, pickles and
    `replace`s as `Rule` objects."""
    import gc
    import pickle

    rules = tuple(Rule(lhs, rhs, alias="y" if lhs == "x" else None) for lhs, rhs in BASE)
    g = GrammarIR((A, B), rules, "start")
    assert g.rules == rules and all(type(r) is Rule for r in g.rules)
    assert g.rule_rows == tuple((r.lhs, r.rhs, r.alias) for r in rules)
    gc.collect()
    gc.collect()  # the rows in one pass, the tuple holding them in the next
    assert not any(gc.is_tracked(row) for row in g.rule_rows) and not gc.is_tracked(g.rule_rows)
    other = GrammarIR((A, B), rules, "start")  # another IR read since: g's rules are built again when read
    assert other.rules == rules and g.rules == rules and g.rules[1].alias == "y"
    assert g == other and hash(g) == hash(other) and g != ir(BASE)
    assert pickle.loads(pickle.dumps(g)) == g and pickle.loads(pickle.dumps(g)).rules == rules
    assert replace(g, start="x").rules == rules and replace(g, rules=rules[:1]).rule_rows == g.rule_rows[:1]


def test_an_ir_built_from_rows_is_the_ir_built_from_rules() -> None:
    """`from_rows` (what `GrammarBuilder.ir` writes) stores the rows it is given, builds no `Rule` until
    `rules` is read, and is equal, with the same hash, to the IR of the same rules; `with_rule_rows`
    is `replace` with rows."""
    rules = tuple(Rule(lhs, rhs, alias="y" if lhs == "x" else None) for lhs, rhs in BASE)
    rows = [(r.lhs, r.rhs, r.alias) for r in rules]
    from_rules = GrammarIR((A, B), rules, "start")
    from_rows = GrammarIR.from_rows((A, B), rows, "start", source="s")
    assert from_rows.rule_rows == tuple(rows) and type(from_rows.rule_rows) is tuple
    assert from_rows.rules == rules and from_rows == from_rules
    assert from_rows.content_hash == from_rules.content_hash and hash(from_rows) == hash(from_rules)
    fewer = from_rules.with_rule_rows(rows[:1], start="x")
    assert fewer.rule_rows == tuple(rows[:1]) and fewer.start == "x" and fewer.terminals == (A, B)
    assert fewer.rules == rules[:1]
