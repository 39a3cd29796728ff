"""The jobs downstream of the roots within `max_depth` hops, numbered once.

The planner works on job numbers, not (namespace, name) keys: jobs are numbered in
breadth-first order from the roots (the fewest hops first, as Marquez's walk and the plan's
`max_depth` count them) and their readers kept as lists of numbers, so everything after this
is list indexing rather than hashing tuples of strings (benchmarks/planner.py: half the time
at 50,000 jobs, and the time per job no longer grows with the graph)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from backfill_orchestrator.lineage.graph import JobKey, LineageGraph


class Reach:
    """Every job within `max_depth` hops downstream of the roots, ignoring exclusions.

    - `keys[n]`: job number n (the roots are 0 .. len(roots)-1), in breadth-first order;
    - `hops[n]`: its fewest hops from a root;
    - `readers[n]`: the numbers of the jobs that read its outputs and are within reach;
    - `beyond[n]`: readers of a job at `max_depth` that are out of reach (for the warning)."""

    def __init__(self, graph: LineageGraph, roots: Sequence[JobKey], max_depth: int):
        consumers = graph.consumers
        keys: list[JobKey] = list(roots)
        number: dict[JobKey, int] = {key: index for index, key in enumerate(keys)}
        hops = [0] * len(keys)
        readers: list[list[int]] = []
        at = 0
        while at < len(keys) and hops[at] < max_depth:
            next_hop = hops[at] + 1
            out: list[int] = []
            for reader in consumers.get(keys[at], ()):
                found = number.get(reader)
                if found is None:
                    found = number[reader] = len(keys)
                    keys.append(reader)
                    hops.append(next_hop)
                out.append(found)
            readers.append(out)
            at += 1
        # Breadth first, so the rest are all at max_depth: their readers are known but not followed.
        beyond: dict[int, list[JobKey]] = {}
        for index in range(at, len(keys)):
            out = []
            for reader in consumers.get(keys[index], ()):
                found = number.get(reader)
                if found is None:
                    beyond.setdefault(index, []).append(reader)
                else:
                    out.append(found)
            readers.append(out)
        self.keys, self.number, self.hops, self.readers, self.beyond = keys, number, hops, readers, beyond
        self.max_depth = max_depth
        self.root_count = len(roots)

    def planned(self, blocked: Collection[JobKey]) -> tuple[Sequence[int], Sequence[int]]:
        """The jobs reached without entering a blocked job, breadth first, and their hops (-1:
        not planned). Without a blocked job in reach that is every job, as numbered."""
        stops = {self.number[key] for key in blocked if key in self.number}
        if not stops:
            return range(len(self.keys)), self.hops
        hops = [-1] * len(self.keys)
        order = list(range(self.root_count))
        for root in order:
            hops[root] = 0
        readers, max_depth = self.readers, self.max_depth
        for job in order:  # grows while it is walked: a breadth-first queue
            if hops[job] == max_depth:
                continue
            for reader in readers[job]:
                if hops[reader] < 0 and reader not in stops:
                    hops[reader] = hops[job] + 1
                    order.append(reader)
        return order, hops
