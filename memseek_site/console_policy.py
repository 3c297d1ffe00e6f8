"""The operator console's Content-Security-Policy.

Below ``/console/`` every response carries a strict policy: scripts, styles, images, fonts and
connections only from the service itself, no inline script or style, no plugins, forms post only
to the service, and no framing. The console's templates keep to it (one stylesheet and one
script under ``static/console/``); the admin keeps Django's own pages and headers.
"""
from __future__ import annotations

CONSOLE_PREFIX = "/console/"
CONSOLE_POLICY = ("default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
                  "frame-ancestors 'none'")


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if request.path.startswith(CONSOLE_PREFIX):
            response["Content-Security-Policy"] = CONSOLE_POLICY
        return response
