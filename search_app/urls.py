from django.urls import path

from .api.rank import RankSchemaView
from .api.search import SearchView
from .api.views import ViewListView, ViewQueryView

urlpatterns = [
    path("search", SearchView.as_view(), name="search"),
    path("views", ViewListView.as_view(), name="views"),
    path("views/<str:name>/query", ViewQueryView.as_view(), name="view-query"),
    path("rank/schema", RankSchemaView.as_view(), name="rank-schema"),
]
