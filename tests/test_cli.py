"""The command line: `pda check` locations and exit codes, `pda compile` output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pda.cli import main
from pda.grammar.grammar import Grammar


def test_check_reports_line_column_caret_and_expected(tmp_path, capsys) -> None:
    good = tmp_path / "good.json"
    good.write_text('{"a": [1, 2]}\n')
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "a": [1, 2,]\n}\n')
    assert main(["check", "json", str(good)]) == 0
    assert main(["check", "json", str(good), str(bad)]) == 1
    out = capsys.readouterr().out
    assert f"{bad}:2:14: unexpected byte b']' at offset 15" in out
    assert '      "a": [1, 2,]\n                 ^' in out
    expected = out.split("expected")[-1].split("\n")[0]
    assert "NUMBER ('0')" in expected and "RSQB" not in expected and "COMMA" not in expected


def test_check_prefix_mode(tmp_path) -> None:
    part = tmp_path / "part.json"
    part.write_text('{"a": [1, tr')
    assert main(["check", "json", str(part)]) == 1
    assert main(["check", "--prefix", "json", str(part)]) == 0


def test_compile_json_output(capsys) -> None:
    assert main(["compile", "json", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    names = {t["name"]: t for t in doc["terminals"]}
    assert names["NUMBER"]["dfa_states"] > 3 and names["WS"]["ignored"]
    assert doc["start"] == "start" and doc["rules"]


def test_unknown_grammar_is_a_clear_error(capsys) -> None:
    assert main(["check", "no-such-grammar", "x"]) == 2
    assert "no grammar file 'no-such-grammar'" in capsys.readouterr().err


# -- exit statuses and messages ------------------------------------------------------


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """`pda ARGV` in this process: (exit status, stdout, stderr); argparse's exits are statuses too."""
    try:
        status = main(argv)
    except SystemExit as exit:
        status = exit.code if isinstance(exit.code, int) else 2
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    """Inputs for the commands: good and bad documents, a binary file, grammars and a JSON Schema."""
    paths = {
        "good": ("good.json", '{"a": 1}\n'),
        "spaced": ("spaced.json", '{"a": 1 }'),
        "binary": ("binary.lark", b"\x89PNG\r\n\x1a\n\x00\xff"),
        "schema": ("schema.json", json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}})),
        "not_json": ("not_json.json", "{type: object"),
        "bad_lark": ("bad.lark", 'start: "a" (\n'),
        "two_rules": ("two.lark", 'start: "a"\nother: "b"\n'),
        "keyword": ("keyword.lark", 'start: "select" NAME\nNAME: /[a-z]+/\n'),
        "selecta": ("selecta.txt", "selecta"),
        "b": ("b.txt", "b"),
    }
    out = {}
    for key, (name, content) in paths.items():
        path = tmp_path / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        out[key] = str(path)
    out["dir"] = str(tmp_path)
    out["missing"] = str(tmp_path / "missing.json")
    return out


BAD_INPUTS = {
    "missing document": ["check", "json", "{missing}"],
    "document is a folder": ["check", "json", "{dir}"],
    "binary grammar file": ["check", "{binary}", "{good}"],
    "unknown grammar": ["check", "no-such-grammar", "{good}"],
    "grammar syntax error": ["compile", "{bad_lark}"],
    "invalid JSON Schema file": ["compile", "{not_json}"],
    "missing JSON Schema file": ["compile", "{missing}"],
    "no files": ["check", "json"],
    "unknown lexer mode": ["compile", "json", "--lexer", "weird"],
    "unknown start rule": ["compile", "{two_rules}", "--start", "nope"],
    "--start for a JSON Schema": ["compile", "{schema}", "--start", "x"],
    "--whitespace for a Lark grammar": ["sample", "json", "--whitespace", "flexible"],
    "negative count": ["sample", "json", "-n", "-5"],
    "zero count": ["sample", "json", "-n", "0"],
    "count not a number": ["sample", "json", "-n", "many"],
    "zero depth": ["sample", "json", "--max-depth", "0"],
    "two recognisers": ["equiv", "json", "python"],
    "zero samples": ["equiv", "grammar:json", "json", "--samples", "0"],
    "negative time limit": ["equiv", "grammar:json", "json", "--time-limit", "-1"],
    "no --model": ["generate", "json", "hi"],
    "model folder missing": ["generate", "json", "hi", "--model", "{missing}"],
    "top-p out of range": ["generate", "json", "hi", "--model", "tiny", "--top-p", "2"],
    "zero max-new-tokens": ["generate", "json", "hi", "--model", "tiny", "--max-new-tokens", "0"],
    "demo with a zero count": ["demo", "--samples", "0"],
    "bench is not a command": ["bench", "--help"],
    "unknown command": ["nope"],
}


@pytest.mark.parametrize("argv", BAD_INPUTS.values(), ids=BAD_INPUTS.keys())
def test_a_bad_input_is_exit_2_and_one_line(argv: list[str], files: dict[str, str], capsys) -> None:
    command = argv[0] if argv[0] not in ("bench", "nope") else None
    status, out, err = run_cli([a.format(**files) for a in argv], capsys)
    assert status == 2
    assert out == ""
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"pda {command}: error: " if command else "pda: error: "), err
    assert "Traceback" not in err


