"""Validate an OpenLineage event (a JSON mapping) against the spec's JSON Schemas: the core
RunEvent schema, then every facet against the schema its `_schemaURL` names (see
openlineage_spec/README.md for where the schemas come from). Used by the Marquez double and
the tests; a facet whose schema is not known here is reported, never passed unchecked."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from jsonschema import Draft202012Validator, FormatChecker
from referencing import Registry, Resource

SPEC_DIR = Path(__file__).with_name("openlineage_spec")
OWN_FACETS_DIR = Path(__file__).resolve().parents[2] / "docs" / "schemas" / "openlineage"
CORE_URL = "https://openlineage.io/spec/2-0-2/OpenLineage.json"

_formats = FormatChecker()


@_formats.checks("uri", raises=ValueError)
def _is_uri(value: object) -> bool:
    return not isinstance(value, str) or bool(urlparse(value).scheme)


@cache
def _schemas() -> tuple[dict[str, Any], dict[str, dict[str, Any]], Registry]:
    """(core schema, facet file name -> schema, registry resolving every $id)."""
    core = json.loads((SPEC_DIR / "OpenLineage.json").read_text())
    facets = {}
    for directory in (SPEC_DIR / "facets", OWN_FACETS_DIR):
        for path in sorted(directory.glob("*.json")):
            facets[path.name] = json.loads(path.read_text())
    resources = [(CORE_URL, Resource.from_contents(core))]
    resources += [(schema["$id"], Resource.from_contents(schema)) for schema in facets.values()]
    return core, facets, Registry().with_resources(resources)


def _errors(schema: Mapping[str, Any], instance: Any, where: str) -> Iterator[str]:
    registry = _schemas()[2]
    validator = Draft202012Validator(schema, registry=registry, format_checker=_formats)
    for error in sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path)):
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        yield f"{where}{path}: {error.message}"


def _facets(event: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    def of(container: Any, key: str, where: str) -> Iterator[tuple[str, Any]]:
        facets = container.get(key) if isinstance(container, Mapping) else None
        if isinstance(facets, Mapping):
            for name, facet in facets.items():
                yield f"{where}.{key}.{name}", facet

    yield from of(event.get("run"), "facets", "run")
    yield from of(event.get("job"), "facets", "job")
    for side, facet_key in (("inputs", "inputFacets"), ("outputs", "outputFacets")):
        datasets = event.get(side)
        for index, dataset in enumerate(datasets if isinstance(datasets, list) else []):
            yield from of(dataset, "facets", f"{side}[{index}]")
            yield from of(dataset, facet_key, f"{side}[{index}]")


def validate_event(event: Any) -> list[str]:
    """Every problem as `location: message`; an empty list means valid."""
    core, facet_schemas, _ = _schemas()
    problems = list(_errors(core, event, "event"))
    if not isinstance(event, Mapping):
        return problems
    for where, facet in _facets(event):
        url = facet.get("_schemaURL") if isinstance(facet, Mapping) else None
        if not isinstance(url, str) or "#/$defs/" not in url:
            problems.append(f"{where}._schemaURL: missing or without a #/$defs/ pointer")
            continue
        document, definition = url.split("#/$defs/", 1)
        schema = facet_schemas.get(document.rsplit("/", 1)[-1])
        if schema is None or definition not in schema.get("$defs", {}):
            problems.append(f"{where}._schemaURL: no known schema for {url}")
            continue
        problems += _errors({"$ref": f"{schema['$id']}#/$defs/{definition}"}, facet, where)
    return problems
