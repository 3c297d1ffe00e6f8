"""Workspaces, keys, catalog definitions, records; the write side and enrichment."""
