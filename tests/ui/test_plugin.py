"""The plugin's shape and cost, its settings, and who an Airflow user is to the policy."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime

from backfill_orchestrator.identity import airflow_principal, principal_from_display
from backfill_orchestrator.policy import BackfillFacts, check_action, parse_policy, person_of
from backfill_orchestrator.ui.settings import PageSettings
from backfill_orchestrator.ui.states import ACTIONS, CELL_STATES, actions_allowed_in

from .conftest import PAGE_POLICY


def _imported_after(statement: str, modules: tuple[str, ...]) -> list[str]:
    code = f"import sys\n{statement}\nprint(','.join(m for m in {modules!r} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    return [name for name in out.stdout.strip().split(",") if name]


def test_loading_the_plugin_builds_nothing_until_the_first_request() -> None:
    # Every Airflow process loads plugins (task runners too): the app, AWS and FastAPI wait.
    assert (
        _imported_after(
            "from backfill_orchestrator.ui.plugin import BackfillsPlugin",
            ("backfill_orchestrator.ui.app", "backfill_orchestrator.ui.sources", "boto3", "fastapi"),
        )
        == []
    )


def test_the_client_and_the_lambdas_never_import_the_page() -> None:
    assert (
        _imported_after(
            "import backfill_orchestrator.client, backfill_orchestrator.cli, backfill_orchestrator.trigger.handler, "
            "backfill_orchestrator.interactivity.handler",
            ("backfill_orchestrator.ui", "airflow", "fastapi"),
        )
        == []
    )


def test_the_plugin_offers_the_app_a_nav_entry_and_a_tab_on_dag_runs() -> None:
    from backfill_orchestrator.ui.plugin import BackfillsPlugin

    (app,) = BackfillsPlugin.fastapi_apps
    assert app["url_prefix"] == "/backfills"
    views = {view["destination"]: view for view in BackfillsPlugin.external_views}
    assert views["nav"]["href"] == "backfills/" and views["nav"]["name"] == "Backfills"
    assert views["dag_run"]["href"] == "backfills/runs/{DAG_ID}/{RUN_ID}"


def test_settings_come_from_the_backfill_section() -> None:
    options = {
        "status_table": " status ",
        "config_bucket": "configs",
        "results_prefix": "out",
        "policy_uri": "s3://configs/policy.yaml",
        "page_size": "500",
        "policy_cache_seconds": "soon",
    }
    settings = PageSettings.from_options(options.get)
    assert settings.status_table == "status" and settings.results_prefix == "out/"
    assert (
        settings.page_size == 100 and settings.policy_cache_seconds == 60.0
    )  # bounded; a bad value: default
    assert settings.actions_enabled and not PageSettings.from_options({}.get).actions_enabled


def test_one_table_each_for_cell_states_and_actions() -> None:
    assert len({style.code for style in CELL_STATES.values()}) == len(CELL_STATES)
    assert actions_allowed_in("AWAITING_APPROVAL") == ["approve", "reject", "cancel"]
    assert actions_allowed_in("RUNNING") == ["cancel"]
    assert actions_allowed_in("FAILED") == ["retry"]
    assert actions_allowed_in("CANCELLED") == ["retry"]  # cancelling again is a no-op: no button
    assert actions_allowed_in("AWAITING_PUBLISH") == ["publish", "discard"]
    assert actions_allowed_in("SUCCEEDED") == ["undo"]
    assert actions_allowed_in("UNDONE") == ["retry"]  # undoing again is a no-op: no button
    assert set(ACTIONS) <= {"approve", "reject", "cancel", "retry", "publish", "discard", "undo"}


def test_an_airflow_user_is_the_policy_person_whose_airflow_globs_match() -> None:
    policy = parse_policy(PAGE_POLICY)
    assert principal_from_display("airflow:bob.smith") == airflow_principal("bob.smith")
    assert person_of(policy, airflow_principal("bob.smith")) == "bob"
    assert person_of(policy, airflow_principal("jane")) == "jane"
    assert person_of(policy, airflow_principal("janet")) is None


def test_four_eyes_holds_across_an_aws_upload_and_an_airflow_press() -> None:
    policy = parse_policy(PAGE_POLICY)
    facts = BackfillFacts(
        backfill_id="orders-fix-0000beef",
        state="AWAITING_APPROVAL",
        submitter=principal_from_display("role/data-eng/jane.doe@example.com"),
        jobs=("food_delivery/etl_orders",),
        approval_requested_at=datetime.now(UTC),
    )
    now = datetime.now(UTC)
    jane = check_action(
        policy, principal=airflow_principal("jane"), action="approve", backfill=facts, now=now
    )
    assert jane.refused and jane.rule == "four_eyes"
    bob = check_action(policy, principal=airflow_principal("bob"), action="approve", backfill=facts, now=now)
    assert not bob.refused
