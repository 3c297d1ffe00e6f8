"""Context retrieval, briefs, lookups, lexical BM25, receipts and evaluation."""
from django.apps import AppConfig


class RetrievalAppConfig(AppConfig):
    name = "retrieval_app"
    verbose_name = "Memseek context retrieval"

    def ready(self):
        from catalog_app.services.record_erase import erasure_participant_register

        from . import policy
        from .erasure import receipts_and_utility_erase
        from .lexical import slot_metrics  # noqa: F401  registers the slot gauges of GET /metrics
        from .mcp import declarations

        policy.register()
        declarations.register()
        erasure_participant_register(receipts_and_utility_erase)
