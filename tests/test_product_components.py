"""A product's sparse components (`pda.regex.product.Product`) against the dense product of `pda.reference`.

`combine` keeps per state only its live components (CSR) and its accept/live rows as
packed bits; `reference_product` runs the terminals' DFAs in lockstep over whole
vectors of their states. Walking both together from their starts must pair each
product state with exactly one vector, whose live entries are the state's components
and whose accepting/live entries are its bits: on random terminals and on every
shipped grammar's all-terminal product. Also the disk entry of an all-terminal
product: a round trip, and damaged entries refused.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from pda import cache
from pda.grammar.grammar import Grammar
from pda.grammar.ir import TerminalDef
from pda.grammar.lark_frontend import SHIPPED_GRAMMARS
from pda.lru import ByteLRU
from pda.lexer import lexer as lexer_module
from pda.lexer.terminals import terminal_dfa
from pda.regex.dfa import LexerDFA
from pda.regex.product import Product, combine
from pda.reference import reference_product


def random_pattern(rng: random.Random, depth: int = 3) -> str:
    """A random regex over a few bytes: literals, classes, alternations and repeats."""
    if depth == 0 or rng.random() < 0.3:
        return rng.choice(["a", "b", "c", "ab", "[ab]", "[^a\\n]", "[a-c]", "x", "é"])
    kind = rng.randrange(5)
    inner = random_pattern(rng, depth - 1)
    if kind == 0:
        return inner + random_pattern(rng, depth - 1)
    if kind == 1:
        return f"(?:{inner}|{random_pattern(rng, depth - 1)})"
    if kind == 2:
        return f"(?:{inner})" + rng.choice(["*", "+", "?"])
    if kind == 3:
        lo = rng.randint(0, 3)
        return f"(?:{inner}){{{lo},{lo + rng.randint(0, 3)}}}"
    return '"' + inner + '"'


def random_dfas(rng: random.Random) -> list[LexerDFA]:
    """2 to 7 random terminals' DFAs (those that match the empty string left out)."""
    out = []
    while len(out) < rng.randint(2, 7):
        dfa = terminal_dfa(TerminalDef(name="T", pattern=random_pattern(rng)))
        if not dfa.accept[dfa.start, 0]:
            out.append(dfa)
    return out


def assert_matches_reference(product: Product, dfas: list[LexerDFA], terminals: list[int]) -> None:
    """Walk `product` and the dense reference together: a bijection, with equal components and bits."""
    ref_class, vectors, ref_trans = reference_product(dfas)
    of_vector = {0: product.start}  # reference state -> product state
    of_state = {product.start: 0}
    own_class = product.byte_class.tolist()
    for i in range(len(vectors)):  # reference states in breadth-first order: each is paired before it is read
        q = of_vector[i]
        row = product.trans[q].tolist()
        for b in range(256):
            succ, ref_succ = row[own_class[b]], ref_trans[i][ref_class[b]]
            assert of_vector.setdefault(ref_succ, succ) == succ, (i, b)
            assert of_state.setdefault(succ, ref_succ) == ref_succ, (i, b)
    assert set(of_state) <= set(range(product.n_states))
    assert set(range(product.n_states)) - set(of_state) <= {product.dead}
    for i, vector in enumerate(vectors):
        q = of_vector[i]
        lo, hi = product.comp_ptr[q : q + 2].tolist()
        sparse = list(zip(product.comp_term[lo:hi].tolist(), product.comp_state[lo:hi].tolist()))
        dense = [(t, s) for t, s, d in zip(terminals, vector, dfas) if d.live[s, 0]]
        assert sparse == dense, (q, vector)
        accept = sum(1 << t for t, s, d in zip(terminals, vector, dfas) if d.accept[s, 0])
        live = sum(1 << t for t, _ in dense)
        assert int.from_bytes(product.accept_bits[q].tobytes(), "little") == accept
        assert int.from_bytes(product.live_bits[q].tobytes(), "little") == live


@pytest.mark.parametrize("seed", range(40))
def test_random_terminals_sparse_components_are_the_dense_ones(seed: int) -> None:
    rng = random.Random(seed)
    dfas = random_dfas(rng)
    terminals = sorted(rng.sample(range(150), len(dfas)))  # ids over several words of bits
    assert_matches_reference(combine(dfas, terminals=terminals), dfas, terminals)
    assert_matches_reference(combine(dfas), dfas, list(range(len(dfas))))


def test_one_terminal_and_an_empty_language_beside_others() -> None:
    """One DFA is the product as it is; a terminal matching nothing is never a component."""
    rng = random.Random(1)
    dfas = random_dfas(rng)
    assert_matches_reference(combine(dfas[:1], terminals=[70]), dfas[:1], [70])
    nothing = terminal_dfa(TerminalDef(name="NONE", pattern="[^\\x00-\\U0010ffff]"))
    assert not nothing.live[nothing.start, 0] and nothing.start != nothing.dead
    assert_matches_reference(combine([nothing, *dfas]), [nothing, *dfas], list(range(len(dfas) + 1)))
    empty = combine([nothing, nothing])
    assert empty.n_states == 1 and empty.comp_ptr.tolist() == [0, 0]


