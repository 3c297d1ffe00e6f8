"""Operator console routes of search_app, mounted under ``/console/`` (namespace ``playground``)."""
from django.urls import path

from . import views

app_name = "playground"

urlpatterns = [
    path("<str:workspace>/playground", views.playground, name="run"),
]