def test_the_messages_name_the_problem(files: dict[str, str], capsys) -> None:
    def error(*argv: str) -> str:
        return run_cli([a.format(**files) for a in argv], capsys)[2]

    assert error("check", "json", "{missing}") == f"pda check: error: {files['missing']}: No such file or directory\n"
    assert "not UTF-8 text" in error("check", "{binary}", "{good}")
    assert "must be a positive integer, got -5" in error("sample", "json", "-n", "-5")
    assert "--whitespace applies to JSON Schema (.json) grammars" in error("sample", "json", "--whitespace", "flexible")
    assert "not a transformers model folder" in error("generate", "json", "hi", "--model", "{missing}")
    assert "make bench" in run_cli(["--help"], capsys)[1]


def test_no_command_prints_the_usage_and_exits_2(capsys) -> None:
    status, out, err = run_cli([], capsys)
    assert status == 2 and out == "" and "usage: pda COMMAND" in err
    status, out, err = run_cli(["--help"], capsys)
    assert status == 0 and "usage: pda COMMAND" in out and "generate" in out


def test_a_binary_document_is_rejected_not_an_error(files: dict[str, str], capsys) -> None:
    status, out, err = run_cli(["check", "json", files["binary"]], capsys)
    assert status == 1 and "unexpected byte b'\\x89' at offset 0" in out and err == ""


def test_json_schema_options(files: dict[str, str], capsys) -> None:
    """The options of `Grammar.from_json_schema`, by the same names; the defaults are its defaults."""
    assert run_cli(["check", files["schema"], files["spaced"]], capsys)[0] == 0  # flexible by default
    assert run_cli(["check", files["schema"], files["spaced"], "--whitespace", "compact"], capsys)[0] == 1
    assert run_cli(["check", files["schema"], files["spaced"], "--max-whitespace", "1"], capsys)[0] == 0
    files_dir = Path(files["schema"]).parent
    (files_dir / "extra.json").write_text('{"a": 1, "b": 2.0}')
    (files_dir / "wide.json").write_text('{"a":  1}')
    assert run_cli(["check", files["schema"], str(files_dir / "wide.json"), "--max-whitespace", "1"], capsys)[0] == 1
    assert run_cli(["check", files["schema"], str(files_dir / "extra.json")], capsys)[0] == 1  # undeclared "b"
    assert run_cli(["check", files["schema"], str(files_dir / "extra.json"), "--exact"], capsys)[0] == 0
    status, out, _ = run_cli(["sample", files["schema"], "-n", "5", "--json", "--whitespace", "flexible",
                              "--on-unsupported", "relax", "--property-order", "schema"], capsys)
    assert status == 0
    grammar = Grammar.from_json_schema(json.loads(Path(files["schema"]).read_text()))
    lines = out.split("\n")[:-1]  # not splitlines(): a sentence may hold U+2028 and the like
    assert len(lines) == 5 and all(grammar.accepts(json.loads(line)) for line in lines)


def test_strict_is_a_deprecated_option(files: dict[str, str], capsys) -> None:
    """`--strict`/`--no-strict` still work, with a warning that names `--on-unsupported`."""
    files_dir = Path(files["schema"]).parent
    (files_dir / "not.json").write_text(json.dumps({"type": "integer", "not": {"multipleOf": 7}}))
    (files_dir / "fourteen.txt").write_text("14")
    schema, doc = str(files_dir / "not.json"), str(files_dir / "fourteen.txt")
    status, _, err = run_cli(["check", schema, doc, "--no-strict"], capsys)
    assert status == 0 and "--no-strict is deprecated: use --on-unsupported relax" in err
    status, _, err = run_cli(["check", schema, doc, "--strict"], capsys)
    assert status == 2 and "--strict is deprecated: use --on-unsupported raise" in err and "not supported" in err
    assert run_cli(["check", schema, doc, "--on-unsupported", "relax"], capsys)[0] == 0
    status, _, err = run_cli(["check", schema, doc, "--strict", "--on-unsupported", "raise"], capsys)
    assert status == 2 and "pass --on-unsupported only" in err


def test_lark_options(files: dict[str, str], capsys) -> None:
    assert run_cli(["check", files["two_rules"], files["b"]], capsys)[0] == 1
    assert run_cli(["check", files["two_rules"], files["b"], "--start", "other"], capsys)[0] == 0
    # Contextual lexing reads `select` then `a`; the basic mode one identifier `selecta`.
    assert run_cli(["check", files["keyword"], files["selecta"]], capsys)[0] == 0
    assert run_cli(["check", files["keyword"], files["selecta"], "--lexer", "basic"], capsys)[0] == 1


def test_equiv_takes_the_grammar_options(files: dict[str, str], capsys) -> None:
    status, out, _ = run_cli(["equiv", files["schema"], "json", "--samples", "30", "--whitespace", "flexible"],
                             capsys)
    assert status == 0 and "no difference found" in out


@pytest.mark.parametrize("argv", [["sample", "json", "-n", "1000000"], ["compile", "python", "--json"]])
def test_a_closed_pipe_ends_quietly(argv: list[str], tmp_path: Path) -> None:
    """`pda ... | head`: the reader goes away; no traceback, no "Exception ignored" at exit."""
    process = subprocess.Popen([sys.executable, "-c", "import sys; from pda.cli import main; sys.exit(main())",
                                *argv], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.read(10)
    process.stdout.close()
    err = process.stderr.read().decode()
    assert process.wait(timeout=120) == 141
    assert err == ""
