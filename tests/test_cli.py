"""The command line: `pda check` locations and exit codes, `pda compile` output."""

from __future__ import annotations

import json

from pda.cli import main


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
