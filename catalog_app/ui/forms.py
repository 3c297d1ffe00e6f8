"""Forms of the operator console: the record browser's filters and its keyset cursors.

Invariant: a filter value that does not parse is a form error, never silently dropped (a
dropped filter would widen the list the operator thinks is narrowed).
"""
from __future__ import annotations

from datetime import timezone as dt_timezone

from django import forms
from django.utils import timezone

from ..record_limits import ENTITY_CHARS, KEY_CHARS, TYPE_CHARS
from .selectors import RecordFilters

PER_PAGE_CHOICES = (25, 50, 100)


class RecordFilterForm(forms.Form):
    """GET parameters of the record browser. Times without an offset are read as UTC."""

    collection = forms.ChoiceField(required=False)
    entity = forms.CharField(required=False, max_length=ENTITY_CHARS)
    type = forms.CharField(required=False, max_length=TYPE_CHARS)
    key = forms.CharField(required=False, max_length=KEY_CHARS)
    status = forms.ChoiceField(required=False, choices=[("", "any"), ("active", "active"), ("draft", "draft")])
    readiness = forms.ChoiceField(required=False, choices=[("", "any"), ("ready", "ready"),
                                                             ("pending", "pending")])
    occurred_after = forms.DateTimeField(required=False, label="occurred at or after",
                                         widget=forms.DateTimeInput(attrs={"placeholder": "2026-01-31T09:00:00Z"}))
    occurred_before = forms.DateTimeField(required=False, label="occurred before",
                                          widget=forms.DateTimeInput(attrs={"placeholder": "2026-02-01T00:00:00Z"}))
    per_page = forms.TypedChoiceField(required=False, coerce=int, empty_value=PER_PAGE_CHOICES[0],
                                      choices=[(n, n) for n in PER_PAGE_CHOICES])
    before_seq = forms.IntegerField(required=False, min_value=1, widget=forms.HiddenInput)
    after_seq = forms.IntegerField(required=False, min_value=0, widget=forms.HiddenInput)

    def __init__(self, data, *, collections: list[str]):
        super().__init__(data)
        known = list(collections)
        chosen = (data or {}).get("collection")
        if chosen and chosen not in known:
            known.append(chosen)  # a collection no longer in the catalog can still be browsed
        self.fields["collection"].choices = [("", "any"), *((name, name) for name in known)]

    def clean(self):
        cleaned = super().clean()
        for name in ("occurred_after", "occurred_before"):
            value = cleaned.get(name)
            if value is not None and timezone.is_naive(value):
                cleaned[name] = timezone.make_aware(value, dt_timezone.utc)
        if cleaned.get("before_seq") is not None and cleaned.get("after_seq") is not None:
            raise forms.ValidationError("Page with before_seq or after_seq, not both.")
        return cleaned

    def filters(self) -> RecordFilters:
        """The cleaned filters; call after ``is_valid()``."""
        data = self.cleaned_data
        readiness = data.get("readiness")
        return RecordFilters(
            collection=data.get("collection") or None,
            entity=data.get("entity") or None,
            type=data.get("type") or None,
            key=data.get("key") or None,
            status=data.get("status") or None,
            ready={"ready": True, "pending": False}.get(readiness),
            occurred_after=data.get("occurred_after"),
            occurred_before=data.get("occurred_before"),
        )

    def query_without_cursor(self) -> dict:
        """The filter part of the query string, for building page links."""
        return {name: value for name, value in (self.data or {}).items()
                if name not in ("before_seq", "after_seq") and value not in ("", None)}
