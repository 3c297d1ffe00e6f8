"""The LangChain retrievers against a live server: ``invoke`` returns the records the route
itself ranks, in its order, as ``Document``s carrying their addresses; errors are the SDK's."""
from __future__ import annotations

import asyncio

import pytest
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from memseek_client import AsyncMemseekClient, ClientClosed, RecordInput, Unprocessable
from memseek_client.integrations.langchain_retriever import MemseekBriefRetriever, MemseekRetriever

from .conftest import LIVE, require_route

pytestmark = LIVE
NOTES = ("Lena's sourdough starter is called Bubbles and lives in the fridge.",
         "Lena ordered a new road bike with disc brakes.",
         "Lena prefers oat milk in her coffee.",
         "Lena's sister visits every March.")


@pytest.fixture(scope="module")
def lena(live):
    with live.client() as memseek:
        written = memseek.write_records([RecordInput(entity="contact.lena", collection="main", type="note", text=text)
                                         for text in NOTES])
        memseek.write_records([RecordInput(entity="contact.omar", collection="main", type="note",
                                           text="Omar bakes sourdough bread every Sunday.")])
    return [outcome.id for outcome in written.inserted]


def test_the_retriever_returns_what_search_ranks_in_its_order(client, lena):
    retriever = MemseekRetriever(client=client, entities=["contact.lena"], k=2)
    assert isinstance(retriever, BaseRetriever)
    documents = retriever.invoke("sourdough bread starter")
    expected = client.search("sourdough bread starter", mode="hybrid", k=2,
                             scope={"entities": ["contact.lena"]}).hits
    assert [document.id for document in documents] == [hit.id for hit in expected]
    first = documents[0]
    assert isinstance(first, Document) and first.page_content == NOTES[0] and first.id == lena[0]
    assert first.metadata["entity"] == "contact.lena" and first.metadata["collection"] == "main"
    assert first.metadata["type"] == "note" and first.metadata["rank"] == 1 and first.metadata["score"] is not None


def test_the_scope_narrows_and_widens(client, lena):
    everyone = MemseekRetriever(client=client, collections=["main"], mode="text", k=10).invoke("sourdough")
    assert {document.metadata["entity"] for document in everyone} >= {"contact.lena", "contact.omar"}
    notes_only = MemseekRetriever(client=client, scope={"types": ["fact"]}, entities=["contact.lena"], mode="text")
    assert notes_only.invoke("sourdough") == []


def test_ainvoke_and_batch_work_as_for_any_retriever(client, lena):
    retriever = MemseekRetriever(client=client, entities=["contact.lena"], k=1)
    assert [d.id for d in asyncio.run(retriever.ainvoke("oat milk coffee"))] == [lena[2]]
    bike, sister = retriever.batch(["road bike brakes", "sister visits in March"])
    assert [d.id for d in bike] == [lena[1]] and [d.id for d in sister] == [lena[3]]


def test_a_bad_search_raises_the_servers_error_with_its_path(client, lena):
    with pytest.raises(Unprocessable) as failure:
        MemseekRetriever(client=client, k=0).invoke("anything")
    assert failure.value.status == 422 and failure.value.path == "k"
    with pytest.raises(Unprocessable) as unknown:
        MemseekRetriever(client=client, mode="telepathy").invoke("anything")
    assert unknown.value.path == "mode"


def test_the_brief_retriever_returns_the_briefs_passages(client, listed_routes, lena):
    require_route(listed_routes, "POST", "/memory/search")
    documents = MemseekBriefRetriever(client=client, entity="contact.lena").invoke("What is the starter called?")
    brief = client.memory_search("What is the starter called?", entity="contact.lena")
    assert [document.id for document in documents] == [hit.id for hit in brief.hits]
    assert documents and documents[0].metadata["path"].startswith("passages/main/contact.lena/")
    assert any("Bubbles" in document.page_content for document in documents)
    ranked = MemseekBriefRetriever(client=client, entity="contact.lena", scope="passages/main").invoke("coffee")
    assert ranked and ranked[0].id == lena[2]


def test_ainvoke_awaits_the_async_client_when_given(live, lena):
    client = live.client()
    client.close()  # the sync client cannot answer: only the async one can

    async def both():
        async with AsyncMemseekClient(live.url, live.key) as async_client:
            search = MemseekRetriever(client=client, async_client=async_client, entities=["contact.lena"], k=1)
            brief = MemseekBriefRetriever(client=client, async_client=async_client, entity="contact.lena",
                                          scope="passages/main")
            return await search.ainvoke("oat milk coffee"), await brief.ainvoke("road bike")
    searched, briefed = asyncio.run(both())
    assert [d.id for d in searched] == [lena[2]] and briefed and briefed[0].id == lena[1]
    with pytest.raises(ClientClosed):
        asyncio.run(MemseekRetriever(client=client, entities=["contact.lena"]).ainvoke("oat milk"))
