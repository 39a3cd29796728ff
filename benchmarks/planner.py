"""Planner benchmark: plan over generated lineage graphs of 1,000, 10,000 and 50,000 jobs.

Two ways in: from a Marquez lineage response already in memory (the decoded JSON; timed: parse
into a lineage graph + plan), and through the Marquez double over HTTP (timed: client, frontier
re-queries, the double serving them, JSON, parse, plan). The baseline beside each is
`json.loads` of the same response text: what merely decoding the answer costs, the floor for
anything that reads it. Each repetition times json.loads and the plan back to back (the machine
is shared: load drifts, so they are measured side by side), and the figures are medians over
repetitions (`REPEATS`: at least 20 for the small sizes). `vs_json_50000` is plan time over
json.loads time at 50,000 jobs; `growth_50k_10k` the time per job at 50,000 over that at 10,000
(1.0 = linear; bigger graphs also pay for CPU cache misses, so json.loads alone grows too:
`json_growth_50k_10k`). Times are CPU seconds of this process, not wall time.

    .venv/bin/python benchmarks/planner.py
"""

from __future__ import annotations

import gc
import json
import math
import os
import random
import statistics
import sys
import time
from datetime import UTC, date, datetime

from backfill_local.marquez_double import LineageStore, MarquezDouble, run_events
from backfill_orchestrator.config import backfill_id, parse_config
from backfill_orchestrator.http import retrying_session
from backfill_orchestrator.lineage import InMemoryLineage, MarquezClient
from backfill_orchestrator.lineage.gcpause import paused_gc
from backfill_orchestrator.planner import JobCatalog, build_plan

SIZES = (1_000, 10_000, 50_000)
LAYERS = 49  # below the root; max_depth 50 reaches every layer
NAMESPACE = "bench"
TODAY = date(2021, 6, 14)
NOW = datetime(2021, 6, 14, tzinfo=UTC)


def generated_store(jobs: int, *, seed: int = 7) -> tuple[LineageStore, JobCatalog]:
    """One root, then layers of equal width; each job reads 2-3 outputs of the layer above,
    picked at random, so what a job inherits does not depend on the width. Every other job is
    a 2-day rolling spark transform (catalog), so windows cascade too (up to today)."""
    rng = random.Random(seed)
    width = math.ceil((jobs - 1) / LAYERS)
    store = LineageStore()
    store.ingest_all(run_events(NAMESPACE, "root", outputs=["root.out"]))
    entries = []
    made, previous = 1, ["root.out"]
    while made < jobs:
        layer = []
        for _ in range(min(width, jobs - made)):
            name = f"job{made:06d}"
            inputs = rng.sample(previous, k=min(len(previous), rng.choice((2, 2, 3))))
            store.ingest_all(run_events(NAMESPACE, name, inputs=inputs, outputs=[f"{name}.out"]))
            if made % 2 == 0:
                entries.append({"namespace": NAMESPACE, "name": name, "kind": "spark", "window_days": 2})
            layer.append(f"{name}.out")
            made += 1
        previous = layer
    return store, JobCatalog.parse({"version": 1, "jobs": entries})


CONFIG = parse_config(
    {
        "version": 1,
        "name": "bench",
        "owner": "@bench",
        "mode": "batch",
        "jobs": [{"namespace": NAMESPACE, "name": "root"}],
        "dates": ["2021-06-04", {"start": "2021-06-10", "end": "2021-06-11"}],
    }
)


REPEATS = {1_000: 30, 10_000: 20, 50_000: 7}


def cpu_seconds(action) -> tuple[float, object]:
    """CPU time of this process (the double's threads included) for one call. CPU, not wall
    time: the machine is shared, and wall time swings with everyone else's load."""
    gc.collect()
    started = time.process_time()
    result = action()
    return time.process_time() - started, result


def decode(text: str) -> object:
    with paused_gc():  # as MarquezClient decodes
        return json.loads(text)


def measure(size: int, ident: str) -> dict:
    store, catalog = generated_store(size)
    payload = store.lineage(f"job:{NAMESPACE}:root", 1000)
    text = json.dumps(payload)

    def in_memory():
        source = InMemoryLineage.from_response(payload)
        return build_plan(CONFIG, backfill_id=ident, lineage=source, catalog=catalog, today=TODAY, now=NOW)

    decode_times, plan_times, ratios = [], [], []
    for _ in range(REPEATS[size]):
        decode_s, decoded = cpu_seconds(lambda: decode(text))
        decoded = None  # freed outside both timings, and not held while planning  # noqa: F841
        plan_s, plan = cpu_seconds(in_memory)
        decode_times.append(decode_s)
        plan_times.append(plan_s)
        ratios.append(plan_s / decode_s)
    assert len(plan.steps) == size, (len(plan.steps), size)

    with MarquezDouble(store=store) as double:
        # A long read timeout: the double serializes a 128 MB answer, slowly on a loaded machine.
        client = MarquezClient(double.url, session=retrying_session(timeout=(3.05, 300.0)))
        http_s, http_plan = cpu_seconds(
            lambda: build_plan(
                CONFIG, backfill_id=ident, lineage=client, catalog=catalog, today=TODAY, now=NOW
            )
        )
        queries = len(double.lineage_requests())
    assert http_plan.waves == plan.waves, "HTTP and in-memory plans differ"
    return {
        "size": size,
        "repeats": REPEATS[size],
        "json": statistics.median(decode_times),
        "plan": statistics.median(plan_times),
        "vs_json": statistics.median(ratios),
        "http": http_s,
        "queries": queries,
        "waves": len(plan.waves),
    }


def main() -> int:
    ident = backfill_id(CONFIG)
    load_before = os.getloadavg()[0]
    rows = {size: measure(size, ident) for size in SIZES}
    print(
        f"load average (1 min) {load_before:.1f} before, {os.getloadavg()[0]:.1f} after, on {os.cpu_count()} CPUs;"
        " CPU seconds, medians over the repetitions"
    )
    print(
        f"{'jobs':>7} {'reps':>4} {'json.loads s':>12} {'plan s':>8} {'plan/json':>9} {'us/job':>7} {'per-job vs 10k':>14}"
        f" {'json vs 10k':>11} {'http s':>7} {'queries':>7} {'waves':>5}"
    )
    base = rows[10_000]
    for row in rows.values():
        per_job = row["plan"] / row["size"]
        print(
            f"{row['size']:>7} {row['repeats']:>4} {row['json']:>12.3f} {row['plan']:>8.3f} {row['vs_json']:>9.2f} {per_job * 1e6:>7.1f}"
            f" {per_job / (base['plan'] / base['size']):>14.2f} {(row['json'] / row['size']) / (base['json'] / base['size']):>11.2f}"
            f" {row['http']:>7.3f} {row['queries']:>7} {row['waves']:>5}"
        )

    def per_job(size: int, what: str) -> float:
        return rows[size][what] / size

    print(
        f"BENCH planner jobs_10000_s={rows[10_000]['plan']:.3f} jobs_50000_s={rows[50_000]['plan']:.3f} "
        f"growth_50k_10k={per_job(50_000, 'plan') / per_job(10_000, 'plan'):.2f} vs_json_50000={rows[50_000]['vs_json']:.2f} "
        f"json_growth_50k_10k={per_job(50_000, 'json') / per_job(10_000, 'json'):.2f} "
        f"growth={per_job(50_000, 'plan') / per_job(1_000, 'plan'):.2f} "
        f"http_jobs_10000_s={rows[10_000]['http']:.3f} http_jobs_50000_s={rows[50_000]['http']:.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
