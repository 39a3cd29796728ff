"""What the safe publish's control actions (control_actions.py: publish, discard, undo) act
on: the Publisher over the backfill's publish root, the steps its last attempt held, and
the record's `publish` attribute.

The data operations run here, in the trigger, for path tables (the storage: a local disk or
S3) and Glue tables: each is idempotent and resumable from its manifest
(backfill_orchestrator.publish), so a control action that dies half-way is finished by the
redelivery, as every control action is. A Hive metastore table needs a Spark session, which
the trigger has not: its publish, discard (of a publish under way) and undo are refused,
naming the table (docs/lifecycle.md, "Safe publish: publish, discard, undo")."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from backfill_orchestrator.contracts import BackfillReport
from backfill_orchestrator.contracts.publish import ManifestState, PublishManifest, TableKind
from backfill_orchestrator.contracts.steps import StepStatus
from backfill_orchestrator.errors import UserError
from backfill_orchestrator.publish import Publisher, PublishError
from backfill_orchestrator.status import StatusRecord
from backfill_orchestrator.trigger.runs import ModeServices

MAX_LISTED = 20  # partitions and tables named in a message or a lineage facet


class PublishUnavailableError(UserError):
    """The backfill's data operations cannot run from here: no publish root is known, or a
    table is catalogued where the trigger cannot reach it (a Hive metastore)."""


def publisher_for(services: ModeServices, record: StatusRecord) -> Publisher:
    """The Publisher over the root the DAG recorded for this backfill (else PUBLISH_ROOT)."""
    root = (record.publish or {}).get("root") or services.settings.publish_root
    if services.publisher is None or not root:
        raise PublishUnavailableError(
            f"backfill {record.backfill_id}: no publish root is known (the DAG records it; "
            "PUBLISH_ROOT is the trigger's default): nothing can be published, discarded or undone here"
        )
    return services.publisher(root)


def reachable(publisher: Publisher, manifests: Iterable[PublishManifest]) -> None:
    """Refuse before any change when a table's catalog is not one this process reaches."""
    out_of_reach = sorted(
        {
            f"{m.table} ({m.table_kind} table {m.catalog_table})"
            for m in manifests
            if m.table_kind is not TableKind.PATH and m.table_kind not in publisher.catalogs
        }
    )
    if out_of_reach:
        raise PublishUnavailableError(
            f"{', '.join(out_of_reach)}: catalogued where the trigger cannot reach "
            "(a Hive metastore needs the Spark job's session; Glue needs PUBLISH_CATALOG=glue)"
        )


def last_report(services: ModeServices, record: StatusRecord) -> BackfillReport | None:
    """The backfill report of the attempt that ended last (beside the plan)."""
    if not record.plan_uri:
        return None
    body = services.storage.read_document(record.plan_uri.rsplit("/", 1)[0] + "/backfill_report.json")
    return BackfillReport.from_json(body) if body else None


def held_steps(report: BackfillReport | None) -> list[str]:
    """The steps the attempt held for publish (status awaiting_publish), in plan order."""
    if report is None:
        return []
    return [step_id for step_id, o in report.steps.items() if o.status is StepStatus.AWAITING_PUBLISH]


def held_manifests(publisher: Publisher, record: StatusRecord, steps: Sequence[str]) -> list[PublishManifest]:
    """The manifests of the held steps, as the attempt that held them left them."""
    return [publisher.load_manifest(record.backfill_id, record.run_attempt, step) for step in steps]


def unfinished(publisher: Publisher, backfill_id: str) -> list[PublishManifest]:
    """What a discard removes: every manifest of the backfill still staging, staged or publishing."""
    try:
        manifests = publisher.manifests(backfill_id)
    except PublishError:
        return []
    live = (ManifestState.STAGING, ManifestState.STAGED, ManifestState.PUBLISHING)
    return [m for m in manifests if m.state in live]


def refusal(error: PublishError) -> str:
    """A publish refusal in one line per located issue (at most MAX_LISTED)."""
    problems = error.problems
    more = f"; and {len(problems) - MAX_LISTED} more" if len(problems) > MAX_LISTED else ""
    return "; ".join(problems[:MAX_LISTED]) + more


def with_decision(
    record: StatusRecord, action: str, *, by: str, at: datetime, reason: str, **extra: Any
) -> dict[str, Any]:
    """The record's `publish` attribute with this decision added ({action: {by, at, reason}})."""
    current = dict(record.publish or {})
    decisions = dict(current.get("decisions") or {})
    decisions[action] = {"by": by, "at": at.isoformat(), "reason": reason[:500], **extra}
    return {**current, "decisions": decisions}


def decided(record: StatusRecord, action: str) -> dict[str, Any] | None:
    return ((record.publish or {}).get("decisions") or {}).get(action)


def restored_partitions(manifests: Iterable[PublishManifest]) -> dict[str, list[str]]:
    """table URI -> the partitions an undo put back."""
    out: dict[str, list[str]] = {}
    for manifest in manifests:
        out.setdefault(manifest.table_uri, []).extend(entry.partition for entry in manifest.partitions)
    return out
