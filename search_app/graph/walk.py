"""Bounded walks over links (pure; the links come from a ``neighbours`` callback).

Paths are ordered by depth, then by their node list, then by their link ids, so the same
request always returns the same paths. Every prefix is a path of its own. A path never
revisits a node. Levels are generated in that order and the walk stops as soon as one path
beyond ``limit`` exists, which is what ``truncated`` reports.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Link:
    id: str
    subject: str
    object: str
    predicate: str


@dataclass(frozen=True, slots=True)
class Step:
    """Following ``link`` from one node reaches ``node``."""

    node: str
    link: Link


@dataclass(frozen=True, slots=True)
class Path:
    nodes: tuple[str, ...]
    links: tuple[Link, ...]

    @property
    def depth(self) -> int:
        return len(self.links)


@dataclass(frozen=True, slots=True)
class Walk:
    paths: tuple[Path, ...]
    truncated: bool

    @property
    def nodes(self) -> list[str]:
        """Every node the returned paths reach, the seed included, sorted."""
        if not self.paths:
            return []
        return sorted({node for path in self.paths for node in path.nodes})

    @property
    def links(self) -> list[Link]:
        """Each link used by a returned path, once, in order of first use."""
        seen: dict[str, Link] = {}
        for path in self.paths:
            for link in path.links:
                seen.setdefault(link.id, link)
        return list(seen.values())

    def distances(self, seed: str) -> dict[str, int]:
        """The smallest index of every reached node on any path (the seed is 0)."""
        found = {seed: 0}
        for path in self.paths:
            for index, node in enumerate(path.nodes):
                found[node] = min(found.get(node, index), index)
        return found


def steps_from(node: str, links: Iterable[Link], direction: str) -> list[Step]:
    """The steps ``node`` can take along ``links`` in ``direction`` (out, in or both)."""
    steps = []
    for link in links:
        if direction in ("out", "both") and link.subject == node:
            steps.append(Step(link.object, link))
        if direction in ("in", "both") and link.object == node:
            steps.append(Step(link.subject, link))
    return steps


def walk(seed: str, *, depth: int, limit: int,
         neighbours: Callable[[set[str]], dict[str, list[Step]]]) -> Walk:
    """Walk from ``seed`` up to ``depth`` links, returning at most ``limit`` paths.

    ``neighbours(nodes)`` returns, for each node, the steps it can take (already filtered by
    direction and predicates); they are followed in (node, link id) order.
    """
    paths: list[Path] = []
    level = [Path((seed,), ())]
    for _ in range(depth):
        frontier = {path.nodes[-1] for path in level}
        options = neighbours(frontier) if frontier else {}
        next_level = []
        for path in level:
            for step in sorted(options.get(path.nodes[-1], []), key=lambda s: (s.node, s.link.id)):
                if step.node in path.nodes:
                    continue
                extended = Path(path.nodes + (step.node,), path.links + (step.link,))
                if len(paths) + len(next_level) == limit:
                    return Walk(tuple(paths + next_level), True)
                next_level.append(extended)
        paths.extend(next_level)
        level = next_level
        if not level:
            break
    return Walk(tuple(paths), False)
