"""The light client where notebooks run: the built wheel, installed with its base dependencies
only into a clean Python 3.10 virtualenv (Databricks runtimes up to 13.x), holds the package
alone and brings nothing Lambda-, Airflow- or Spark-specific and no `requests`; its CLI starts;
it plans against Marquez (the double) as it is, and an unreachable Marquez is a clear message,
not a traceback; and it
submits a config, follows it to its end, lists it, refuses controls that cannot work and
writes a control document against moto (installed into the venv for the test only, after the
dependency check)."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import textwrap
import zipfile
from pathlib import Path

import pytest

from backfill_local.marquez_double import MarquezDouble
from tests.support.aws import table_definition
from tests.support.wheel import UV, clean_env, run

pytestmark = pytest.mark.slow

NOT_INSTALLED = textwrap.dedent(
    """
    import importlib.util, sys
    assert sys.version_info[:2] == (3, 10), sys.version
    missing = [m for m in ("aws_lambda_powertools", "airflow", "pyspark", "requests", "slack_sdk",
                           "backfill_local", "spark_jobs")
               if importlib.util.find_spec(m) is not None]
    assert not missing, f"installed with the base wheel: {missing}"
    import backfill_orchestrator.client
    assert "site-packages" in backfill_orchestrator.client.__file__
    print("light")
    """
)

# Before moto (which brings `requests`) is installed: the base install plans against Marquez
# (argv[1], the double with the food delivery sample), downstream included.
PLANS_AGAINST_MARQUEZ = textwrap.dedent(
    """
    import sys
    from backfill_orchestrator.client import plan_backfill
    config = {
        "version": 1, "name": "orders", "owner": "@jane", "mode": "batch",
        "jobs": [{"namespace": "food_delivery", "name": "etl_orders"}], "dates": ["2021-06-04"],
    }
    view = plan_backfill(config, marquez_url=sys.argv[1])
    steps = [step.id for wave in view.plan.waves for step in wave.steps]
    assert steps[0] == "etl_orders" and "etl_orders_7_days" in steps, steps
    print("planned", len(steps))
    """
)

SUBMIT = textwrap.dedent(
    """
    import datetime, json, os, sys
    import boto3
    from moto import mock_aws
    from backfill_orchestrator.client import (
        ConfigFileNotFoundError, ControlStatus, approve_backfill, backfill_status, cancel_backfill,
        list_backfills, submit_backfill,
    )
    from backfill_orchestrator.config import InvalidConfigError, backfill_id, parse_config
    from backfill_orchestrator.contracts import BackfillState, ControlRequest
    from backfill_orchestrator.status import StatusStore

    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")
    config = {
        "version": 1, "name": "orders-outage-june", "owner": "jane.doe@example.com", "mode": "batch",
        "jobs": [{"namespace": "food_delivery", "name": "etl_orders"}],
        "dates": [datetime.date(2021, 6, 4), {"start": "2021-06-10", "end": "2021-06-12"}],
    }
    with mock_aws():
        session = boto3.Session(region_name="us-east-1")
        s3 = session.client("s3")
        s3.create_bucket(Bucket="configs")
        dynamodb = session.client("dynamodb")
        dynamodb.create_table(**json.loads(sys.argv[1]))
        store = StatusStore(table_name="status", dynamodb_client=dynamodb)
        expected = backfill_id(parse_config(config))
        store.create(expected)  # as the trigger would, and the run ends
        for state in (BackfillState.PLANNED, BackfillState.TRIGGERED, BackfillState.SUCCEEDED):
            store.transition(expected, state, detail=str(state))
        result = submit_backfill(config, bucket="configs", session=session, wait=True, table="status", interval=0, timeout=10)
        assert result.backfill_id == expected and str(result.final_status.state) == "SUCCEEDED", result
        assert backfill_status(expected, table="status", session=session).history[-1]["state"] == "SUCCEEDED"
        assert [r.backfill_id for r in list_backfills(table="status", state="succeeded", session=session)] == [expected]
        body = json.loads(s3.get_object(Bucket="configs", Key=result.key)["Body"].read())
        assert body["name"] == "orders-outage-june" and body["dates"][0] == "2021-06-04", body
        refused = approve_backfill(expected, bucket="configs", table="status", requested_by="@ana", session=session)
        assert refused.status is ControlStatus.REFUSED and refused.key is None, refused  # SUCCEEDED: nothing written
        receipt = cancel_backfill(result.backfill_id, reason="wrong", bucket="configs", requested_by="@jane", session=session, wait=False)
        request = ControlRequest.from_json(s3.get_object(Bucket="configs", Key=receipt.key)["Body"].read())
        assert request.action == "cancel" and request.requested_at.tzinfo is not None
        try:
            parse_config("version: 1\\nname: a\\nowner: '@a'\\nmode: batch\\n"
                         "jobs: [{namespace: a, name: b}]\\ndates: [2021-06-04]\\nhours: [010]\\n")
        except InvalidConfigError as error:  # YAML 1.2 (ruamel.yaml) on 3.10 too
            assert error.issues[0].location == "hours[0]", error.issues
        else:
            raise AssertionError("010 was read as a number")
        try:
            submit_backfill("/Volumes/main/ops/configs/orderz.yaml", bucket="configs", session=session)
        except ConfigFileNotFoundError as error:
            assert str(error) == "no such file: /Volumes/main/ops/configs/orderz.yaml", error
        else:
            raise AssertionError("a missing path was accepted")
    assert str(BackfillState.RUNNING) == "RUNNING" and f"{BackfillState.RUNNING}" == "RUNNING"
    print(json.dumps({"submitted": result.s3_uri, "control": receipt.s3_uri}))
    """
)


def python_310() -> str | None:
    """A Python 3.10: $PYTHON310, pyenv's, or python3.10 on PATH."""
    candidates = [os.environ.get("PYTHON310", "")]
    pyenv = shutil.which("pyenv")
    if pyenv:
        found = subprocess.run([pyenv, "prefix", "3.10"], capture_output=True, text=True)
        candidates += [line + "/bin/python" for line in found.stdout.split()]
    candidates += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.10*/bin/python")))
    candidates.append(shutil.which("python3.10") or "")
    return next((c for c in candidates if c and Path(c).is_file()), None)


