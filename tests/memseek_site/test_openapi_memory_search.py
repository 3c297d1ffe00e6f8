"""Real POST /memory/search answers (the brief with every optional field, the ranked list, an
error) match the generated OpenAPI document, checked strictly as test_openapi_responses does."""
from __future__ import annotations

from tests.memseek_site.test_openapi_responses import check
from tests.openai_server import ScriptedOpenAIServer
from tests.retrieval_app.memory_brief_factories import catalog_with_models, load, note, profile, turn, write


def test_memory_search_answers_match_the_schema(api, workspace, tmp_path):
    with ScriptedOpenAIServer() as server:
        load(workspace, catalog_with_models(tmp_path, server.base_url))
        turns = write(workspace, [turn("I moved to Lisbon in March", "Maria", "2024-03-01T10:00:00Z"),
                                  turn("Try the Alfama tour in Lisbon", "assistant", "2024-03-02T10:00:00Z")])
        write(workspace, [profile("city", "Maria lives in Lisbon", "2024-03-01T10:00:00Z"),
                          note("Maria relocated to Lisbon", "2024-03-03T00:00:00Z", [turns[0]]),
                          {"entity": "maria", "collection": "directory", "type": "fact", "key": "city",
                           "text": "Maria lives in Porto", "occurred_at": "2024-03-04T10:00:00Z"}])
        server.chat.append({"keep": ["p1", "p2"], "held": True})
        brief = check(api.post("/memory/search", {"query": "How long ago did Maria move to Lisbon?",
                                                  "entity": "maria", "before": "2024-04-01"}, format="json"),
                      "POST", "/memory/search")
        assert {"notes", "known", "worked_out", "facts", "hits", "held"} <= set(brief)
        assert {line["kind"] for line in brief["worked_out"]} == {"interval", "conflict"}
        ranked = check(api.post("/memory/search", {"query": "Lisbon", "after": "2024-03-02"}, format="json"),
                       "POST", "/memory/search")
        assert ranked["hits"] and "held" not in ranked
        check(api.post("/memory/search", {"query": "Lisbon", "scope": "nowhere/x"}, format="json"),
              "POST", "/memory/search", 422)
