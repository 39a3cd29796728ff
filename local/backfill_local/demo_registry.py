"""The demo's transforms: the food delivery sample's, with one deliberate bug the demo switches
on for one backfill (docs/demo.md): while the file named by $BACKFILL_DEMO_FAULT_FILE exists,
`etl_orders` drops the feed it names. Safe publish catches it (the diff shows the lost rows,
the policy holds the step) and the demo discards it."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from spark_jobs.engine.registry import Registry, Transform
from spark_jobs.sample.transforms import FOOD_DELIVERY

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

FAULT_FILE_VARIABLE = "BACKFILL_DEMO_FAULT_FILE"


def dropped_feed() -> str | None:
    """The feed the bug drops now, or None when it is off."""
    name = os.environ.get(FAULT_FILE_VARIABLE)
    path = Path(name) if name else None
    return path.read_text().strip() or None if path is not None and path.is_file() else None


def _with_fault(transform: Transform) -> Transform:
    def apply(**frames: DataFrame) -> DataFrame:
        output = transform.function(**frames)
        feed = dropped_feed()
        return output if feed is None else output.where(output["feed"] != feed)

    return replace(transform, function=apply)


def _registry(sample: Registry) -> Registry:
    transforms = {name: sample[name] for name in sample.names}
    return Registry({name: _with_fault(t) if name == "etl_orders" else t for name, t in transforms.items()})


DEMO = _registry(FOOD_DELIVERY)
