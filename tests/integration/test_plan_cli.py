"""`backfill plan` end to end against the Marquez double: output forms and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from backfill_local.marquez_double import MarquezDouble, run_events
from backfill_orchestrator import http
from backfill_orchestrator.cli import main
from backfill_orchestrator.contracts.plan import Plan
from backfill_orchestrator.lineage import client as lineage_client

REPO = Path(__file__).resolve().parents[2]
CATALOG = REPO / "examples" / "catalog.yaml"

CONFIG = """\
version: 1
name: etl-orders-0604
owner: "@jane"
mode: batch
jobs:
  - {namespace: food_delivery, name: etl_orders}
dates: [2021-06-04]
"""


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch):
    """Same retry code, no waiting between attempts (an unreachable Marquez costs ms, not seconds)."""
    monkeypatch.setattr(lineage_client, "retrying_session", lambda: http.retrying_session(backoff_factor=0))
    monkeypatch.delenv("MARQUEZ_URL", raising=False)
    monkeypatch.delenv("BACKFILL_JOB_CATALOG", raising=False)


@pytest.fixture(scope="module")
def marquez():
    cycle = (
        run_events("loop", "a", inputs=["c.out"], outputs=["a.out"])
        + run_events("loop", "b", inputs=["a.out"], outputs=["b.out"])
        + run_events("loop", "c", inputs=["b.out"], outputs=["c.out"])
    )
    with MarquezDouble(seed="food_delivery", events=cycle) as double:
        yield double


@pytest.fixture
def config_file(tmp_path):
    path = tmp_path / "backfill.yaml"
    path.write_text(CONFIG)
    return path


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["plan", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_readable_plan(capsys, marquez, config_file):
    code, out, err = run_cli(
        capsys, str(config_file), "--marquez-url", marquez.url, "--catalog", str(CATALOG)
    )
    assert code == 0, err
    assert "6 steps in 5 waves" in out
    assert "wave 5:\n  email_discounts: DAG email_discounts" in out
    assert "dates 2021-06-04..06-10 (7); after etl_orders_7_days" in out  # etl_delivery_7_days


def test_json_prints_only_the_document_and_marquez_url_env_works(capsys, monkeypatch, marquez, config_file):
    monkeypatch.setenv("MARQUEZ_URL", marquez.url)
    code, out, err = run_cli(capsys, str(config_file), "--json")
    assert code == 0, err
    plan = Plan.from_json(out)
    assert [[step.id for step in wave.steps] for wave in plan.waves] == [
        ["etl_orders"],
        ["etl_orders_7_days"],
        ["etl_delivery_7_days"],
        ["delivery_times_7_days"],
        ["email_discounts", "orders_popular_day_of_week"],
    ]
    assert json.loads(out)["plan_version"] == 1


def test_a_cycle_is_refused_with_exit_1(capsys, marquez, tmp_path):
    path = tmp_path / "loop.yaml"
    path.write_text(
        CONFIG.replace("{namespace: food_delivery, name: etl_orders}", "{namespace: loop, name: a}")
    )
    code, out, err = run_cli(capsys, str(path), "--marquez-url", marquez.url)
    assert (code, out) == (1, "")
    assert f"{path}: jobs[0]: lineage cycle: loop/a -> loop/b -> loop/c -> loop/a" in err
    assert "backfill: plan refused (1 problems)" in err


def test_an_unknown_root_is_refused_at_its_place_with_the_job_it_probably_meant(capsys, marquez, tmp_path):
    path = tmp_path / "ghost.yaml"
    path.write_text(CONFIG.replace("etl_orders", "etl_ordrs"))
    code, _, err = run_cli(capsys, str(path), "--marquez-url", marquez.url)
    assert code == 1
    assert (
        f"{path}: jobs[0]: unknown root job: Marquez has no job food_delivery/etl_ordrs; "
        "did you mean 'food_delivery/etl_orders'?"
    ) in err


def test_every_problem_of_a_file_comes_at_once(capsys, marquez, tmp_path):
    """A job typo does not hide the feed and exclusion typos of the same file."""
    path = tmp_path / "typos.yaml"
    path.write_text(
        CONFIG.replace("etl_orders}", "etl_orders}\n  - {namespace: food_delivery, name: etl_ordrs}")
        + "feeds: [webb]\ndownstream: {exclude: [{namespace: food_delivery, name: email_discount}]}\n"
    )
    code, _, err = run_cli(capsys, str(path), "--marquez-url", marquez.url, "--catalog", str(CATALOG))
    assert code == 1
    located = [line.split(": ")[1] for line in err.splitlines() if line.startswith(f"{path}: ")]
    assert located == ["jobs[1]", "feeds[0]", "downstream.exclude[0]"], err
    assert "did you mean 'web'?" in err and "did you mean 'food_delivery/email_discounts'?" in err


def test_an_invalid_config_exits_1_with_located_errors(capsys, marquez, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(CONFIG.replace("dates: [2021-06-04]", "dates: [2021-02-30]"))
    asked_before = len(marquez.lineage_requests())
    code, out, err = run_cli(capsys, str(path), "--marquez-url", marquez.url)
    assert (code, out) == (1, "")
    assert f"{path}: dates[0]: not a real calendar date: 2021-02-30" in err
    assert len(marquez.lineage_requests()) == asked_before  # nothing asked for an invalid config


def test_an_invalid_catalog_exits_1_before_asking_marquez(capsys, config_file, tmp_path):
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text("version: 1\njobs:\n  - {namespace: ns, name: a, window_days: 0}\n")
    with MarquezDouble(seed="food_delivery") as double:
        code, _, err = run_cli(
            capsys, str(config_file), "--marquez-url", double.url, "--catalog", str(catalog)
        )
        assert double.lineage_requests() == []
    assert code == 1
    assert f"{catalog}: jobs[0].window_days: input should be greater than or equal to 1, got 0" in err


def test_an_unreachable_marquez_exits_2(capsys, config_file):
    with MarquezDouble() as gone:
        url = gone.url
    code, out, err = run_cli(capsys, str(config_file), "--marquez-url", url)
    assert (code, out) == (2, "")
    assert f"Marquez at {url} is unavailable: cannot connect ([Errno 111] Connection refused)" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "no Marquez URL: pass one (--marquez-url) or set MARQUEZ_URL"),
        (["--marquez-url", "localhost:5000"], "Marquez URL must be http(s)://"),
        (["--marquez-url", "http://127.0.0.1:9", "--catalog", "/nonexistent/catalog.yaml"], "no such file"),
    ],
)
def test_usage_errors_exit_2(capsys, config_file, argv, message):
    code, out, err = run_cli(capsys, str(config_file), *argv)
    assert (code, out) == (2, "")
    assert message in err


def test_a_missing_config_file_and_a_missing_argument_exit_2(capsys, tmp_path):
    assert run_cli(capsys, str(tmp_path / "absent.yaml"), "--marquez-url", "http://127.0.0.1:9")[0] == 2
    assert main(["plan"]) == 2


def test_the_installed_command_keeps_stdout_for_the_document(marquez, tmp_path):
    path = tmp_path / "shallow.yaml"
    path.write_text(CONFIG + "downstream: {max_depth: 2}\n")
    done = subprocess.run(
        [sys.executable, "-m", "backfill_orchestrator", "plan", str(path), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"MARQUEZ_URL": marquez.url, "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    plan = Plan.from_json(done.stdout)
    assert [step.id for step in plan.steps] == ["etl_orders", "etl_orders_7_days", "etl_delivery_7_days"]
    lines = done.stderr.splitlines()
    assert lines[:2] == [  # said, not silent
        "not checked: the job catalog's windows and feeds (no catalog: --catalog or $BACKFILL_JOB_CATALOG)",
        "not checked: input partitions and bytes to read (no warehouse)",
    ]
    assert lines[2].startswith(
        "warning: max_depth_reached: downstream.max_depth 2 cut the walk after food_delivery/etl_delivery_7_days"
    )
