"""`build_tables` is one call of the compiled `pda.kernels.tables.build`: the same parser tables as the
Python numbering and numpy pruning it replaced (spelled out here as the oracle) on JSONSchemaBench schemas
and the shipped grammars, and `build` itself on a small grammar and on bad input."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import pda
from pda.errors import GrammarError, PdaError
from pda.grammar.alternatives import merge_alternative_terminals
from pda.grammar.ir import GrammarIR, Rule, TerminalDef
from pda.kernels.tables import EmptyLanguage, TerminalDefined, build, fixpoint, layout
from pda.parser.tables import build_tables
from tests.conftest import GRAMMARS, corpus_path


def _reference_tables(ir: GrammarIR) -> tuple[tuple[str, ...], dict[str, np.ndarray]]:
    """The nonterminal names and kernel arrays as `build_tables` made them before `build`: ids by a
    Python dict (a name numbered when first looked up), nonterminals renumbered by sorted name."""
    terminal_names = [t.name for t in ir.terminals]
    t = len(terminal_names)
    ids = {name: i for i, name in enumerate(terminal_names)}
    for rule in ir.rules:
        for name in (rule.lhs, *rule.rhs):
            ids.setdefault(name, len(ids))
    lhs_all = np.array([ids[r.lhs] for r in ir.rules], dtype=np.int64)
    lens_all = np.array([len(r.rhs) for r in ir.rules], dtype=np.int64)
    flat_all = np.array([ids[s] for r in ir.rules for s in r.rhs], dtype=np.int64)
    terminal = np.zeros(len(ids), dtype=bool)
    terminal[:t] = True
    _, kept = fixpoint(lhs_all, flat_all, lens_all, terminal)
    start = ids[ir.start]
    names = list(ids)
    has_rule = np.zeros(len(ids), dtype=bool)
    has_rule[lhs_all[kept]] = True
    has_rule[start] = False
    nt_names = [ir.start, *sorted(names[a] for a in np.flatnonzero(has_rule)), "$start"]
    renumber = np.full(len(ids), -1, dtype=np.int64)
    renumber[:t] = np.arange(t)
    renumber[[ids[n] for n in nt_names[:-1]]] = t + np.arange(len(nt_names) - 1)
    aug = t + len(nt_names) - 1
    lhs = np.append(renumber[lhs_all[kept]], aug)
    flat = np.append(renumber[flat_all[np.repeat(kept, lens_all)]], renumber[start])
    lens = np.append(lens_all[kept], 1)
    return tuple(nt_names), {"lhs": lhs, "flat": flat, **layout(t, lhs, flat, lens, aug + 1)._asdict()}


def _assert_same_tables(ir: GrammarIR) -> None:
    tables = build_tables(ir)
    nt_names, arrays = _reference_tables(ir)
    assert tables.nonterminal_names == nt_names
    assert tables.terminal_names == tuple(t.name for t in ir.terminals)
    for name, array in arrays.items():
        if name in tables.kernel:
            np.testing.assert_array_equal(tables.kernel[name], array, err_msg=name)
    assert tables.lhs == tuple(arrays["lhs"].tolist())
    assert [s for rhs in tables.rhs for s in rhs] == arrays["flat"].tolist()
    assert tables.rule_start == tuple(arrays["rule_start"][:-1].tolist())


def _schemas(category: str, n: int) -> list[str]:
    path = corpus_path("jsonschemabench", "schemas", f"{category}.jsonl")
    with path.open() as f:
        return [json.dumps(json.loads(line)["schema"]) for line, _ in zip(f, range(n))]


@pytest.mark.parametrize("category", ["Glaiveai2K", "Github_medium", "Kubernetes"])
def test_json_schema_tables_equal_the_python_numbering(category: str) -> None:
    checked = 0
    for text in _schemas(category, 40):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ir = pda.Grammar.from_json_schema(text, whitespace="flexible").ir
        except PdaError:
            continue
        _assert_same_tables(merge_alternative_terminals(ir, frozenset()))
        checked += 1
    assert checked >= 20


@pytest.mark.parametrize("name", ["json.lark", "lua.lark", "python.lark", "sqlite.lark", "postgresql.lark"])
def test_shipped_grammar_tables_equal_the_python_numbering(name: str) -> None:
    _assert_same_tables(pda.Grammar.load(str(GRAMMARS / name)).ir)


def test_build_numbers_terminals_then_names_in_order_of_appearance() -> None:
    """Unproductive `u` and undefined `y` are numbered, then dropped with their rules; the kept nonterminals
    renumbered start first, the others by name."""
    built = build(["A", "B"], ["s", "x", "s", "u", "b"], [("x", "A"), (), ("s", "y", "B", "x"), ("u",), ("A",)], "s")
    assert built.nonterminal_names == ("s", "b", "x", "$start")
    assert built.lhs.tolist() == [2, 4, 3, 5]
    assert built.flat.tolist() == [4, 0, 0, 2]
    assert built.lhs.dtype == built.flat.dtype == np.int64


@pytest.mark.parametrize("args, error, message", [
    ((["A", "A"], [], [], "s"), ValueError, "holds a name twice"),
    ((["A"], ["s"], [], "s"), ValueError, "one entry per rule"),
    ((["A"], ["s"], [["A"]], "s"), TypeError, "not a tuple"),
    ((["A"], ["s"], [("A", 3)], "s"), TypeError, "rhs holds a int"),
    (([b"A"], [], [], "s"), TypeError, "terminal_names holds a bytes"),
    ((["A"], [None], [()], "s"), TypeError, "lhs holds a NoneType"),
    ((("A",), [], [], "s"), TypeError, "must be lists"),
    ((["A"], ["s"], [("A",)], None), TypeError, "start must be a str"),
    ((["A"], ["s", "A"], [("A",), ("A",)], "s"), TerminalDefined, "'A' names both a terminal and a rule"),
    ((["A"], ["s"], [("s", "A")], "s"), EmptyLanguage, "derives no finite sentence"),
    ((["A"], ["s"], [("A",)], "A"), EmptyLanguage, "derives no finite sentence"),
    ((["A"], ["s"], [("A",)], "t"), EmptyLanguage, "derives no finite sentence"),
])
def test_build_bad_input_raises(args: tuple, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        build(*args)


def test_build_tables_errors_unchanged() -> None:
    a = TerminalDef("A", "a")
    with pytest.raises(GrammarError, match="'A' names both a terminal and a rule"):
        build_tables(GrammarIR(terminals=(a,), rules=(Rule("s", ("A",)), Rule("A", ("A",))), start="s"))
    with pytest.raises(GrammarError, match="derives no finite sentence"):
        build_tables(GrammarIR(terminals=(a,), rules=(Rule("s", ("s", "A")),), start="s"))
    with pytest.raises(GrammarError, match="derives no finite sentence"):
        build_tables(GrammarIR(terminals=(a,), rules=(Rule("s", ("A",)),), start="t"))
    with pytest.raises(GrammarError, match="derives no finite sentence"):
        build_tables(GrammarIR(terminals=(a,), rules=(Rule("s", ("A",)),), start="A"))
