"""The one passage result shape, and roles/threads read through the catalog's declared fields."""
from __future__ import annotations

from catalog_app.catalog.runtime import catalog_for_workspace
from retrieval_app.memory.hits import HIT_TEXT_CHARS, hit_shape, passage_roles, thread_of
from tests.catalog_app.factories import record_make


def test_hit_shape_of_a_main_passage(catalog):
    record = record_make(catalog, entity="contact.maria", text="Budget is frozen.",
                         content={"speaker": "assistant", "thread": "t-1"})
    roles = passage_roles(record, catalog_for_workspace(catalog))
    assert hit_shape(record, roles) == {
        "id": str(record.id), "path": f"passages/main/contact.maria/{record.id}", "roles": ["assistant"],
        "text": "Budget is frozen.", "truncated": False, "content": "stored",
        "occurred_at": record.occurred_at.isoformat()}
    assert thread_of(record, catalog_for_workspace(catalog)) == "t-1"


def test_long_text_is_cut_to_the_hit_limit(catalog):
    record = record_make(catalog, text="x" * (HIT_TEXT_CHARS + 5))
    shape = hit_shape(record, ())
    assert len(shape["text"]) == HIT_TEXT_CHARS and shape["truncated"] is True


def test_no_role_without_a_role_field_or_a_string_value(catalog):
    compiled = catalog_for_workspace(catalog)
    ticket = record_make(catalog, collection="tickets", text="printer jam", content={"channel": "chat"})
    assert passage_roles(ticket, compiled) == () and thread_of(ticket, compiled) is None
    unset = record_make(catalog, text="no speaker")
    assert passage_roles(unset, compiled) == () and thread_of(unset, compiled) is None
