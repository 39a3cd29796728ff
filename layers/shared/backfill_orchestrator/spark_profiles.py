"""Spark profiles: one deployment file of named profiles, each saying where the generic Spark
job runs (`runner`) and with what resources. A backfill config chooses one by name
(`spark.profile`); the DAG resolves it at start and refuses an unknown name.

    profiles:
      medium:
        runner: emr_serverless
        driver: {cores: 4, memory_gb: 16}
        executor: {cores: 4, memory_gb: 16}
        max_capacity: {cpu: 64, memory_gb: 256}
        price: {usd_per_hour: 3.5}

The file is read with the strict config loader (no anchors, tags or duplicate keys) and every
problem is located (`profiles.medium.executor.cores: ...`). The trigger's preflight reads the
names from the same file (`SPARK_PROFILES_URI`, `profile_names`), so `spark.profile` is
checked against what the DAG will resolve. Documented in docs/spark.md."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from functools import partial
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from backfill_orchestrator.contracts.base import Contract, InvalidDocumentError, parse_document
from backfill_orchestrator.errors import ConfigIssue, ServiceError, UserError
from backfill_orchestrator.parsing import load_document

PROFILE_NAME = r"^[a-z0-9][a-z0-9_-]{0,31}$"
MAX_PROFILES_BYTES = 256 * 1024
_RUNNER_TAG = re.compile(r"^(profiles\.[^.\[]+)\.(?:local|emr_serverless|emr|databricks)(?=[.\[]|$)")


class Price(Contract):
    """What the estimate multiplies by the run's expected hours."""

    usd_per_hour: float = Field(ge=0)


class Resources(Contract):
    cores: int = Field(ge=1, le=64)
    memory_gb: int = Field(ge=1, le=512)
    instances: int | None = Field(
        default=None, ge=1, le=10000, description="executors; None: dynamic allocation"
    )


class Capacity(Contract):
    cpu: int = Field(ge=1, description="vCPUs across driver and executors")
    memory_gb: int = Field(ge=1)


class _Profile(Contract):
    spark_conf: dict[str, str] = Field(default_factory=dict, description="extra --conf key=value")
    price: Price | None = None
    timeout_minutes: int = Field(default=360, ge=1, le=7 * 24 * 60)

    @property
    def resources(self) -> dict[str, Any]:
        """What the plan and the status record show about this profile."""
        return self.model_dump(mode="json", exclude={"spark_conf"}, exclude_none=True)


class LocalProfile(_Profile):
    runner: Literal["local"]


class EmrServerlessProfile(_Profile):
    runner: Literal["emr_serverless"]
    driver: Resources
    executor: Resources
    max_capacity: Capacity

    @model_validator(mode="after")
    def _fits(self) -> EmrServerlessProfile:
        if self.driver.cores + self.executor.cores > self.max_capacity.cpu:
            raise ValueError("max_capacity.cpu is smaller than one driver and one executor")
        return self

    @property
    def max_executors(self) -> int:
        """Executors that fit in max_capacity beside the driver (dynamic allocation's cap)."""
        by_cpu = (self.max_capacity.cpu - self.driver.cores) // self.executor.cores
        by_memory = (self.max_capacity.memory_gb - self.driver.memory_gb) // self.executor.memory_gb
        return max(1, min(by_cpu, by_memory))


class ManagedScaling(Contract):
    unit_type: Literal["Instances", "InstanceFleetUnits", "VCPU"] = "Instances"
    minimum: int = Field(ge=1)
    maximum: int = Field(ge=1)

    @model_validator(mode="after")
    def _ordered(self) -> ManagedScaling:
        if self.maximum < self.minimum:
            raise ValueError("maximum is smaller than minimum")
        return self


class InstanceGroup(Contract):
    role: Literal["MASTER", "CORE", "TASK"]
    instance_type: str = Field(min_length=1)
    count: int = Field(ge=1)
    market: Literal["ON_DEMAND", "SPOT"] = "ON_DEMAND"


class InstanceFleet(Contract):
    role: Literal["MASTER", "CORE", "TASK"]
    instance_types: list[str] = Field(min_length=1, max_length=30)
    on_demand_units: int = Field(default=0, ge=0)
    spot_units: int = Field(default=0, ge=0)


