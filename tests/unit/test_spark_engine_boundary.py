"""The Spark engine stands apart from the sample pipeline: importing it imports no pipeline,
and the transforms a run uses are the Registry named by `--registry`. No JVM is started."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from backfill_orchestrator.errors import UserError
from spark_jobs.engine import backfill_job, cli_args
from spark_jobs.engine.registry import RegistryNotFoundError, load_registry

REPO_ROOT = Path(__file__).resolve().parents[2]
PLAN = """{"plan_version": 1, "backfill_id": "hand-made-00000000", "name": "hand-made", "owner": "@data-platform",
"created_at": "2026-01-01T00:00:00Z", "roots": [{"namespace": "food_delivery", "name": "etl_orders"}],
"dates": ["2021-05-05"], "waves": [{"index": 0, "steps": [{"id": "etl_orders",
"job": {"namespace": "food_delivery", "name": "etl_orders"}, "dag_id": "etl_orders", "kind": "spark",
"transform": "etl_orders", "dates": ["2021-05-05"], "hours": null, "feeds": null, "reason": "root", "upstream": []}]}]}"""


def test_importing_every_engine_module_imports_no_sample_module():
    script = textwrap.dedent("""
        import importlib, pkgutil, sys
        import spark_jobs.engine as engine
        modules = [m.name for m in pkgutil.walk_packages(engine.__path__, "spark_jobs.engine.")]
        for name in modules:
            importlib.import_module(name)
        print(len(modules), sorted(m for m in sys.modules if m.startswith("spark_jobs.sample")))
    """)
    path = os.pathsep.join([str(REPO_ROOT / "layers" / "shared"), str(REPO_ROOT)])
    completed = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    count, imported = completed.stdout.split(" ", 1)
    assert (
        int(count) >= 9
    )  # backfill_job, runner, registry, table_io, ...: the walk found them (the run report is a contract)
    assert imported.strip() == "[]"


def test_the_default_registry_is_the_samples():
    from spark_jobs.sample.transforms import FOOD_DELIVERY

    assert load_registry(cli_args.DEFAULT_REGISTRY) is FOOD_DELIVERY


@pytest.mark.parametrize("given_by", ["argument", "environment"])
def test_the_job_validates_the_plan_against_the_registry_it_is_given(tmp_path, monkeypatch, capsys, given_by):
    (tmp_path / "other_pipeline.py").write_text(
        textwrap.dedent("""
        from spark_jobs.engine.registry import Input, Registry
        from spark_jobs.sample.tables import ORDERS, RAW_ORDERS

        OTHER = Registry()

        @OTHER.register(name="etl_other", inputs={"raw": Input(RAW_ORDERS)}, output=ORDERS)
        def etl_other(*, raw):
            return raw
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    plan = tmp_path / "plan.json"
    plan.write_text(PLAN)

    arguments = ["--plan", str(plan), "--warehouse", str(tmp_path)]
    if given_by == "argument":
        monkeypatch.setenv(cli_args.REGISTRY_VARIABLE, "no_such_pipeline_module:IGNORED")  # the argument wins
        arguments += ["--registry", "other_pipeline:OTHER"]
    else:
        monkeypatch.setenv(cli_args.REGISTRY_VARIABLE, "other_pipeline:OTHER")

    code = backfill_job.main(arguments)

    assert code == 2
    assert (
        "step etl_orders: unknown transform 'etl_orders' (registered: etl_other)" in capsys.readouterr().err
    )
    assert not (tmp_path / "run_report.json").exists()


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        ("spark_jobs.sample.transforms", "expected module:NAME"),
        ("no_such_pipeline_module:REGISTRY", "cannot import no_such_pipeline_module"),
        ("spark_jobs.sample.transforms:NOPE", "module spark_jobs.sample.transforms has no NOPE"),
        ("spark_jobs.sample.transforms:WINDOW_DAYS", "names an object of type int, not a Registry"),
    ],
    ids=["no-colon", "no-module", "no-attribute", "not-a-registry"],
)
def test_a_registry_that_cannot_be_loaded_exits_2_before_anything_runs(
    tmp_path, monkeypatch, capsys, reference, expected
):
    monkeypatch.delenv(cli_args.REGISTRY_VARIABLE, raising=False)
    plan = tmp_path / "plan.json"
    plan.write_text(PLAN)
    code = backfill_job.main(["--plan", str(plan), "--warehouse", str(tmp_path), "--registry", reference])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"backfill_job: --registry {reference}") or err.startswith(
        f"backfill_job: --registry '{reference}'"
    )
    assert expected in err
    assert not (tmp_path / "run_report.json").exists()
    with pytest.raises(RegistryNotFoundError) as raised:
        load_registry(reference)
    assert isinstance(raised.value, UserError)


@pytest.mark.parametrize("job", ["backfill_job", "reconcile_job"])
def test_each_job_file_runs_from_a_checkout_where_no_package_is_installed(tmp_path: Path, job: str) -> None:
    """As spark-submit runs it from a checkout: no `.pth` puts the repository on the path (`-S`),
    only the third-party libraries are there; the file finds the packages itself."""
    import sysconfig

    completed = subprocess.run(
        [sys.executable, "-S", str(REPO_ROOT / "spark_jobs" / "engine" / f"{job}.py"), "--help"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": sysconfig.get_paths()["purelib"]},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert completed.stdout.startswith(f"usage: {job} ")
