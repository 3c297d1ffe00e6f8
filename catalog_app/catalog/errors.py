"""Catalog errors: each names its file, the dotted path inside it, a code and a message."""
from __future__ import annotations

from dataclasses import dataclass

from memseek_site.errors import ApiError


@dataclass(frozen=True, slots=True)
class CatalogIssue:
    file: str
    path: str
    code: str
    message: str

    def __str__(self) -> str:
        location = f"{self.file}: {self.path}" if self.path else self.file
        return f"{location}: [{self.code}] {self.message}"


class CatalogError(ApiError):
    """Raised by a validator for one problem; the compiler collects them.

    Its codes are catalog issue codes (``schema``, ``yaml``, ``search_spec``, ...), reported by
    the loader and never an HTTP answer, so they are not registered in ``ERROR_STATUS``.
    """

    codes = None
    default_code = "schema"
    root_path = ""


class CatalogInvalid(ApiError):
    """The catalog did not load; ``issues`` lists every problem found."""

    codes = ("catalog_invalid",)
    issues: list[CatalogIssue]

    @classmethod
    def of(cls, issues: list[CatalogIssue]) -> CatalogInvalid:
        error = cls("catalog_invalid", "\n".join(str(issue) for issue in issues))
        error.issues = issues
        return error
