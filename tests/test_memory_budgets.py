"""The in-memory caches' byte budgets: named, documented, settable at run time (`pda.set_memory_budget`)."""

from __future__ import annotations

import pytest

import pda
from pda import lru

NAMES = {"terminal_dfas", "leaf_dfas", "regex_translations", "all_terminal_dfas", "token_walks", "basic_walks", "compiled_grammars", "recent_masks",
         "schema_patterns", "lazy_dfa_states", "numeric_ranges"}


def test_every_cache_shared_across_grammars_has_a_named_budget() -> None:
    budgets = pda.memory_budgets()
    assert set(budgets) == NAMES
    assert all(b["max_bytes"] > 0 and b["bytes"] <= b["max_bytes"] * max(b["caches"], 1) for b in budgets.values())


def test_setting_a_budget_shrinks_live_caches_and_applies_to_new_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lru, "_budgets", {})
    lru.register_budget("unit", 1000)
    a = lru.budget_cache("unit")
    for k in range(10):
        a.put(k, k, 100)
    assert len(a) == 10 and pda.memory_budgets()["unit"] == {"max_bytes": 1000, "caches": 1, "bytes": 1000}
    pda.set_memory_budget("unit", 250)
    assert a.nbytes == 200 and a.get(9) == 9 and a.get(7) is None
    b = lru.budget_cache("unit")
    for k in range(5):
        b.put(k, k, 100)
    assert len(b) == 2
    pda.set_memory_budget("unit", 0)
    assert len(a) == 1 and len(b) == 1  # the newest entry is always kept
    lru.register_budget("unit", 5000)  # a second registration keeps what the user set
    assert pda.memory_budgets()["unit"]["max_bytes"] == 0


def test_a_ring_keeps_what_was_put_last_within_its_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """`ByteRing` drops the oldest first, keeps the newest whatever its size, and is resized by its budget."""
    monkeypatch.setattr(lru, "_budgets", {})
    lru.register_budget("ring", 1000)
    ring = lru.budget_ring("ring")
    kept = [object() for _ in range(12)]
    for value in kept:
        ring.put(value, 100)
    assert len(ring) == 10 and ring.nbytes == 1000
    assert list(ring._entries) == kept[2:]  # first in, first out
    ring.put(kept[0], 5000)  # alone over the budget: kept, everything older dropped
    assert len(ring) == 1 and ring.nbytes == 5000
    pda.set_memory_budget("ring", 300)
    assert len(ring) == 1
    for value in kept[:4]:
        ring.put(value, 100)
    assert len(ring) == 3 and ring.nbytes == 300 and pda.memory_budgets()["ring"]["bytes"] == 300


@pytest.mark.parametrize("name, size, error", [
    ("no such cache", 1 << 20, ValueError),
    ("token_walks", -1, ValueError),
    ("token_walks", 1.5, TypeError),
    ("token_walks", True, TypeError),
])
def test_bad_budgets_are_refused_and_change_nothing(name: str, size: object, error: type) -> None:
    before = pda.memory_budgets()
    with pytest.raises(error):
        pda.set_memory_budget(name, size)
    assert pda.memory_budgets() == before


def test_a_compile_under_a_tiny_budget_still_serves_exact_masks() -> None:
    """Budgets bound memos only: with every one at 0 (the newest entry kept), masks are the same."""
    from pda.reference import mask_mismatches
    from tests.test_masks import synthetic_vocab

    defaults = {name: b["max_bytes"] for name, b in pda.memory_budgets().items()}
    grammar = pda.Grammar.from_lark('start: "[" NUM ("," NUM)* "]"\nNUM: /[0-9]+/\n%ignore " "\n')
    try:
        for name in defaults:
            pda.set_memory_budget(name, 0)
        compiled = pda.CompiledGrammar(grammar, synthetic_vocab(), warmup_seconds=0, disk_cache=False)
        m = pda.Matcher(compiled)
        for token_text in (b"[", b"12", b",", b"3", b"]"):
            node, q = m._history[-1]
            assert not mask_mismatches(compiled, node, q)
            token = compiled.vocab.tokens.index(token_text)
            assert m.accept_token(token)
    finally:
        for name, size in defaults.items():
            pda.set_memory_budget(name, size)
