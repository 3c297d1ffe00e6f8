from django.urls import path

from .api.search import SearchView

urlpatterns = [
    path("search", SearchView.as_view(), name="search"),
]
