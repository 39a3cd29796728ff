"""What the runners on a service (EMR Serverless, EMR on EC2, Databricks) share: the job's
artifacts they ship, and the profile that sizes each run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Generic, TypeVar

ProfileT = TypeVar("ProfileT")


@dataclass(frozen=True, kw_only=True)
class Artifacts:
    """What a remote runner needs in S3: the job's entry point and the zipped packages it
    imports (`spark_jobs` and `backfill_orchestrator`), shipped with --py-files."""

    entry_point: str
    py_files: tuple[str, ...] = ()
    submit_parameters: str = ""  # more spark-submit flags (--archives of a packed venv, ...); not Databricks


@dataclass(kw_only=True)
class RemoteRunner(Generic[ProfileT]):
    """A runner on a service (EMR Serverless, EMR, Databricks): it ships the job's `artifacts`
    and sizes the run by its kind of `profile`."""

    name: ClassVar[str]

    artifacts: Artifacts
    profile: ProfileT
