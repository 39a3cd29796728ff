"""The shared package's import graph, read from its source (nothing is imported): between
subpackages at module level, and between modules with every import counted."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import backfill_orchestrator

PACKAGE_ROOT = Path(backfill_orchestrator.__file__).parent
NAME = "backfill_orchestrator"


def _unit(module: str) -> str:
    """backfill_orchestrator.trigger.service -> trigger; backfill_orchestrator.errors -> errors."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def package_imports() -> dict[str, set[str]]:
    """unit -> units it imports at module level (imports inside functions are lazy by design)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for path in PACKAGE_ROOT.rglob("*.py"):
        relative = path.relative_to(PACKAGE_ROOT.parent).with_suffix("")
        module = ".".join(relative.parts).removesuffix(".__init__")
        source = _unit(module)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:  # module level only
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            for target in targets:
                if target.startswith(NAME + ".") and (unit := _unit(target)) and unit != source:
                    graph[source].add(unit)
    return graph


def _modules() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its own name)."""
    modules = {}
    for path in PACKAGE_ROOT.rglob("*.py"):
        relative = path.relative_to(PACKAGE_ROOT.parent).with_suffix("")
        modules[".".join(relative.parts).removesuffix(".__init__")] = path
    return modules


def module_imports() -> dict[str, set[str]]:
    """module -> the package's modules it imports anywhere in its source. `from a.b import c`
    names the module `a.b.c` when there is one, else `a.b`; importing a submodule runs its
    parents' `__init__` too, but that is the package's own layering, not an edge."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the module's own package upwards
                    package = name.split(".") if is_package else name.split(".")[:-1]
                    base = ".".join(
                        package[: len(package) - node.level + 1] + ([node.module] if node.module else [])
                    )
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    for alias in node.names
                ]
            for target in targets:
                while target and target not in modules:  # a name inside a module: the module
                    target = target.rpartition(".")[0]
                if target.startswith(NAME) and target != name:
                    graph[name].add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None
