"""Root URLs. The API routes live at the service root, exactly as the spec names them."""
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from .metrics_http import metrics_view

# The operator console is one URL namespace (``console:…``) made of each app's screens, so a
# template links to any console page by the console's own name, never by an app's.
CONSOLE = [path("", include("catalog_app.ui.urls")), path("", include("search_app.ui.urls"))]
# The admin's "View site" link goes to the console: the site root is the API, which answers a
# browser with a JSON 404.
admin.site.site_url = "/console/"

urlpatterns = [
    path("admin/", admin.site.urls),
    path("console/", include((CONSOLE, "console"))),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    path("metrics", metrics_view, name="metrics"),
    path("", include("catalog_app.urls")),
    path("", include("search_app.urls")),
    path("", include("retrieval_app.urls")),
]

# Unmatched and refused requests below the API answer the error envelope (memseek_site.api_envelope).
handler404 = "memseek_site.api_envelope.not_found"
handler400 = "memseek_site.api_envelope.bad_request"
