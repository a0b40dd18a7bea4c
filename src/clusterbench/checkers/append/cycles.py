"""Finding the cycles of each class in the dependency graph.

A cycle of a class lives inside one strongly connected component of the edges that class may
use. A search starts from an edge a -> b of the class's anchor type inside such a component
(ww for G0, wr for G1c, rw for the others) and looks for the shortest way back from b to a by
breadth-first search over (transaction, state) pairs, the state counting what the class
constrains (rw edges so far, adjacency, a required wr, process or realtime edge), never passing
a transaction twice. Paths back from b to a only pass transactions whose component in the
graph of the remaining edge types lies between b's and a's in topological order, which rules
out most anchors at once in a large history.

The search is bounded (cycles kept and edges tried per component and class, states per search,
a time budget for the whole); when a bound cuts it short, `truncated` says so, and every
component in which no cycle was found is still reported with one cycle (its class computed from
its edges).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from clusterbench.checkers.append.classes import LABELS, ORDER, Spec, classify, make_specs
from clusterbench.checkers.append.graph import PROCESS, REALTIME, RW, WR, WW, Graph

CYCLES_PER_SCC = 5
EDGES_PER_SCC = 400
STATES_PER_SEARCH = 20_000
SEARCH_BUDGET_S = 30.0
ALL = WW | WR | RW | PROCESS | REALTIME

Cycle = tuple[list[int], list[int]]  # transactions (the first not repeated at the end), edge types
Skip = Callable[[str, "Found"], "str | None"]  # why a class need not be searched for, or None


@dataclass
class Found:
    """Cycles found per class, each once (as a rotation starting at its smallest vertex)."""

    specs: dict[str, Spec] = field(default_factory=make_specs)
    cycles: dict[str, list[Cycle]] = field(default_factory=lambda: {c: [] for c in ORDER})
    seen: set[tuple[str, tuple[int, ...]]] = field(default_factory=set)
    nodes: set[int] = field(default_factory=set)
    truncated: bool = False
    not_searched: dict[str, str] = field(default_factory=dict)
    fallback: list[tuple[str, Cycle]] = field(default_factory=list)

    def add(self, nodes: list[int], masks: list[int], skip: Skip) -> dict[str, bool]:
        """Record a cycle under the classes it belongs to, except those a class already found
        makes needless (`skip`); returns those classes, each with whether the cycle is new in it
        (not recorded before, in any rotation)."""
        classes = {n: labels for n, labels in classify(masks, self.specs).items() if not skip(n, self)}
        i = nodes.index(min(nodes))
        rot_nodes = nodes[i:] + nodes[:i]
        out = {}
        for name, labels in classes.items():
            key = (name, tuple(rot_nodes))
            out[name] = key not in self.seen
            if out[name]:
                self.seen.add(key)
                self.cycles[name].append((rot_nodes, labels[i:] + labels[:i]))
        self.nodes.update(nodes)
        return out


class Search:
    def __init__(self, graph: Graph, skip: Skip) -> None:
        self.g = graph
        self.skip = skip
        self.found = Found()
        self.deadline = time.monotonic() + SEARCH_BUDGET_S

    def run(self) -> Found:
        labels, sizes = self.g.components(ALL)
        if not np.any(sizes > 1):
            return self.found
        for name in ORDER:
            why = self.skip(name, self.found)
            if why:
                self.found.not_searched[name] = why
                continue
            self._search(self.found.specs[name])
        self._fallback(labels)
        return self.found

    def _anchors(self, spec: Spec) -> list[tuple[int, int]]:
        lab_a = np.asarray(self.g.components(spec.allowed)[0])
        lab_h = np.asarray(self.g.components(spec.rest)[0])
        src, dst, _ = self.g.edges_of(spec.anchor)
        # inside one component, and a way back from dst to src not ruled out by topological order
        ok = (lab_a[src] == lab_a[dst]) & (lab_h[dst] >= lab_h[src])
        return list(zip(src[ok].tolist(), dst[ok].tolist(), strict=True))

    def _search(self, spec: Spec) -> None:
        lab_a, _ = self.g.components(spec.allowed)
        lab_h, _ = self.g.components(spec.rest)
        kept: dict[int, int] = {}
        tried: dict[int, int] = {}
        for a, b in self._anchors(spec):
            comp = lab_a[a]
            if kept.get(comp, 0) >= CYCLES_PER_SCC or tried.get(comp, 0) >= EDGES_PER_SCC:
                self.found.truncated = True
                continue
            if time.monotonic() > self.deadline:
                self.found.truncated = True
                return
            tried[comp] = tried.get(comp, 0) + 1
            for nodes, _ in self._walks(spec, a, b, lab_a, lab_h):
                masks = [self.g.mask(x, y) for x, y in zip(nodes, nodes[1:] + nodes[:1], strict=True)]
                got = self.found.add(nodes, masks, self.skip)
                if spec.name in got:
                    # Only a cycle not found before counts towards the component's budget (the
                    # anchor b -> a of a 2-cycle found from a -> b gives the same cycle again).
                    if got[spec.name]:
                        kept[comp] = kept.get(comp, 0) + 1
                    break

    def _walks(
        self, spec: Spec, a: int, b: int, lab_a: Sequence[int], lab_h: Sequence[int]
    ) -> Iterator[Cycle]:
        """Shortest simple cycles a -> b -> ... -> a of the class, shortest first."""
        first = LABELS.index(spec.anchor)
        s0 = spec.step[0][first]
        first_rw = spec.anchor == RW
        comp, lo, hi = lab_a[a], lab_h[a], lab_h[b]
        start = (b, s0)
        parent: dict[tuple[int, int], tuple[tuple[int, int], int] | None] = {start: None}
        queue = deque([start])
        expanded = 0
        while queue:
            state = queue.popleft()
            expanded += 1
            if expanded > STATES_PER_SEARCH:
                self.found.truncated = True
                return
            v, s = state
            on_path = _path_nodes(parent, state)
            for w, bits in self.g.succ(v):
                if w == a:
                    for li in spec.options[bits]:
                        s2 = spec.step[s][li]
                        if s2 >= 0 and spec.accept[s2][first_rw]:
                            yield _reconstruct(parent, state, a, spec.anchor, LABELS[li])
                    continue
                if w in on_path or lab_a[w] != comp or not lo <= lab_h[w] <= hi:
                    continue
                for li in spec.options[bits]:
                    s2 = spec.step[s][li]
                    if s2 >= 0 and (w, s2) not in parent:
                        parent[(w, s2)] = (state, li)
                        queue.append((w, s2))

    def _fallback(self, labels: Sequence[int]) -> None:
        """One cycle, whatever its class, in each component of the whole graph where none was
        found (a component always holds one), unless every class it belongs to is one the
        search skipped as implied by a class found."""
        covered = {labels[v] for v in self.found.nodes}
        lab = np.asarray(labels)
        src, dst, _ = self.g.edges_of(ALL)
        inside = lab[src] == lab[dst]
        done: set[int] = set()
        for a, b in zip(src[inside].tolist(), dst[inside].tolist(), strict=True):
            comp = labels[a]
            if comp in covered or comp in done:
                continue
            done.add(comp)
            nodes = _shortest_back(self.g, labels, a, b)
            masks = [self.g.mask(x, y) for x, y in zip(nodes, nodes[1:] + nodes[:1], strict=True)]
            for name, new in self.found.add(nodes, masks, self.skip).items():
                if new:
                    self.found.fallback.append((name, (nodes, masks)))


def _path_nodes(
    parent: dict[tuple[int, int], tuple[tuple[int, int], int] | None], state: tuple[int, int]
) -> set[int]:
    out = set()
    cur: tuple[int, int] | None = state
    while cur is not None:
        out.add(cur[0])
        link = parent[cur]
        cur = None if link is None else link[0]
    return out


def _reconstruct(
    parent: dict[tuple[int, int], tuple[tuple[int, int], int] | None],
    state: tuple[int, int],
    a: int,
    anchor: int,
    last: int,
) -> Cycle:
    nodes, labels = [], [last]
    cur: tuple[int, int] | None = state
    while cur is not None:
        nodes.append(cur[0])
        link = parent[cur]
        if link is not None:
            labels.append(LABELS[link[1]])
        cur = None if link is None else link[0]
    nodes.append(a)
    labels.append(anchor)
    return list(reversed(nodes)), list(reversed(labels))


def _shortest_back(g: Graph, labels: Sequence[int], a: int, b: int) -> list[int]:
    """a, b and the shortest path from b back to a inside their component."""
    comp = labels[a]
    prev: dict[int, int] = {b: b}
    queue = deque([b])
    while queue:
        v = queue.popleft()
        if v == a:
            break
        for w, _ in g.succ(v):
            if labels[w] == comp and w not in prev:
                prev[w] = v
                queue.append(w)
    path = [a]
    while path[-1] != b:
        path.append(prev[path[-1]])
    return [a, *reversed(path[1:])]  # a, b, ..., the vertex before a
