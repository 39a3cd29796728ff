"""`backfill validate` and `backfill schema`: output and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys

from backfill_orchestrator.cli import main
from tests.support.configs import EXAMPLES, REPO_ROOT


def test_validate_valid_files_prints_summaries(capsys):
    code = main(["validate", str(EXAMPLES / "orders-outage-june.yaml"), str(EXAMPLES / "replay-orders.yaml")])
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert out[0].endswith("ok: orders-outage-june (batch), 4 days, 4 hours, 2 feeds")
    assert out[1].endswith("ok: replay-orders-june (replay), 4 days, 3 hours, 2 feeds")


def test_validate_invalid_file_prints_located_errors(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "version: 1\nname: ok-name\nowner: '@me'\nmode: batch\njobs: [{namespace: a, name: b}]\n"
        "dates: [2021-06-04, {start: 2021-06-12, end: 2021-06-10}]\n"
    )
    code = main(["validate", str(bad)])
    err = capsys.readouterr().err
    assert code == 1
    assert f"{bad}: dates[1].end: must not be before start (2021-06-12)" in err
    assert "Traceback" not in err


def test_validate_mixed_files_worst_exit_code(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    assert main(["validate", str(EXAMPLES / "minimal-batch.yaml"), str(bad)]) == 1
    assert main(["validate", str(bad), str(tmp_path / "missing.yaml")]) == 2
    err = capsys.readouterr().err
    assert "missing.yaml: no such file" in err and "<root>: expected a mapping" in err


def test_usage_errors_exit_2(tmp_path, capsys):
    assert main([]) == 2
    assert main(["validate"]) == 2
    assert main(["frobnicate"]) == 2
    assert main(["validate", str(tmp_path)]) == 2
    capsys.readouterr()


def test_schema_prints_json_schema(capsys):
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["title"] == "Backfill config, version 1"
    assert "dates" in schema["required"]


def test_module_entry_point_runs():
    result = subprocess.run(
        [sys.executable, "-m", "backfill_orchestrator", "validate", str(EXAMPLES / "minimal-batch.yaml")],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "etl-orders-0604 (batch), 1 day" in result.stdout


def test_schema_prints_a_contract_as_committed(capsys):
    assert main(["schema", "--contract", "run-report"]) == 0
    printed = json.loads(capsys.readouterr().out)
    committed = json.loads((REPO_ROOT / "docs" / "schemas" / "run-report.schema.json").read_text())
    assert printed == committed
    assert printed["properties"]["report_version"]["const"] == 2
    assert main(["schema", "--contract", "nope"]) == 2
    capsys.readouterr()
