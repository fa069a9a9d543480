"""What ships: the sdist and the wheel carry the grammars and the C source, an installed wheel
works from any directory, and the engine never imports the demo fixtures.

The distributions are built the way `python -m build` builds them (an sdist from
a copy of the source tree, then the wheel from the unpacked sdist), so a file
missing from the sdist is missing from the wheel too. Build isolation is off:
the build uses this environment's setuptools instead of downloading one. The
wheel is installed with its dependencies (numpy, lark, regex, from the package
index pip is configured with) into a fresh virtualenv, which cannot see this
repository or its editable install.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHIPPED = sorted(p.name for p in (REPO / "pda" / "grammars").glob("*.lark"))
NOT_SOURCE = shutil.ignore_patterns(
    ".venv", ".git", "build", "dist", "*.egg-info", "__pycache__", "*.so", ".pytest_cache", ".hypothesis",
    "tests", "fuzz", "bench",
)


def _run(args: list[str | Path], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run a command outside this environment: no PYTHONPATH, no active virtualenv."""
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run([str(a) for a in args], cwd=cwd, env={**clean, **(env or {})}, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"{args} failed:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(sdist, wheel), built from a copy of the source tree."""
    root = tmp_path_factory.mktemp("dist")
    source = root / "source"
    shutil.copytree(REPO, source, ignore=NOT_SOURCE)
    out = root / "out"
    build_sdist = "import sys; from setuptools import build_meta; print(build_meta.build_sdist(sys.argv[1]))"
    name = _run([sys.executable, "-c", build_sdist, out], cwd=source).stdout.strip().splitlines()[-1]
    sdist = out / name
    with tarfile.open(sdist) as archive:
        archive.extractall(root / "unpacked", filter="data")
    unpacked = next((root / "unpacked").iterdir())
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", out, unpacked],
         cwd=root)
    (wheel,) = out.glob("*.whl")
    return sdist, wheel


def test_sdist_has_the_grammars_and_the_c_source(dists: tuple[Path, Path]) -> None:
    with tarfile.open(dists[0]) as archive:
        names = {Path(n).relative_to(Path(n).parts[0]).as_posix() for n in archive.getnames() if "/" in n}
    assert {f"pda/grammars/{g}" for g in SHIPPED} <= names
    assert {"pda/_rows.c", "setup.py", "pyproject.toml", "README.md", "pda/py.typed"} <= names


def test_installed_wheel_loads_compiles_and_masks(dists: tuple[Path, Path], tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", venv], cwd=tmp_path)
    python = venv / "bin" / "python"
    _run([python, "-m", "pip", "install", "-q", dists[1]], cwd=tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = """
import json
from importlib.metadata import version
from pathlib import Path
import pda
from pda.integrations.bitmask import allocate_token_bitmask, unpack_bitmask
try:
    import pda._rows
    c_rows = True
except ImportError:
    c_rows = False
grammar = pda.Grammar.load("json")
vocab = pda.Vocabulary.from_tokens(["{", "}", '"a"', ":", "1", "x", None], eos_ids=[6])
m = pda.Matcher(pda.compile(grammar, vocab))
bitmask = allocate_token_bitmask(1, vocab.size)
m.fill_bitmask(bitmask, 0)
first = unpack_bitmask(bitmask, vocab.size)[0].nonzero()[0].tolist()
for t in (0, 2, 3, 4, 1):
    assert m.accept_token(t)
shipped = sorted(p.name for p in (Path(pda.__file__).parent / "grammars").glob("*.lark"))
print(json.dumps({"file": pda.__file__, "c_rows": c_rows, "first": first, "can_end": m.can_end(),
                  "shipped": shipped, "versions": [version("pda"), pda.__version__]}))
"""
    cache = {"PDA_CACHE_DIR": str(tmp_path / "cache")}
    done = _run([python, "-c", script], cwd=elsewhere, env=cache)
    report = json.loads(done.stdout)
    assert Path(report["file"]).is_relative_to(venv), report["file"]  # not the editable install
    assert report["first"] == [0, 2, 4]  # `{`, a string or a number; `}`, `:`, `x` and EOS cannot start
    assert report["can_end"] and report["shipped"] == SHIPPED
    assert report["versions"][0] == report["versions"][1]  # the wheel's metadata reads pda/_version.py
    if shutil.which("cc") or shutil.which("gcc"):
        assert report["c_rows"], "the C extension was not built although a C compiler is present"
    compiled = _run([venv / "bin" / "pda", "compile", "sqlite"], cwd=elsewhere, env=cache).stdout
    assert compiled.startswith(f"grammar {venv}/lib/")  # the installed pda/grammars/sqlite.lark


def test_the_engine_does_not_import_the_demo() -> None:
    """Every module under pda/ but pda.demo and the CLI, imported in a fresh process: pda.demo stays out.

    An integration whose engine is not installed here (vLLM cannot be, beside this
    environment's torch) fails with ModuleNotFoundError for that engine and is left out;
    any other import error fails the test.
    """
    script = """
import importlib, json, pkgutil, sys
from pathlib import Path
import pda

OPTIONAL_ENGINES = {"vllm", "sglang"}

def names(path, prefix):
    # pkgutil.walk_packages would import each package (pda.demo too) to find its children.
    for info in pkgutil.iter_modules(path, prefix):
        if info.name == "pda.demo" or info.name == "pda.cli":
            continue
        yield info.name
        if info.ispkg:
            yield from names([str(Path(path[0]) / info.name.rpartition(".")[2])], info.name + ".")

imported, missing = [], []
for name in names(pda.__path__, "pda."):
    try:
        imported.append(importlib.import_module(name).__name__)
    except ModuleNotFoundError as error:
        if not name.startswith("pda.integrations.") or (error.name or "").split(".")[0] not in OPTIONAL_ENGINES:
            raise
        missing.append(name)
demo = sorted(n for n in sys.modules if n == "pda.demo" or n.startswith("pda.demo."))
print(json.dumps({"imported": len(imported), "missing": missing, "demo": demo}))
"""
    done = _run([sys.executable, "-c", script], cwd=REPO)
    report = json.loads(done.stdout)
    assert report["imported"] > 40 and report["demo"] == []
    assert set(report["missing"]) <= {"pda.integrations.vllm", "pda.integrations.sglang"}
