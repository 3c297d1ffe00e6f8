"""The pure engine core: SearchSpec parsing, rank expressions, fusion, scoring and ordering.

Nothing in this package imports django.db; backends and selectors live elsewhere.
"""
