"""`Containers.members_any_order` names and writes the same rules as the depth-first recursion it replaced.

The rules' order is the grammar's (names `r<n>` and the IR's content hash follow it), so the state
plan worked out once per member count (`_any_order_plan`) must give exactly the rules a
recursion over the states gives: the reference below, written as that recursion.
"""

from __future__ import annotations

import itertools

import pytest

from pda.grammar.json_schema.containers import Containers
from pda.grammar.json_schema.context import Context
from pda.grammar.json_schema.options import Options


def _reference(ctx: Context, members: list[str | None], required: list[bool], extra: str | None) -> str | None:
    """One rule per (members written, started), named as a depth-first recursion first meets it."""
    ws, comma = ctx.ws, ctx.literal(",")
    need = sum(1 << i for i, r in enumerate(required) if r)
    present = [(1 << i, m) for i, m in enumerate(members) if m is not None]
    separators = ([], [*ws, comma, *ws])
    states: dict[tuple[int, bool], str] = {}

    def state(seen: int, started: bool) -> str:
        if (seen, started) in states:
            return states[seen, started]
        name = states[seen, started] = ctx.builder.reserve()
        sep = separators[started]
        alts = [[*sep, m, state(seen | bit, True)] for bit, m in present if not seen & bit]
        if extra is not None:
            alts.append([*sep, extra, state(seen, True)])
        if started and seen & need == need:
            alts.append([])
        ctx.builder.define(name, alts)
        return name

    if extra is None and not present:
        return None
    return state(0, False)


def _rules(whitespace: str, members: list[str | None], required: list[bool], extra: str | None,
           build: object) -> tuple[str | None, list[tuple[str, list[tuple[str, ...]]]]]:
    ctx = Context(Options(whitespace, 3, "raise", "any", exact=False))
    ctx.builder.reserve()  # names start past 0, as inside a lowering
    if build is _reference:
        first = _reference(ctx, members, required, extra)
    else:
        first = Containers(ctx, None, None).members_any_order(members, required, extra)  # type: ignore[arg-type]
    return first, [(name, [tuple(a) for a in alts]) for name, alts in ctx.builder.rules.items()]


CASES = [
    (members, required, extra)
    for n in range(0, 6)
    for absent in ([()] if n == 0 else [(), (0,), (n - 1,), tuple(range(n))])
    for members in [[None if i in absent else f"m{i}" for i in range(n)]]
    for required in {tuple(i < k for i in range(n)) for k in (0, 1, n)} | {tuple(i % 2 == 1 for i in range(n))}
    for extra in (None, "extra")
]


@pytest.mark.parametrize("whitespace", ["flexible", "compact"])
def test_same_rules_in_the_same_order_as_the_recursion(whitespace: str) -> None:
    for members, required, extra in CASES:
        want = _rules(whitespace, members, list(required), extra, _reference)
        got = _rules(whitespace, members, list(required), extra, None)
        assert got == want, (members, required, extra)


def test_every_subset_is_a_state_once() -> None:
    """Six members and an extra one: the start, and per subset of members one started state."""
    first, rules = _rules("compact", [f"m{i}" for i in range(6)], [False] * 6, "extra", None)
    assert first == "r1" and len(rules) == 1 + 1 + 2**6
    assert len({name for name, _ in rules}) == len(rules)
    assert sum(1 for _ in itertools.chain.from_iterable(alts for _, alts in rules)) == \
        6 + 1 + sum(6 - bin(s).count("1") + 1 + 1 for s in range(2**6))


def test_plans_past_the_memo_bound_are_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past `_PLAN_MEMO_MAX_MEMBERS` (raised `MAX_ANY_ORDER_PROPERTIES`) a plan is made each time, the same."""
    from pda.grammar.json_schema import containers

    monkeypatch.setattr(containers, "_PLAN_MEMO_MAX_MEMBERS", 1)
    for members, required, extra in CASES:
        if sum(m is not None for m in members) > 1:
            assert _rules("flexible", members, list(required), extra, None) == \
                _rules("flexible", members, list(required), extra, _reference), (members, required, extra)
