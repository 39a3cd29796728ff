"""The backfill id: `<name>-<first 8 hex of sha256 of the canonical config>`."""

from __future__ import annotations

import hashlib
import json

from backfill_orchestrator.config.model import BackfillConfig

# name (<= 24) + '-' + 8 hex: at most 33 characters, so `/dags/<dag_id>/dagRuns/<run_id>`
# stays within MWAA's 64-character Path limit for a DAG id of up to 16 characters (6 + 16 + 9 + 33).
MAX_BACKFILL_ID_LENGTH = 33


def canonical_bytes(config: BackfillConfig) -> bytes:
    return json.dumps(config.canonical(), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def backfill_id(config: BackfillConfig) -> str:
    return f"{config.name}-{hashlib.sha256(canonical_bytes(config)).hexdigest()[:8]}"
