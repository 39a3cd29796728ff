"""The shared package's subpackages import each other in one direction only: no package-level
import cycle (a cycle makes every new capability drag the other side's dependencies along,
as the replay -> trigger import did just to build a notifier). Within the package no module
imports one that imports it back, however indirectly: not at module level, not inside a
function, not under TYPE_CHECKING (a lazy import that breaks a circle only hides it)."""

from __future__ import annotations

from tests.support.imports import find_cycle, module_imports, package_imports


def test_the_cycle_finder_finds_cycles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}}) is None


def test_no_package_level_import_cycle():
    graph = package_imports()
    assert graph, "found no imports at all: the scan is broken"
    assert find_cycle(graph) is None, f"package-level import cycle: {' -> '.join(find_cycle(graph) or [])}"


def test_replay_does_not_import_the_trigger():
    assert "trigger" not in package_imports().get("replay", set())


def test_the_module_graph_sees_lazy_and_type_checking_imports():
    graph = module_imports()
    # trigger/service.py imports control documents inside a method (rare next to configs)
    assert "backfill_orchestrator.trigger.control_documents" in graph["backfill_orchestrator.trigger.service"]
    # lineage_events/emitter.py names the run report's contract under TYPE_CHECKING only
    assert "backfill_orchestrator.contracts" in graph["backfill_orchestrator.lineage_events.emitter"]


def test_no_import_circle_among_the_modules():
    circle = find_cycle(module_imports())
    assert circle is None, f"import circle: {' -> '.join(circle or [])}"
