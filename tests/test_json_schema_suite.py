"""JSON-Schema-Test-Suite (draft 2020-12): pass counts per keyword file, as a ratchet.

A test passes when its schema compiles (exact=True, on_unsupported="relax", warnings allowed) and the
grammar's verdict on the compact instance equals the suite's `valid` label.
A file whose count drops below tests/data/json_schema_suite_baseline.json
fails; run with PDA_UPDATE_BASELINE=1 to record an improvement.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT.parent / "shared" / "corpus" / "json_schema_test_suite" / "tests" / "draft2020-12"
BASELINE = ROOT / "tests" / "data" / "json_schema_suite_baseline.json"

import pda  # noqa: E402
from pda.errors import PdaError  # noqa: E402


def _files() -> list[Path]:
    if not SUITE.is_dir():
        return []
    return sorted(SUITE.glob("*.json")) + sorted((SUITE / "optional" / "format").glob("*.json"))


def file_score(path: Path) -> tuple[int, int]:
    """(passed, total) for one keyword file."""
    passed = total = 0
    for group in json.loads(path.read_text()):
        tests = group["tests"]
        total += len(tests)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                grammar = pda.Grammar.from_json_schema(group["schema"], exact=True, on_unsupported="relax")
                grammar.recognizer  # noqa: B018 - a terminal the lexer refuses fails here, as a compile error
                accepts = grammar.accepts
        except (PdaError, RecursionError):
            continue
        for t in tests:
            text = json.dumps(t["data"], separators=(",", ":"), ensure_ascii=False)
            passed += accepts(text) == t["valid"]
    return passed, total


def test_suite_ratchet() -> None:
    files = _files()
    if not files:
        pytest.skip(f"JSON-Schema-Test-Suite corpus not found at {SUITE}")
    scores = {str(p.relative_to(SUITE)): file_score(p) for p in files}
    current = {k: v[0] for k, v in scores.items()}
    if os.environ.get("PDA_UPDATE_BASELINE"):
        BASELINE.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n")
    baseline = json.loads(BASELINE.read_text())
    regressions = {k: (baseline[k], current.get(k, 0)) for k in baseline if current.get(k, 0) < baseline[k]}
    assert not regressions, f"pass counts fell (baseline, now): {regressions}"
    improved = {k: (baseline.get(k, 0), v) for k, v in current.items() if v > baseline.get(k, 0)}
    if improved:
        warnings.warn(f"suite improved, run with PDA_UPDATE_BASELINE=1 to record: {improved}")
