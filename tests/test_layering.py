"""The package's layers: every import in pda/ points down (or within its own layer), never up.

The order is docs/design.md's "Data flow and layout", bottom first. A module
belongs to the unit with the longest matching name (a folder, or a module carved
out of one); a module may import its own unit and any unit of a lower rank, and
units of one rank may not import each other (the lexer and the parser know
nothing of one another). Every import counts: at the top of a module, inside a
function, under `TYPE_CHECKING`. A new module must be placed in a unit, and an
upward import fails here unless it is one of `DEFERRED_UPWARD`, each a deferred
import (inside a function) with its reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "pda"

# Bottom first. Each rank holds units side by side; a unit is one name or several that form
# one component (they may import each other).
LAYERS: list[tuple[str | tuple[str, ...], ...]] = [
    ("pda._version", "pda.errors", "pda.limits"),  # facts: no imports from pda
    ("pda.lru", "pda.cache", "pda.bits", "pda.arrays", "pda.collector",
     ("pda.kernels.partition", "pda.kernels._partition"), ("pda.kernels.compose", "pda.kernels._compose"),
     ("pda.kernels.product", "pda.kernels._product"), ("pda.kernels.subsets", "pda.kernels._subsets"),
     ("pda.kernels.earley", "pda.kernels._earley"), ("pda.kernels.tables", "pda.kernels._tables"),
     ("pda.kernels.indent", "pda.kernels._indent"), ("pda.kernels.trie", "pda.kernels._trie"),
     ("pda.kernels.derive", "pda.kernels._derive"), ("pda.kernels.scan", "pda.kernels._scan"),
     ("pda.kernels.repeat", "pda.kernels._repeat")),
    # neutral helpers, with the automata's and the parser's kernels (minimisation's refinement, the product
    # search, the subset construction; Earley nodes and their step, the parser's static tables; an indenter
    # state's probe; the trie of byte strings; byte-regex terms and lazy DFAs by derivatives; the scanner's byte
    # loop, which reads the lexer's tables and drives parser nodes through their attributes) and the mask
    # composition's (the token index's classification objects, extended masks)
    ("pda.grammar.ir", "pda.vocab", ("pda.rows", "pda._rows")),  # the grammar IR; a vocabulary's bytes; mask rows
    ("pda.regex",),  # pattern -> byte-level DFA (regex path, finite literal sets, products)
    ("pda.grammar", "pda.lexer", "pda.parser"),  # front ends -> IR; candidate-set DFAs; Earley (+ indenter)
    ("pda.scanner", ("pda.index", "pda.kernels")),  # lexer wired to parser; the token index and its walk kernel
    ("pda.trie", "pda.recognizer"),  # finite-set lookup for the index; a grammar's recogniser
    ("pda.grammar.grammar", "pda.masks"),  # `pda.Grammar`; serve-time mask composition (hot)
    ("pda.compiler",),  # `pda.compile`: compile-time work and the compiled grammar
    ("pda.matcher", "pda.reference"),  # the per-sequence API; the slow oracle
    ("pda.reasoning",),  # a matcher with a token budget for a reasoning segment
    ("pda.integrations",),  # bitmask helpers, transformers processors
    ("pda.generation",),  # `pda.generate`
    ("pda",),  # the public surface (pda/__init__.py)
    (("pda.cli", "pda.demo", "pda.testing"),),  # the command line and the commands' modules it loads
]

# (importer, imported): why the upward import is there. Each must be deferred (inside a function).
DEFERRED_UPWARD: dict[tuple[str, str], str] = {
    ("pda.grammar.json_schema.lowering", "pda.grammar.grammar"):
        "the JSON Schema front end decides some subschemas by recognising values with a `Grammar`",
    ("pda.grammar.structural", "pda.grammar.grammar"):
        "structural tags embed the IR of other front ends (regex, JSON Schema, Lark, GBNF) through `Grammar`'s "
        "constructors, the one place that applies each front end's defaults",
}

# Each name's unit (its first name) and rank.
UNIT = {name: (unit if isinstance(unit, str) else unit[0]) for units in LAYERS for unit in units
        for name in ([unit] if isinstance(unit, str) else unit)}
RANK = {UNIT[name]: rank for rank, units in enumerate(LAYERS) for unit in units
        for name in ([unit] if isinstance(unit, str) else unit)}


def _unit(module: str) -> str | None:
    """The unit a module belongs to: its longest prefix (on dots) that is a unit."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        name = ".".join(parts[:n])
        if name in UNIT:
            return UNIT[name]
    return None


def _module_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    """Whether a dotted name under pda is a module or package (a .py file, a folder, or the C extension)."""
    base = PACKAGE.parent.joinpath(*name.split("."))
    return base.with_suffix(".py").exists() or base.is_dir() or any(base.parent.glob(base.name + ".*.so"))


def _imports(path: Path) -> list[tuple[str, int, bool]]:
    """(imported pda module, line, deferred) for every import in a file; `deferred`: inside a function."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, deferred: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = deferred or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                out.extend((alias.name, child.lineno, deferred) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                assert child.level == 0, f"{path}:{child.lineno}: relative import"
                for alias in child.names:
                    name = f"{child.module}.{alias.name}"
                    out.append((name if _is_module(name) else child.module, child.lineno, deferred))
            visit(child, inner)

    visit(tree, False)
    return [(name, line, deferred) for name, line, deferred in out if name == "pda" or name.startswith("pda.")]


MODULES = sorted(PACKAGE.rglob("*.py"))


def test_every_module_is_placed_in_a_layer() -> None:
    unplaced = [_module_of(p) for p in MODULES if _unit(_module_of(p)) is None]
    assert not unplaced, f"place these modules in LAYERS (and docs/design.md): {unplaced}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_imports_point_down(path: Path) -> None:
    module = _module_of(path)
    unit = _unit(module)
    for imported, line, deferred in _imports(path):
        target = _unit(imported)
        assert target is not None, f"{module}:{line} imports {imported}, which is in no layer"
        if target == unit or RANK[target] < RANK[unit]:
            continue
        reason = DEFERRED_UPWARD.get((module, imported))
        assert reason is not None, (
            f"{module}:{line} imports {imported}: {target} (rank {RANK[target]}) is not below {unit} (rank {RANK[unit]})"
        )
        assert deferred, f"{module}:{line}: the upward import of {imported} must stay inside a function ({reason})"


def test_every_upward_exception_is_still_used() -> None:
    used = {(_module_of(p), imported) for p in MODULES for imported, _, _ in _imports(p)}
    assert set(DEFERRED_UPWARD) <= used, f"stale exceptions: {set(DEFERRED_UPWARD) - used}"
