"""On BEIR SciFact (5,183 abstracts, the 809 train claims) ``POST /search/lexical`` gives, for
every query, the same top 10 and scores as bm25s over the same ``bm25_v1`` tokens with k1 1.2,
b 0.75 and bm25s's Lucene variant, whose idf is the page's ``ln(1 + (N - df + 0.5) / (df +
0.5))``. Lucene's term weight drops BM25's constant ``(k1 + 1)`` factor, so the page's score is
bm25s's times 2.2. The corpus is ingested without embeddings (a collection with no processors),
and the lexical index compacted before the last 300 abstracts, so queries read blocks and posting
rows together. The write path maintains only the ``bm25_v1`` analyzer, the one the route reads:
keeping the ``english`` one too would double the cost of the ingest, which is most of this
test's time, for an index nothing here reads.
"""
import json
import uuid
from pathlib import Path

import numpy as np
import pytest

from catalog_app.bm25_terms import bm25_query_terms, bm25_tokens
from catalog_app.lexical.compaction import lexical_compact
from catalog_app.services.catalog_load import catalog_load
from catalog_app.services.record_ingest import record_ingest_batch

DATA = Path("/work/shared/bench/beir-scifact")
K1_PLUS_1 = 2.2
COLLECTION = """collections:
  - name: abstracts
    version: 1
    active: true
    mode: event
    schema:
      type: object
      required: [text, doc_id]
      properties:
        text: {type: string}
        doc_id: {type: string}
    search_profile: pg_default
"""

pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason=f"the SciFact data set is not at {DATA}")


def _corpus() -> list[tuple[str, str]]:
    with open(DATA / "corpus.jsonl", encoding="utf-8") as lines:
        return [(doc["_id"], f"{doc['title']}\n{doc['text']}") for doc in map(json.loads, lines)]


def _train_queries() -> list[str]:
    lines = (DATA / "qrels" / "train.tsv").read_text().replace("\r", "").splitlines()[1:]
    wanted = {line.split("\t")[0] for line in lines if line.strip()}
    with open(DATA / "queries.jsonl", encoding="utf-8") as lines:
        return [query["text"] for query in map(json.loads, lines) if query["_id"] in wanted]


def _ingest(workspace, tmp_path, corpus) -> list[uuid.UUID]:
    (tmp_path / "collections").mkdir()
    (tmp_path / "collections" / "abstracts.yaml").write_text(COLLECTION)
    catalog_load(workspace=workspace, directory=tmp_path)
    workspace.refresh_from_db()
    ids = []
    for start in range(0, len(corpus), 100):
        if start == len(corpus) // 100 * 100 - 300:
            (outcome, *_) = lexical_compact(workspace_id=workspace.pk)
            assert outcome.blocks_written > 0
        items = [{"entity": "scifact", "collection": "abstracts", "type": "abstract", "text": text,
                  "content": {"doc_id": doc_id}} for doc_id, text in corpus[start:start + 100]]
        result = record_ingest_batch(workspace=workspace, items=items)
        ids.extend(outcome.id for outcome in sorted(result.inserted, key=lambda outcome: outcome.index))
    return ids


def test_every_train_query_ranks_and_scores_as_bm25s(api, workspace, tmp_path, settings):
    import bm25s

    settings.MEMSEEK = {**settings.MEMSEEK, "LEXICAL_ANALYZERS": "bm25_v1"}

    corpus = _corpus()
    queries = _train_queries()
    assert (len(corpus), len(queries)) == (5183, 809)
    ids = _ingest(workspace, tmp_path, corpus)
    retriever = bm25s.BM25(k1=1.2, b=0.75, method="lucene", dtype="float64")
    retriever.index([bm25_tokens(text) for _, text in corpus], show_progress=False)
    order = np.array([record_id.int for record_id in ids], dtype=object)
    compared = 0
    for text in queries:
        tokens = [term for term in bm25_query_terms(text) if term in retriever.vocab_dict]
        scores = retriever.get_scores(tokens) * K1_PLUS_1 if tokens else np.zeros(len(corpus))
        positive = np.flatnonzero(scores > 0)
        # The top 10 by (score descending, id): only records scoring at least the 10th best score
        # can be among them, so only those are ordered.
        floor = np.partition(scores[positive], -10)[-10] if len(positive) > 10 else 0
        contenders = positive[scores[positive] >= floor]
        expected = sorted(contenders, key=lambda index: (-scores[index], order[index]))[:10]
        response = api.post("/search/lexical", {
            "contract_version": 1, "mode": "lexical", "scope": {"collections": ["abstracts"]},
            "query": {"text": text, "limit": 10, "scan_bytes_limit": 64 * 2**20}}, format="json")
        assert response.status_code == 200, response.json()
        page = response.json()["page"]
        assert (page["corpus_records"], page["scanned_records"], page["exhaustive"]) == (5183, 5183, True)
        assert page["matched_records"] == len(positive)
        assert [hit["record"]["id"] for hit in page["hits"]] == [str(ids[index]) for index in expected], text
        assert [hit["score"] for hit in page["hits"]] == pytest.approx([scores[i] for i in expected], rel=1e-9, abs=0)
        compared += 1
    assert compared == 809
