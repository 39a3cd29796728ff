"""Our custom facets, as the client's facet classes (attrs) so they serialise like the standard
ones. Their JSON Schemas are in docs/schemas/openlineage/."""

from __future__ import annotations

import attr
from openlineage.client.facet_v2 import OutputDatasetFacet, RunFacet

SCHEMA_BASE = (
    "https://github.com/backfill-orchestrator/backfill-orchestrator/blob/main/docs/schemas/openlineage"
)


@attr.define
class BackfillRunFacet(RunFacet):
    """What the backfill was: under run.facets["backfill"]."""

    backfillId: str  # noqa: N815 - OpenLineage facets are camelCase
    attempt: int
    configUri: str | None = attr.field(default=None)  # noqa: N815
    dates: list[str] = attr.field(factory=list)
    hours: list[int] | None = attr.field(default=None)
    feeds: list[str] | None = attr.field(default=None)
    submitter: str | None = attr.field(default=None)
    traceId: str | None = attr.field(default=None)  # noqa: N815

    @staticmethod
    def _get_schema() -> str:
        return f"{SCHEMA_BASE}/BackfillRunFacet.json#/$defs/BackfillRunFacet"


@attr.define
class BackfillPartitionsOutputDatasetFacet(OutputDatasetFacet):
    """The partitions a step rewrote (and emptied): under outputFacets["backfillPartitions"]."""

    written: list[str] = attr.field(factory=list)
    deleted: list[str] = attr.field(factory=list)
    writtenCount: int = attr.field(default=0)  # noqa: N815
    truncated: bool = attr.field(default=False)

    @staticmethod
    def _get_schema() -> str:
        return f"{SCHEMA_BASE}/BackfillPartitionsOutputDatasetFacet.json#/$defs/BackfillPartitionsOutputDatasetFacet"
