"""Lineage from Marquez: the client, the graph it reads, and the downstream walk.

The Marquez client (and its HTTP pool) is imported on first use: planning from an in-memory
lineage source never needs it."""

from typing import Any

from backfill_orchestrator.lineage.errors import (
    InvalidMarquezUrlError,
    LineageChangedError,
    LineageError,
    MarquezResponseError,
    MarquezTimeoutError,
    MarquezUnavailableError,
    UnaddressableJobError,
    UnknownJobError,
    UnwalkableLineageError,
)
from backfill_orchestrator.lineage.graph import (
    JobInfo,
    JobKey,
    LineageGraph,
    MalformedLineageError,
    job_node_id,
    parse_lineage_response,
)
from backfill_orchestrator.lineage.nodeid import is_addressable, marquez_reads_job_as, split_node_id
from backfill_orchestrator.lineage.runs import JobRun, KnownProducers, MalformedRunsError, RunHistory, RunPage
from backfill_orchestrator.lineage.source import (
    API_KEY_ENV,
    URL_ENV,
    InMemoryLineage,
    LineageAhead,
    LineageSource,
    LineageWithHistory,
    ProducersSeen,
    lookup_node_id,
)
from backfill_orchestrator.lineage.walk import DEFAULT_QUERY_DEPTH, fetch_downstream

__all__ = [
    "API_KEY_ENV",
    "DEFAULT_QUERY_DEPTH",
    "URL_ENV",
    "InMemoryLineage",
    "InvalidMarquezUrlError",
    "JobInfo",
    "JobKey",
    "JobRun",
    "KnownProducers",
    "LineageAhead",
    "LineageChangedError",
    "LineageError",
    "LineageGraph",
    "LineageSource",
    "LineageWithHistory",
    "MalformedLineageError",
    "MalformedRunsError",
    "MarquezClient",
    "MarquezResponseError",
    "MarquezTimeoutError",
    "MarquezUnavailableError",
    "ProducersSeen",
    "RunHistory",
    "RunPage",
    "UnaddressableJobError",
    "UnknownJobError",
    "UnwalkableLineageError",
    "fetch_downstream",
    "is_addressable",
    "job_node_id",
    "lookup_node_id",
    "marquez_reads_job_as",
    "parse_lineage_response",
    "split_node_id",
]

_CLIENT_NAMES = frozenset({"MarquezClient"})


def __getattr__(name: str) -> Any:
    if name in _CLIENT_NAMES:
        from backfill_orchestrator.lineage import client

        return getattr(client, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
