"""Local stand-ins and helpers for the demo and the tests (see the modules)."""

from __future__ import annotations

import sys
from pathlib import Path


def cache_dir() -> Path:
    """Where this Python environment keeps what local runs build once (a migrated Airflow
    database, the local Spark file system's jar and conf): inside the virtualenv, gone with it."""
    return Path(sys.prefix) / "var" / "backfill-local"
