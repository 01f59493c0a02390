"""``/healthz`` (the process answers), ``/readyz`` (its dependencies answer), ``/metrics``."""

from __future__ import annotations

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client.django import PrometheusDjangoView

from webui.monitoring.health import readiness


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """200 while the process serves requests; touches no dependency (liveness)."""
    return JsonResponse({"status": "ok"})


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """200 when index, database and cache answer, else 503 naming what is down."""
    checks = readiness()
    down = sorted(name for name, result in checks.items() if result != "ok")
    body: dict = {"status": "unavailable" if down else "ready", "checks": checks}
    if down:
        body["down"] = down
    return JsonResponse(body, status=503 if down else 200)


class MetricsView(PrometheusDjangoView):
    """prometheus_client's exposition (text format; every gunicorn worker merged)."""

    def get(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not settings.WEB_METRICS_ENABLED:
            raise Http404("metrics are switched off (WEB_METRICS_ENABLED)")
        return super().get(request, *args, **kwargs)


metrics = never_cache(MetricsView.as_view())
