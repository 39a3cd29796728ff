"""The result file beside the dropped config (`results/<path>.result.json`) follows the
backfill to its end: the trigger wrote it (TRIGGERED); the DAG rewrites it RUNNING, then
SUCCEEDED or FAILED with the report's figures, so someone with only S3 access sees the outcome.

Like Slack, it informs and never fails the run: a file that is missing (the trigger has not
written it yet, or someone removed it) or unreadable is logged and left alone."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from backfill_orchestrator.contracts import InvalidDocumentError, ResultFile
from backfill_orchestrator.documents import DocumentError, read_text, write_text

log = logging.getLogger(__name__)


def follow_result(
    result_uri: str | None,
    *,
    s3_client: Any = None,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    **changes: Any,
) -> ResultFile | None:
    """Rewrite the result file at `result_uri` with `changes` (fields of ResultFile); returns
    what was written, or None when nothing was."""
    if not result_uri:
        return None
    try:
        current = ResultFile.from_json(read_text(result_uri, s3_client=s3_client), source=result_uri)
        updated = ResultFile.model_validate({**current.model_dump(), **changes, "written_at": clock()})
        write_text(result_uri, updated.to_json(), s3_client=s3_client)
    except (DocumentError, InvalidDocumentError) as error:
        log.warning("result file not updated: %s", error)
        return None
    return updated
