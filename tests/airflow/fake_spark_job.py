"""A stand-in for `spark_jobs.engine.backfill_job` with the same command line, exit codes and run
report (the contract's `RunReport`), minus Spark: for DAG tests where starting a JVM per round would only add time.

    python fake_spark_job.py --plan PLAN --warehouse DIR --report REPORT

`<warehouse>/fail.json` ({backfill_id: [step ids]}) makes those steps of that backfill fail
(their dependants in the plan are blocked, like the real job). Every submission appends one line to
`<warehouse>/submissions.jsonl`: {plan, steps, started_at, finished_at}, so tests can check
what ran together and in which order."""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from backfill_orchestrator.contracts import RunReport, StepResult, StepStatus
from backfill_orchestrator.contracts.plan import Plan
from backfill_orchestrator.documents import read_text, write_text


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--plan", required=True)
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--report", required=True)
    args = parser.parse_args()
    try:
        plan = Plan.from_json(read_text(args.plan))
    except Exception as error:  # the real job's exit 2: unreadable or invalid plan
        print(f"fake_spark_job: {error}", file=sys.stderr)
        return 2
    fail_file = Path(args.warehouse) / "fail.json"
    failing = (
        set(json.loads(fail_file.read_text()).get(plan.backfill_id, [])) if fail_file.exists() else set()
    )
    started = datetime.now(UTC).isoformat()
    results, bad = [], set()
    for wave in plan.waves:
        for step in wave.steps:
            if step.kind != "spark":
                continue
            blockers = [p for p in step.upstream if p in bad]
            if blockers:
                status, error = StepStatus.BLOCKED, None
            elif step.id in failing:
                status, error = StepStatus.FAILED, f"{step.id}: injected failure"
            else:
                status, error = StepStatus.SUCCEEDED, None
            ok = status is StepStatus.SUCCEEDED
            if not ok:
                bad.add(step.id)
            results.append(
                StepResult(
                    id=step.id,
                    transform=step.transform or "",
                    wave=wave.index,
                    status=status,
                    seconds=0.1,
                    rows_in=10,
                    rows_out=10 if ok else 0,
                    partitions_written=[f"day={d}" for d in step.dates] if ok else [],
                    error=error,
                    blocked_by=blockers,
                )
            )
    time.sleep(0.5)
    finished = datetime.now(UTC).isoformat()
    if not args.warehouse.startswith("s3://"):  # the remote runners' tests use an s3:// warehouse
        warehouse = Path(args.warehouse)
        warehouse.mkdir(parents=True, exist_ok=True)
        with (warehouse / "submissions.jsonl").open("a") as log:
            log.write(
                json.dumps(
                    {
                        "plan": args.plan,
                        "steps": [r.id for r in results],
                        "started_at": started,
                        "finished_at": finished,
                    }
                )
                + "\n"
            )
    report = RunReport(
        backfill_id=plan.backfill_id,
        plan=args.plan,
        warehouse=args.warehouse,
        application_id="fake-spark-job",
        started_at=started,
        finished_at=finished,
        seconds=0.5,
        steps=results,
        external_steps=[step.id for step in plan.steps if step.kind != "spark"],
    )
    write_text(args.report, report.to_json())
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
