"""``catalog_app.lexical.query``: exact BM25 over the index, conjunctive candidates and source
totals, against hand-computed values and the full-scan oracle."""
import math

import pytest

from catalog_app.bm25_formula import contribution, idf
from catalog_app.lexical.query import IndexScope, index_top_k, records_with_all_terms, source_totals
from catalog_app.models import Record
from tests.catalog_app.lexical_support import load_lexical_catalog, oracle_top_k, write


@pytest.fixture
def ws(workspace, tmp_path):
    load_lexical_catalog(workspace, tmp_path / "catalog")
    return workspace


def top(ws, terms, k=10, **scope):
    return index_top_k(workspace_id=ws.pk, analyzer="bm25_v1", terms=tuple(terms), k=k, scope=IndexScope(**scope))


def test_three_documents_score_as_the_formula_says_by_hand(ws):
    # d1: "apple apple banana" (length 3); d2: "apple cherry" (2); d3: "cherry cherry cherry date" (4).
    d1, d2, d3 = write(ws, {"text": "apple apple banana"}, {"text": "apple cherry"},
                       {"text": "cherry cherry cherry date"})
    result = top(ws, ["apple", "cherry"])
    assert (result.n, result.average_length, result.dfs, result.matched) == (3, 3.0, (2, 2), 3)
    # idf(apple) = idf(cherry) = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln(1.6)
    i = math.log(1.6)
    # tf / (tf + 1.2 * (0.25 + 0.75 * length / 3)) * 2.2 * idf
    s1 = i * 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * 3 / 3))  # apple tf 2, length 3
    s2 = i * 1 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 2 / 3)) * 2  # apple 1 + cherry 1, length 2
    s3 = i * 3 * 2.2 / (3 + 1.2 * (0.25 + 0.75 * 4 / 3))  # cherry tf 3, length 4
    assert s2 > s3 > s1
    assert [uid for uid, _ in result.hits] == [d2, d3, d1]
    for (_, score), expected in zip(result.hits, (s2, s3, s1)):
        assert score == pytest.approx(expected, rel=1e-12)
    assert result.hits[0][1] == contribution(idf(3, 2), 1, 2, 3.0) + contribution(idf(3, 2), 1, 2, 3.0)


def test_hits_scores_and_statistics_equal_the_full_scan(ws):
    write(ws, *({"text": f"alpha beta {'gamma ' * (i % 4)} delta{i % 3}"} for i in range(30)))
    for terms in (["alpha"], ["gamma", "delta1"], ["delta2", "beta", "zzz"]):
        got, want = top(ws, terms, k=7), oracle_top_k(ws.pk, tuple(terms), 7, IndexScope())
        assert (got.n, got.dfs, got.matched) == (want.n, want.dfs, want.matched)
        assert got.average_length == want.average_length
        assert [uid for uid, _ in got.hits] == [uid for uid, _ in want.hits]
        assert all(a[1] == pytest.approx(b[1], abs=1e-9) for a, b in zip(got.hits, want.hits))


def test_equal_scores_tie_by_ascending_uuid(ws):
    ids = write(ws, *({"text": "same words here"} for _ in range(6)))
    result = top(ws, ["words"], k=4)
    assert [uid for uid, _ in result.hits] == sorted(ids)[:4]
    assert len({score for _, score in result.hits}) == 1


def test_scope_axes_narrow_statistics_and_hits(ws):
    write(ws, {"text": "red fox"}, {"text": "red hen", "type": "fact", "key": "k1"},
          {"text": "red owl", "collection": "logs"}, {"text": "red cat", "collection_version": 2},
          {"text": "red dog", "entity": "e2"}, {"text": "red ant", "status": "draft"})
    assert top(ws, ["red"]).n == 5
    assert top(ws, ["red"], collection_ids=("logs",)).n == 1
    assert top(ws, ["red"], versions=(("notes", 2),)).n == 1
    assert top(ws, ["red"], types=("fact",)).n == 1
    assert top(ws, ["red"], keyed=False).n == 4
    assert top(ws, ["red"], entities=("e2",)).n == 1
    assert top(ws, ["red"], statuses=("draft",)).n == 1
    assert top(ws, ["red"], statuses=("active", "draft")).n == 6
    assert top(ws, ["red"], collection_ids=()).n == 0
    for scope in ({"entities": ("e1",)}, {"collection_ids": ("notes",), "keyed": False}):
        got, want = top(ws, ["red", "fox"], **scope), oracle_top_k(ws.pk, ("red", "fox"), 10, IndexScope(**scope))
        assert (got.n, got.average_length, got.dfs, got.matched) == (want.n, want.average_length, want.dfs,
                                                                      want.matched)
        assert [uid for uid, _ in got.hits] == [uid for uid, _ in want.hits]


def test_no_terms_and_no_k_still_give_statistics(ws):
    write(ws, {"text": "one two"}, {"text": "three"})
    assert top(ws, []).n == 2 and top(ws, []).average_length == 1.5
    empty = top(ws, ["one"], k=0)
    assert (empty.hits, empty.matched, empty.dfs) == ((), 1, (1,))


