"""`make demo`: the flow, locally, with embedded defaults.

Stage 1 (foundation): start moto as a local S3 server, validate the example configs with the
CLI, submit one through the Python client exactly as a notebook would, show that an invalid
config is refused before upload, and list what landed. Exits non-zero on any failure."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import boto3
from moto.server import ThreadedMotoServer

from backfill_orchestrator.client import submit_backfill
from backfill_orchestrator.config import InvalidConfigError

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
BUCKET = "backfill-configs-local"


def step(message: str) -> None:
    print(f"\n== {message}", flush=True)


def run_cli(*args: str, env: dict[str, str]) -> int:
    result = subprocess.run([sys.executable, "-m", "backfill_orchestrator", *args], env=env, text=True, check=False)
    return result.returncode


def main() -> int:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    env = {
        **os.environ,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "demo",
        "AWS_SECRET_ACCESS_KEY": "demo",
    }
    os.environ.update(env)
    failures: list[str] = []
    try:
        s3 = boto3.client("s3")
        s3.create_bucket(Bucket=BUCKET)
        step(f"moto S3 on {endpoint}, bucket {BUCKET}")

        step("backfill validate examples/*")
        examples = sorted(str(p) for p in EXAMPLES.glob("*.y*ml") if "catalog" not in p.name)
        examples += sorted(str(p) for p in EXAMPLES.glob("*.json"))
        if run_cli("validate", *examples, env=env) != 0:
            failures.append("an example config did not validate")

        step("an invalid config: located errors, nothing uploaded")
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as bad:
            bad.write("version: 1\nname: Orders\nowner: jane\nmode: batch\ndates: [2021-02-30]\n")
        if run_cli("submit", bad.name, "--bucket", BUCKET, env=env) != 1:
            failures.append("the invalid config was not refused with exit 1")
        os.unlink(bad.name)

        step("submit from Python, as a Databricks notebook would")
        config = {
            "version": 1,
            "name": "orders-outage-june",
            "owner": "jane.doe@example.com",
            "mode": "batch",
            "jobs": [{"namespace": "food_delivery", "name": "etl_orders"}],
            "dates": ["2021-06-04", {"start": "2021-06-10", "end": "2021-06-12"}],
        }
        try:
            submission = submit_backfill(config, bucket=BUCKET, s3_client=s3)
            print(f"submitted {submission.backfill_id} -> {submission.s3_uri}")
        except InvalidConfigError as error:
            failures.append(f"the demo config was refused:\n{error}")

        step("backfill submit examples/orders-outage-june.yaml (CLI)")
        if run_cli("submit", str(EXAMPLES / "orders-outage-june.yaml"), "--bucket", BUCKET, env=env) != 0:
            failures.append("the CLI submit failed")

        step(f"s3://{BUCKET}/incoming/")
        listed = s3.list_objects_v2(Bucket=BUCKET, Prefix="incoming/").get("Contents", [])
        for item in listed:
            print(f"  {item['Key']} ({item['Size']} bytes)")
        if len(listed) != 2:
            failures.append(f"expected 2 uploaded configs, found {len(listed)}")
    finally:
        server.stop()

    step("result")
    if failures:
        for failure in failures:
            print(f"FAILED: {failure}")
        return 1
    print("demo passed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
