"""How a canonical row is shown in a compact rendered row."""
from __future__ import annotations

from catalog_app.catalog.registry import Catalog

from .render import RenderRow, select_display_scores


def rendered_score_names(catalog: Catalog) -> tuple[str, ...]:
    """Score processors declared with ``render: true``."""
    return tuple(name for name, p in catalog.active_values("processor").items() if p.kind == "score" and p.render)


def render_row_of(row, score_names: tuple[str, ...]) -> RenderRow:
    return RenderRow(id=str(row.id), occurred_at=row.occurred_at, collection=row.collection, type=row.type,
                     key=row.key, text=row.text, tombstone=bool(getattr(row, "tombstone", False)),
                     display_scores=select_display_scores(row.scores, score_names))
