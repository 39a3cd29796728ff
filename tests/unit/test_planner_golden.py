"""Byte-for-byte plans: the planner's output for a set of lineage graphs, recorded before the
planner core was rewritten for speed (issue 18), must not change by a single byte.

The goldens live in tests/unit/golden/planner/. To record them again after an *intended* change
of the plan document: `PLANNER_GOLDEN_RECORD=1 pytest tests/unit/test_planner_golden.py`, and
review the diff."""

from __future__ import annotations

import gzip
import math
import os
import random
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from backfill_local.marquez_double import InProcessMarquez, LineageStore, food_delivery_events, run_events
from backfill_orchestrator.config import backfill_id, parse_config
from backfill_orchestrator.lineage import InMemoryLineage
from backfill_orchestrator.planner import JobCatalog, PlanRefusedError, build_plan

GOLDEN = Path(__file__).resolve().parent / "golden" / "planner"
EXAMPLE_CATALOG = Path(__file__).resolve().parents[2] / "examples" / "catalog.yaml"
TODAY = date(2021, 6, 30)
NOW = datetime(2021, 6, 30, 12, tzinfo=UTC)
BIG_GOLDEN_BYTES = 100_000
RECORD = os.environ.get("PLANNER_GOLDEN_RECORD") == "1"


def config(jobs, *, namespace="ns", dates=("2021-06-04",), **extra):
    return parse_config(
        {
            "version": 1,
            "name": "golden",
            "owner": "@jane",
            "mode": "batch",
            "jobs": [{"namespace": namespace, "name": job} for job in jobs],
            "dates": list(dates),
            **extra,
        }
    )


def edges_store(edges: dict[str, list[str]], namespace: str = "ns") -> LineageStore:
    readers_of: dict[str, list[str]] = {}
    jobs = set(edges)
    for job, readers in edges.items():
        jobs.update(readers)
        for reader in readers:
            readers_of.setdefault(reader, []).append(job)
    store = LineageStore()
    for job in sorted(jobs):
        store.ingest_all(
            run_events(
                namespace, job, inputs=[f"{u}.out" for u in readers_of.get(job, [])], outputs=[f"{job}.out"]
            )
        )
    return store


def layered_store(
    jobs: int, *, layers: int, seed: int, dags_across_layers: bool = False
) -> tuple[LineageStore, JobCatalog]:
    """As benchmarks/planner.py: layers of random readers; every other job a spark transform
    with a 2-7 day window, every seventh a task of a DAG (of its layer, or shared across
    layers, which makes step cycles), so windows and collapsing both happen."""
    rng = random.Random(seed)
    width = math.ceil((jobs - 1) / layers)
    store = LineageStore()
    store.ingest_all(run_events("gen", "root", outputs=["root.out"]))
    entries = []
    made, previous, depth = 1, ["root.out"], 0
    while made < jobs:
        depth += 1
        layer = []
        for _ in range(min(width, jobs - made)):
            name = f"job{made:06d}"
            inputs = rng.sample(previous, k=min(len(previous), rng.choice((1, 2, 3))))
            dag = f"dag{made % 13}" if dags_across_layers else f"dag{depth}_{made % 3}"
            parent = dag if made % 7 == 0 else None
            store.ingest_all(run_events("gen", name, inputs=inputs, outputs=[f"{name}.out"], parent=parent))
            if made % 2 == 0 and parent is None:
                entries.append(
                    {"namespace": "gen", "name": name, "kind": "spark", "window_days": rng.choice((2, 3, 7))}
                )
            layer.append(f"{name}.out")
            made += 1
        previous = layer
    return store, JobCatalog.parse({"version": 1, "jobs": entries})


def food_delivery() -> LineageStore:
    store = LineageStore()
    store.ingest_all(food_delivery_events())
    return store


def plan_text(store: LineageStore, cfg, *, catalog=None, today=TODAY, in_memory=False) -> str:
    if in_memory:
        lineage = InMemoryLineage.from_response(store.lineage("job:gen:root", 1000))
    else:
        lineage = InProcessMarquez(store)
    try:
        plan = build_plan(
            cfg, backfill_id=backfill_id(cfg), lineage=lineage, catalog=catalog, today=today, now=NOW
        )
    except PlanRefusedError as refused:
        return f"refused: {type(refused).__name__}: {refused}\n"
    return plan.to_json()


