"""`backfill validate` says what it checked and what it did not, checks the jobs and the plan
when given Marquez (the same preflight as `backfill plan`), and recognises each kind of
document by its content."""

from __future__ import annotations

import json

import pytest

from backfill_local.marquez_double import MarquezDouble
from backfill_orchestrator.cli import main
from tests.support.configs import EXAMPLES

MINIMAL = str(EXAMPLES / "minimal-batch.yaml")


@pytest.fixture(autouse=True)
def no_deployment(monkeypatch):
    for name in ("MARQUEZ_URL", "BACKFILL_JOB_CATALOG", "WAREHOUSE_URI", "ALLOWED_NAMESPACES"):
        monkeypatch.delenv(name, raising=False)


def test_ok_says_what_was_not_checked(capsys):
    assert main(["validate", MINIMAL]) == 0
    out, err = capsys.readouterr()
    assert out == f"{MINIMAL}: ok: etl-orders-0604 (batch), 1 day, all hours, all feeds\n"
    assert err.splitlines() == [
        f"{MINIMAL}: not checked: the job catalog's windows and feeds (no catalog: --catalog or $BACKFILL_JOB_CATALOG)",
        f"{MINIMAL}: not checked: the jobs in Marquez, the plan, its limits and estimate "
        "(no lineage: --marquez-url or $MARQUEZ_URL)",
    ]


def test_with_marquez_and_the_catalog_it_checks_the_plan_and_refuses_a_job_marquez_does_not_know(
    capsys, tmp_path
):
    ghost = tmp_path / "ghost.yaml"
    ghost.write_text((EXAMPLES / "minimal-batch.yaml").read_text().replace("etl_orders", "etl_ghost"))
    with MarquezDouble(seed="food_delivery") as marquez:
        checks = ["--marquez-url", marquez.url, "--catalog", str(EXAMPLES / "catalog.yaml")]
        assert main(["validate", MINIMAL, *checks]) == 0
        out, err = capsys.readouterr()
        assert out == (
            f"{MINIMAL}: ok: etl-orders-0604 (batch), 1 day, all hours, all feeds; plan: 6 steps in 5 waves\n"
        )
        assert "not checked: the jobs in Marquez" not in err
        assert main(["validate", str(ghost), *checks]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert f"{ghost}: jobs[0]: unknown root job: Marquez has no job food_delivery/etl_ghost" in err


@pytest.mark.parametrize(
    ("path", "summary"),
    [
        (EXAMPLES / "policies" / "data-platform.yaml", "ok: policy, 3 people, 3 grants"),
        (EXAMPLES / "catalog.yaml", "ok: job catalog, 6 jobs"),
        (EXAMPLES / "reconciliation.yaml", "ok: reconciliation rules, 4 tables"),
    ],
    ids=["policy", "catalog", "rules"],
)
def test_each_document_is_recognised_by_its_content(capsys, path, summary):
    assert main(["validate", str(path)]) == 0
    assert capsys.readouterr().out == f"{path}: {summary}\n"


def test_a_control_document_and_an_invalid_policy_are_checked_as_such(capsys, tmp_path):
    control = tmp_path / "cancel-1.json"
    control.write_text(
        json.dumps(
            {
                "control_version": 1,
                "action": "cancel",
                "backfill_id": "orders-0604-c67a7315",
                "reason": "wrong dates",
                "requested_by": "@jane",
                "requested_at": "2026-11-23T09:30:00Z",
            }
        )
    )
    assert main(["validate", str(control)]) == 0
    assert "ok: control document, cancel orders-0604-c67a7315 by @jane" in capsys.readouterr().out
    policy = tmp_path / "policy.yaml"
    policy.write_text("version: 1\ngrants:\n  - {name: g, members: [nobody], permissions: [deploy]}\n")
    assert main(["validate", str(policy)]) == 1
    err = capsys.readouterr().err
    assert f"{policy}: grants[0].permissions[0]" in err
    unknown = tmp_path / "other.yaml"
    unknown.write_text("hello: world\n")
    assert main(["validate", str(unknown), "--json"]) == 2
    (result,) = json.loads(capsys.readouterr().out)
    assert result["ok"] is False and "not a document backfill knows" in result["problems"][0]


def test_json_gives_one_result_per_file(capsys):
    assert main(["validate", MINIMAL, str(EXAMPLES / "catalog.yaml"), "--json"]) == 0
    results = json.loads(capsys.readouterr().out)
    assert [(r["kind"], r["ok"]) for r in results] == [("config", True), ("catalog", True)]
    assert any("the jobs in Marquez" in what for what in results[0]["not_checked"])
