"""A status record's history, bounded: the record keeps its latest entries, and older ones move,
HISTORY_CHUNK at a time, into chunk items of their own in the status table, so no number of
transitions can grow the record towards DynamoDB's 400 KB.

A chunk item is keyed `<backfill id>#history#<n>` and holds entries n*HISTORY_CHUNK to
(n+1)*HISTORY_CHUNK - 1 of the backfill's history (`entries`), in order; the record's
`history_archived` counts the entries moved out, always a whole number of chunks. The move is
one DynamoDB transaction: the chunk items are created (only if absent) and the same entries
removed from the front of the record's list (only if `history_archived` is still what was
read), so an entry is never in both places nor in neither, whatever crashes or runs
concurrently; appends by other writers meanwhile land at the end and are kept. Chunk items carry
neither `state` nor `list_month`, so the listing indexes never see them.

Why the table and not S3: the move must be atomic with the trim (S3 and DynamoDB share no
transaction), every writer of a status record (the trigger, the DAG, the replay function) has
the table and only the table, and readers with table access alone (the CLI, the client) read
the whole history with one BatchGetItem per 100 chunks."""

from __future__ import annotations

from typing import Any

HISTORY_CHUNK = 10  # entries per chunk item (each entry at most ~1.3 KB: detail 1,000, by 200)
HISTORY_KEPT = 10  # the record keeps its latest 10 to 20 entries (20: the write that starts a move)
MAX_CHUNKS_PER_MOVE = 10  # one transaction moves at most 100 entries (its REMOVE list stays short)
SEPARATOR = "#"  # never in a backfill id (contracts.fields.BACKFILL_ID_PATTERN)


def chunk_key(backfill_id: str, index: int) -> str:
    return f"{backfill_id}{SEPARATOR}history{SEPARATOR}{index}"


def chunk_keys(backfill_id: str, archived: int) -> list[str]:
    """The keys of the chunks holding the first `archived` entries, oldest first."""
    return [chunk_key(backfill_id, index) for index in range(archived // HISTORY_CHUNK)]


def chunks_due(entries_in_item: int) -> int:
    """How many chunks to move out of a record holding this many entries (0: none yet)."""
    return min(max(entries_in_item - HISTORY_KEPT, 0) // HISTORY_CHUNK, MAX_CHUNKS_PER_MOVE)


def move_items(
    table: str, backfill_id: str, history: list[Any], archived: int, chunks: int
) -> list[dict[str, Any]]:
    """The TransactWriteItems of moving the first `chunks` chunks of `history` (the record's
    in-item list, whose first entry is entry number `archived`) into chunk items. `history`
    entries are DynamoDB attribute values (`{"M": ...}`), as read. Only Update actions: the
    writers' roles need `dynamodb:UpdateItem`, which they have, and nothing more."""
    moved = chunks * HISTORY_CHUNK
    items: list[dict[str, Any]] = []
    for chunk in range(chunks):
        entries = history[chunk * HISTORY_CHUNK : (chunk + 1) * HISTORY_CHUNK]
        items.append(
            {
                "Update": {
                    "TableName": table,
                    "Key": {"backfill_id": {"S": chunk_key(backfill_id, archived // HISTORY_CHUNK + chunk)}},
                    "UpdateExpression": "SET #of = :of, #entries = :entries",
                    "ConditionExpression": "attribute_not_exists(backfill_id)",
                    "ExpressionAttributeNames": {"#of": "history_of", "#entries": "entries"},
                    "ExpressionAttributeValues": {":of": {"S": backfill_id}, ":entries": {"L": entries}},
                }
            }
        )
    still = "#archived = :was" if archived else "attribute_not_exists(#archived)"
    items.append(
        {
            "Update": {
                "TableName": table,
                "Key": {"backfill_id": {"S": backfill_id}},
                # Positions refer to the list as it is before the update: its first `moved`.
                "UpdateExpression": f"REMOVE {', '.join(f'#history[{i}]' for i in range(moved))} "
                "SET #archived = :archived",
                "ConditionExpression": f"attribute_exists(backfill_id) AND size(#history) >= :moved AND {still}",
                "ExpressionAttributeNames": {"#history": "history", "#archived": "history_archived"},
                "ExpressionAttributeValues": {
                    ":moved": {"N": str(moved)},
                    ":archived": {"N": str(archived + moved)},
                    **({":was": {"N": str(archived)}} if archived else {}),
                },
            }
        }
    )
    return items