def _cases():
    exclude_x = {"exclude": [{"namespace": "ns", "name": "x"}, {"namespace": "ns", "name": "zzz"}]}
    windows = JobCatalog.parse(
        "version: 1\njobs:\n  - {namespace: ns, name: b, window_days: 2}\n  - {namespace: ns, name: c, window_days: 3}\n"
        "  - {namespace: ns, name: 'y', kind: spark, window_days: 5}\n"
    )
    chain45 = {f"j{i:02d}": [f"j{i + 1:02d}"] for i in range(44)}
    return {
        "food_delivery_example_catalog": lambda: plan_text(
            food_delivery(),
            config(["etl_orders"], namespace="food_delivery", dates=("2021-06-04", "2021-06-20")),
            catalog=JobCatalog.load(str(EXAMPLE_CATALOG)),
        ),
        "food_delivery_no_catalog": lambda: plan_text(
            food_delivery(), config(["etl_orders", "etl_drivers"], namespace="food_delivery")
        ),
        "diamond_windows": lambda: plan_text(
            edges_store({"a": ["b", "c"], "b": ["d"], "c": ["d", "e"], "d": ["e"]}),
            config(["a"], dates=("2021-06-04", {"start": "2021-06-20", "end": "2021-06-22"})),
            catalog=windows,
        ),
        "exclusions": lambda: plan_text(
            edges_store({"a": ["x", "b"], "x": ["y", "z"], "b": ["y"], "z": ["w"]}),
            config(["a"], downstream=exclude_x),
            catalog=windows,
        ),
        "excluded_root": lambda: plan_text(
            edges_store({"a": ["b"], "b": ["c"]}),
            config(["a"], downstream={"exclude": [{"namespace": "ns", "name": "a"}]}),
        ),
        "two_roots_one_downstream": lambda: plan_text(
            edges_store({"a": ["b"], "b": ["c"]}), config(["a", "b"], dates=("2021-06-28",)), catalog=windows
        ),
        "max_depth_cut": lambda: plan_text(
            edges_store({f"j{i:02d}": [f"j{i + 1:02d}", f"k{i:02d}"] for i in range(29)}),
            config(["j00"], downstream={"max_depth": 25}),
        ),
        "deep_chain": lambda: plan_text(edges_store(chain45), config(["j00"])),
        "downstream_disabled": lambda: plan_text(
            edges_store({"a": ["b"], "c": ["d"]}), config(["a", "c"], downstream={"enabled": False})
        ),
        "cycle_refused": lambda: plan_text(
            edges_store({"a": ["b"], "b": ["c"], "c": ["b", "d"]}), config(["a"])
        ),
        "step_conflict_refused": lambda: plan_text(
            edges_store({"a": ["b"]}),
            config(["a"]),
            catalog=JobCatalog.parse(
                "version: 1\njobs:\n  - {namespace: ns, name: a, kind: spark, transform: b}\n"
            ),
        ),
        "layered_1000_marquez": lambda: _layered(
            1000, layers=30, seed=3, cfg=config(["root"], namespace="gen", dates=("2021-06-01", "2021-06-10"))
        ),
        "layered_1000_cycle_refused": lambda: _layered(
            1000, layers=30, seed=3, dags_across_layers=True, cfg=config(["root"], namespace="gen")
        ),
        "layered_1000_in_memory": lambda: _layered(
            1000,
            layers=49,
            seed=7,
            in_memory=True,
            cfg=config(
                ["root"],
                namespace="gen",
                dates=("2021-06-04", {"start": "2021-06-10", "end": "2021-06-11"}),
                downstream={"max_depth": 40, "exclude": [{"namespace": "gen", "name": "job000050"}]},
            ),
        ),
    }


def _layered(
    jobs: int, *, layers: int, seed: int, cfg, in_memory: bool = False, dags_across_layers: bool = False
) -> str:
    store, catalog = layered_store(jobs, layers=layers, seed=seed, dags_across_layers=dags_across_layers)
    return plan_text(store, cfg, catalog=catalog, in_memory=in_memory)


CASES = _cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_plan_is_byte_identical_to_the_golden(name):
    text = CASES[name]().encode("utf-8")
    path = GOLDEN / f"{name}.json"
    big = GOLDEN / f"{name}.json.gz"  # the 1,000-job plans, ~1 MB each as text
    if RECORD:
        if len(text) > BIG_GOLDEN_BYTES:
            big.write_bytes(gzip.compress(text, mtime=0))
        else:
            path.write_bytes(text)
    expected = gzip.decompress(big.read_bytes()) if big.exists() else path.read_bytes()
    assert text == expected, f"{name}: the plan differs from its golden in {GOLDEN}"
