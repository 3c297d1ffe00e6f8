"""Data for the ``POST /memory/search`` tests: ``fixtures/catalogs/memory_brief`` (turns with a
role field, keyed profiles, derived notes; all embedded by the real MiniLM) and LoCoMo dev
conversations as turns (``/work/shared/bench/locomo``, CC BY-NC 4.0, see its README).

Records go through ``record_ingest_batch`` and ``records_enrich`` like production writes (under
the ``db`` fixture the on-commit enrichment hook never fires, so ``enrich`` runs it).
"""
from __future__ import annotations

import json
import re
import shutil
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

from catalog_app.services.catalog_load import catalog_load
from catalog_app.services.enrichment import records_enrich
from catalog_app.services.record_ingest import record_ingest_batch

CATALOG = Path(__file__).resolve().parents[2] / "fixtures" / "catalogs" / "memory_brief"
LOCOMO = Path("/work/shared/bench/locomo/locomo-dev.json")


def load(workspace, directory: Path = CATALOG):
    catalog_load(workspace=workspace, directory=directory)
    workspace.refresh_from_db()
    return workspace


def catalog_with_models(tmp_path: Path, base_url: str) -> Path:
    """The memory_brief catalog plus a ``cheap`` alias served by the loopback chat server."""
    target = tmp_path / "memory_brief"
    shutil.copytree(CATALOG, target)
    (target / "conf" / "models.yaml").write_text(
        "providers:\n  local: {adapter: sentence_transformers}\n"
        f"  scripted: {{adapter: openai_compat, base_url: '{base_url}', json_capability: json_schema, "
        "token_limit_field: max_completion_tokens}\n"
        "aliases:\n  cheap:\n    targets: ['scripted:scripted-small']\n"
        "    params: {temperature: 0, max_output_tokens: 300}\n    context_tokens: 8192\n"
        "embedding: {provider: local, model: all-MiniLM-L6-v2, dimensions: 384, space: minilm-l6-v2}\n")
    return target


def write(workspace, items: list[dict], *, ready: bool = True) -> list[str]:
    """Ingest ``items`` in batches of 100 and embed them; returns the ids in item order."""
    ids = []
    for start in range(0, len(items), 100):
        result = record_ingest_batch(workspace=workspace, items=items[start:start + 100])
        assert not result.duplicates
        ids += [str(o.id) for o in sorted(result.inserted, key=lambda outcome: outcome.index)]
    if ready:
        outcome = records_enrich(record_ids=ids)
        assert sorted(outcome.ready) == sorted(ids)
    return ids


def turn(text: str, speaker: str, when: str, *, entity: str = "maria", session: int = 1) -> dict:
    return {"entity": entity, "collection": "turns", "type": "turn", "text": text, "occurred_at": when,
            "content": {"speaker": speaker, "session": session}}


def profile(key: str, text: str, when: str, *, entity: str = "maria") -> dict:
    return {"entity": entity, "collection": "profiles", "type": "fact", "key": key, "text": text, "occurred_at": when}


def note(text: str, when: str, parents: list[str], *, entity: str = "maria") -> dict:
    return {"entity": entity, "collection": "notes", "type": "note", "text": text, "occurred_at": when,
            "derived_from": parents}


def session_date(value: str) -> datetime:
    """LoCoMo's ``"1:56 pm on 8 May, 2023"`` as UTC (the data carries no zone)."""
    return datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


@lru_cache(maxsize=1)
def locomo_samples() -> tuple:
    return tuple(json.loads(LOCOMO.read_text(encoding="utf-8")))


def locomo_turns(sample_id: str, sessions: range) -> list[dict]:
    """The turns of ``sessions`` of one dev conversation as ``turns`` items: entity
    ``locomo.<sample_id>``, occurred_at the session's date, the dia_id in content."""
    [sample] = [s for s in locomo_samples() if s["sample_id"] == sample_id]
    conversation = sample["conversation"]
    items = []
    for number in sessions:
        if not isinstance(conversation.get(f"session_{number}"), list):
            continue
        when = session_date(conversation[f"session_{number}_date_time"])
        for index, entry in enumerate(conversation[f"session_{number}"]):
            caption = f" [shares {entry['blip_caption']}]" if entry.get("blip_caption") else ""
            item = turn(f"{entry['speaker']} said, \"{entry['text']}\"{caption}", entry["speaker"],
                        when.replace(second=index % 60).isoformat(), entity=f"locomo.{sample_id}", session=number)
            item["content"]["dia_id"] = entry["dia_id"]
            items.append(item)
    return items


def session_dates(sample_id: str) -> dict[int, datetime]:
    [sample] = [s for s in locomo_samples() if s["sample_id"] == sample_id]
    conversation = sample["conversation"]
    return {int(m.group(1)): session_date(value) for key, value in conversation.items()
            if (m := re.fullmatch(r"session_(\d+)_date_time", key))
            and isinstance(conversation.get(f"session_{m.group(1)}"), list)}
