"""Dependency order of steps: waves by longest path, or the cycle that makes an order impossible."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from backfill_orchestrator.errors import PolicyRefusal


class CycleFoundError(PolicyRefusal):
    """The dependencies go round: no order exists (the planner names the jobs: LineageCycleError)."""

    def __init__(self, cycle: list[str]):
        self.cycle = cycle  # node ids in edge order; cycle[-1] -> cycle[0] closes it
        super().__init__(" -> ".join([*cycle, cycle[0]]))


def waves(upstream: Sequence[Collection[int]], *, names: Sequence[str]) -> list[list[int]]:
    """Group nodes 0..n-1 so that each comes one wave after the latest of its upstream nodes.

    Linear in nodes + edges (Kahn's algorithm). Each wave is sorted by name; raises
    CycleFoundError naming one cycle when the dependencies go round."""
    count = len(upstream)
    downstream: list[list[int]] = [[] for _ in range(count)]
    waiting = [len(parents) for parents in upstream]
    for node, parents in enumerate(upstream):
        for parent in parents:
            downstream[parent].append(node)
    level = [0] * count
    ready = [node for node in range(count) if not waiting[node]]
    for node in ready:  # grows while it is walked: a queue
        child_level = level[node] + 1
        for child in downstream[node]:
            if level[child] < child_level:
                level[child] = child_level
            waiting[child] -= 1
            if not waiting[child]:
                ready.append(child)
    if len(ready) < count:
        stuck = [node for node in range(count) if waiting[node] > 0]
        named = {names[node]: [names[parent] for parent in upstream[node]] for node in stuck}
        raise CycleFoundError(_one_cycle(set(named), named))
    grouped: list[list[int]] = [[] for _ in range(max(level, default=-1) + 1)]
    for node in range(count):
        grouped[level[node]].append(node)
    by_name = names.__getitem__
    return [sorted(group, key=by_name) for group in grouped]


def _one_cycle(stuck: set[str], upstream: Mapping[str, Iterable[str]]) -> list[str]:
    """Every stuck node has a stuck parent, so walking parents must come back to a node seen."""
    node = min(stuck)
    position: dict[str, int] = {}
    trail: list[str] = []
    while node not in position:
        position[node] = len(trail)
        trail.append(node)
        node = min(parent for parent in upstream[node] if parent in stuck)
    cycle = list(reversed(trail[position[node] :]))
    first = cycle.index(min(cycle))  # start at the smallest id: the same cycle reads the same way
    return cycle[first:] + cycle[:first]
