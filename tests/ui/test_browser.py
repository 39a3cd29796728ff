"""The Backfills page in a real headless Chromium (Debian's, through chromedriver), served by a
real Airflow 3 with the plugin loaded from the package's entry point, over a moto server. The
trigger runs in this process as the Lambda would, fed by the config bucket's S3 notifications
(incoming/ and control/) through a queue; the DAG runs a fake Spark job (held while a test wants
its backfill running) and reruns the sample's DAGs.

Who uploads what, as S3 would name them: configs come from Jane's role session, control
documents from the Airflow environment's role (the page, and the DAG's `start` documents),
which is the trigger's CONTROL_DELEGATES. Every page the tests visit is kept as a screenshot
in tests/ui/artifacts/."""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote_plus

import boto3
import pytest
import requests

from backfill_local.airflow_local import PARSE_ONCE_SETTINGS, LocalAirflow, demo_dags_folder
from backfill_orchestrator.status import BackfillState, StatusRecord, StatusStore
from tests.support.aws import create_table
from tests.support.configs import EXAMPLES, REPO_ROOT
from tests.support.ui import (
    chromium,
    chromium_missing,
    plan_document,
    put_plan,
    record_item,
    screenshot,
    seed_records,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(1500),
    pytest.mark.skipif(chromium_missing() is not None, reason=chromium_missing() or ""),
]
log = logging.getLogger(__name__)
BUCKET = "backfill-configs-ui"
TABLE = "backfill-status-ui"
CLAIMS = "backfill-claims-ui"
REGION = "us-east-1"
AWS = {"AWS_DEFAULT_REGION": REGION, "AWS_ACCESS_KEY_ID": "ui-test", "AWS_SECRET_ACCESS_KEY": "ui-test"}
WAIT = 240.0  # seconds any one thing may take on a loaded machine
T = TypeVar("T")
POLICY = """\
version: 1
people:
  jane: {aws: ["role/data-eng/jane.doe@example.com"], airflow: [jane]}
  bob: {airflow: [bob]}
grants:
  - {name: orders-team, members: [jane, bob], permissions: [submit, approve, cancel, retry], jobs: ["food_delivery/*"]}
approval: {max_partitions: 100}
"""
HOSTILE = "<script>window.__pwned=1</script>"
# The [backfill] spark_command: the fake Spark job, held while <warehouse>/hold-<backfill id> exists.
HELD_SPARK = """\
import json, os, sys, time
from pathlib import Path
from backfill_orchestrator.documents import read_text
arguments = sys.argv[1:]
plan = json.loads(read_text(arguments[arguments.index("--plan") + 1]))
hold = Path(arguments[arguments.index("--warehouse") + 1]) / f"hold-{plan['backfill_id']}"
give_up, parent = time.monotonic() + 900, os.getppid()
while hold.exists() and time.monotonic() < give_up:
    if os.getppid() != parent:  # its task is gone: stop, as the real job does (BACKFILL_STOP_WITH_PARENT)
        sys.exit(143)
    time.sleep(0.5)
os.execv(sys.executable, [sys.executable, FAKE_JOB, *arguments])
"""


def id_of(body: dict[str, Any]) -> str:
    from backfill_orchestrator.config import backfill_id, parse_config

    return backfill_id(parse_config(body))


def config(name: str, *, downstream: bool, dates: list[str]) -> dict[str, Any]:
    return {
        "version": 1,
        "name": name,
        "owner": "jane.doe@example.com",
        "mode": "batch",
        "jobs": [{"namespace": "food_delivery", "name": "etl_orders"}],
        "dates": dates,
        "downstream": {"enabled": downstream},
    }


def wait_until(check: Callable[[], T | None], *, what: Callable[[], str], timeout: float = WAIT) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f} s: {what()}")
        time.sleep(0.5)


