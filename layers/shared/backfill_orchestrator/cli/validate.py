"""`backfill validate FILE... [--marquez-url URL] [--catalog FILE] [--strict] [--json]`

Each file is recognised by its content: a backfill config, a job catalog, a policy,
reconciliation rules or a control document, and checked as such, every located problem at
once. A config gets the same preflight as `backfill plan` with what is reachable (Marquez
from --marquez-url or $MARQUEZ_URL, the catalog from --catalog or $BACKFILL_JOB_CATALOG); what
could not be checked is said on stderr (`not checked: ...`), never passed over.
Exit 0 when every file is valid, 1 when one is invalid or refused, 2 when one cannot be read
or a service cannot be reached."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from backfill_orchestrator.cli.common import (
    EXIT_INVALID,
    EXIT_OK,
    CliError,
    add_json_option,
    add_preflight_options,
    exit_code,
    print_json,
    read_file,
    report,
    summary_line,
)
from backfill_orchestrator.client.preflight import deployment_policy, preflight_checked
from backfill_orchestrator.client.sources import prepare_bytes
from backfill_orchestrator.config.errors import InvalidConfigError
from backfill_orchestrator.errors import BackfillError
from backfill_orchestrator.parsing import format_for, load_document

MAX_DOCUMENT_BYTES = 8 * 1024 * 1024  # the largest document validated here (a job catalog)


@dataclass(frozen=True)
class Result:
    """One file's outcome; `--json` prints its fields as they are named here."""

    file: str
    kind: str
    ok: bool
    summary: str = ""
    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    not_checked: tuple[str, ...] = ()


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "validate",
        help="check configs, catalogs, policies, reconciliation rules or control documents",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("files", nargs="+", metavar="FILE")
    add_preflight_options(parser, refuses="the config")
    add_json_option(parser, "one result per file")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    worst = EXIT_OK
    results: list[Result] = []
    for path in args.files:
        try:
            result = validate_file(path, args)
        except BackfillError as error:  # reported, and the next file is checked
            code = exit_code(error) if args.json else report(error)
            worst = max(worst, code)
            results.append(Result(path, "unknown", False, problems=tuple(_problems(error))))
            continue
        results.append(result)
        if not result.ok:
            worst = max(worst, EXIT_INVALID)
        if not args.json:
            show(result)
    if args.json:
        print_json([asdict(result) for result in results])
    return worst


def _problems(error: BackfillError) -> list[str]:
    issues = getattr(error, "issues", None)
    return [str(issue) for issue in issues] if issues else [str(error)]


def show(result: Result) -> None:
    for what in result.not_checked:
        print(f"{result.file}: not checked: {what}", file=sys.stderr)
    for warning in result.warnings:
        print(f"{result.file}: warning: {warning}", file=sys.stderr)
    if result.ok:
        print(result.summary)
    else:
        for problem in result.problems:
            print(f"{result.file}: {problem}", file=sys.stderr)


def validate_file(path: str, args: argparse.Namespace) -> Result:
    body = read_file(path, max_bytes=MAX_DOCUMENT_BYTES)
    document = load_document(
        body, error=InvalidConfigError, max_bytes=MAX_DOCUMENT_BYTES, fmt=format_for(path), source=path
    )
    kind = kind_of(document)
    if kind is None:
        raise CliError(
            f"{path}: not a document backfill knows (a config, job catalog, policy, reconciliation "
            "rules or control document): its keys are " + ", ".join(sorted(map(str, document))[:10])
        )
    return VALIDATORS[kind](path, body, args)


# -- what a document is, by its content ---------------------------------------------------------
CONFIG_KEYS = frozenset({"mode", "dates", "owner", "name"})
POLICY_KEYS = frozenset({"grants", "people", "approval", "downstream_outside_scope"})


def kind_of(document: Mapping[str, Any]) -> str | None:
    """`config`, `catalog`, `policy`, `rules` or `control`, from the keys a document has (each
    kind has keys no other kind has); None when it is none of them."""
    keys = set(document)
    if "control_version" in keys:
        return "control"
    if keys & POLICY_KEYS:
        return "policy"
    if keys & CONFIG_KEYS:
        return "config"
    if "tables" in keys:
        return "rules"
    if "jobs" in keys:
        return "catalog"
    return None


def _config(path: str, body: bytes, args: argparse.Namespace) -> Result:
    prepared = prepare_bytes(body, source=path, policy=deployment_policy())
    verdict, plan = preflight_checked(
        prepared, marquez_url=args.marquez_url, catalog=args.catalog, strict=args.strict
    )
    summary = summary_line(path, prepared.config)
    if plan is not None:
        summary += f"; plan: {len(plan.steps)} steps in {len(plan.waves)} waves"
    return Result(
        path,
        "config",
        verdict.accepted,
        summary,
        problems=tuple(str(finding) for finding in verdict.refusals),
        warnings=tuple(str(finding) for finding in verdict.warnings),
        not_checked=tuple(verdict.unchecked),
    )


def _catalog(path: str, body: bytes, args: argparse.Namespace) -> Result:
    from backfill_orchestrator.planner import JobCatalog

    catalog = JobCatalog.parse(body, source=path)
    return Result(path, "catalog", True, f"{path}: ok: job catalog, {len(catalog)} jobs")


def _policy(path: str, body: bytes, args: argparse.Namespace) -> Result:
    from backfill_orchestrator.policy import parse_policy

    policy = parse_policy(body, source=path)
    return Result(
        path, "policy", True, f"{path}: ok: policy, {len(policy.people)} people, {len(policy.grants)} grants"
    )


def _rules(path: str, body: bytes, args: argparse.Namespace) -> Result:
    from backfill_orchestrator.reconciliation.rules import parse_rules

    rules = parse_rules(body, source=path)
    return Result(path, "rules", True, f"{path}: ok: reconciliation rules, {len(rules.tables)} tables")


def _control(path: str, body: bytes, args: argparse.Namespace) -> Result:
    from backfill_orchestrator.contracts import ControlRequest

    document = load_document(
        body, error=InvalidConfigError, max_bytes=ControlRequest.max_bytes, fmt=format_for(path), source=path
    )
    request = ControlRequest.from_json(document, source=path)
    return Result(
        path,
        "control",
        True,
        f"{path}: ok: control document, {request.action} {request.backfill_id} by {request.requested_by}",
    )


VALIDATORS: dict[str, Callable[[str, bytes, argparse.Namespace], Result]] = {
    "config": _config,
    "catalog": _catalog,
    "policy": _policy,
    "rules": _rules,
    "control": _control,
}
