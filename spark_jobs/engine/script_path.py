"""`sys.path` for the entry points spark-submit runs as files (backfill_job.py, reconcile_job.py).

Standard library only: it runs before the packages can be imported."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def make_packages_importable(script: str) -> None:
    """The script's own directory must not shadow other modules (it holds `session.py`,
    `tables.py`, ...), and the packages come from `--py-files` or, in a checkout, from the
    repository."""
    here = Path(script).resolve().parent
    if sys.path and sys.path[0] and Path(sys.path[0]).resolve() == here:
        sys.path.pop(0)
    checkout = here.parent.parent  # spark_jobs/engine/ -> the repository root
    for package, root in (
        ("spark_jobs", checkout),
        ("backfill_orchestrator", checkout / "layers" / "shared"),
    ):
        if importlib.util.find_spec(package) is None and root.is_dir():
            sys.path.insert(0, str(root))
