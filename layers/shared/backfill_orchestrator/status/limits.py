"""What a status record may hold: DynamoDB refuses items over 400 KB, and a config can carry
thousands of errors or a plan thousands of steps. The record keeps counts and the first few;
the full lists live in the result file and the plan document in S3.

`bounded(attributes)` is applied by StatusStore to every write, so no writer (trigger, DAG,
replay) can grow an item past the limit by accident."""

from __future__ import annotations

from typing import Any

MAX_RECORD_ERRORS = 20  # `errors` keeps the first 20; `errors_total` says how many there were
MAX_ERROR_TEXT = 500  # each error's location/message/other text field
MAX_TEXT = 2000  # reason and other free text
MAX_SUMMARY_STEPS = 50  # step ids kept in `plan_summary.waves`
MAX_SUMMARY_WARNINGS = 20
MAX_WARNING_TEXT = 300
_TEXT_ATTRIBUTES = (
    "reason",
    "source_uri",
    "config_uri",
    "plan_uri",
    "dag_run_url",
    "name",
    "owner",
    "submitted_by",
)
MAX_LISTED = 50  # approvers, root_jobs, approval_reasons: the first 50 (the plan has them all)
_LIST_ATTRIBUTES = ("approvers", "root_jobs", "approval_reasons")


def bounded(attributes: dict[str, Any]) -> dict[str, Any]:
    """`attributes` with every list and text cut to the limits above (counts added)."""
    out = dict(attributes)
    errors = out.get("errors")
    if isinstance(errors, list):
        out["errors"] = [_bounded_error(error) for error in errors[:MAX_RECORD_ERRORS]]
        out["errors_total"] = len(errors)
    for name in _TEXT_ATTRIBUTES:
        if isinstance(out.get(name), str):
            out[name] = out[name][:MAX_TEXT]
    for name in _LIST_ATTRIBUTES:
        if isinstance(out.get(name), list | tuple):
            out[name] = [str(item)[:MAX_ERROR_TEXT] for item in out[name][:MAX_LISTED]]
    summary = out.get("plan_summary")
    if isinstance(summary, dict):
        out["plan_summary"] = bounded_plan_summary(summary)
    return out


def bounded_plan_summary(summary: dict[str, Any]) -> dict[str, Any]:
    """{"waves": [[step ids]], "steps": n, "warnings": [...]} with at most MAX_SUMMARY_STEPS ids
    and MAX_SUMMARY_WARNINGS warnings; `waves_total`/`warnings_total` and `truncated` say so."""
    waves = summary.get("waves") or []
    warnings = summary.get("warnings") or []
    kept: list[list[Any]] = []
    room = MAX_SUMMARY_STEPS
    for wave in waves:
        if room <= 0:
            break
        ids = list(wave)[:room]
        kept.append(ids)
        room -= len(ids)
    out = {
        **summary,
        "waves": kept,
        "warnings": [str(w)[:MAX_WARNING_TEXT] for w in warnings[:MAX_SUMMARY_WARNINGS]],
    }
    kept_ids = sum(len(wave) for wave in kept)
    if kept_ids < sum(len(wave) for wave in waves) or len(warnings) > MAX_SUMMARY_WARNINGS:
        out.update(truncated=True, waves_total=len(waves), warnings_total=len(warnings))
    return out


def _bounded_error(error: Any) -> Any:
    if isinstance(error, dict):
        return {
            key: value[:MAX_ERROR_TEXT] if isinstance(value, str) else value for key, value in error.items()
        }
    return str(error)[:MAX_ERROR_TEXT]
