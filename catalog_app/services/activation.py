"""Activating one version of a versioned definition (a collection or a view).

Invariants: a name has exactly one active version before and after (the previous one is
deactivated first: the ``definition_one_active`` constraint admits no moment with two); an
activation whose resulting catalog would not load is refused and writes nothing; an executed
activation bumps ``Workspace.catalog_revision`` (every process recompiles its cached catalog)
and writes one ``ActivationAudit`` row, all in one transaction under the workspace row lock
that catalog loads take too.

"Would not load" is decided the way a load decides it: every stored definition of every
family is validated again, in load order, against the catalog with the flipped flags
(``catalog.revalidate``). Flags matter where a bare name resolves to its active version: a
graph view reads its edge (and orphan node) collection's *active* version, and a search view
takes the search profile of each collection in scope from that collection's active version.

Used the same way by the admin action, the ``activate_view``/``activate_collection``
commands and any code: ``check()`` to preview or refuse, then ``execute()``.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from django.db import transaction
from django.db.models import F

from memseek_site.errors import ApiError

from ..catalog.errors import CatalogIssue
from ..catalog.registry import Catalog
from ..catalog.revalidate import catalog_revalidate
from ..catalog.runtime import load_stored_catalog
from ..models import ActivationAudit, Definition, Workspace

ACTIVATABLE_FAMILIES = ("collection", "view")
_SHOWN_ISSUES = 5


class ActivationRefused(ApiError):
    """The activation cannot happen; nothing was written.

    ``message`` says why and what to do; ``issues`` lists every ``CatalogIssue`` when the
    result would not load (empty otherwise). The admin and the management command report it.
    """

    codes = ("unsupported_family", "invalid_version", "definition_not_found", "already_active", "would_not_load")

    def __init__(self, code: str, message: str, path: str | None = None, extra=None, *,
                 issues: tuple[CatalogIssue, ...] | list[CatalogIssue] = ()):
        super().__init__(code, message, path, extra)
        self.issues = tuple(issues)


@dataclass(frozen=True, slots=True)
class ActivationPlan:
    """What ``execute()`` will do: ``name`` of ``family`` moves from ``from_version`` (None when
    no version was active) to ``to_version``."""

    workspace_id: int
    family: str
    name: str
    from_version: int | None
    to_version: int


class DefinitionActivation:
    """Activate ``family`` ``name`` at ``version`` in ``workspace`` on behalf of ``actor`` (a
    username, ``"cli"`` or ``"api:<workspace>"``; stored in the audit row)."""

    def __init__(self, *, workspace: Workspace, family: str, name: str, version: int, actor: str):
        self.workspace = workspace
        self.family = family
        self.name = name
        self.version = version
        self.actor = actor

    def check(self) -> ActivationPlan:
        """Return the plan, or raise ``ActivationRefused``. Writes nothing."""
        return self._plan(self.workspace)

    @transaction.atomic
    def execute(self) -> ActivationAudit:
        """Check again under the workspace lock, then flip the flags, bump the catalog revision
        and write the audit row. Returns the audit row; raises ``ActivationRefused`` (nothing
        written). ``self.workspace.catalog_revision`` is refreshed to the new revision."""
        workspace = Workspace.objects.select_for_update().get(pk=self.workspace.pk)
        plan = self._plan(workspace)
        versions = Definition.objects.filter(workspace=workspace, family=plan.family, name=plan.name)
        # Deactivate first: the partial unique index allows one active row per name at any moment.
        versions.filter(active=True).update(active=False)
        versions.filter(version=plan.to_version).update(active=True)
        Workspace.objects.filter(pk=workspace.pk).update(catalog_revision=F("catalog_revision") + 1)
        self.workspace.refresh_from_db(fields=["catalog_revision"])
        return ActivationAudit.objects.create(workspace=workspace, family=plan.family, name=plan.name,
                                              from_version=plan.from_version, to_version=plan.to_version,
                                              actor=self.actor)

    def _plan(self, workspace: Workspace) -> ActivationPlan:
        if self.family not in ACTIVATABLE_FAMILIES:
            raise ActivationRefused(
                "unsupported_family",
                f"{self.family!r} definitions are not activated by hand; only {' and '.join(ACTIVATABLE_FAMILIES)} "
                "versions are (processors, models, rank defaults and search profiles follow the newest load)")
        if isinstance(self.version, bool) or not isinstance(self.version, int) or self.version < 1:
            raise ActivationRefused("invalid_version", f"version must be a positive integer, got {self.version!r}")
        label = f"{self.family} {self.name}@{self.version}"
        catalog = load_stored_catalog(workspace)
        target = catalog.get(self.family, self.name, self.version)
        if target is None:
            known = ", ".join(str(d.version) for d in catalog.versions(self.family, self.name))
            hint = f"loaded versions: {known}" if known else f"no {self.family} named {self.name!r} is loaded"
            raise ActivationRefused("definition_not_found",
                                    f"{label} is not loaded in workspace {workspace.name} ({hint})")
        if target.active:
            raise ActivationRefused("already_active", f"{label} is already active; nothing to do")
        current = next((d for d in catalog.versions(self.family, self.name) if d.active), None)
        would_be = Catalog(dict(catalog.definitions))
        if current is not None:
            would_be.add(dataclasses.replace(current, active=False))
        would_be.add(dataclasses.replace(target, active=True))
        sources = _sources(workspace)
        issues = catalog_revalidate(would_be, sources)
        if issues:
            message = _would_not_load(label, issues, catalog_revalidate(catalog, sources))
            raise ActivationRefused("would_not_load", message, issues=issues)
        return ActivationPlan(workspace.pk, self.family, self.name, current.version if current else None,
                              self.version)


def _sources(workspace: Workspace) -> dict[tuple[str, str, int], str]:
    rows = Definition.objects.filter(workspace=workspace).values_list("family", "name", "version", "source_text")
    return {(family, name, version): text for family, name, version, text in rows}


def _would_not_load(label: str, issues: list[CatalogIssue], before: list[CatalogIssue]) -> str:
    shown = "; ".join(str(issue) for issue in issues[:_SHOWN_ISSUES])
    more = f"; and {len(issues) - _SHOWN_ISSUES} more" if len(issues) > _SHOWN_ISSUES else ""
    message = (f"activating {label} would leave a catalog that does not load "
               f"({len(issues)} problem(s)): {shown}{more}")
    already = sum(1 for issue in issues if issue in before)
    if already:
        message += (f". {already} of these problems already affect the stored catalog; load a corrected "
                    "catalog directory first")
    return message
