"""``explain: true`` (per-entry explanations and call diagnostics), model reranking in assisted
mode only (a real loopback chat-completions server), and dependency failures."""
import re
import shutil

import pytest
import yaml

from tests.openai_server import ScriptedOpenAIServer, llm_catalog_dir
from tests.retrieval_app.factories import catalog_dir, event, fact, ids_of, link, load, policy, retrieve, summary, \
    write

LEGS = {"vector", "text", "graph", "entity", "derivatives"}


@pytest.fixture
def world(workspace):
    load(workspace)
    budget, meeting, acme, _ = write(workspace, [
        fact("budget", "budget is 50k", importance=8, confidence=0.9), event("budget meeting", hours=2),
        fact("size", "acme has 12 staff", entity="acme"), link("maria", "acme")])
    write(workspace, [summary("meeting summary", [meeting], hours=3), policy("Budget stays internal")])
    return {"budget": budget, "meeting": meeting, "acme": acme}


def every_entry(body):
    return [entry for section in body["sections"].values() for entry in section]


def test_each_entry_explains_why_it_was_recalled(world, api):
    body = retrieve(api, {"query": "budget", "explain": True})
    for entry in every_entry(body):
        explanation = entry["explanation"]
        assert explanation["trust"] == entry["trust"]
        if entry["collection"] == "policies":
            assert explanation["legs"] == {} and explanation["factors"] is None
            assert explanation["floor"]["applied"] is False
            continue
        assert explanation["legs"] and set(explanation["legs"]) <= LEGS
        assert entry["trust"]["corroboration"] == len(explanation["legs"])
        fusion = explanation["fusion"]
        assert set(fusion["contributions"]) == set(explanation["legs"])
        for leg, found in explanation["legs"].items():
            assert fusion["contributions"][leg] == pytest.approx(1 / (60 + found["rank"]))
        assert sum(fusion["contributions"].values()) == pytest.approx(fusion["rrf"])
        assert set(explanation["factors"]) == {"fusion", "recency", "frequency", "importance", "confidence"}
        assert sum(f["contribution"] for f in explanation["factors"].values()) == pytest.approx(entry["score"])
        assert explanation["score"] == entry["score"]
        assert explanation["floor"]["applied"] and explanation["floor"]["passed"]
        assert explanation["floor"]["threshold"] == body["diagnostics"]["floors"]["threshold"]
        assert explanation["reranker"] == {"status": "not_requested"}
    budget = next(e for e in every_entry(body) if e["id"] == world["budget"])["explanation"]
    assert budget["legs"]["text"]["rank"] >= 1 and budget["legs"]["text"]["rawScore"] > 0
    assert budget["factors"]["importance"]["value"] == pytest.approx(7 / 9)
    assert budget["factors"]["confidence"]["value"] == pytest.approx(0.9)
    acme = next(e for e in every_entry(body) if e["id"] == world["acme"])["explanation"]
    assert acme["legs"]["graph"]["rawScore"] is None and acme["legs"]["graph"]["via"] in (world["budget"],
                                                                                         world["meeting"])


def test_diagnostics_report_legs_fusion_drops_floors_and_latencies(world, api):
    diagnostics = retrieve(api, {"query": "budget", "explain": True})["diagnostics"]
    assert set(diagnostics["candidates"]) == LEGS
    assert diagnostics["candidates"]["text"] == 2 and diagnostics["candidates"]["graph"] >= 1
    assert diagnostics["candidates"]["derivatives"] == 1
    assert diagnostics["strongMatches"] == 2
    assert diagnostics["fused"] == diagnostics["reloaded"] >= 3
    assert set(diagnostics["drops"]) == {"policy", "scope", "floor", "topN", "budget"}
    assert set(diagnostics["floors"]) == {"applied", "ratio", "minimum", "bestScore", "threshold"}
    assert diagnostics["reranker"] == {"requested": False, "mode": "assisted", "model": None, "judged": 0}
    latency = diagnostics["latencyMs"]
    stages = {"scope", "embed", "phase1", "phase2", "fuse", "reload", "score", "rerank", "compile", "total"}
    assert stages <= set(latency)
    assert {"text", "policies", "graph", "entity", "derivatives"} <= set(latency["legs"])
    assert all(value >= 0 for value in latency["legs"].values())


