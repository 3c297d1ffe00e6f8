"""The ``pg`` backend passes the candidate-backend contract."""
import json
import struct

import pytest
from django.db import connection

from catalog_app.catalog.runtime import catalog_for_workspace
from catalog_app.record_sql import vector_literal
from search_app import pipeline
from search_app.backends import backend_for, pg
from search_app.engine.resolve import resolve_search
from search_app.services import search_spec_parse
from tests.search_app.backend_contract import BackendContract
from tests.search_app.search_factories import ingest_ready, item

pytestmark = pytest.mark.model


class TestPgBackend(BackendContract):
    backend = pg


def test_the_pg_profile_backend_is_the_pg_module():
    assert backend_for("pg") is pg
    with pytest.raises(KeyError):
        backend_for("elastic")


def test_the_reload_reads_each_value_as_the_text_format_gives_it(catalog):
    """The reload reads in binary; every value must still be the one Django's text-format cursor
    gives: above all text_match, a float4 whose binary form is its exact float32 value, not the
    float its shortest decimal form parses to."""
    ids = ingest_ready(catalog, [item(text, occurred_at=f"2026-07-0{1 + i}T09:00:00Z")
                                 for i, text in enumerate(["Budget draft for the offsite",
                                                           "The budget needs another review",
                                                           "Maria confirmed the Q3 budget review"])])
    spec = search_spec_parse({"q": "budget review", "mode": "hybrid", "k": 3})
    workspace_catalog = catalog_for_workspace(catalog)
    resolved = resolve_search(spec, workspace_catalog)[0]
    context = pipeline._context(catalog, spec, workspace_catalog, [resolved])
    rows = pg.reload_by_id(resolved, context, ids, reads=frozenset({"similarity", "text_match"}))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT r.id, ts_rank_cd(r.search_vector, {pg.OR_QUERY}), "
                       f"1 - (e.embedding::vector({context.dimensions}) <=> %s::vector({context.dimensions})), "
                       "r.occurred_at, r.created_at, r.last_accessed, r.scores, r.content, r.text "
                       "FROM catalog_app_record r JOIN catalog_app_recordembedding e ON e.record_id = r.id "
                       "WHERE r.id = ANY(%s)", [context.q, vector_literal(context.vector), ids])
        text_format = {row[0]: row[1:] for row in cursor.fetchall()}
    assert len(text_format) == 3
    for record_id, (text_match, similarity, occurred, created, accessed, scores, content, text) in text_format.items():
        row = rows[record_id]
        assert (row.text_match, row.similarity) == (text_match, similarity)
        assert (row.occurred_at, row.created_at, row.last_accessed) == (occurred, created, accessed)
        assert (row.scores, row.content, row.text) == (json.loads(scores), json.loads(content), text)
    assert any(struct.unpack("f", struct.pack("f", row.text_match))[0] != row.text_match for row in rows.values())
