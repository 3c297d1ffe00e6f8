"""The console's Operations page: what the service did over the last hour (requests and
latency per route, ingest-to-ready lag, records per collection) and its queues now
(docs/console.md#operations)."""
