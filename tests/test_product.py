"""The product of terminal DFAs (`pda.regex.product.combine`): right language per terminal, right components, minimal.

The product explores only states where two or more terminals are live and numbers the
rest (one terminal's own DFA) directly; these tests check the result against the
terminals' own DFAs on every state reached by short strings, and that a full
refinement of the result merges nothing.
"""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from pda.grammar.ir import TerminalDef
from pda.lexer.terminals import terminal_dfa
from pda.kernels.partition import coarsest_partition
from pda.regex.product import Product, combine
from pda.regex.utf8 import distinct_rows

PATTERNS = [
    r"\"(?:[^\"\\]|\\.)*\"",  # a JSON-like string
    r"\"ab\"", r"\"abc\"", r"\"a[bc]{2,5}\"",  # keys and a counted body overlapping the string
    r"[a-z_]+", r"select", r"sel(?:ect)?s", r"[0-9]+(?:\.[0-9]+)?", r"-?[0-9]{1,3}",
    r"(?:get|set)_(?:user|item)_v[0-9]", r"get_user_v1", r"\s+", r"a{3,8}", r"(?:ab)*c",
]
ALPHABET = b'"abcegilmnorstuv_019.- \\'


def dfas_of(patterns: list[str]):
    return [terminal_dfa(TerminalDef(name=f"T{i}", pattern=p)) for i, p in enumerate(patterns)]


def run(product: Product, text: bytes) -> int:
    """The product's state after `text` from its start."""
    q = product.start
    for b in text:
        q = int(product.trans[q, product.byte_class[b]])
    return q


def bit(rows: np.ndarray, q: int, j: int) -> bool:
    """Terminal j's bit in row q of packed bit rows."""
    return bool(int(rows[q, j // 64]) >> (j % 64) & 1)


def components_at(product: Product, q: int) -> dict[int, int]:
    """The live terminals at q with their own states."""
    lo, hi = product.comp_ptr[q : q + 2].tolist()
    return dict(zip(product.comp_term[lo:hi].tolist(), product.comp_state[lo:hi].tolist()))


def strings(max_len: int, rng: random.Random, n: int) -> list[bytes]:
    """All strings up to length 3 over the alphabet, then random ones up to `max_len`."""
    out = [bytes(t) for k in range(4) for t in itertools.product(ALPHABET, repeat=k)]
    out += [bytes(rng.choice(ALPHABET) for _ in range(rng.randint(4, max_len))) for _ in range(n)]
    return out


@pytest.mark.parametrize("seed", range(12))
def test_product_agrees_with_each_terminal(seed: int) -> None:
    rng = random.Random(seed)
    chosen = rng.sample(PATTERNS, rng.randint(2, 6))
    dfas = dfas_of(chosen)
    product = combine(dfas)
    assert product.start == 0 and product.dead == product.n_states - 1
    for text in strings(12, rng, 3000):
        q = run(product, text)
        components = components_at(product, q)
        for j, d in enumerate(dfas):
            s = d.run(d.start, text)
            assert bit(product.accept_bits, q, j) == bool(d.accept[s, 0]), (chosen[j], text)
            assert bit(product.live_bits, q, j) == bool(d.live[s, 0]), (chosen[j], text)
            assert components.get(j, d.dead) == s, (chosen[j], text)
    # Minimal without being minimised (see `combine`): refining every state from scratch,
    # starting from blocks of equal accept rows, merges none.
    initial = distinct_rows(product.accept_bits.view(np.uint8))[1].astype(np.int64)
    blocks = coarsest_partition(product.trans.astype(np.int64), initial)
    assert int(blocks.max()) + 1 == product.n_states


def test_enum_trie_beside_literals_is_the_trie_plus_the_shared_start() -> None:
    """One finite set beside two literals (the enum benchmark's frame): the states past the first
    byte are the trie's own, numbered without exploring them, and nothing is duplicated."""
    values = [f"{a}_{b}_v{n}" for a in ("get", "set", "list") for b in ("user", "item", "order") for n in range(30)]
    enum = TerminalDef(name="TOOL", pattern="(?:" + "|".join(f'"{v}"' for v in values) + ")")
    dfas = [terminal_dfa(enum), *dfas_of([r"\{\"tool\": ", r"\}"])]
    product = combine(dfas)
    # The trie (less its start) + the literals' states (less their starts) + one start; one dead.
    expected = sum(d.n_states - 2 for d in dfas) + 2
    assert product.n_states == expected
    for v in values[::7]:
        q = run(product, f'"{v}"'.encode())
        assert product.accept_bits[q].tolist() == [1]
        assert components_at(product, q) == {0: dfas[0].run(dfas[0].start, f'"{v}"'.encode())}
    assert int(np.bitwise_or.reduce(product.accept_bits[:, 0])) == 0b111


def test_no_terminals_is_one_dead_start() -> None:
    """A grammar with no terminal (the fuzzer's shrinker makes them): one state, start and dead at once."""
    product = combine([])
    assert (product.n_states, product.start, product.dead) == (1, 0, 0)
    assert product.comp_ptr.tolist() == [0, 0] and product.accept_bits.shape == (1, 0)
