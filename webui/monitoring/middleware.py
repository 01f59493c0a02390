"""Times every request for ``websearch_http_request_duration_seconds``."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from webui.monitoring.metrics import observe_request


class RequestMetricsMiddleware:
    """Outermost middleware: sees static files (whitenoise answers before URL resolution)
    and every error page. The route label is the URL pattern's name (``search:api``), so
    its values are bounded whatever paths clients ask for."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response
        self.static_prefix = "/" + settings.STATIC_URL.lstrip("/")

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        observe_request(request.method or "", self.route(request), response.status_code,
                        time.perf_counter() - started)
        return response

    def route(self, request: HttpRequest) -> str:
        """The label of ``request``: its view's name, ``static``, or ``unmatched``."""
        match = getattr(request, "resolver_match", None)
        if match is not None:
            return match.view_name or "unnamed"
        if request.path.startswith(self.static_prefix):
            return "static"
        return "unmatched"
