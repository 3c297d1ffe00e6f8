"""Operator console routes of search_app. ``memseek_site.urls`` mounts them under ``/console/`` in
the one ``console`` URL namespace, beside catalog_app's."""
from django.urls import path

from . import views

urlpatterns = [
    path("<str:workspace>/playground", views.playground, name="playground"),
]
