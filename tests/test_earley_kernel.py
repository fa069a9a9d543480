"""The compiled Earley nodes (`pda.kernels.earley`) against the plain-Python parser (`pda.reference.ReferenceEarley`).

Along random walks over random grammars (nullable symbols, right and left recursion,
ambiguity) and over every shipped grammar, both parsers must build the same node at
every step: the same kernel items with origins at the same earlier steps, the same
allowed terminals and acceptance, and the same budget errors.
"""

from __future__ import annotations

import gc
import random

import numpy as np
import pytest

import pda
from pda.errors import LimitExceeded
from pda.grammar.ir import GrammarIR, Rule, TerminalDef
from pda.kernels.earley import Core
from pda.limits import Limits
from pda.parser.earley import RECENT_PROBES, EarleyParser
from pda.parser.tables import build_tables
from pda.reference import ReferenceEarley
from pda.bits import iter_bits

SHIPPED = ["json", "python", "sqlite", "postgresql", "lua"]


def random_ir(rng: random.Random) -> GrammarIR:
    """A random grammar over terminals a..e: some rules empty, some recursive, often ambiguous."""
    terminals = [TerminalDef(f"T{ch}", ch) for ch in "abcde"[: rng.randint(2, 5)]]
    nts = [f"N{i}" for i in range(rng.randint(2, 6))]
    rules = []
    for i, lhs in enumerate(nts):
        for _ in range(rng.randint(1, 3)):
            rhs = []
            for _ in range(rng.choice([0, 1, 1, 2, 2, 3, 4])):
                if rng.random() < 0.5:
                    rhs.append(rng.choice(terminals).name)
                else:
                    rhs.append(rng.choice(nts))
            rules.append(Rule(lhs, tuple(rhs)))
        rules.append(Rule(lhs, (terminals[i % len(terminals)].name,)))  # every symbol derives a sentence
    return GrammarIR(terminals=tuple(terminals), rules=tuple(rules), start=nts[0])


def kernel_by_step(node, step_of: dict[int, int]) -> set[tuple[int, int]]:
    """A node's kernel with each origin named by the walk step it was built at."""
    return {(p, step_of[id(o)]) for p, o in node.kernel}


def compare_walk(tables, rng: random.Random, steps: int, *, multi: bool = True) -> int:
    """Walk both parsers along the same random terminal sets; assert equal nodes at every step. Returns steps taken."""
    fast, slow = EarleyParser(tables), ReferenceEarley(tables)
    f, s = fast.root, slow.root
    f_step, s_step = {id(f): 0}, {id(s): 0}
    keep = [f, s]
    for i in range(1, steps + 1):
        assert f.allowed == s.allowed and f.accepting == s.accepting
        choices = list(iter_bits(f.allowed))
        if not choices:
            return i
        picked = rng.sample(choices, min(len(choices), rng.choice([1, 1, 2, 3]) if multi else 1))
        terminals = sum(1 << t for t in picked)
        if rng.random() < 0.3:  # bits the node cannot scan are ignored by both
            terminals |= 1 << rng.randrange(tables.n_terminals + 3)
        f2, s2 = f.advance(terminals), s.advance(terminals)
        assert (f2 is None) == (s2 is None)
        if f2 is None:
            return i
        assert f.probe(terminals) is f2  # interned: a probe finds the same node
        f_step.setdefault(id(f2), i)
        s_step.setdefault(id(s2), i)
        assert kernel_by_step(f2, f_step) == kernel_by_step(s2, s_step), f"step {i}"
        keep += [f2, s2]
        f, s = f2, s2
    return steps


@pytest.mark.parametrize("seed", range(300))
def test_random_grammars_build_the_reference_nodes(seed: int) -> None:
    rng = random.Random(f"earley-kernel:{seed}")
    try:
        tables = build_tables(random_ir(rng))
    except pda.GrammarError:  # the start symbol derives nothing finite
        return
    for _ in range(4):
        compare_walk(tables, rng, 30)


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_grammars_build_the_reference_nodes(name: str) -> None:
    tables = pda.Grammar.load(name).recognizer.tables
    rng = random.Random(f"earley-kernel:{name}")
    taken = sum(compare_walk(tables, rng, 60) for _ in range(12))
    assert taken > 100


def test_right_recursion_is_constant_per_step() -> None:
    """Leo's memo: a 3,000-deep right-recursive chain keeps kernels small, as the reference does."""
    ir = GrammarIR(terminals=(TerminalDef("A", "a"),), rules=(Rule("S", ("A", "S")), Rule("S", ())), start="S")
    tables = build_tables(ir)
    fast, slow = EarleyParser(tables), ReferenceEarley(tables)
    f, s = fast.root, slow.root
    for _ in range(3000):
        f, s = f.advance(1), s.advance(1)
        assert len(f.kernel) == len(s.kernel) <= 3
    assert f.accepting and s.accepting


