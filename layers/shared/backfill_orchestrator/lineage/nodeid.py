"""How Marquez reads a node id back, ported from marquez-api `NodeId.parts` (0.51).

Marquez joins `job:<namespace>:<name>` with no escaping, and splits an id it is given so:
1. split on ':' or '#' (Java's `String.split`, which drops trailing empty strings): fewer
   parts than expected and Marquez fails (500); exactly as many and those are the parts;
2. more parts: cut at the first colons *not followed by `//` or a digit*, so `scheme://host`
   and `host:port` stay whole; too few such colons and Marquez fails (500).
A namespace with a plain colon (`arn:aws:glue:us-east-1:123456789012`) is therefore cut at
its first colon: Marquez looks up another job, and the real one cannot be reached by node id.
The Marquez double reads ids with this, and the client checks a job with it before asking."""

from __future__ import annotations

import re

from backfill_orchestrator.errors import UserError
from backfill_orchestrator.lineage.graph import JobKey, job_node_id

_SIMPLE_DELIMS = re.compile(r"[:#]")  # ID_DELIM + "|" + VERSION_DELIM
_ID_DELIM = re.compile(r":(?!//|\d+)")  # a colon that is not in `scheme://` or `host:port`


class NodeIdParseError(UserError, ValueError):
    """Marquez fails on this id itself (UnsupportedOperationException, IllegalStateException)."""


def split_node_id(node_id: str, *, parts: int = 3) -> tuple[str, ...]:
    """`node_id` cut into `parts` pieces (kind, namespace, name) exactly as Marquez cuts it."""
    simple = _SIMPLE_DELIMS.split(node_id)
    while simple and simple[-1] == "":  # Java's split(regex) drops trailing empty strings
        simple.pop()
    if len(simple) < parts:
        raise NodeIdParseError(f"Expected NodeId with {parts} parts. Got: {node_id}")
    if len(simple) == parts:
        return tuple(simple)
    pieces: list[str] = []
    start = 0
    delims = _ID_DELIM.finditer(node_id)
    for _ in range(parts - 1):
        found = next(delims, None)
        if found is None:
            raise NodeIdParseError(f"no delimiter Marquez accepts after {node_id[:start]!r} in {node_id}")
        pieces.append(node_id[start : found.start()])
        start = found.end()
    pieces.append(node_id[start:])
    return tuple(pieces)


def marquez_reads_job_as(namespace: str, name: str) -> JobKey | None:
    """The (namespace, name) Marquez looks up for the job's node id; None when it fails on it."""
    try:
        _, read_namespace, read_name = split_node_id(job_node_id(namespace, name))
    except NodeIdParseError:
        return None
    return (read_namespace, read_name)


def is_addressable(namespace: str, name: str) -> bool:
    """Whether Marquez finds this job when asked for its lineage by node id."""
    return marquez_reads_job_as(namespace, name) == (namespace, name)