@dataclass
class Site:
    airflow: LocalAirflow
    endpoint: str
    passwords: dict[str, str]
    warehouse: Path
    pump: Any

    def client(self, service: str) -> Any:
        return boto3.client(
            service,
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=AWS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=AWS["AWS_SECRET_ACCESS_KEY"],
        )

    @property
    def page(self) -> str:
        return f"{self.airflow.url}/backfills"

    def record(self, backfill_id: str) -> StatusRecord | None:
        return StatusStore(table_name=TABLE, dynamodb_client=self.client("dynamodb")).get(backfill_id)

    def wait_for_state(self, backfill_id: str, *states: BackfillState, timeout: float = WAIT) -> StatusRecord:
        return wait_until(
            lambda: (record := self.record(backfill_id)) is not None and record.state in states and record,
            what=lambda: (
                f"{backfill_id} in {[str(s) for s in states]}: {getattr(self.record(backfill_id), 'state', None)}"
                f"; trigger failures {self.pump.failures}"
            ),
            timeout=timeout,
        )

    def submit(self, body: dict[str, Any]) -> str:
        self.client("s3").put_object(
            Bucket=BUCKET, Key=f"incoming/{body['name']}.json", Body=json.dumps(body).encode()
        )
        return id_of(body)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    from aws_lambda_powertools.metrics import EphemeralMetrics
    from moto.server import ThreadedMotoServer

    from backfill_local.marquez_double import MarquezDouble
    from backfill_local.receivers import SlackReceiver
    from backfill_local.s3_events import S3EventPump
    from backfill_orchestrator.settings import DeploymentSettings
    from backfill_orchestrator.trigger.wiring import TriggerWiring

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    work = tmp_path_factory.mktemp("ui-site")
    warehouse = work / "warehouse"
    warehouse.mkdir()
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    endpoint = f"http://{host}:{port}"

    def client(service: str) -> Any:
        return boto3.client(
            service,
            endpoint_url=endpoint,
            region_name=REGION,
            aws_access_key_id=AWS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=AWS["AWS_SECRET_ACCESS_KEY"],
        )

    airflow: LocalAirflow | None = None
    try:
        s3, dynamodb, iam = client("s3"), client("dynamodb"), client("iam")
        s3.create_bucket(Bucket=BUCKET)
        s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
        s3.put_object(
            Bucket=BUCKET, Key="catalog/catalog.yaml", Body=(EXAMPLES / "catalog.yaml").read_bytes()
        )
        s3.put_object(Bucket=BUCKET, Key="policy.yaml", Body=POLICY.encode())
        create_table(dynamodb, "StatusTable", table_name=TABLE)
        create_table(dynamodb, "ClaimsTable", table_name=CLAIMS)
        trust = json.dumps({"Version": "2012-10-17", "Statement": []})
        roles = {
            name: iam.create_role(RoleName=name, AssumeRolePolicyDocument=trust)["Role"]["RoleId"]
            for name in ("data-eng", "airflow-env")
        }
        secrets = client("secretsmanager")
        marquez = MarquezDouble(seed="food_delivery").__enter__()
        slack = SlackReceiver(token="xoxb-ui-test").__enter__()
        arns = {
            name: secrets.create_secret(Name=name, SecretString=json.dumps(value))["ARN"]
            for name, value in (
                ("backfill/slack", {"bot_token": "xoxb-ui-test"}),
                ("backfill/airflow", {"username": "admin", "password": "admin"}),
            )
        }
        spark = work / "held_spark.py"
        spark.write_text(
            HELD_SPARK.replace("FAKE_JOB", repr(str(REPO_ROOT / "tests" / "airflow" / "fake_spark_job.py")))
        )
        airflow = LocalAirflow(
            dags_folder=demo_dags_folder(
                REPO_ROOT / "dags", work / "dags", dag_files=["backfill_dag.py", "food_delivery"]
            ),
            parallelism=6,
            extra_env={
                **PARSE_ONCE_SETTINGS,
                **AWS,
                "AWS_ENDPOINT_URL": endpoint,
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin,jane:user,bob:user,vic:viewer",
                "AIRFLOW__BACKFILL__SPARK_COMMAND": f"{sys.executable} {spark}",
                "AIRFLOW__BACKFILL__WAREHOUSE_URI": str(warehouse),
                "AIRFLOW__BACKFILL__MAX_ROUNDS": "3",
                "AIRFLOW__BACKFILL__RERUN_POKE_SECONDS": "1",
                "AIRFLOW__BACKFILL__MAX_PARALLEL_DAG_RUNS": "4",
                "AIRFLOW__BACKFILL__STATUS_TABLE": TABLE,
                "AIRFLOW__BACKFILL__CLAIMS_TABLE": CLAIMS,
                "AIRFLOW__BACKFILL__CONTROL_URI": f"s3://{BUCKET}/control/",
                "AIRFLOW__BACKFILL__SLACK_SECRET_ID": arns["backfill/slack"],
                "AIRFLOW__BACKFILL__SLACK_API_URL": slack.api_url,
                "AIRFLOW__BACKFILL__SLACK_CHANNEL": "#backfills",
                # the page's own options
                "AIRFLOW__BACKFILL__CONFIG_BUCKET": BUCKET,
                "AIRFLOW__BACKFILL__POLICY_URI": f"s3://{BUCKET}/policy.yaml",
                "AIRFLOW__BACKFILL__SLACK_WEB_URL": "https://acme.slack.com",
                "AIRFLOW__BACKFILL__LINEAGE_WEB_URL": marquez.url,
                "BACKFILL_SAMPLE_OUTPUT_DIR": str(work / "sample_outputs"),
            },
        )
        airflow.start()
        airflow.wait_for_dags(["backfill", "email_discounts", "orders_popular_day_of_week"])
        settings = DeploymentSettings.from_env(
            {
                "CONFIG_BUCKET": BUCKET,
                "STATUS_TABLE": TABLE,
                "CLAIMS_TABLE": CLAIMS,
                "MARQUEZ_URL": marquez.url,
                "AIRFLOW_URL": airflow.url,
                "AIRFLOW_UI_URL": airflow.url,
                "AIRFLOW_SECRET_ID": arns["backfill/airflow"],
                "BACKFILL_DAG_ID": "backfill",
                "SLACK_API_URL": slack.api_url,
                "SLACK_SECRET_ID": arns["backfill/slack"],
                "SLACK_CHANNEL": "#backfills",
                "JOB_CATALOG_URI": f"s3://{BUCKET}/catalog/catalog.yaml",
                "POLICY_URI": f"s3://{BUCKET}/policy.yaml",
                "CONTROL_DELEGATES": "role/airflow-env/*",
            }
        )
        wiring = TriggerWiring(
            settings,
            s3_client=s3,
            dynamodb_client=dynamodb,
            secrets_client=secrets,
            iam_client_factory=lambda: iam,
        )
        uploader = {
            "incoming/": f"AWS:{roles['data-eng']}:jane.doe@example.com",
            "control/": f"AWS:{roles['airflow-env']}:airflow-api-server",
        }

        def trigger(event: dict[str, Any], context: Any) -> Any:
            for record in event.get("Records", []):
                key = unquote_plus(record["s3"]["object"]["key"])
                principal = next(p for prefix, p in uploader.items() if key.startswith(prefix))
                record["userIdentity"] = {"principalId": principal}
            service = wiring.service(metrics=EphemeralMetrics(namespace="UiTest"), logger=log)
            return [result.state for result in service.handle_event(event, lease_seconds=120)]

        pump = S3EventPump(
            s3_client=s3,
            sqs_client=client("sqs"),
            bucket=BUCKET,
            prefixes=["incoming/", "control/"],
            handler=trigger,
        )
        pump.start()
        assert airflow.home is not None
        passwords = json.loads((airflow.home / "passwords.json").read_text())
        try:
            yield Site(
                airflow=airflow, endpoint=endpoint, passwords=passwords, warehouse=warehouse, pump=pump
            )
        finally:
            pump.stop()
            slack.__exit__(None, None, None)
            marquez.__exit__(None, None, None)
    finally:
        if airflow is not None:
            airflow.stop()
        requests.post(f"{endpoint}/moto-api/reset", timeout=10)
        moto.stop()


