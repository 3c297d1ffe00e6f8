"""Search profiles: where a collection's records are indexed. Only the built-in PostgreSQL
backend (``pg``) runs in this build; a profile naming another backend loads but is unusable,
and searching it answers ``503 search_backend_unavailable``."""
from __future__ import annotations

from dataclasses import dataclass

from catalog_app.catalog.registry import Catalog

BACKEND_CAPABILITIES = {"pg": ("vector", "text", "recent", "structured")}


@dataclass(frozen=True, slots=True)
class SearchProfile:
    name: str
    backend: str
    layout: str | None
    consistency: str | None
    enabled_if_credentials: bool

    @property
    def usable(self) -> bool:
        return self.backend in BACKEND_CAPABILITIES

    @property
    def capabilities(self) -> tuple[str, ...]:
        return BACKEND_CAPABILITIES.get(self.backend, ())


BUILTIN_PROFILE = SearchProfile("pg_default", "pg", None, None, False)


def search_profile(catalog: Catalog, name: str) -> SearchProfile | None:
    """The profile called ``name``: a loaded one, or the built-in ``pg_default``."""
    loaded = catalog.value("search_profile", name)
    if loaded is not None:
        return loaded
    return BUILTIN_PROFILE if name == BUILTIN_PROFILE.name else None


def all_profiles(catalog: Catalog) -> dict[str, SearchProfile]:
    return {BUILTIN_PROFILE.name: BUILTIN_PROFILE, **catalog.active_values("search_profile")}
