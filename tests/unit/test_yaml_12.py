"""Every document is read as YAML 1.2 (ruamel.yaml, parsing.py), and the plain scalars YAML 1.1
and 1.2 read differently are located errors with the quoted form as the hint, in every kind of
document: configs, job catalogs, policies, reconciliation rules and control documents."""

from __future__ import annotations

import pytest

from backfill_orchestrator.cli import main
from backfill_orchestrator.config import InvalidConfigError, parse_config
from backfill_orchestrator.contracts import ControlRequest
from backfill_orchestrator.errors import LocatedIssuesError
from backfill_orchestrator.parsing import load_document
from backfill_orchestrator.planner import JobCatalog
from backfill_orchestrator.policy import parse_policy
from backfill_orchestrator.reconciliation.rules import parse_rules

CONFIG = """\
version: 1
name: orders-0604
owner: "@jane"
mode: batch
jobs: [{namespace: food_delivery, name: etl_orders}]
dates: [2021-06-04]
"""


def issues(text: str) -> list[tuple[str, str]]:
    with pytest.raises(InvalidConfigError) as caught:
        parse_config(text, fmt="yaml", source="c.yaml")
    return [(issue.location, issue.message) for issue in caught.value.issues]


def test_leading_zero_integers_are_refused_where_they_stand_not_read_as_octal():
    assert issues(CONFIG + "hours: [010, 012]\n") == [
        (
            "hours[0]",
            "ambiguous YAML value 010 (line 7, column 9): a leading zero is octal in YAML 1.1: "
            "write 10 for the number, or '010' for text",
        ),
        (
            "hours[1]",
            "ambiguous YAML value 012 (line 7, column 14): a leading zero is octal in YAML 1.1: "
            "write 12 for the number, or '012' for text",
        ),
    ]


@pytest.mark.parametrize("word", ["yes", "no", "on", "off", "y", "n", "Yes", "NO", "On", "oFF"])
def test_yaml_11_booleans_in_any_case_are_refused_with_both_spellings(word):
    meaning = "true" if word.lower() in ("yes", "on", "y") else "false"
    ((location, message),) = issues(CONFIG + f"dry_run: {word}\n")
    assert location == "dry_run"
    assert message.endswith(f"write {meaning}, or '{word}' for text")


@pytest.mark.parametrize(
    ("scalar", "hint"),
    [("1:30", "write '1:30'"), ("1_000", "write 1000 for the number"), ("0o10", "write 8 for the number")],
)
def test_sexagesimal_underscored_and_prefixed_numbers_are_refused(scalar, hint):
    ((location, message),) = issues(CONFIG + f"description: {scalar}\n")
    assert location == "description" and hint in message


def test_an_ambiguous_key_is_refused_at_its_own_place():
    ((location, message),) = issues(CONFIG + "on: 1\n")
    assert location == "on" and message.endswith("YAML 1.1 reads it as true, YAML 1.2 as text: write 'on'")


def test_quoted_forms_and_yaml_12_values_are_read_as_written():
    document = load_document(
        "a: '010'\nb: \"yes\"\nc: 10\nd: true\ne: 2021-06-04\nf: 0x1F\ng: 1.5\nh: ~\n",
        error=InvalidConfigError,
        max_bytes=10_000,
    )
    assert document == {
        "a": "010",
        "b": "yes",
        "c": 10,
        "d": True,
        "e": "2021-06-04",
        "f": 31,
        "g": 1.5,
        "h": None,
    }


@pytest.mark.parametrize(
    ("parse", "text", "location"),
    [
        (
            lambda t: JobCatalog.parse(t, source="c.yaml"),
            "version: 1\njobs:\n  - {namespace: a, name: b, window_days: 07}\n",
            "jobs[0].window_days",
        ),
        (
            lambda t: parse_policy(t, source="p.yaml"),
            "version: 1\ndownstream_outside_scope: no\n",
            "downstream_outside_scope",
        ),
        (lambda t: parse_rules(t, source="r.yaml"), "version: 1\ntables: []\nstrict: off\n", "strict"),
    ],
    ids=["catalog", "policy", "rules"],
)
def test_every_kind_of_document_refuses_them(parse, text, location):
    with pytest.raises(LocatedIssuesError) as caught:
        parse(text)
    assert [issue.location for issue in caught.value.issues] == [location]
    assert "ambiguous YAML value" in caught.value.issues[0].message


def test_a_control_document_refuses_them_too(tmp_path, capsys):
    path = tmp_path / "approve.yaml"
    path.write_text(
        "control_version: 1\naction: approve\nbackfill_id: orders-0604-c67a7315\nreason: on\n"
        "requested_by: '@ana'\nrequested_at: '2026-11-23T09:30:00Z'\n"
    )
    assert main(["validate", str(path)]) == 1
    assert f"{path}: reason: ambiguous YAML value on (line 4, column 9)" in capsys.readouterr().err
    with pytest.raises(LocatedIssuesError):
        ControlRequest.from_json(load_document(path.read_bytes(), error=InvalidConfigError, max_bytes=65536))
