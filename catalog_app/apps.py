from django.apps import AppConfig


class CatalogAppConfig(AppConfig):
    name = "catalog_app"
    verbose_name = "Memseek catalog and records"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from .catalog import families  # noqa: F401  registers the collection/processor/model families
        from . import signals  # noqa: F401  worker recovery of pending records, pool process set-up
        from . import metrics_sources  # noqa: F401  registers the backlog gauges of GET /metrics
        from .operations import request_minutes  # noqa: F401  counts requests for the Operations page
        from memseek_site.allocator import retain_freed_memory
        from memseek_site.conf import memseek_setting, memseek_settings_check
        from memseek_site.queues import time_limits_check

        from .limits import limits_settings_check

        memseek_settings_check()
        limits_settings_check()
        time_limits_check()
        retain_freed_memory(memseek_setting("MALLOC_RETAIN_BYTES"))
        if memseek_setting("PRELOAD_EMBEDDING_MODEL"):
            from .signals import load_bundled_model

            load_bundled_model()
