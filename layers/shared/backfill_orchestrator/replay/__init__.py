"""The microservice path: re-send archived SQS messages (mode `replay`). See docs/replay.md.

- `task`: the replay task document and splitting a config into tasks (feed x day x hour)
- `layout`, `archive`: where a feed-hour lives in S3 and reading its JSON lines (plain/gzip)
- `sender`, `ratelimit`: SendMessageBatch in batches within SQS limits, at a token-bucket rate
- `ledger`: per-task lease, checkpoint and outcome in DynamoDB (idempotency)
- `progress`: counters and the final state on the status record, Slack and PagerDuty
- `runner`: one task, end to end; `worker`, `handler`, `wiring`: the Lambda around it
- `dispatch`: the trigger's side (resolve the target, queue the tasks)

Submodules are imported where used so the trigger does not load the Lambda-only parts."""

from backfill_orchestrator.replay.task import InvalidReplayTaskError, ReplayTask, parse_task, split_tasks

__all__ = ["InvalidReplayTaskError", "ReplayTask", "parse_task", "split_tasks"]