@pytest.fixture
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


def log_in(driver: Any, site: Site, user: str, *, next_path: str = "/backfills/") -> None:
    """Through Airflow's own login page, as a person would."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(f"{site.airflow.url}/auth/login?next={next_path}")
    wait = WebDriverWait(driver, WAIT)
    wait.until(ready.presence_of_element_located((By.NAME, "username"))).send_keys(user)
    driver.find_element(By.NAME, "password").send_keys(site.passwords[user])
    wait.until(ready.element_to_be_clickable((By.CSS_SELECTOR, "button[type=submit]"))).click()
    wait.until(lambda d: "/backfills" in d.current_url and d.find_elements(By.CSS_SELECTOR, "header.top"))


def open_detail(driver: Any, site: Site, backfill_id: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(f"{site.page}/b/{backfill_id}")
    WebDriverWait(driver, WAIT).until(lambda d: d.find_elements(By.ID, "backfill-id"))


def press(driver: Any, action: str, *, reason: str | None = None) -> str:
    """Press an action, confirm it, and wait for the trigger's answer; returns what the page says."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, WAIT).until(lambda d: d.find_element(By.ID, f"action-{action}").is_displayed())
    driver.find_element(By.ID, f"action-{action}").click()
    if reason is not None:
        driver.find_element(By.ID, "confirm-reason").send_keys(reason)
    driver.find_element(By.ID, "confirm-yes").click()
    outcome = WebDriverWait(driver, WAIT).until(
        lambda d: (
            (node := d.find_element(By.ID, "outcome")).get_attribute("data-outcome")
            in ("done", "refused", "error")
            and node
        )
    )
    return str(outcome.get_attribute("data-outcome")) + ": " + outcome.text


