"""A Memseek cluster on one machine from Linux network namespaces (docs/cluster.md)."""
