"""The shared package is installable where the DAG and the Spark job run: build the project's
wheel, install it into a clean virtualenv (dependencies from PyPI, nothing from this
checkout), and import there what the DAG (with the DAGs folder on sys.path, as MWAA has it)
and the Spark job need, then read a document one side writes through the other's contract."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.configs import REPO_ROOT as REPO
from tests.support.wheel import UV, clean_env, run

pytestmark = pytest.mark.slow

# Runs inside the clean virtualenv, with only the DAGs folder added to sys.path.
PROBE = textwrap.dedent(
    """
    import importlib.util, json, sys
    from pathlib import Path

    import backfill_orchestrator
    site = Path(backfill_orchestrator.__file__).resolve()
    assert "site-packages" in site.parts, site  # the installed wheel, not the checkout

    # The DAG's support code (dags/backfill_runtime) and what it takes from the package.
    sys.path.insert(0, sys.argv[1])
    from backfill_runtime.step_ledger import Ledger
    from backfill_runtime.reporting import Reporting
    from backfill_runtime.results import follow_result
    from backfill_runtime.rounds import chunked, sub_plan
    from backfill_orchestrator.contracts import RunConf, RunReport, StepResult, StepStatus, ResultFile, BackfillReport
    from backfill_orchestrator.contracts.plan import Plan
    from backfill_orchestrator.documents import read_text, write_text

    # The wheel is the package alone; the Spark job's modules ship beside it (--py-files, the
    # repository's spark_jobs/: docs/spark.md) and need pyspark to import, which the cluster provides.
    assert importlib.util.find_spec("spark_jobs") is None and importlib.util.find_spec("backfill_local") is None
    sys.path.insert(0, sys.argv[3])
    for module in ("spark_jobs.engine.backfill_job", "spark_jobs.engine.runner", "spark_jobs.sample.transforms"):
        assert importlib.util.find_spec(module) is not None, module
    from backfill_orchestrator.contracts import InvalidDocumentError

    # The Spark job writes a run report; the DAG reads it through the same contract.
    report = RunReport(
        backfill_id="wheel-0123abcd", plan="/p.json", warehouse="/w", application_id="a",
        started_at="2021-06-14T09:00:00Z", finished_at="2021-06-14T09:01:00Z", seconds=60,
        steps=[StepResult(id="s", transform="s", wave=0, status=StepStatus.SUCCEEDED, seconds=1, rows_out=3)],
    )
    path = Path(sys.argv[2]) / "run_report.json"
    write_text(str(path), report.to_json())
    assert RunReport.from_json(read_text(str(path))) == report
    conf = RunConf.from_conf({"backfill_id": "wheel-0123abcd", "config_uri": "/c.yaml", "plan_uri": "/p.json"})
    print(json.dumps({"ok": True, "package": str(site), "conf": conf.to_conf()}))
    """
)


def test_the_wheel_installs_into_a_clean_virtualenv_and_serves_the_dag_and_the_spark_job(
    built_wheel: Path, tmp_path: Path
) -> None:
    wheel = built_wheel
    env = clean_env()

    venv = tmp_path / "venv"
    run([str(UV), "venv", "--python", sys._base_executable, str(venv)], env=env)
    python = venv / "bin" / "python"
    run([str(UV), "pip", "install", "--python", str(python), f"{wheel}[server]"], env=env)  # the DAG notifies

    work = tmp_path / "work"
    work.mkdir()
    probe = run([str(python), "-c", PROBE, str(REPO / "dags"), str(work), str(REPO)], cwd=work, env=env)
    assert '"ok": true' in probe.stdout, probe.stdout
    # And the console script the docs promise.
    assert "validate" in run([str(venv / "bin" / "backfill"), "--help"], cwd=work, env=env).stdout
