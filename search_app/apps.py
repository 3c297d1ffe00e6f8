from django.apps import AppConfig


class SearchAppConfig(AppConfig):
    name = "search_app"
    verbose_name = "Memseek search"

    def ready(self):
        from . import catalog_families

        catalog_families.register()
