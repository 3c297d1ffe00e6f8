"""Reading links and nodes for graph views, orphan reports and graph boost.

A walk stays inside one workspace and one edge collection (any entity). Only live links are
followed: ready, active, not retracted and current (a newer row in the same keyed lane, ready
or not, supersedes a link). Each row's role fields are read through the declaration of its
own collection version.
"""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

from django.db import connection

from catalog_app.catalog.collections import Collection
from catalog_app.catalog.registry import Catalog
from catalog_app.record_sql import RECORD, current_in_lane, live, superseded

from ..engine.resolve import FieldAccess, field_paths
from ..backends.pg_scope import value_expression
from .walk import Link, Step, steps_from

ROLES = ("subject", "object", "predicate")


@dataclass(frozen=True, slots=True)
class LinkRecord:
    link: Link
    text: str
    content: dict


def _live(alias: str = "r") -> str:
    """SQL: a live, active, current row of the workspace (one parameter: the workspace)."""
    return (f"{alias}.workspace_id = %s AND {live(alias)} AND {alias}.status = 'active' "
            f"AND {current_in_lane(alias).sql}")


class LinkStore:
    """The live links of one edge collection, with the view's field mapping."""

    def __init__(self, *, workspace_id: int, catalog: Catalog, edges: str, mapping: dict[str, str]):
        self.workspace_id = workspace_id
        self.versions: list[Collection] = [d.value for d in catalog.versions("collection", edges)]
        self.edges = edges
        self.access = {(c.version, role): FieldAccess(c.fields[mapping[role]],
                                                      field_paths(c.fields[mapping[role]], catalog))
                       for c in self.versions for role in ROLES if mapping[role] in c.fields}

    def _role(self, role: str) -> str:
        whens = [f"WHEN r.collection_version = {c.version} THEN "
                 f"({value_expression(self.access[(c.version, role)], 'r')} #>> '{{}}')"
                 for c in self.versions if (c.version, role) in self.access]
        return f"(CASE {' '.join(whens)} END)" if whens else "NULL::text"

    def links_touching(self, nodes: set[str], *, direction: str, predicates: tuple[str, ...]) -> list[LinkRecord]:
        """Live links whose subject (out), object (in) or either (both) is in ``nodes``."""
        subject, obj, predicate = self._role("subject"), self._role("object"), self._role("predicate")
        ends = {"out": f"{subject} = ANY(%s)", "in": f"{obj} = ANY(%s)",
                "both": f"({subject} = ANY(%s) OR {obj} = ANY(%s))"}[direction]
        node_list = sorted(nodes)
        params: list = [self.workspace_id, self.edges] + [node_list] * (2 if direction == "both" else 1)
        sql = (f"SELECT r.id, {subject}, {obj}, {predicate}, r.text, r.content FROM {RECORD} r "
               f"WHERE {_live()} AND r.collection = %s AND {ends}")
        if predicates:
            sql += f" AND {predicate} = ANY(%s)"
            params.append(list(predicates))
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        return [LinkRecord(Link(str(row[0]), row[1], row[2], row[3]), row[4], _json(row[5]))
                for row in rows if row[1] is not None and row[2] is not None]

    def neighbours(self, *, direction: str, predicates: tuple[str, ...], seen: dict[str, LinkRecord]):
        """A ``walk`` callback; records every link it returns in ``seen``."""
        def fetch(nodes: set[str]) -> dict[str, list[Step]]:
            records = self.links_touching(nodes, direction=direction, predicates=predicates)
            for record in records:
                seen[record.link.id] = record
            links = [record.link for record in records]
            return {node: steps_from(node, links, direction) for node in nodes}
        return fetch

    def linked_node_names(self) -> set[tuple[str, str]]:
        """``(entity, endpoint)`` of every live link that is not an outdated automatic link:
        orphan reports compare a node with the links of its own entity."""
        subject, obj = self._role("subject"), self._role("object")
        sql = (f"SELECT r.entity, {subject}, {obj} FROM {RECORD} r WHERE {_live()} AND r.collection = %s "
               f"AND NOT EXISTS (SELECT 1 FROM {RECORD} source WHERE source.id = ANY(r.derived_from) "
               f"AND {superseded('source').sql})")
        with connection.cursor() as cursor:
            cursor.execute(sql, [self.workspace_id, self.edges])
            return {(row[0], name) for row in cursor.fetchall() for name in row[1:] if name is not None}


def current_nodes(*, workspace_id: int, collection: str) -> list[tuple[uuid.UUID, str, str, str, dict]]:
    """Current, active, ready, non-retracted keyed records of ``collection``, by entity and key."""
    sql = (f"SELECT r.id, r.entity, r.key, r.text, r.content FROM {RECORD} r WHERE {_live()} "
           f"AND r.collection = %s AND r.key IS NOT NULL ORDER BY r.entity COLLATE \"C\", r.key COLLATE \"C\", r.seq")
    with connection.cursor() as cursor:
        cursor.execute(sql, [workspace_id, collection])
        return [(row[0], row[1], row[2], row[3], _json(row[4])) for row in cursor.fetchall()]


def _json(value):
    return json.loads(value) if isinstance(value, str) else value
