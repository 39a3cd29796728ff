"""A control document written for the trigger to act on: one small JSON object at
`<control prefix><backfill id>/<action>-<UTC timestamp>.json` in the config bucket, in the
control-document shape (control_version, action, backfill_id, reason, requested_by,
requested_at). Writing it is the whole of the asynchronous hand-off: the trigger processes it
like any other control document."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from backfill_orchestrator import documents

CONTROL_VERSION = 1


@dataclass(frozen=True)
class ControlDocument:
    action: str
    backfill_id: str
    reason: str
    requested_by: str
    requested_at: datetime

    def as_dict(self) -> dict[str, Any]:
        return {
            "control_version": CONTROL_VERSION,
            "action": self.action,
            "backfill_id": self.backfill_id,
            "reason": self.reason,
            "requested_by": self.requested_by,
            "requested_at": self.requested_at.isoformat(),
        }

    def key(self, prefix: str) -> str:
        stamp = self.requested_at.strftime("%Y%m%dT%H%M%S.%fZ")
        return f"{prefix}{self.backfill_id}/{self.action}-{stamp}.json"


def write_control_document(document: ControlDocument, *, bucket: str, prefix: str, s3_client: Any) -> str:
    """Put the document; returns its s3:// URI. DocumentAccessError when S3 refuses."""
    uri = f"s3://{bucket}/{document.key(prefix)}"
    documents.write_text(uri, json.dumps(document.as_dict(), indent=2) + "\n", s3_client=s3_client)
    return uri
