from django.apps import AppConfig


class RetrievalAppConfig(AppConfig):
    name = "retrieval_app"
    verbose_name = "Memseek context retrieval"
