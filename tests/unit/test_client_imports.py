"""The client (and the CLI) import nothing Lambda-, Airflow- or Spark-specific, and not
`requests` (only planning against a Marquez server needs it): checked in a fresh interpreter,
where this test process's own imports cannot hide anything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FORBIDDEN = ("aws_lambda_powertools", "airflow", "pyspark", "requests", "slack_sdk")
PROBE = """
import json, sys
import {module}
print(json.dumps(sorted({{name.split(".")[0] for name in sys.modules}})))
"""


@pytest.mark.parametrize(
    "module",
    ["backfill_orchestrator.client", "backfill_orchestrator.cli", "backfill_orchestrator.planner"],
)
def test_importing_the_client_loads_nothing_server_side(module: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "layers" / "shared"), str(REPO)])}
    completed = subprocess.run(
        [sys.executable, "-c", PROBE.format(module=module)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    loaded = set(json.loads(completed.stdout))
    assert "backfill_orchestrator" in loaded  # the probe did import something
    assert loaded.isdisjoint(FORBIDDEN), sorted(loaded & set(FORBIDDEN))


def test_the_marquez_client_is_still_there_on_first_use() -> None:
    from backfill_orchestrator import lineage

    assert lineage.MarquezClient.__name__ == "MarquezClient" and lineage.URL_ENV == "MARQUEZ_URL"
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        lineage.Nope  # noqa: B018
