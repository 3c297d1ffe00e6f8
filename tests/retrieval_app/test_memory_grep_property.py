"""``GET /memory/grep`` (the index walk in steps from each page's cursor, then verification)
equals the brute-force scan of ``test_memory_grep.scan_oracle`` on Hypothesis-drawn corpora
(events and keyed lanes with restatements, tombstones, drafts and unready rows, two entities,
another workspace's records), phrases (cut from a text anywhere, or drawn words), entities,
dates and page sizes, read page by page to the end. Small pages make the walk take several
steps (the first reads a page's worth, each next four times more), so the stepping and the cursors are what is tested;
a small candidate bound must give a prefix of the oracle's answer and say it is incomplete."""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from urllib.parse import urlencode

from django.db import transaction
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from catalog_app.models import Workspace
from tests.catalog_app.factories import record_make

from .test_memory_grep import ENTITIES, WORDS, grep_pages, scan_oracle, visible_passages

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
SEPARATORS = (" ", " ", "-", ", ", "/", ". ")


@st.composite
def corpora(draw):
    """(workspace name, fields) of each record, in write order."""
    records = []
    # a few words per corpus, so terms are common and the walk takes several steps
    vocabulary = draw(st.lists(st.sampled_from(WORDS), min_size=2, max_size=5, unique=True))
    for _ in range(draw(st.integers(1, 40))):
        words = draw(st.lists(st.sampled_from(vocabulary), min_size=1, max_size=7))
        text = "".join(word + draw(st.sampled_from(SEPARATORS)) for word in words).strip()
        fields = {"entity": draw(st.sampled_from(ENTITIES)), "text": text,
                  "occurred_at": T0 + timedelta(days=draw(st.integers(0, 4)))}
        kind = draw(st.sampled_from(("event", "event", "event", "fact", "fact", "draft", "tombstone", "unready")))
        if kind in ("fact", "draft", "tombstone"):
            fields.update(type="fact", key=draw(st.sampled_from(("role", "city"))))
        if kind == "draft":
            fields.update(status="draft")
        elif kind == "tombstone":
            fields.update(tombstone=True)
        elif kind == "unready":
            fields.update(ready=False)
        records.append((draw(st.sampled_from(("own", "own", "own", "other"))), fields))
    return records


@st.composite
def phrases(draw, texts: list[str]):
    if texts and draw(st.booleans()):
        text = draw(st.sampled_from(texts))
        start = draw(st.integers(0, len(text) - 1))
        return text[start:start + draw(st.integers(1, 24))].strip()
    return " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)))


@hypothesis_settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_grep_equals_the_scan_oracle_page_by_page(api, catalog, other_workspace_api, settings, data):
    other = Workspace.objects.get(name="other-co")
    records = data.draw(corpora())
    with transaction.atomic():
        for owner, fields in records:
            record_make(catalog if owner == "own" else other, **fields)
        phrase = data.draw(phrases([fields["text"] for _, fields in records]))
        if not re.search(r"[^\W_]", phrase):  # no word: the route refuses it (test_memory_errors)
            transaction.set_rollback(True)
            return
        entity = data.draw(st.sampled_from((None, *ENTITIES)))
        after = data.draw(st.one_of(st.none(), st.integers(0, 4)))
        expected = scan_oracle(catalog, phrase, entity)
        params = {"q": phrase, **({"entity": entity} if entity else {})}
        if after is not None:
            day = T0 + timedelta(days=after)
            later = {str(row.id) for row in visible_passages(catalog, entity) if row.occurred_at >= day}
            expected = [record_id for record_id in expected if record_id in later]
            params["after"] = day.date().isoformat()
        limit = data.draw(st.sampled_from((1, 2, 3, 20)))
        if entity is not None and not visible_passages(catalog, entity):
            assert api.get(f"/memory/grep?{urlencode(params)}").status_code == 404
        else:
            found, complete = grep_pages(api, params, limit)
            assert (found, complete) == (expected, True), (phrase, entity, after, limit)
            settings.MEMSEEK = {"MEMORY_GREP_CANDIDATES": data.draw(st.integers(1, 6))}
            found, complete = grep_pages(api, params, limit)
            assert found == expected[:len(found)]
            assert found == expected or not complete
            settings.MEMSEEK = {}
        transaction.set_rollback(True)