def ambiguous_tables():
    ir = GrammarIR(
        terminals=(TerminalDef("A", "a"),),
        rules=(Rule("S", ("S", "S")), Rule("S", ("A",)), Rule("S", ())),
        start="S",
    )
    return build_tables(ir)


@pytest.mark.parametrize("limits", [Limits(max_node_work=300), Limits(max_node_items=40)])
def test_budgets_cut_where_the_reference_cuts(limits: Limits) -> None:
    tables = ambiguous_tables()
    fast, slow = EarleyParser(tables, limits=limits), ReferenceEarley(tables, limits=limits)
    f, s = fast.root, slow.root
    for _ in range(200):
        try:
            s = s.advance(1)
        except LimitExceeded as expected:
            with pytest.raises(LimitExceeded) as raised:
                f.advance(1)
            assert str(raised.value) == str(expected)
            # Nothing was memoised: the same step raises again, and a looser parser goes on.
            with pytest.raises(LimitExceeded):
                f.advance(1)
            return
        f = f.advance(1)
    pytest.fail("the budget never cut")


def test_dropped_nodes_leave_the_intern_table_and_probes_are_bounded() -> None:
    tables = pda.Grammar.load("json").recognizer.tables
    parser = EarleyParser(tables)
    rng = random.Random(7)
    node = parser.root
    for _ in range(3 * RECENT_PROBES):
        if not node.allowed:  # a finished document
            node = parser.root
        choices = list(iter_bits(node.allowed))
        for t in choices:  # nodes a mask would look at; only the path's are memoised on their nodes
            node.probe(1 << t)
        node = node.advance(1 << rng.choice(choices)) or parser.root
    assert parser.core.stats()["probes"] == RECENT_PROBES
    before = parser.core.stats()["nodes"]
    parser.core.clear_probes()
    gc.collect()
    path = parser.core.stats()["nodes"]
    assert parser.core.stats()["probes"] == 0 and path < before
    del node
    parser.root = None  # the root's memo held the whole path
    gc.collect()
    assert parser.core.stats()["nodes"] == 0


def test_the_probe_memo_refills_after_clear_probes() -> None:
    """A core hands its probe entries out as probes are first remembered; `clear_probes` returns them to a free
    list. Past a clear, the table takes the freed entries, then the ones never used, then evicts the least
    recently used, and every probe answers what `advance` does all along."""
    tables = pda.Grammar.load("json").recognizer.tables
    core = Core(**tables.kernel, max_items=10**6, max_work=10**8, max_seconds=10.0, recent_probes=8,
                error=LimitExceeded)
    frontier, expected = [core.root(tables.start_symbol)], {}
    while len(expected) < 20 and frontier:  # (node, terminals) pairs and the node each leads to, held here
        node = frontier.pop(0)
        for t in iter_bits(node.allowed):
            # A probe, not `advance`, which memoises on the node (a probe asks that memo first). A node built
            # again after its probe was forgotten is interned by content: the very node held here.
            nxt = expected[node, 1 << t] = node.probe(1 << t)
            if nxt is not None:
                frontier.append(nxt)
    pairs = list(expected)
    core.clear_probes()
    for node, terminals in pairs[:3]:
        assert node.probe(terminals) is expected[node, terminals]
    assert core.stats()["probes"] == 3
    core.clear_probes()
    assert core.stats()["probes"] == 0
    for round_ in range(2):  # the 3 freed entries, the 5 never used, then evictions; again from a full table
        for i, pair in enumerate(pairs):
            assert pair[0].probe(pair[1]) is expected[pair]
            assert core.stats()["probes"] == (min(i + 1, 8) if round_ == 0 else 8)
        for pair in pairs[-8:]:  # the 8 most recent are remembered: asked again, they answer the same
            assert pair[0].probe(pair[1]) is expected[pair]
        assert core.stats()["probes"] == 8


def test_a_core_reads_the_tables_bytes_as_their_arrays() -> None:
    """`ParserTables.core_arrays` (the tables kernel's bytes, what a compile hands the core) and `kernel` (numpy
    arrays) make cores whose nodes agree along a walk."""
    tables = pda.Grammar.load("json").recognizer.tables
    assert all(isinstance(v, bytes) for k, v in tables.core_arrays.items() if k not in ("n_terminals", "accept_pos"))
    common = dict(max_items=10**6, max_work=10**8, max_seconds=10.0, recent_probes=64, error=LimitExceeded)
    nodes = [Core(**arrays, **common).root(tables.start_symbol) for arrays in (tables.core_arrays, tables.kernel)]
    rng = random.Random(5)
    for _ in range(300):
        assert nodes[0].allowed == nodes[1].allowed and nodes[0].accepting == nodes[1].accepting
        if not nodes[0].allowed:
            break
        t = 1 << rng.choice(list(iter_bits(nodes[0].allowed)))
        nodes = [node.advance(t) for node in nodes]
        assert (nodes[0] is None) == (nodes[1] is None)
        if nodes[0] is None:
            break


