"""Spark backfill benchmark: one application for the whole plan against the usual ways.

The sample pipeline over 90 days (3 feeds, every hour); the processed orders of 30
noncontiguous days (every third day) are lost for two feeds. The same repair four ways,
each from its own copy of the broken warehouse:

  single          one `spark-submit` running the planner's plan for all 30 days, every step
                  written straight over its live partitions (etl_orders, the three 7-day steps)
  published       the same plan through the backfill job as it runs in production: each step
                  staged, checked (schema, data diff) and published by the default policy
  per_day_submit  (a) one `spark-submit` of the backfill job per day, each with the plan for that
                  day only (staged and published too)
  loop            (b) one `spark-submit` whose single session runs the 30 per-day plans in turn

Times are wall seconds of the whole subprocesses (JVM start included: it is what each way
pays in production too). single and published take turns `--rounds` times (3), each from a
fresh copy, and their medians are compared, so that a burst of other work on the machine
weighs on one round rather than on `publish_overhead`. Afterwards every processed table of the four warehouses is compared
with a clean run of the whole pipeline; `identical=true` when all four equal it exactly.
`publish_overhead` is published / single - 1; `ratio_vs_submit` per_day_submit / published,
`single_vs_submit` per_day_submit / single, `ratio_vs_loop` loop / single. Where each way's
time went is printed from its run reports (`StepResult.phase_seconds`): read, transform,
write, check, commit summed over the steps, and the time outside the steps (JVM and session
start, plan loading, publish recovery).

    .venv/bin/python benchmarks/spark_backfill.py [--days 90 --broken 30 --orders-per-hour 4 --rounds 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SPARK_SUBMIT = REPO / ".venv" / "bin" / "spark-submit"
MASTER = "local[2]"
START = date(2021, 3, 1)
BROKEN_FEEDS = ("app", "web")
# Small data on a small machine, every way alike: no web UI, a few shuffle partitions, and
# partition directories listed by the driver (as the demo does: a listing job of one task per
# path costs more than it saves here). Every JVM also reads the local Spark tuning
# (`use_local_spark_defaults`, as the demo and the tests do): file writes without a forked
# `chmod` per file, which would otherwise weigh on every way by the file rather than by the work.
SUBMIT_CONF = [
    "--conf",
    "spark.ui.enabled=false",
    "--conf",
    "spark.sql.shuffle.partitions=8",
    "--conf",
    "spark.ui.showConsoleProgress=false",
    "--conf",
    "spark.sql.sources.parallelPartitionDiscovery.threshold=100000",
]


def plan_for(days: list[date], name: str):
    """The planner's plan (real lineage walk over Marquez's food delivery sample)."""
    from backfill_local.marquez_double import InProcessMarquez, LineageStore, food_delivery_events
    from backfill_orchestrator.config import backfill_id, parse_config
    from backfill_orchestrator.planner import JobCatalog, build_plan

    config = parse_config(
        {
            "version": 1,
            "name": name,
            "owner": "@data-platform",
            "mode": "batch",
            "jobs": [{"namespace": "food_delivery", "name": "etl_orders"}],
            "dates": [day.isoformat() for day in days],
            "feeds": list(BROKEN_FEEDS),
        }
    )
    store = LineageStore()
    store.ingest_all(food_delivery_events())
    catalog = JobCatalog.load(str(REPO / "examples" / "catalog.yaml"))
    return build_plan(
        config,
        backfill_id=backfill_id(config),
        lineage=InProcessMarquez(store),
        catalog=catalog,
        today=date(2026, 1, 1),
    )


def submit(args: list[str]) -> None:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    completed = subprocess.run(
        [str(SPARK_SUBMIT), "--master", MASTER, *SUBMIT_CONF, *args], env=env, capture_output=True, text=True
    )
    if completed.returncode != 0:
        sys.exit(
            f"spark-submit failed ({completed.returncode}):\n{completed.stdout[-2000:]}\n{completed.stderr[-4000:]}"
        )


def timed(label: str, run) -> float:
    started = time.monotonic()
    run()
    seconds = time.monotonic() - started
    print(f"{label:<16}{seconds:9.1f} s", flush=True)
    return seconds


def direct_worker(warehouse: str, reports: str, plan_path: str) -> None:
    """single: the whole plan in one session, written directly (run by spark-submit); its run
    report goes to the directory `reports`."""
    from backfill_orchestrator.contracts.plan import Plan
    from spark_jobs.engine.runner import run_plan
    from spark_jobs.engine.session import spark_session
    from spark_jobs.sample.transforms import FOOD_DELIVERY

    with spark_session("bench-single") as spark:
        plan = Plan.from_json(Path(plan_path).read_bytes())
        report = run_plan(spark=spark, plan=plan, warehouse=warehouse, registry=FOOD_DELIVERY)
        if report.status != "succeeded":
            sys.exit(f"{plan_path}: {[step.error for step in report.steps]}")
        (Path(reports) / "single.json").write_text(report.to_json())


def loop_worker(warehouse: str, reports: str, plans: list[str]) -> None:
    """(b): one session, the per-day plans one after another (run by spark-submit); their run
    reports go to the directory `reports`."""
    from backfill_orchestrator.contracts.plan import Plan
    from spark_jobs.engine.runner import run_plan
    from spark_jobs.engine.session import spark_session
    from spark_jobs.sample.transforms import FOOD_DELIVERY

    with spark_session("bench-loop") as spark:
        for path in plans:
            plan = Plan.from_json(Path(path).read_bytes())
            report = run_plan(spark=spark, plan=plan, warehouse=warehouse, registry=FOOD_DELIVERY)
            if report.status != "succeeded":
                sys.exit(f"{path}: {[step.error for step in report.steps]}")
            (Path(reports) / f"loop-{Path(path).stem}.json").write_text(report.to_json())


def setup(work: Path, *, days: int, broken: list[date], orders_per_hour: int) -> Path:
    from spark_jobs.engine.runner import run_everything
    from spark_jobs.engine.scope import Scope
    from spark_jobs.engine.session import spark_session
    from spark_jobs.sample.data import GeneratorSettings, break_partitions, generate
    from spark_jobs.sample.tables import ORDERS
    from spark_jobs.sample.transforms import FOOD_DELIVERY

    clean, damaged = work / "clean", work / "broken"
    clean.mkdir()
    with spark_session(
        "bench-setup",
        extra={
            "spark.master": MASTER,
            "spark.ui.enabled": "false",
            "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
        },
    ) as spark:
        spark.sparkContext.setLogLevel("ERROR")
        generate(
            spark=spark,
            warehouse=str(clean),
            settings=GeneratorSettings(start=START, days=days, orders_per_hour=orders_per_hour),
        )
        run_everything(spark=spark, warehouse=str(clean), registry=FOOD_DELIVERY)
        shutil.copytree(clean, damaged)
        break_partitions(
            spark=spark,
            warehouse=str(damaged),
            table=ORDERS,
            scope=Scope(days=tuple(broken), feeds=BROKEN_FEEDS),
            mode="drop",
        )
    return clean


PHASES = ("read", "transform", "write", "check", "commit")


def breakdown(reports: list[Path], wall: float) -> dict[str, float]:
    """Where a way's time went: each phase summed over its steps (steps of one wave run side by
    side, so these can add up to more than the wall time), `steps` the runs' own wall time
    (report.seconds), and `outside` the rest of the wall time: JVM and session start, reading
    and checking the plan, Python, recovering earlier publishes."""
    from backfill_orchestrator.contracts import RunReport

    runs = [RunReport.from_json(path.read_bytes()) for path in reports]
    totals = dict.fromkeys(PHASES, 0.0)
    for run in runs:
        for step in run.steps:
            for phase, seconds in step.phase_seconds.items():
                totals[phase] += seconds
    steps = sum(run.seconds for run in runs)
    return {**totals, "steps": steps, "outside": wall - steps}


def compare(clean: Path, warehouses: list[Path]) -> bool:
    from spark_jobs.engine.session import spark_session
    from spark_jobs.engine.table_io import list_partitions, read_table
    from spark_jobs.sample.tables import PROCESSED_TABLES

    identical = True
    with spark_session("bench-compare", extra={"spark.master": MASTER, "spark.ui.enabled": "false"}) as spark:
        spark.sparkContext.setLogLevel("ERROR")
        for table in PROCESSED_TABLES:
            expected = read_table(spark=spark, warehouse=str(clean), table=table).cache()
            expected_partitions = list_partitions(spark=spark, warehouse=str(clean), table=table)
            for warehouse in warehouses:
                actual = read_table(spark=spark, warehouse=str(warehouse), table=table)
                same = (
                    actual.exceptAll(expected).isEmpty()
                    and expected.exceptAll(actual).isEmpty()
                    and list_partitions(spark=spark, warehouse=str(warehouse), table=table)
                    == expected_partitions
                )
                if not same:
                    print(f"DIFFERENT: {table.name} in {warehouse.name}")
                identical &= same
            expected.unpersist()
    return identical


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--broken", type=int, default=30, help="noncontiguous broken days (every third day)")
    parser.add_argument("--orders-per-hour", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3, help="turns of single and published (medians)")
    parser.add_argument("--loop-worker", nargs="+", metavar=("WAREHOUSE", "REPORTS"), help=argparse.SUPPRESS)
    parser.add_argument(
        "--direct-worker", nargs=3, metavar=("WAREHOUSE", "REPORTS", "PLAN"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.direct_worker:
        direct_worker(*args.direct_worker)
        return 0
    if args.loop_worker:
        loop_worker(args.loop_worker[0], args.loop_worker[1], args.loop_worker[2:])
        return 0
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.broken * 3 > args.days:
        parser.error("--broken days, every third day, must fit in --days")
    from backfill_local.local_spark import use_local_spark_defaults

    use_local_spark_defaults()  # before any JVM starts: the spark-submits inherit it

    broken = [START + timedelta(days=3 * n + 1) for n in range(args.broken)]
    work = Path(tempfile.mkdtemp(prefix="bench-spark-backfill-"))
    try:
        print(
            f"setup: {args.days} days x 24 hours x 3 feeds, {args.orders_per_hour} orders per hour and feed; "
            f"orders of {len(broken)} days ({broken[0]}, {broken[1]}, ... {broken[-1]}) lost for "
            f"{', '.join(BROKEN_FEEDS)}",
            flush=True,
        )
        started = time.monotonic()
        clean = setup(work, days=args.days, broken=broken, orders_per_hour=args.orders_per_hour)
        print(
            f"setup done in {time.monotonic() - started:.0f} s (generate, clean run, break; not timed)",
            flush=True,
        )

        plans = work / "plans"
        plans.mkdir()
        whole = plans / "all.json"
        whole.write_text(plan_for(broken, "bench-all").to_json())
        per_day = []
        for day in broken:
            path = plans / f"{day}.json"
            path.write_text(plan_for([day], f"bench-{day:%m%d}").to_json())
            per_day.append(path)
        job = str(REPO / "spark_jobs" / "engine" / "backfill_job.py")
        copies: dict[str, Path] = {}
        reports: dict[str, Path] = {}

        def fresh(name: str) -> tuple[Path, Path]:
            copies[name], reports[name] = work / name, work / f"reports-{name}"
            shutil.copytree(work / "broken", copies[name])
            reports[name].mkdir()
            return copies[name], reports[name]

        def single(name: str) -> list[str]:
            warehouse, reported = fresh(name)
            return [
                str(Path(__file__).resolve()),
                "--direct-worker",
                str(warehouse),
                str(reported),
                str(whole),
            ]

        def published(name: str) -> list[str]:
            warehouse, reported = fresh(name)
            report = str(reported / "published.json")
            return [job, "--plan", str(whole), "--warehouse", str(warehouse), "--report", report]

        # single and published take turns, `--rounds` times each, and the medians are compared:
        # a neighbour's burst on a shared machine then weighs on one round, not on the ratio.
        rounds: dict[str, list[float]] = {"single": [], "published": []}
        for number in range(1, args.rounds + 1):
            for way, arguments in (("single", single), ("published", published)):
                name = way if number == 1 else f"{way}-{number}"
                command = arguments(name)
                rounds[way].append(timed(name, lambda command=command: submit(command)))
        single_s, published_s = (statistics.median(rounds[way]) for way in ("single", "published"))
        for way, seconds in rounds.items():  # the median round's reports stand for the way
            middle = sorted(range(len(seconds)), key=seconds.__getitem__)[len(seconds) // 2]
            reports[way] = reports[way if middle == 0 else f"{way}-{middle + 1}"]
        for name in ("per_day_submit", "loop"):
            fresh(name)
        submit_s = timed(
            "per_day_submit",
            lambda: [
                submit(
                    [
                        job,
                        "--plan",
                        str(plan),
                        "--warehouse",
                        str(copies["per_day_submit"]),
                        "--report",
                        str(reports["per_day_submit"] / f"submit-{plan.stem}.json"),
                    ]
                )
                for plan in per_day
            ],
        )
        loop_s = timed(
            "loop",
            lambda: submit(
                [
                    str(Path(__file__).resolve()),
                    "--loop-worker",
                    str(copies["loop"]),
                    str(reports["loop"]),
                    *map(str, per_day),
                ]
            ),
        )

        identical = compare(clean, list(copies.values()))
        ratio_submit, ratio_loop = submit_s / published_s, loop_s / single_s
        single_vs_submit = submit_s / single_s
        overhead = published_s / single_s - 1
        walls = {"single": single_s, "published": published_s, "per_day_submit": submit_s, "loop": loop_s}
        print(
            "rounds (s): "
            + "; ".join(f"{way} {', '.join(f'{t:.1f}' for t in seconds)}" for way, seconds in rounds.items())
        )
        columns = (*PHASES, "steps", "outside")
        print(f"\n{'way':<16}{'seconds':>9}{'vs single':>11}" + "".join(f"{name:>11}" for name in columns))
        for label, seconds in walls.items():
            spent = breakdown(sorted(reports[label].glob("*.json")), seconds)
            print(
                f"{label:<16}{seconds:9.1f}{seconds / single_s:10.2f}x"
                + "".join(f"{spent[name]:11.1f}" for name in columns)
            )
        print(
            "(phases: step-seconds summed over the steps, side by side ones included; steps: the runs' "
            "wall time; outside: JVM and session start, plan loading, publish recovery)"
        )
        print(
            f"publishing adds at most 15%: {'yes' if overhead <= 0.15 else 'NO'} ({overhead:+.1%}); "
            f"published at least 9x faster than per_day_submit: {'yes' if ratio_submit >= 9 else 'NO'}; "
            f"single at least 10x faster than per_day_submit: {'yes' if single_vs_submit >= 10 else 'NO'}; "
            f"single at least 3x faster than loop: {'yes' if ratio_loop >= 3 else 'NO'}; outputs identical to a clean run: "
            f"{'yes' if identical else 'NO'}"
        )
        print(
            f"BENCH spark_backfill single_s={single_s:.1f} published_s={published_s:.1f} "
            f"per_day_submit_s={submit_s:.1f} loop_s={loop_s:.1f} publish_overhead={overhead:.3f} "
            f"ratio_vs_submit={ratio_submit:.2f} single_vs_submit={single_vs_submit:.2f} "
            f"ratio_vs_loop={ratio_loop:.2f} identical={str(identical).lower()}"
        )
        return 0 if identical else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
