"""What a preflight says: refusals and warnings, each located, what it could not check, and
the estimate. The same verdict is computed by `backfill plan`, `backfill submit`, the Python
client and the trigger function (`run.run_preflight`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from backfill_orchestrator.errors import ConfigIssue, LocatedIssuesError, PolicyRefusal

Severity = Literal["refusal", "warning"]
Basis = Literal["measured", "assumed"]

DEFAULT_SECONDS_PER_PARTITION = 30.0  # assumed when Marquez has no run history


@dataclass(frozen=True)
class Finding:
    code: str  # unknown_feed, no_declared_feeds, missing_inputs, ...
    location: str  # where in the config (`feeds[1]`) or the plan (`steps.etl_orders`)
    message: str
    severity: Severity = "warning"

    def as_issue(self) -> ConfigIssue:
        return ConfigIssue(self.location, self.message)

    def __str__(self) -> str:
        return str(self.as_issue())


@dataclass(frozen=True)
class Figure:
    """One number of the estimate and whether it was measured (listed, from history) or assumed."""

    value: float
    basis: Basis
    unit: str

    def as_dict(self) -> dict[str, Any]:
        return {"value": round(self.value, 4), "basis": self.basis, "unit": self.unit}


@dataclass(frozen=True)
class StepEstimate:
    step_id: str
    partitions: Figure
    bytes_to_read: Figure | None  # spark steps with declared inputs only
    seconds: Figure
    # spark steps with a declared output only: the live partitions the step replaces, about what
    # it stages, and what the publish keeps as backups for the retention
    bytes_to_stage: Figure | None = None

    def as_dict(self) -> dict[str, Any]:
        out = {
            "step": self.step_id,
            "partitions": self.partitions.as_dict(),
            "seconds": self.seconds.as_dict(),
        }
        if self.bytes_to_read is not None:
            out["bytes_to_read"] = self.bytes_to_read.as_dict()
        if self.bytes_to_stage is not None:
            out["bytes_to_stage"] = self.bytes_to_stage.as_dict()
        return out


@dataclass(frozen=True)
class Estimate:
    steps: list[StepEstimate]
    dag_reruns: Figure
    rounds: Figure
    cost: Figure

    @property
    def partitions(self) -> float:
        return sum(step.partitions.value for step in self.steps)

    @property
    def bytes_to_read(self) -> float | None:
        """None when no input was listed (no warehouse, or no declared inputs)."""
        listed = [step.bytes_to_read.value for step in self.steps if step.bytes_to_read is not None]
        return sum(listed) if listed else None

    @property
    def bytes_to_stage(self) -> float | None:
        """None when no output was listed."""
        listed = [step.bytes_to_stage.value for step in self.steps if step.bytes_to_stage is not None]
        return sum(listed) if listed else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "partitions": self.partitions,
            "bytes_to_read": self.bytes_to_read,
            "bytes_to_stage": self.bytes_to_stage,
            "dag_reruns": self.dag_reruns.as_dict(),
            "rounds": self.rounds.as_dict(),
            "cost": self.cost.as_dict(),
            "steps": [step.as_dict() for step in self.steps],
        }


@dataclass(frozen=True)
class Verdict:
    findings: list[Finding] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)  # what could not be checked, and why
    estimate: Estimate | None = None

    @property
    def refusals(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "refusal"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    @property
    def accepted(self) -> bool:
        return not self.refusals

    def summary(self) -> dict[str, Any]:
        """Bounded: what the status record, result file and Slack keep."""
        return {
            "accepted": self.accepted,
            "refusals": [str(f) for f in self.refusals[:20]],
            "warnings": [str(f) for f in self.warnings[:20]],
            "unchecked": self.unchecked[:10],
            "estimate": self.estimate.as_dict() | {"steps": self.estimate.as_dict()["steps"][:20]}
            if self.estimate
            else None,
        }


class PreflightRefusedError(LocatedIssuesError, PolicyRefusal):
    """The config is valid but what it asks for cannot (or should not) run; carries the verdict
    and its refusals as located issues."""

    document = "config"

    def __init__(self, verdict: Verdict):
        self.verdict = verdict
        super().__init__([finding.as_issue() for finding in verdict.refusals])

    def render(self) -> str:
        return "preflight refused: " + "; ".join(str(f) for f in self.verdict.refusals)
