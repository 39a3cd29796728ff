"""Every exception the project raises on purpose is a BackfillError of exactly one category
(errors.py): handlers branch on UserError / ServiceError / PolicyRefusal, the CLI takes its
exit code from the category, and nothing falls through as a "bug" by accident.

The classes are found by importing every module of the package, the DAG folder (its runtime
package and DAG files), the Spark job and the local tooling, in a subprocess (an Airflow
import must not configure this process's Airflow)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# Classes that must stay outside BackfillError, each with why (a subclass of a library's
# exception that only that library raises and catches would belong here). None today.
OUTSIDE_THE_ROOT: dict[str, str] = {}

WALK = """
import importlib, inspect, json, pkgutil, sys
from pathlib import Path
from backfill_orchestrator.errors import CATEGORIES, BackfillError

dags = Path(sys.argv[1])
sys.path.insert(0, str(dags))
roots = ["backfill_orchestrator", "spark_jobs", "backfill_local"]
roots += sorted(p.name for p in dags.iterdir() if (p / "__init__.py").is_file())
modules = sorted(p.stem for p in dags.glob("*.py"))
for root in roots:
    package = importlib.import_module(root)
    modules.append(root)
    modules += [m.name for m in pkgutil.walk_packages(package.__path__, root + ".")]
found = {}
for name in modules:
    if name.endswith("__main__"):  # running it is the point of a __main__
        continue
    module = importlib.import_module(name)  # a module that cannot be imported fails the test
    for value in vars(module).values():
        if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == name:
            found[f"{name}.{value.__qualname__}"] = value
names = {cls: name for name, cls in found.items()}
print(json.dumps({
    "modules": len(modules),
    "classes": {
        name: {
            "root": issubclass(cls, BackfillError),
            "categories": [c.__name__ for c in CATEGORIES if issubclass(cls, c)],
            "ancestors": [names[base] for base in cls.__mro__[1:] if base in names],
        }
        for name, cls in found.items()
    },
}))
"""


def problems(classes: dict[str, dict]) -> list[str]:
    """What is wrong with the hierarchy: a class outside the root (and not allowed to be), a
    class of several categories, or an error raised as such (a class nothing derives from) of
    none. A class of no category with classes under it is a base grouping errors by subject
    (LineageError, DocumentError, LocatedIssuesError): each error under it has its own."""
    bases = {ancestor for facts in classes.values() for ancestor in facts["ancestors"]}
    found = []
    for name, facts in sorted(classes.items()):
        if not facts["root"]:
            if name not in OUTSIDE_THE_ROOT:
                found.append(f"{name}: not a BackfillError")
        elif len(facts["categories"]) > 1:
            found.append(f"{name}: of several categories {facts['categories']}")
        elif not facts["categories"] and name not in bases:
            found.append(f"{name}: of no category (UserError, ServiceError or PolicyRefusal)")
    return found


@pytest.fixture(scope="module")
def hierarchy(tmp_path_factory: pytest.TempPathFactory) -> dict:
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path_factory.mktemp("airflow-home"))}
    walked = subprocess.run(
        [sys.executable, "-c", WALK, str(REPO / "dags")],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert walked.returncode == 0, walked.stderr[-3000:]
    return json.loads(walked.stdout.strip().splitlines()[-1])


def test_every_exception_is_a_backfill_error_of_one_category(hierarchy: dict) -> None:
    classes = hierarchy["classes"]
    assert hierarchy["modules"] > 150 and len(classes) > 100  # the walk reached everything
    assert problems(classes) == []
    assert set(OUTSIDE_THE_ROOT) <= set(classes), "an allowlisted class that no longer exists"


def test_one_class_per_error_name_in_the_package(hierarchy: dict) -> None:
    package = [name for name in hierarchy["classes"] if name.startswith("backfill_orchestrator.")]
    short = [name.rsplit(".", 1)[1] for name in package]
    assert sorted({name for name in short if short.count(name) > 1}) == []


def test_the_check_finds_what_it_is_for() -> None:
    classes = {
        "m.Outside": {"root": False, "categories": [], "ancestors": []},
        "m.Both": {"root": True, "categories": ["UserError", "ServiceError"], "ancestors": []},
        "m.Bare": {"root": True, "categories": [], "ancestors": []},
        "m.Subject": {"root": True, "categories": [], "ancestors": []},
        "m.SubjectUser": {"root": True, "categories": ["UserError"], "ancestors": ["m.Subject"]},
        "m.SubjectBare": {"root": True, "categories": [], "ancestors": ["m.Subject"]},
    }
    assert problems(classes) == [
        "m.Bare: of no category (UserError, ServiceError or PolicyRefusal)",
        "m.Both: of several categories ['UserError', 'ServiceError']",
        "m.Outside: not a BackfillError",
        "m.SubjectBare: of no category (UserError, ServiceError or PolicyRefusal)",
    ]