@pytest.mark.parametrize("name", sorted(p.stem for p in SHIPPED_GRAMMARS.glob("*.lark")))
def test_shipped_grammars_all_terminal_products(name: str) -> None:
    ir = Grammar.load(name).ir
    dfas = [terminal_dfa(t) for t in ir.terminals]
    product = combine(dfas, max_states=100_000)
    assert_matches_reference(product, dfas, list(range(len(dfas))))


def small_product() -> tuple[Product, list[LexerDFA]]:
    dfas = random_dfas(random.Random(3))
    return combine(dfas), dfas


def test_disk_entry_round_trip() -> None:
    product, dfas = small_product()
    meta, arrays = lexer_module._combined_to_arrays(product)
    back = lexer_module._combined_from_arrays(meta, dict(arrays), dfas)
    for field in ("byte_class", "trans", "comp_ptr", "comp_term", "comp_state", "accept_bits", "live_bits"):
        assert np.array_equal(getattr(back, field), getattr(product, field)), field
    assert (back.n_states, back.start, back.dead) == (product.n_states, product.start, product.dead)
    assert lexer_module._combined_from_arrays(*lexer_module._combined_to_arrays("too big"), dfas) == "too big"


def _with(arrays: dict[str, np.ndarray], name: str, change) -> dict[str, np.ndarray]:
    array = arrays[name].copy()
    change(array)
    return {**arrays, name: array}


def test_damaged_disk_entries_are_refused() -> None:
    product, dfas = small_product()
    meta, arrays = lexer_module._combined_to_arrays(product)
    lo = int(product.comp_ptr[0])
    j, s = int(product.comp_term[lo]), int(product.comp_state[lo])
    damaged = [
        _with(arrays, "comp_state", lambda a: a.__setitem__(lo, dfas[j].n_states)),  # not a state of its DFA
        _with(arrays, "comp_state", lambda a: a.__setitem__(lo, dfas[j].dead)),  # its DFA's dead state
        _with(arrays, "comp_term", lambda a: a.__setitem__(lo, len(dfas))),  # no such terminal
        _with(arrays, "comp_term", lambda a: a.__setitem__(slice(lo, lo + 2), a[lo : lo + 2][::-1])),  # out of order
        _with(arrays, "comp_ptr", lambda a: a.__setitem__(-1, a[-1] - 1)),  # does not end at the components' end
        _with(arrays, "comp_ptr", lambda a: a.__setitem__(1, a[2] + 1)),  # not ascending
        _with(arrays, "trans", lambda a: a.__setitem__((0, 0), product.n_states)),
        {**arrays, "comp_state": arrays["comp_state"].astype(np.int64)},  # the wrong dtype
        {k: v for k, v in arrays.items() if k != "comp_ptr"},
    ]
    assert s != dfas[j].dead
    for bad in damaged:
        with pytest.raises(cache.Invalid):
            lexer_module._combined_from_arrays(meta, bad, dfas)
    with pytest.raises(cache.Invalid):
        lexer_module._combined_from_arrays({**meta, "product": {**meta["product"], "start": product.n_states}},
                                           arrays, dfas)


def test_a_damaged_entry_on_disk_is_a_miss_and_rebuilt(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry whose hash is right but whose components are not its terminals' states: rebuilt, not used."""
    monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(lexer_module, "_combined", ByteLRU(lexer_module.ALL_TERMINAL_DFAS_MAX_BYTES))
    monkeypatch.setattr(lexer_module, "DISK_MIN_OWN_STATES", 0)  # a small product is looked up on disk too
    product, dfas = small_product()
    digest = lexer_module._dfas_digest(dfas)
    names = [f"T{i}" for i in range(len(dfas))]
    meta, arrays = lexer_module._combined_to_arrays(product)
    digest_key = lexer_module.product_key(digest, names, 1000)
    key, tag = {"all_terminals": digest_key}, digest_key[: lexer_module.PRODUCT_TAG_CHARS]
    cache.store("lexer", key, meta, _with(arrays, "comp_state", lambda a: a.__setitem__(0, 10_000)), tag=tag)
    cache.flush()
    assert tag in cache.tags("lexer")
    assert cache.load("lexer", key, lambda m, a: lexer_module._combined_from_arrays(m, a, dfas), tag) is None
    rebuilt = lexer_module._all_terminal_dfa(dfas, names, 1000, digest)
    assert np.array_equal(rebuilt.comp_state, product.comp_state)