def test_repeated_terms_and_unknown_analyzers_are_refused(ws):
    with pytest.raises(ValueError):
        top(ws, ["a", "a"])
    with pytest.raises(ValueError):
        index_top_k(workspace_id=ws.pk, analyzer="klingon", terms=("a",), k=1, scope=IndexScope())


def conjunctive(ws, terms, scope=IndexScope(), walk=10, before_seq=None):
    """Every step of the walk, as a list of tuples of seqs."""
    return list(records_with_all_terms(workspace_id=ws.pk, analyzer="bm25_v1", terms=terms, scope=scope, walk=walk,
                                       before_seq=before_seq, growth=2))


def test_records_with_all_terms_are_conjunctive_and_newest_first(ws):
    a, b, c, _ = write(ws, {"text": "x y z"}, {"text": "x z"}, {"text": "z x y"}, {"text": "y"})
    seq = dict(Record.objects.filter(id__in=[a, b, c]).values_list("id", "seq"))
    assert conjunctive(ws, ("x", "z")) == [(seq[c], seq[b], seq[a])]
    assert conjunctive(ws, ("x", "nope"), walk=5) == []
    (d,) = write(ws, {"text": "x z", "entity": "e2", "type": "fact", "key": "k"})
    seq[d] = Record.objects.get(id=d).seq
    assert conjunctive(ws, ("z", "x"), IndexScope(entities=("e2",)), walk=5) == [(seq[d],)]
    assert conjunctive(ws, ("z", "x"), IndexScope(keyed=False), walk=5) == [(seq[c], seq[b], seq[a])]
    # e1's records lead, newest first: the "y" record, then c and b, then a (1, 2, 4 asked)
    assert conjunctive(ws, ("z", "x"), IndexScope(entities=("e1",)), walk=1) == [(), (seq[c], seq[b]), (seq[a],)]


def test_a_walk_reads_its_lead_in_growing_steps_from_where_it_stopped(ws):
    a, b, c, d = write(ws, {"text": "x y"}, {"text": "x"}, {"text": "x y"}, {"text": "x y y"})
    seq = dict(Record.objects.filter(id__in=[a, b, c, d]).values_list("id", "seq"))
    # y is the rarer term (3 postings): two of them, then (twice as many asked) the last
    assert conjunctive(ws, ("x", "y"), walk=2) == [(seq[d], seq[c]), (seq[a],)]
    assert conjunctive(ws, ("x", "y"), walk=2, before_seq=seq[c]) == [(seq[a],)]
    # x is the rarer one once y is common: a step may read postings that hold only one term
    write(ws, *({"text": "y"} for _ in range(3)))
    # below d: c; then b and a; then (4 asked, none left) the end
    assert conjunctive(ws, ("y", "x"), walk=1, before_seq=seq[d]) == [(seq[c],), (seq[a],), ()]
    assert conjunctive(ws, ("y", "x"), walk=1) == [(seq[d],), (seq[c],), (seq[a],)]
    with pytest.raises(ValueError):
        conjunctive(ws, ("x",), walk=0)


def test_source_totals_count_every_inserted_row_and_its_bytes(ws):
    ids = write(ws, {"text": "kept"}, {"text": "replaced", "type": "fact", "key": "k"},
                {"text": "élan", "collection": "logs"})
    write(ws, {"text": "newer", "type": "fact", "key": "k"})
    rows = Record.objects.filter(workspace=ws)
    total = sum(len(r.text.encode()) for r in rows)
    assert ids
    rows_notes, bytes_notes = source_totals(workspace_id=ws.pk, collection_ids=("notes",))
    assert rows_notes == 3
    all_rows, all_bytes = source_totals(workspace_id=ws.pk, collection_ids=None)
    assert all_rows == 4 and all_bytes > total  # content JSON counts too


def test_a_statistic_contradicting_the_postings_fails_the_read(ws):
    from django.db import connection

    from catalog_app.lexical.query import LexicalIndexInconsistent
    from catalog_app.lexical.tables import GROUP, GROUP_STATS

    write(ws, {"text": "alpha beta"}, {"text": "alpha"})
    assert top(ws, ["alpha"]).matched == 2
    with connection.cursor() as cursor:  # the group statistics count one document fewer than match
        cursor.execute(f"UPDATE {GROUP_STATS} SET docs = docs - 1 WHERE group_id IN "
                       f"(SELECT id FROM {GROUP} WHERE workspace_id = %s)", [ws.pk])
    with pytest.raises(LexicalIndexInconsistent) as failure:
        top(ws, ["alpha"])
    assert (failure.value.code, failure.value.status) == ("lexical_index_inconsistent", 500)
    assert top(ws, ["beta"]).dfs == (1,)


def test_an_analyzer_the_write_path_does_not_maintain_is_refused(ws, settings):
    settings.MEMSEEK = {"LEXICAL_ANALYZERS": "bm25_v1"}
    with pytest.raises(ValueError, match="not maintained"):
        index_top_k(workspace_id=ws.pk, analyzer="english", terms=("a",), k=1, scope=IndexScope())
