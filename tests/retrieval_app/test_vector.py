"""The vector leg with the real all-MiniLM-L6-v2 model: semantic matches without shared words,
the minimum cosine similarity (a workspace setting), visibility and tenant isolation compiled
into the vector query."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from catalog_app.catalog.runtime import catalog_for_workspace
from catalog_app.models import Workspace
from catalog_app.services.workspaces import workspace_create
from retrieval_app.legs import QueryVector, vector_leg
from retrieval_app.request import parse_retrieve_request
from retrieval_app.scope import compile_scope
from retrieval_app.service import _embed
from rest_framework.test import APIClient
from tests.retrieval_app.factories import all_ids, catalog_dir, enrich, load, note, retrieve, write

pytestmark = pytest.mark.model

QUERY = "How much money may we use?"  # shares no English lexeme with the stored notes


@pytest.fixture
def directory(tmp_path):
    return catalog_dir(tmp_path, embedded=True)


@pytest.fixture
def notes(workspace, directory):
    load(workspace, directory)
    ids = write(workspace, [note("The quarterly spending limit for the team is forty thousand dollars"),
                            note("Giraffes sleep standing up in the savanna", entity="zoo"),
                            note("Our spending allowance is limited to fifty thousand dollars",
                                 visibility="private", owner="agent-2")])
    enrich(ids)
    return dict(zip(("budget", "giraffe", "private"), ids))


def vector_hits(workspace, **body):
    catalog = catalog_for_workspace(workspace)
    scope = compile_scope(workspace_id=workspace.pk, request=parse_retrieve_request({"query": QUERY, **body}),
                          catalog=catalog, hide_superseded=True)
    vector = _embed(catalog.value("models", "models").embedding, QUERY, workspace.pk)
    assert isinstance(vector, QueryVector)
    return vector_leg(scope, vector, min_similarity=0.25, cap=50)


def test_vector_leg_finds_meaning_without_shared_words(notes, workspace, api):
    hits = vector_hits(workspace)
    assert [str(hit.id) for hit in hits] == [notes["budget"]]  # the giraffe is below the minimum similarity
    assert hits[0].raw >= 0.25
    body = retrieve(api, {"query": QUERY, "explain": True})
    assert all_ids(body) == {notes["budget"]}
    legs = body["sections"]["events"][0]["explanation"]["legs"]
    assert legs == {"vector": {"rank": 1, "rawScore": pytest.approx(hits[0].raw, abs=1e-6)}}
    assert body["diagnostics"]["candidates"]["vector"] == 1
    assert body["diagnostics"]["candidates"]["text"] == 0


def test_minimum_vector_similarity_is_a_workspace_setting(notes, workspace, api):
    Workspace.objects.filter(pk=workspace.pk).update(settings={"retrieval.minVectorSimilarity": -1.0})
    assert {notes["budget"], notes["giraffe"]} <= all_ids(retrieve(api, {"query": QUERY, "raw": True}))
    Workspace.objects.filter(pk=workspace.pk).update(settings={"retrieval.minVectorSimilarity": 0.99})
    assert retrieve(api, {"query": QUERY, "explain": True})["diagnostics"]["candidates"]["vector"] == 0


def test_vector_leg_keeps_visibility(notes, workspace, api):
    assert notes["private"] in all_ids(retrieve(api, {"query": QUERY, "agentId": "agent-2"}))
    body = retrieve(api, {"query": QUERY, "agentId": "agent-1", "explain": True})
    assert notes["private"] not in all_ids(body)
    assert body["diagnostics"]["drops"]["policy"] == 1
    assert notes["private"] not in str(body)


def test_vector_leg_tenant_isolation(workspace, directory, api):
    load(workspace, directory)
    other, _ = workspace_create(name="tenant-b")
    load(other, directory)  # before any write: a catalog load creates the space's index
    text = "The quarterly spending limit for the team is forty thousand dollars"
    mine, foreign = write(workspace, [note(text)]), write(other, [note(text)])
    enrich(mine + foreign)
    assert [str(hit.id) for hit in vector_hits(workspace)] == mine
    assert [str(hit.id) for hit in vector_hits(other)] == foreign
    body = retrieve(api, {"query": QUERY, "raw": True, "explain": True})
    assert all_ids(body) == set(mine)
    assert body["diagnostics"]["candidates"]["vector"] == 1


def test_the_query_vector_cache_is_per_workspace(workspace, directory, api, embedded_texts):
    """Workspace B asking what A just asked is embedded again: a shared cache hit would answer B
    faster and so tell it what A searched for."""
    load(workspace, directory)
    other, key = workspace_create(name="tenant-b")
    load(other, directory)
    other_api = APIClient()
    other_api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    query = "Which workspace asked about the spending limit first?"
    retrieve(api, {"query": query})
    retrieve(other_api, {"query": query})
    assert embedded_texts == [query, query]
    retrieve(api, {"query": query})
    retrieve(other_api, {"query": query})
    assert embedded_texts == [query, query]  # each workspace's own repeat is still a hit


@pytest.mark.parametrize(("exact_max", "exact"), [(2000, True), (2, False)])
def test_a_small_workspace_compares_every_record_instead_of_walking_the_index(notes, workspace, settings,
                                                                             exact_max, exact):
    """As the search vector channel: a workspace that has written at most VECTOR_EXACT_MAX
    records is compared whole, so no approximate walk can come back short; a larger one walks
    the HNSW index. Both find the same match here."""
    settings.MEMSEEK = {"VECTOR_EXACT_MAX": exact_max}
    with CaptureQueriesContext(connection) as captured:
        hits = vector_hits(workspace)
    assert [str(hit.id) for hit in hits] == [notes["budget"]]
    statements = [query["sql"] for query in captured.captured_queries]
    assert any("<=>" in sql and "r.seq DESC LIMIT" in sql for sql in statements) == exact
    assert any("hnsw.ef_search" in sql for sql in statements) == (not exact)
