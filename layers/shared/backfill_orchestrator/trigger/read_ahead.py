"""Reads a valid config will wait for, started side by side as soon as it is valid
(`TriggerWiring.read_ahead`): on a new container the deployment's secrets, the job catalog and
Airflow's token, which a warm one keeps; and for a batch config the planner's first lineage
query, sent beside the claim. Each use waits for its read instead of sending another, so the
calls are the same as without it and the waits are fewer (docs/trigger.md, "Round trips and
cold start")."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, wait
from dataclasses import dataclass, replace

from backfill_orchestrator.lineage import LineageAhead
from backfill_orchestrator.trigger.runs import ModeServices


@dataclass(frozen=True)
class ReadAhead:
    reads: Sequence[Future[object]]
    lineage: LineageAhead | None = None  # a batch config's plan asks it first

    def services(self, services: ModeServices) -> ModeServices:
        """`services` with the lineage source that answers the first query from its read."""
        if self.lineage is None:
            return services
        lineage = self.lineage
        return replace(services, lineage=lambda: lineage)

    def settle(self) -> None:
        """Wait for every read (a duplicate's speculative lineage query included), so none
        outlives the upload; their errors surface, if at all, where the reads are used."""
        wait(self.reads)