def test_bad_tables_and_terminals_are_refused() -> None:
    arrays = pda.Grammar.load("json").recognizer.tables.kernel
    common = dict(max_items=10, max_work=10, max_seconds=1.0, recent_probes=4, error=LimitExceeded)
    broken = dict(arrays, step_to=np.full_like(arrays["step_to"], 10**6))
    with pytest.raises(ValueError, match="step"):
        Core(**broken, **common)
    with pytest.raises(ValueError):
        Core(**dict(arrays, lhs_of=arrays["lhs_of"][:-1]), **common)
    with pytest.raises(ValueError, match="whole 4-byte entries"):  # bytes: the entries' raw bytes
        Core(**dict(arrays, step_to=arrays["step_to"].tobytes()[:-1]), **common)
    with pytest.raises(TypeError):
        Core(**dict(common, error=int), **arrays)
    root = Core(**arrays, **common).root(arrays["n_terminals"])
    with pytest.raises(TypeError):
        root.advance("a")
    with pytest.raises(ValueError):
        Core(**arrays, **common).root(0)  # a terminal, not a nonterminal


def _cores() -> int:
    gc.collect()
    return sum(type(o) is Core for o in gc.get_objects())


def test_nodes_are_untracked_and_keep_their_core_alive() -> None:
    """The core's arena owns its nodes, which the collector does not track; a node held anywhere keeps its
    core and every node it reaches usable after the parser is dropped, and the last one dropped frees the core."""
    tables = pda.Grammar.load("json").recognizer.tables
    before = _cores()
    parser = EarleyParser(tables)
    rng = random.Random(3)
    node = parser.root
    for _ in range(200):  # far enough to sweep the arena more than once along the way
        for t in iter_bits(node.allowed):
            node.probe(1 << t)
        node = node.advance(1 << rng.choice(list(iter_bits(node.allowed)))) or parser.root
        if not node.allowed:  # a finished document
            node = parser.root
    assert not gc.is_tracked(node) and gc.is_tracked(parser.core)
    kernel, allowed = node.kernel, node.allowed
    del parser
    assert _cores() == before + 1  # the node holds it
    assert node.kernel == kernel and node.allowed == allowed and all(o.kernel is not None for _, o in kernel)
    nxt = node.advance(1 << next(iter_bits(allowed)))
    assert nxt is not None and nxt.allowed
    del kernel, node, nxt
    assert _cores() == before


def test_a_matcher_outlives_its_dropped_compiled_grammar() -> None:
    """A matcher holds nodes of a compiled grammar nobody else holds any more (out of the compile memo, its
    grammar dropped): it serves the masks a fresh compile serves, and dropping it frees the grammar's core
    (once the recent masks, which keep nodes alive, let go too)."""
    vocab = pda.Vocabulary.from_tokens([b"[", b"]", b"1", b",", b" ", None], eos_ids=[5])
    text = 'start: "[" (item ("," item)*)? "]"\nitem: "1" | start\n%ignore " "'
    tokens = [0, 0, 2, 3, 4, 0, 1, 1]  # "[[1, []]"
    budgets = {name: pda.memory_budgets()[name]["max_bytes"] for name in ("compiled_grammars", "recent_masks")}
    limits = pda.Limits(warmup_seconds=0)
    before = _cores()
    bitmask = np.zeros((1, 1), dtype=np.int32)
    try:
        for name in budgets:
            pda.set_memory_budget(name, 0)
        m = pda.Matcher(pda.compile(pda.Grammar.from_lark(text), vocab, limits=limits))
        other = pda.compile(pda.Grammar.from_choices(["other"]), vocab, limits=limits)  # the memo holds only this
        masks = []
        for token in tokens:
            gc.collect()
            m.fill_bitmask(bitmask)
            masks.append(bitmask.copy())
            assert m.accept_token(token)
        m.fill_bitmask(bitmask)
        assert bitmask[0, 0] == 0b11010  # "]", "," or " " may follow
        del m
        pda.Matcher(other).fill_bitmask(bitmask)  # the recent masks keep the newest only, now "other"'s
        assert _cores() <= before + 1  # "other"'s only
        fresh = pda.Matcher(pda.compile(pda.Grammar.from_lark(text), vocab, limits=limits))
        for token, mask in zip(tokens, masks):
            fresh.fill_bitmask(bitmask)
            assert (bitmask == mask).all()
            assert fresh.accept_token(token)
    finally:
        for name, max_bytes in budgets.items():
            pda.set_memory_budget(name, max_bytes)


def test_a_core_never_stepped_is_freed_without_the_collector() -> None:
    """A root enters its core's arena when first stepped: a parser dropped before (a grammar built and a
    text refused before its first lexeme ended) leaves no cycle for the collector."""
    tables = pda.Grammar.load("json").recognizer.tables
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        parser = EarleyParser(tables)
        assert parser.root.allowed
        del parser
        assert gc.collect() == 0
        parser = EarleyParser(tables)
        parser.root.advance(parser.root.allowed)
        del parser
        assert gc.collect() > 0  # a stepped core and its nodes are a cycle: the collector frees them
    finally:
        if enabled:
            gc.enable()
