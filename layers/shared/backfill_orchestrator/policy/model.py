"""The deployment policy document, version 1: who may submit, approve, cancel, retry, publish
and undo which backfills, which backfills need a second person's approval before they run,
and when a backfill's staged output is published without a person (safe publish).

    version: 1
    people:                               # one person, every identity they act under
      jane:
        slack_user: U0123ABCD
        aws: ["assumed-role/data-eng/jane.doe@example.com"]
        airflow: ["jane.doe"]             # Airflow UI user names (globs): the Backfills page
    grants:
      - name: data-eng
        members: [jane]                   # people
        aws: ["role/data-eng"]            # IAM role/user names (globs), as identity.py resolves them
        slack_users: [U0456EFGH]          # Slack user ids not listed under people
        slack_groups: [S0789IJKL]         # Slack user groups (needs a bot token with usergroups:read)
        permissions: [submit, approve, cancel, retry]
        jobs: ["food_delivery/*"]         # namespace/name globs: the jobs this grant covers
    downstream_outside_scope: approve     # approve (its owners approve) | refuse
    approval:
      max_partitions: 2000                # partitions the plan rewrites (planner/partitions.py) over this needs approval
      max_estimated_cost_usd: 200
      max_bytes: 5000000000000
      max_downstream_jobs: 20
      production_namespaces: ["*_prod"]   # any job in one of these needs approval
      expires_after_hours: 24
    publish:
      four_eyes: true                     # the submitter may not publish or undo their own backfill
      defaults:                           # the PublishPolicy every backfill gets; a config may narrow it
        max_rows_removed_percent: 10
        allow_emptied_partitions: false

Everything is optional but `version`; a missing `approval` means nothing needs approval."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictInt

from backfill_orchestrator.contracts.publish import PublishPolicy

# publish: publish or discard a backfill's held steps; undo: put back what a backfill published
Permission = Literal["submit", "approve", "cancel", "retry", "publish", "undo", "admin"]
ACTION_PERMISSIONS: tuple[Permission, ...] = (
    "submit",
    "approve",
    "cancel",
    "retry",
    "publish",
    "undo",
    "admin",
)
SLACK_USER_PATTERN = r"^[UW][A-Z0-9]{2,20}$"
SLACK_GROUP_PATTERN = r"^S[A-Z0-9]{2,20}$"
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
_SLACK_USER = re.compile(SLACK_USER_PATTERN)
_SLACK_GROUP = re.compile(SLACK_GROUP_PATTERN)
_NAME = re.compile(NAME_PATTERN)


def _check(pattern: re.Pattern[str], what: str):
    def check(value: str) -> str:
        if not pattern.fullmatch(value):
            raise ValueError(f"must be {what}, got {value!r}")
        return value

    return AfterValidator(check)


Name = Annotated[str, _check(_NAME, "a name of letters, digits, '.', '_' and '-' (at most 64)")]
SlackUser = Annotated[str, _check(_SLACK_USER, "a Slack user id such as U0123ABCD")]
SlackGroup = Annotated[str, _check(_SLACK_GROUP, "a Slack user group id such as S0123ABCD")]
Glob = Annotated[str, Field(min_length=1, max_length=512)]
JOB_GLOB_PATTERN = r"^[^/\s]+/\S+$"
JobGlob = Annotated[
    str,
    Field(min_length=3, max_length=512),
    _check(re.compile(JOB_GLOB_PATTERN), "a namespace/name glob such as 'food_delivery/*'"),
]


class _PolicyModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Person(_PolicyModel):
    slack_user: SlackUser | None = None
    aws: list[Glob] = Field(default_factory=list, description="IAM names (globs) this person acts under")
    airflow: list[Glob] = Field(
        default_factory=list,
        description="Airflow UI user names (globs, as the auth manager names users) this person signs in as",
    )


class Grant(_PolicyModel):
    name: Name
    members: list[Name] = Field(default_factory=list, description="people (keys of `people`)")
    aws: list[Glob] = Field(default_factory=list, description="IAM role/user names (globs)")
    slack_users: list[SlackUser] = Field(default_factory=list)
    slack_groups: list[SlackGroup] = Field(
        default_factory=list,
        description="Slack user group ids (members looked up with usergroups.users.list)",
    )
    permissions: Annotated[list[Permission], Field(min_length=1)]
    jobs: list[JobGlob] = Field(
        default_factory=lambda: ["*/*"], description="namespace/name globs of the jobs the grant covers"
    )


class Approval(_PolicyModel):
    max_partitions: Annotated[StrictInt, Field(ge=0)] | None = None
    max_estimated_cost_usd: Annotated[float, Field(ge=0)] | None = None
    max_bytes: Annotated[StrictInt, Field(ge=0)] | None = None
    max_downstream_jobs: Annotated[StrictInt, Field(ge=0)] | None = None
    production_namespaces: list[Glob] = Field(default_factory=list)
    expires_after_hours: Annotated[StrictInt, Field(ge=1, le=24 * 30)] = 24


class Publish(_PolicyModel):
    """Safe publish: the publish policy every backfill's Spark steps get (a config's `publish:`
    may only narrow it) and whether a second person must publish or undo."""

    defaults: PublishPolicy = Field(
        default_factory=PublishPolicy,
        description="When a staged step is published without a person (PublishPolicy's fields)",
    )
    four_eyes: StrictBool = Field(
        default=False, description="true: the submitter may not publish or undo their own backfill"
    )


class Policy(_PolicyModel):
    version: Literal[1]
    people: dict[Name, Person] = Field(default_factory=dict)
    grants: list[Grant] = Field(default_factory=list)
    downstream_outside_scope: Literal["approve", "refuse"] = "approve"
    approval: Approval | None = None
    publish: Publish = Field(default_factory=Publish)


MODELS_BY_PATH: dict[tuple[str, ...], type[BaseModel]] = {
    (): Policy,
    ("people",): Person,
    ("grants",): Grant,
    ("approval",): Approval,
    ("publish",): Publish,
    ("publish", "defaults"): PublishPolicy,
}
