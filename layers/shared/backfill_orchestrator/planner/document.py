"""The `Plan` model from the steps the planner made, without validating each step again.

pydantic validating a plan of 50,000 steps cost as much as a third of planning it
(benchmarks/planner.py): two Python-level checks per job name, a new list for each of
~500,000 dates and 150,000 models built in Rust, then scanned by the garbage collector.
Nothing in a step needs it: ids, kinds, transforms, windows and DAG ids come from the
validated catalog (or lineage names, which any string may be), hours and feeds from the
validated config, dates and upstream ids are made here, unique and ordered by construction.
Only job names come from lineage unchecked, so they are checked in bulk against JobRef's
rule, and a plan with a name that would not pass is validated whole, raising as before.

Everything but the waves is still validated by pydantic. tests/unit/test_plan_document.py
holds the trusted and the validated plan equal, document and model, on random graphs."""

from __future__ import annotations

import re
from operator import itemgetter
from typing import Any

from pydantic import BaseModel

from backfill_orchestrator.config.model import JobRef
from backfill_orchestrator.contracts.plan import Plan, PlanStep, Wave

# JobRef's namespace and name (config.model `NonBlank`): fullmatch of `^\S(.*\S)?$`, 1..1024.
_NON_BLANK = re.compile(r"\S(.*\S)?").fullmatch
_MAX_NAME = 1024
_set = object.__setattr__


def plan_model(head: dict[str, Any], waves: list[list[dict[str, Any]]]) -> Plan:
    """`head`: the plan's fields but `waves`; `waves`: each wave's step fields, in PlanStep's
    field order, `job` as `{"namespace", "name"}`. The step dicts become the models' own."""
    jobs = [step["job"] for steps in waves for step in steps]
    if not _job_names_valid(jobs):
        return Plan.model_validate(
            {**head, "waves": [{"index": index, "steps": steps} for index, steps in enumerate(waves)]}
        )
    for step, job in zip((step for steps in waves for step in steps), jobs, strict=True):
        step["job"] = _trusted(JobRef, job)
    built = [
        _trusted(Wave, {"index": index, "steps": [_trusted(PlanStep, step) for step in steps]})
        for index, steps in enumerate(waves)
    ]
    return Plan.model_validate({**head, "waves": []}).model_copy(update={"waves": built})


def _job_names_valid(jobs: list[dict[str, str]]) -> bool:
    texts = set(map(itemgetter("namespace"), jobs))
    texts.update(map(itemgetter("name"), jobs))
    return all(map(_NON_BLANK, texts)) and max(map(len, texts), default=0) <= _MAX_NAME


_FIELDS_SET: dict[type[BaseModel], set[str]] = {
    model: set(model.model_fields) for model in (JobRef, PlanStep, Wave)
}


def _trusted(model: type[BaseModel], fields: dict[str, Any]) -> BaseModel:
    """What `model_construct` makes when every field is given, minus its per-field Python
    loop. Every instance of a model shares one fields-set: these models are frozen, and
    pydantic copies the set before `model_copy(update=...)` changes it."""
    instance = model.__new__(model)
    _set(instance, "__dict__", fields)
    _set(instance, "__pydantic_fields_set__", _FIELDS_SET[model])
    _set(instance, "__pydantic_extra__", None)
    _set(instance, "__pydantic_private__", None)
    return instance
