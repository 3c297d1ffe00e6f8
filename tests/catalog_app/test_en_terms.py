"""``en_v1``'s analysis equals bm25s's English one (``stopwords="en"``, PyStemmer's English
stemmer), and the index analyses records written before the analyzer existed when it adds them."""
import bm25s
import Stemmer
from django.db import connection
from hypothesis import given, settings
from hypothesis import strategies as st

from catalog_app.en_terms import EN_STOPWORDS, STEMMER, en_query_terms, en_term_frequencies, en_tokens
from catalog_app.lexical.check import lexical_check
from catalog_app.lexical.maintenance import lexical_reconcile
from catalog_app.lexical.query import IndexScope, index_top_k
from catalog_app.models import Record
from tests.catalog_app.lexical_support import load_lexical_catalog, maintain_both_analyzers, write


def _bm25s_tokens(text: str) -> list[str]:
    return bm25s.tokenize([text], stopwords="en", stemmer=Stemmer.Stemmer(STEMMER), return_ids=False,
                          show_progress=False)[0]


def test_the_stopwords_are_bm25s_en_list():
    assert EN_STOPWORDS == frozenset(bm25s.stopwords.STOPWORDS_EN)


def test_known_text():
    assert en_tokens("The Running dogs aren't in_the PARKS, a b 42 running!") == [
        "run", "dog", "aren", "in_th", "park", "42", "run"]
    assert en_term_frequencies("Cats and cat; the CAT") == ({"cat": 3}, 3)
    assert en_term_frequencies("the a of") == ({}, 0)
    assert en_query_terms("running runs ran run") == ["run", "ran"]


words = st.sampled_from(("the", "a", "running", "Runs", "naïve", "Ünïcode", "x", "ab", "_", "__", "e-mail", "42",
                         "3.14", "cafés", "Straße", "ﬁne", "İstanbul", "won't", "ΣΊΣΥΦΟΣ", "日本語", "tab\tbed"))
texts = st.one_of(st.text(max_size=80), st.lists(words, max_size=20).map(" ".join),
                  st.lists(st.one_of(words, st.text(max_size=5)), max_size=12).map("".join))


@settings(max_examples=400, deadline=None)
@given(text=texts)
def test_en_tokens_equal_bm25s_tokenize(text):
    assert en_tokens(text) == _bm25s_tokens(text)


def test_a_record_written_before_en_v1_is_analysed_when_the_index_adds_it(workspace, tmp_path, settings):
    """The upgrade: records written while ``en_v1`` was not maintained, one of them with NULL
    ``en_tf`` (written before the analyzer existed). Once it is maintained, the reconcile (what
    ``lexical_backfill`` runs) analyses that record, then indexes both; the check agrees."""
    settings.MEMSEEK = {**getattr(settings, "MEMSEEK", {}), "LEXICAL_ANALYZERS": "bm25_v1"}
    load_lexical_catalog(workspace, tmp_path / "catalog")
    (old, new) = write(workspace, {"text": "Runners were running home"}, {"text": "a run of luck"})
    Record.objects.filter(pk=old).update(en_tf=None, en_length=None)
    maintain_both_analyzers(settings)
    seqs = list(Record.objects.filter(pk__in=[old, new]).values_list("seq", flat=True))
    with connection.cursor() as cursor:
        assert lexical_reconcile(cursor, seqs) == (4, 0)  # english and en_v1, two records each
    record = Record.objects.get(pk=old)
    assert (record.en_tf, record.en_length) == ({"runner": 1, "were": 1, "run": 1, "home": 1}, 4)
    top = index_top_k(workspace_id=workspace.pk, analyzer="en_v1", terms=("run",), k=5, scope=IndexScope())
    assert (top.n, top.average_length) == (2, 3.0)
    assert {uid for uid, _ in top.hits} == {old, new}
    assert lexical_check(workspace_id=workspace.pk) == []
