"""Property: for random workspaces (events and keyed facts, superseded values, drafts, tombstones,
derived records, unready ones), export → import into a fresh workspace → export again gives the
same document, once the remapped ids are mapped back, and the same lexical index statistics."""
from __future__ import annotations

import itertools
import json
import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catalog_app.lexical.check import lexical_check
from catalog_app.services.catalog_load import catalog_load
from catalog_app.services.import_lines import import_document_parse
from catalog_app.services.workspace_export import workspace_export_lines
from catalog_app.services.workspace_import import import_record_id, workspace_import
from catalog_app.services.workspaces import workspace_create
from tests.catalog_app.factories import record_make
from tests.catalog_app.transfer_support import lexical_statistics
from tests.conftest import EXAMPLE_CATALOG

WORDS = ("budget", "offsite", "review", "porto", "lisbon", "hotel", "travel", "finance", "q3", "friday")
_names = itertools.count()

record = st.fixed_dictionaries({
    "entity": st.sampled_from(["maria", "bo"]), "text": st.lists(st.sampled_from(WORDS), min_size=1, max_size=6),
    "key": st.one_of(st.none(), st.sampled_from(["city", "role"])), "status": st.sampled_from(["active", "draft"]),
    "ready": st.booleans(), "tombstone": st.booleans(), "parent": st.booleans()})


def _write(workspace, specs: list[dict]) -> None:
    written = []
    for spec in specs:
        keyed = spec["key"] is not None
        parents = [written[-1].id] if spec["parent"] and written else None
        written.append(record_make(workspace, entity=spec["entity"], type="fact" if keyed else "note",
                                   key=spec["key"], text=" ".join(spec["text"]), status=spec["status"],
                                   ready=spec["ready"], tombstone=spec["tombstone"] and keyed and parents is not None,
                                   derived_from=parents, depth=1 if parents else 0))


def _export(workspace) -> list[dict]:
    return [json.loads(line) for line in workspace_export_lines(workspace=workspace)]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(specs=st.lists(record, min_size=1, max_size=12))
def test_an_imported_workspace_exports_the_same_document(db, specs):
    source, _ = workspace_create(name=f"source-{next(_names)}")
    catalog_load(workspace=source, directory=EXAMPLE_CATALOG)
    _write(source, specs)
    exported = _export(source)
    target, _ = workspace_create(name=f"target-{next(_names)}")
    text = [json.dumps(line).encode() for line in exported]
    workspace_import(workspace=target, document=import_document_parse(text), ids="remap")
    back = {str(import_record_id(target.pk, uuid.UUID(line["id"]), "remap")): line["id"]
            for line in exported if line["kind"] == "record"}
    again = json.loads(_remapped(json.dumps(_export(target)), back))
    assert _comparable(again) == _comparable(exported)
    assert lexical_statistics(target.pk) == lexical_statistics(source.pk)
    assert lexical_check(workspace_id=target.pk) == []
    assert workspace_import(workspace=target, document=import_document_parse(text), ids="remap").records_added == 0


def _remapped(text: str, back: dict[str, str]) -> str:
    for new, old in back.items():
        text = text.replace(new, old)
    return text


def _comparable(lines: list[dict]) -> list[dict]:
    """The lines without the workspace's name; parents as a set (stored in id order)."""
    out = []
    for line in lines:
        line = {key: value for key, value in line.items() if key != "workspace"}
        if "derived_from" in line:
            line["derived_from"] = sorted(line["derived_from"])
        out.append(line)
    return out