def test_without_explain_there_is_no_explanation(world, api):
    body = retrieve(api, {"query": "budget"})
    assert "diagnostics" not in body
    assert all("explanation" not in entry for entry in every_entry(body))


def test_deterministic_mode_never_reranks(world, api):
    error = retrieve(api, {"query": "budget", "mode": "deterministic", "rerank": True}, status=400)
    assert (error["error"], error["path"]) == ("mode_conflict", "rerank")
    body = retrieve(api, {"query": "budget", "mode": "deterministic", "explain": True})
    assert body["mode"] == "deterministic"
    statuses = {e["explanation"]["reranker"]["status"] for e in every_entry(body) if e["collection"] != "policies"}
    assert statuses == {"disabled"}


def test_rerank_needs_the_cheap_model(world, api):
    error = retrieve(api, {"query": "budget", "rerank": True}, status=422)
    assert error["error"] == "rerank_model"


@pytest.fixture
def server():
    with ScriptedOpenAIServer() as scripted:
        yield scripted


@pytest.fixture
def llm_world(workspace, server, tmp_path):
    directory = catalog_dir(tmp_path)
    shutil.copy(llm_catalog_dir(tmp_path, server.base_url) / "conf" / "models.yaml", directory / "conf")
    load(workspace, directory)
    return write(workspace, [event(f"budget review {n}", hours=n) for n in range(4)])


def reverse_judge(body):
    """Score the records it was sent in reverse order of appearance."""
    ids = re.findall(r"\[id=([0-9a-f-]{36})\]", body["messages"][1]["content"])
    return {"scores": [{"id": record_id, "score": round((index + 1) / len(ids), 3)}
                       for index, record_id in enumerate(ids)]}


def test_assisted_rerank_asks_the_cheap_model_and_reorders(llm_world, server, api):
    before = ids_of(retrieve(api, {"query": "budget"}), "events")
    server.chat.append(reverse_judge)
    body = retrieve(api, {"query": "budget", "rerank": True, "explain": True})
    assert ids_of(body, "events") == list(reversed(before))
    assert len(server.chat_requests()) == 1
    assert 'untrusted="true"' in server.chat_requests()[0].body["messages"][1]["content"]
    first = body["sections"]["events"][0]["explanation"]["reranker"]
    assert first == {"status": "judged", "judgeScore": 1.0, "positionBefore": 4, "positionAfter": 1}
    assert body["diagnostics"]["reranker"] == {"requested": True, "mode": "assisted", "model": "cheap", "judged": 4}


def test_a_failing_judge_fails_the_call(llm_world, server, api):
    server.chat.append({"scores": []})
    assert retrieve(api, {"query": "budget", "rerank": True}, status=503)["error"] == "rerank_invalid"


def test_nothing_to_rerank_asks_nothing(llm_world, server, api):
    retrieve(api, {"query": "zzzz", "rerank": True})
    assert server.chat_requests() == []


def test_an_unavailable_embedding_provider_is_a_503(workspace, server, api, tmp_path):
    directory = catalog_dir(tmp_path, embedded=True)
    (directory / "conf" / "models.yaml").write_text(yaml.safe_dump({
        "providers": {"scripted": {"adapter": "openai_compat", "base_url": server.base_url,
                                   "json_capability": "none", "token_limit_field": "max_tokens"}},
        "embedding": {"provider": "scripted", "model": "scripted-embed", "dimensions": 384,
                      "space": "scripted-384"}}))
    load(workspace, directory)
    server.embed_status = 500
    error = retrieve(api, {"query": "budget"}, status=503)
    assert error["error"] == "embedding_unavailable"
    # Without an embedded collection in scope the query is never embedded.
    assert retrieve(api, {"query": "budget", "collections": ["facts"]})["sections"]["facts"] == []
