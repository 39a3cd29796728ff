"""Replay Lambda: replay tasks from the replay-tasks queue (SQS event source with
ReportBatchItemFailures), or one task invoked directly (a replay DAG).

The logic lives in the shared layer (backfill_orchestrator.replay); this file only wires
powertools' BatchProcessor to it for the template's `Handler: app.handler`."""

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response

from backfill_orchestrator.replay.handler import direct_invocation, is_sqs_event, lambda_entry, record_handler

processor = BatchProcessor(event_type=EventType.SQS)


@lambda_entry
def handler(event, context):
    if is_sqs_event(event):
        return process_partial_response(event=event, record_handler=record_handler, processor=processor, context=context)
    return direct_invocation(event, context)
