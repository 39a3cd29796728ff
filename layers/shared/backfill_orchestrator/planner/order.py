"""Dependency order of steps: waves by longest path, or the cycle that makes an order impossible."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping


class CycleFoundError(Exception):
    def __init__(self, cycle: list[str]):
        self.cycle = cycle  # node ids in edge order; cycle[-1] -> cycle[0] closes it
        super().__init__(" -> ".join([*cycle, cycle[0]]))


def waves(nodes: Iterable[str], upstream: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Group nodes so that each comes one wave after the latest of its upstream nodes.

    Linear in nodes + edges (Kahn's algorithm). Each wave is sorted; raises CycleFoundError
    naming one cycle when the dependencies go round."""
    nodes = list(nodes)
    downstream: dict[str, list[str]] = {node: [] for node in nodes}
    waiting: dict[str, int] = {}
    for node in nodes:
        parents = set(upstream.get(node, ()))
        waiting[node] = len(parents)
        for parent in parents:
            downstream[parent].append(node)
    level = {node: 0 for node in nodes if waiting[node] == 0}
    ready = deque(level)
    placed = 0
    while ready:
        node = ready.popleft()
        placed += 1
        for child in downstream[node]:
            level[child] = max(level.get(child, 0), level[node] + 1)
            waiting[child] -= 1
            if waiting[child] == 0:
                ready.append(child)
    if placed < len(nodes):
        raise CycleFoundError(_one_cycle({n for n in nodes if waiting[n] > 0}, upstream))
    grouped: list[list[str]] = [[] for _ in range(max(level.values(), default=-1) + 1)]
    for node, index in level.items():
        grouped[index].append(node)
    return [sorted(group) for group in grouped]


def _one_cycle(stuck: set[str], upstream: Mapping[str, Iterable[str]]) -> list[str]:
    """Every stuck node has a stuck parent, so walking parents must come back to a node seen."""
    node = min(stuck)
    position: dict[str, int] = {}
    trail: list[str] = []
    while node not in position:
        position[node] = len(trail)
        trail.append(node)
        node = min(parent for parent in upstream[node] if parent in stuck)
    cycle = list(reversed(trail[position[node]:]))
    first = cycle.index(min(cycle))  # start at the smallest id: the same cycle reads the same way
    return cycle[first:] + cycle[:first]