def page_state(driver: Any) -> str:
    from selenium.webdriver.common.by import By

    return str(driver.find_element(By.ID, "state").get_attribute("data-backfill-state"))


# -- the tests --------------------------------------------------------------------------------------
def test_a_browser_without_a_login_gets_no_data(site: Site, browser: Any) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    seed_records(
        site.client("dynamodb"),
        TABLE,
        [record_item("secret-fix-0000beef", state="RUNNING", created_at=datetime.now(UTC))],
    )
    browser.get(f"{site.page}/")
    WebDriverWait(browser, WAIT).until(lambda d: "/auth/login" in d.current_url)
    screenshot(browser, "unauthenticated")
    assert "secret-fix-0000beef" not in browser.page_source
    answer = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        " fetch(arguments[0]).then(r => r.text().then(t => done([r.status, t])));",
        f"{site.page}/api/backfills",
    )
    assert answer[0] == 401 and "secret-fix" not in answer[1]


def test_the_list_loads_and_filters(site: Site, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    now = datetime.now(UTC)
    seed_records(
        site.client("dynamodb"),
        TABLE,
        [
            record_item(
                f"list-fix-{i:08x}",
                state=["SUCCEEDED", "FAILED"][i % 2],
                created_at=now,
                owner=f"team{i % 3}@example.com",
            )
            for i in range(12)
        ],
    )
    log_in(browser, site, "vic")
    rows = browser.find_elements(By.CSS_SELECTOR, "#backfills tbody tr[data-backfill]")
    assert len(rows) >= 12
    screenshot(browser, "list")
    Select(browser.find_element(By.ID, "filter-state")).select_by_value("FAILED")
    browser.find_element(By.ID, "filter-apply").click()
    WebDriverWait(browser, WAIT).until(lambda d: "state=FAILED" in d.current_url)
    states = [node.text for node in browser.find_elements(By.CSS_SELECTOR, "#backfills tbody .state")]
    assert states and set(states) == {"FAILED"}
    ids = {
        row.get_attribute("data-backfill")
        for row in browser.find_elements(By.CSS_SELECTOR, "#backfills tbody tr[data-backfill]")
    }
    assert {f"list-fix-{i:08x}" for i in range(1, 12, 2)} <= ids
    browser.find_element(By.ID, "filter-owner").send_keys("team1@example.com")
    browser.find_element(By.ID, "filter-apply").click()
    WebDriverWait(browser, WAIT).until(lambda d: "owner=team1" in d.current_url)
    ids = {
        row.get_attribute("data-backfill")
        for row in browser.find_elements(By.CSS_SELECTOR, "#backfills tbody tr[data-backfill]")
    }
    assert ids == {"list-fix-00000001", "list-fix-00000007"}
    screenshot(browser, "list-filtered")


def test_a_hostile_job_name_renders_as_text(site: Site, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    plan = plan_document("hostile-fix-0000dead", steps=3, days=3, job_name=HOSTILE)
    uri = put_plan(site.client("s3"), BUCKET, plan)
    seed_records(
        site.client("dynamodb"),
        TABLE,
        [
            record_item(
                "hostile-fix-0000dead",
                state="FAILED",
                created_at=datetime.now(UTC),
                plan_uri=uri,
                owner=HOSTILE,
                reason=f"step {HOSTILE}_1 failed",
            )
        ],
    )
    log_in(browser, site, "vic")
    open_detail(browser, site, "hostile-fix-0000dead")
    assert browser.execute_script("return window.__pwned === undefined")
    assert HOSTILE in browser.find_element(By.ID, "owner").text
    assert HOSTILE in browser.find_element(By.ID, "reason").text
    node_ids = [node.text for node in browser.find_elements(By.CSS_SELECTOR, "#plan-graph .node-id")]
    assert node_ids and all(text.startswith("<script>") for text in node_ids)
    assert len(browser.find_elements(By.CSS_SELECTOR, "script")) == 2  # the data block and the page's own
    screenshot(browser, "hostile-name")


def test_cancel_on_a_running_backfill_ends_it_cancelled(site: Site, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    body = config("cancel-me", downstream=False, dates=["2021-06-04"])
    backfill_id = id_of(body)
    (site.warehouse / f"hold-{backfill_id}").write_text("hold")  # its Spark round runs until the cancel
    site.submit(body)
    site.wait_for_state(backfill_id, BackfillState.RUNNING)
    log_in(browser, site, "jane")
    open_detail(browser, site, backfill_id)
    WebDriverWait(browser, WAIT).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, 'g.step[data-state="running"]')
    )
    screenshot(browser, "running")
    said = press(browser, "cancel", reason="wrong dates")
    assert said.startswith("done"), said
    WebDriverWait(browser, WAIT).until(lambda d: page_state(d) == "CANCELLED")
    record = site.wait_for_state(backfill_id, BackfillState.CANCELLED)
    assert record.history[-1].get("by") == "airflow:jane"
    assert site.airflow.run_state("backfill", backfill_id) == "failed"
    screenshot(browser, "cancelled")


def test_approval_four_eyes_then_a_second_person(site: Site, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    body = config("approve-me", downstream=True, dates=["2021-06-04"])
    backfill_id = id_of(body)
    site.submit(body)
    site.wait_for_state(backfill_id, BackfillState.AWAITING_APPROVAL)
    log_in(browser, site, "jane")  # she submitted it (as her AWS role session)
    open_detail(browser, site, backfill_id)
    edges = browser.find_elements(By.CSS_SELECTOR, "#plan-graph path.edge")
    nodes = browser.find_elements(By.CSS_SELECTOR, "#plan-graph g.step")
    assert len(nodes) >= 4 and len(edges) >= len(nodes) - 1
    grids = browser.find_elements(By.CSS_SELECTOR, "svg.partition-grid")
    assert len(grids) == len(nodes) and browser.find_elements(
        By.CSS_SELECTOR, 'svg.partition-grid rect.cell[data-state="pending"]'
    )
    screenshot(browser, "awaiting-approval")
    said = press(browser, "approve")
    assert said.startswith("refused") and "four_eyes" in said and "another person must approve" in said, said
    assert site.record(backfill_id).state is BackfillState.AWAITING_APPROVAL  # type: ignore[union-attr]
    screenshot(browser, "four-eyes-refused")

    browser.delete_all_cookies()
    log_in(browser, site, "bob")
    open_detail(browser, site, backfill_id)
    said = press(browser, "approve")
    assert said.startswith("done"), said
    moved = (BackfillState.TRIGGERED, BackfillState.RUNNING, BackfillState.QUEUED, BackfillState.SUCCEEDED)
    WebDriverWait(browser, WAIT).until(lambda d: page_state(d) in {str(s) for s in moved})
    record = site.wait_for_state(backfill_id, *moved)
    assert record.approval and record.approval["by"] == "airflow:bob"
    screenshot(browser, "approved")
    # The detail page while (or once) it runs: the README's picture.
    try:
        site.wait_for_state(backfill_id, BackfillState.SUCCEEDED, BackfillState.FAILED, timeout=600)
    except AssertionError:
        log.warning("%s still running after 10 minutes: the picture shows it running", backfill_id)
    open_detail(browser, site, backfill_id)
    WebDriverWait(browser, WAIT).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#plan-graph path.edge"))
    screenshot(browser, "detail")