class EmrProfile(_Profile):
    runner: Literal["emr"]
    release_label: str = Field(default="emr-7.5.0", pattern=r"^emr-\d+\.\d+\.\d+$")
    cluster_id: str | None = Field(
        default=None, description="run on this existing cluster instead of creating one"
    )
    instance_groups: list[InstanceGroup] | None = None
    instance_fleets: list[InstanceFleet] | None = None
    managed_scaling: ManagedScaling | None = None

    @model_validator(mode="after")
    def _one_shape(self) -> EmrProfile:
        shapes = [s for s in (self.instance_groups, self.instance_fleets) if s]
        if self.cluster_id is None and len(shapes) != 1:
            raise ValueError("give instance_groups or instance_fleets (exactly one), or cluster_id")
        for shape in shapes:
            if sum(1 for item in shape if item.role == "MASTER") != 1:
                raise ValueError("exactly one MASTER instance group or fleet")
        return self


class DatabricksProfile(_Profile):
    runner: Literal["databricks"]
    spark_version: str = Field(min_length=1, description="a Databricks runtime, e.g. 15.4.x-scala2.12")
    node_type_id: str = Field(min_length=1)
    num_workers: int | None = Field(default=None, ge=0)
    min_workers: int | None = Field(default=None, ge=0)
    max_workers: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _size(self) -> DatabricksProfile:
        autoscale = self.min_workers is not None or self.max_workers is not None
        if autoscale == (self.num_workers is not None):
            raise ValueError("give num_workers, or min_workers and max_workers (autoscaling)")
        if autoscale and (
            self.min_workers is None or self.max_workers is None or self.max_workers < self.min_workers
        ):
            raise ValueError("autoscaling needs min_workers <= max_workers")
        return self


SparkProfile = Annotated[
    LocalProfile | EmrServerlessProfile | EmrProfile | DatabricksProfile, Field(discriminator="runner")
]


class SparkProfiles(Contract, document_name="Spark profiles", max_bytes=MAX_PROFILES_BYTES):
    profiles: dict[Annotated[str, Field(pattern=PROFILE_NAME)], SparkProfile] = Field(min_length=1)

    def get(self, name: str) -> LocalProfile | EmrServerlessProfile | EmrProfile | DatabricksProfile:
        try:
            return self.profiles[name]
        except KeyError:
            raise UnknownProfileError(name, known=sorted(self.profiles)) from None


class UnknownProfileError(UserError, KeyError):
    """The plan names a profile the deployment does not define."""

    def __init__(self, name: str, *, known: list[str]):
        self.name = name
        self.known = known
        self.issue = ConfigIssue(
            "spark.profile", f"unknown Spark profile {name!r}; this deployment has {', '.join(known)}"
        )
        super().__init__(str(self.issue))

    def __str__(self) -> str:
        return str(self.issue)


def parse_profiles(text: str | bytes, *, source: str | None = None) -> SparkProfiles:
    """YAML or JSON text to SparkProfiles; InvalidDocumentError with every located issue."""
    fail = partial(InvalidDocumentError, document=SparkProfiles.document_name)
    document = load_document(text, error=fail, max_bytes=MAX_PROFILES_BYTES, source=source)
    try:
        return parse_document(SparkProfiles, document, source=source)
    except InvalidDocumentError as error:
        # pydantic puts the union's tag in the location (profiles.x.emr.driver): drop it.
        issues = [
            ConfigIssue(_RUNNER_TAG.sub(r"\1", issue.location), issue.message) for issue in error.issues
        ]
        raise fail(issues, source=source) from None


class ProfilesUnavailableError(ServiceError, RuntimeError):
    """The deployment's profiles file cannot be read or is not valid: a deployment problem
    (retried, pages when it persists), never the config author's."""


PROFILE_NAMES_MAX_AGE = 300.0  # seconds a warm Lambda keeps the names before reading again
_names_cache: dict[str, tuple[float, frozenset[str]]] = {}


def profile_names(
    uri: str,
    *,
    s3_client: Any = None,
    max_age: float = PROFILE_NAMES_MAX_AGE,
    clock: Callable[[], float] = time.monotonic,
) -> frozenset[str]:
    """The profile names of the profiles file at `uri` (what `spark.profile` may name), read
    at most every `max_age` seconds."""
    from backfill_orchestrator.documents import DocumentError, read_text

    cached = _names_cache.get(uri)
    if cached is not None and clock() - cached[0] < max_age:
        return cached[1]
    try:
        profiles = parse_profiles(
            read_text(uri, max_bytes=MAX_PROFILES_BYTES, s3_client=s3_client), source=uri
        )
    except (DocumentError, InvalidDocumentError) as error:
        raise ProfilesUnavailableError(f"SPARK_PROFILES_URI: {str(error).splitlines()[0]}") from None
    names = frozenset(profiles.profiles)
    _names_cache[uri] = (clock(), names)
    return names