def test_the_client_wheel_installs_light_on_python_310_and_submits_to_moto(
    built_wheel: Path, tmp_path: Path
) -> None:
    interpreter = python_310()
    if interpreter is None:
        pytest.skip("no Python 3.10 here (set PYTHON310=/path/to/python3.10)")
    wheel = built_wheel
    env = clean_env()
    venv = tmp_path / "venv310"
    run([str(UV), "venv", "--python", interpreter, str(venv)], env=env)
    python = str(venv / "bin" / "python")
    run([str(UV), "pip", "install", "--python", python, str(wheel)], env=env)  # base only: no extras

    assert "light" in run([python, "-c", NOT_INSTALLED], cwd=tmp_path, env=env).stdout
    backfill = str(venv / "bin" / "backfill")
    assert "cancel" in run([backfill, "--help"], cwd=tmp_path, env=env).stdout
    example = Path(__file__).resolve().parents[2] / "examples" / "minimal-batch.yaml"
    assert ": ok: etl-orders-0604" in run([backfill, "validate", str(example)], cwd=tmp_path, env=env).stdout
    assert run([backfill, "--version"], cwd=tmp_path, env=env).stdout.startswith("backfill ")
    with zipfile.ZipFile(wheel) as built:  # the package alone: no backfill_local, no spark_jobs
        assert {name.split("/", 1)[0] for name in built.namelist()} == {
            "backfill_orchestrator",
            wheel.name.split("-py3")[0] + ".dist-info",
        }
    marquez = subprocess.run(
        [backfill, "submit", str(example), "--bucket", "configs"],
        cwd=tmp_path,
        env={**env, "MARQUEZ_URL": "http://127.0.0.1:9"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert marquez.returncode == 2 and "Traceback" not in marquez.stderr, marquez.stderr
    assert "Marquez at http://127.0.0.1:9 is unavailable: cannot connect (" in marquez.stderr, marquez.stderr

    with MarquezDouble(seed="food_delivery") as double:
        planned = run([python, "-c", PLANS_AGAINST_MARQUEZ, double.url], cwd=tmp_path, env=env).stdout
    assert "planned" in planned, planned
    run([str(UV), "pip", "install", "--python", python, "moto[s3,dynamodb]>=5,<6"], env=env)  # test-only
    table = json.dumps(table_definition("StatusTable", table_name="status"))
    submitted = run([python, "-c", SUBMIT, table], cwd=tmp_path, env=env)
    assert '"submitted": "s3://configs/incoming/orders-outage-june-' in submitted.stdout, submitted.stdout
