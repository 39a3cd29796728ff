"""The trigger: S3 config uploads to running backfills (see service.py for the flow,
outcomes.py for how an upload ends, handler.py and wiring.py for the Lambda around it,
modes.py for per-mode runners and runs.py for what they share with approval.py and the
control documents: control_documents.py reads and resumes them, control_actions.py acts;
reconcile.py is the sweep's reconciliation with Airflow)."""

from backfill_orchestrator.trigger.events import (
    MalformedEventError,
    Upload,
    event_records,
    upload_from_record,
)
from backfill_orchestrator.trigger.modes import MODE_RUNNERS
from backfill_orchestrator.trigger.outcomes import OUTCOME_OF, Disposition
from backfill_orchestrator.trigger.runs import ModeOutcome, ModeRequest, ModeServices
from backfill_orchestrator.trigger.service import (
    TriggerFailedError,
    TriggerService,
    UploadResult,
)
from backfill_orchestrator.trigger.storage import TriggerStorage

__all__ = [
    "MODE_RUNNERS",
    "OUTCOME_OF",
    "Disposition",
    "MalformedEventError",
    "ModeOutcome",
    "ModeRequest",
    "ModeServices",
    "TriggerFailedError",
    "TriggerService",
    "TriggerStorage",
    "Upload",
    "UploadResult",
    "event_records",
    "upload_from_record",
]
