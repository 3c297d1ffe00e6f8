"""The search engine: SearchSpec, modes, candidate backends, ranking, fusion, rendering, views."""
