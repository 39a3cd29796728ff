"""Who did it: the identity behind an S3 upload or a Slack click, as a `Principal`.

S3 event records carry `userIdentity.principalId`:
- `AWS:AIDA...` an IAM user (its unique id);
- `AWS:AROA...:<session>` a role session (an assumed role, SSO, a Lambda, an EC2 instance);
- a bare id without `AWS:` (the account root or another account's canonical id).

Unique ids are not names. `IamNameResolver` turns AROA/AIDA ids into `role/<name>` and
`user/<name>` with IAM's list calls (IAM has no get-by-unique-id), cached per container;
without it, or when IAM refuses, the id itself stands (`AROAEXAMPLE`), which a policy can
name too. A Slack click is `slack:<user id>`; a press on the Backfills page of the Airflow UI
is `airflow:<Airflow user name>`."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger(__name__)

ROLE_ID_PREFIX = "AROA"
USER_ID_PREFIX = "AIDA"
DEFAULT_IAM_CACHE_SECONDS = 900
SLACK_PREFIX = "slack:"
AIRFLOW_PREFIX = "airflow:"


@dataclass(frozen=True)
class Principal:
    """One identity. `name` is what policies match (`role/data-eng`, `user/jane`,
    `AROAEXAMPLE` when unresolved, `slack:U0123ABCD`, `airflow:jane`); `session` the role
    session name."""

    name: str
    session: str | None = None
    principal_id: str | None = None  # as the event gave it
    slack_user: str | None = None
    slack_groups: frozenset[str] = frozenset()  # the Slack user groups it belongs to (looked up)
    airflow_user: str | None = None  # the Airflow user name behind a press on the Backfills page

    @property
    def display(self) -> str:
        """What `submitted_by` records and messages show: `role/data-eng/jane.doe@example.com`."""
        return f"{self.name}/{self.session}" if self.session else self.name

    @property
    def match_names(self) -> tuple[str, ...]:
        """Every spelling a policy glob may use for this identity."""
        names = [self.display, self.name]
        if self.session and self.name.startswith("role/"):
            names.append(f"assumed-role/{self.name[len('role/') :]}/{self.session}")
        if self.principal_id:
            names.append(self.principal_id.removeprefix("AWS:"))
        return tuple(dict.fromkeys(names))


def slack_principal(user_id: str, *, groups: frozenset[str] = frozenset()) -> Principal:
    return Principal(name=f"{SLACK_PREFIX}{user_id}", slack_user=user_id, slack_groups=groups)


def airflow_principal(user_name: str) -> Principal:
    """A user of the Airflow UI (the auth manager's user name), as the Backfills page names it."""
    return Principal(name=f"{AIRFLOW_PREFIX}{user_name}", airflow_user=user_name)


@dataclass
class SlackGroupResolver:
    """Which of the given Slack user groups a user is in, through `usergroups.users.list`
    (a slack_sdk WebClient with a bot token that has `usergroups:read`), each group's members
    cached for `max_age` seconds. A group Slack will not list counts as not containing the user
    (logged): membership is never assumed."""

    client: Any
    max_age: float = 300
    clock: Callable[[], float] = time.monotonic
    _members: dict[str, tuple[float, frozenset[str]]] = field(default_factory=dict)

    def groups_of(self, user_id: str, group_ids: frozenset[str]) -> frozenset[str]:
        return frozenset(group for group in group_ids if user_id in self._members_of(group))

    def _members_of(self, group_id: str) -> frozenset[str]:
        now = self.clock()
        cached = self._members.get(group_id)
        if cached is not None and now - cached[0] <= self.max_age:
            return cached[1]
        try:
            members = frozenset(self.client.usergroups_users_list(usergroup=group_id)["users"])
        except Exception as error:  # SlackApiError, network errors: fail closed
            logger.warning("Slack user group %s could not be listed: %s", group_id, error)
            return frozenset()
        self._members[group_id] = (now, members)
        return members


@dataclass
class IamNameResolver:
    """Unique id -> `role/<name>` / `user/<name>` through IAM list calls, cached for
    `max_age` seconds (one listing serves every lookup until then). Needs iam:ListRoles /
    iam:ListUsers; any IAM error leaves the id unresolved (logged), never fails the caller."""

    iam_client: Any
    max_age: float = DEFAULT_IAM_CACHE_SECONDS
    clock: Callable[[], float] = time.monotonic
    _names: dict[str, str] = field(default_factory=dict)
    _loaded_at: float | None = None

    def name_of(self, unique_id: str) -> str | None:
        if not unique_id.startswith((ROLE_ID_PREFIX, USER_ID_PREFIX)):
            return None
        now = self.clock()
        if (
            self._loaded_at is None
            or now - self._loaded_at > self.max_age
            or (unique_id not in self._names and now - self._loaded_at > 60)
        ):  # an unknown id may be a role created since the last listing: relist at most once a minute
            self._load(now)
        return self._names.get(unique_id)

    def _load(self, now: float) -> None:
        names: dict[str, str] = {}
        try:
            for page in self.iam_client.get_paginator("list_roles").paginate():
                names.update({role["RoleId"]: f"role/{role['RoleName']}" for role in page["Roles"]})
            for page in self.iam_client.get_paginator("list_users").paginate():
                names.update({user["UserId"]: f"user/{user['UserName']}" for user in page["Users"]})
        except Exception as error:  # botocore raises many types; unresolved ids still work
            logger.warning("IAM names unavailable, principals stay unique ids: %s", error)
            self._loaded_at = now
            return
        self._names = names
        self._loaded_at = now


def principal_from_id(principal_id: str, *, resolver: IamNameResolver | None = None) -> Principal:
    """`AWS:AROAEXAMPLE:jane.doe@example.com` -> Principal(role/<name> or AROAEXAMPLE, session jane.doe@...)."""
    raw = principal_id.strip()
    body = raw.removeprefix("AWS:")
    unique_id, _, session = body.partition(":")
    name = (resolver.name_of(unique_id) if resolver is not None else None) or unique_id
    return Principal(name=name, session=session or None, principal_id=raw)


# GetCallerIdentity's Arn: `arn:aws:iam::<account>:user/<path/>name` or
# `arn:aws:sts::<account>:assumed-role/<role>/<session>` (also `federated-user/<name>`, `root`).
_CALLER_ARN = re.compile(r"^arn:aws[\w-]*:(?:iam|sts)::\d+:(?P<kind>[\w-]+)(?:/(?P<rest>.+))?$")


def caller_principal(arn: str, user_id: str) -> Principal:
    """The principal STS names for the caller (`GetCallerIdentity`'s `Arn` and `UserId`): the
    one the trigger records for the same caller's uploads (`AWS:<UserId>` in the S3 event,
    resolved through IAM), `role/<role>/<session>` or `user/<name>`, so the CLI, the client,
    the status history and Slack name a person the same way. The ARN already carries the
    names, so no IAM call is needed here."""
    principal_id = f"AWS:{user_id}"
    match = _CALLER_ARN.match(arn)
    if match is None:  # not an ARN we know: the unique id stands, as in the trigger unresolved
        return principal_from_id(principal_id)
    kind, rest = match.group("kind"), match.group("rest") or ""
    if kind == "assumed-role":
        role, _, session = rest.partition("/")
        return Principal(name=f"role/{role}", session=session or None, principal_id=principal_id)
    if kind == "user":
        return Principal(name=f"user/{rest.rsplit('/', 1)[-1]}", principal_id=principal_id)
    return Principal(name=f"{kind}/{rest}" if rest else kind, principal_id=principal_id)


def principal_from_s3_record(record: Any, *, resolver: IamNameResolver | None = None) -> Principal | None:
    """The uploader of one S3 notification record, or of an S3 -> EventBridge "Object Created"
    event; None when it names nobody. EventBridge events carry only `detail.requester` (the
    account id, or the AWS service, that made the request), not the principal: that one is
    `requester/<account id>`, and a policy can only grant to the whole account."""
    if isinstance(record, dict) and isinstance(record.get("detail"), dict) and "userIdentity" not in record:
        requester = record["detail"].get("requester")
        if isinstance(requester, str) and requester.strip():
            return Principal(name=f"requester/{requester.strip()}", principal_id=requester.strip())
        return None
    identity = record.get("userIdentity") if isinstance(record, dict) else None
    principal_id = identity.get("principalId") if isinstance(identity, dict) else None
    if not isinstance(principal_id, str) or not principal_id.strip():
        return None
    return principal_from_id(principal_id, resolver=resolver)


def principal_from_display(text: str) -> Principal:
    """Back from a stored `submitted_by` (`Principal.display`) to a Principal."""
    if text.startswith(SLACK_PREFIX):
        return slack_principal(text[len(SLACK_PREFIX) :])
    if text.startswith(AIRFLOW_PREFIX):
        return airflow_principal(text[len(AIRFLOW_PREFIX) :])
    if text.startswith(("role/", "user/")):
        kind, _, rest = text.partition("/")
        name, _, session = rest.partition("/")
        return Principal(name=f"{kind}/{name}", session=session or None)
    name, _, session = text.partition("/")
    return Principal(name=name, session=session or None)
