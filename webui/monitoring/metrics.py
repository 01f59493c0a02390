"""The web app's Prometheus metrics, defined once per process (prometheus_client's model).

Under gunicorn every worker is a process of its own: ``webui/gunicorn.conf.py`` points
prometheus_client's multiprocess mode at ``WEB_METRICS_DIR`` (``PROMETHEUS_MULTIPROC_DIR``)
before any worker starts, each worker's values go to memory-mapped files there, and
``/metrics`` merges them, so a scrape sees the whole server whichever worker answers.
Counters and histograms only: they need no multiprocess mode of their own.

The result cache (``index/cache.py``) counts its hits and misses in the backend's
``stats()``; exported here, they would be a counter with an ``outcome`` label.
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

#: Seconds: a search page answers in milliseconds, the admin and a cold index in seconds.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

REQUEST_LATENCY = Histogram(
    "websearch_http_request_duration_seconds",
    "Time from a request reaching Django to its response, by method, route and status.",
    ["method", "route", "status"],
    buckets=LATENCY_BUCKETS,
)
SEARCH_LATENCY = Histogram(
    "websearch_search_duration_seconds",
    "Time the search backend took for one query (page and API), by backend.",
    ["backend"],
    buckets=LATENCY_BUCKETS,
)
RATE_LIMITED = Counter(
    "websearch_rate_limited",
    "Requests refused with 429 Too Many Requests, by route.",
    ["route"],
)

#: HTTP methods kept as label values; anything else is counted as "other".
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def observe_request(method: str, route: str, status: int, seconds: float) -> None:
    """Record one request (and a rate-limit refusal when ``status`` is 429)."""
    method = method if method in METHODS else "other"
    REQUEST_LATENCY.labels(method, route, str(status)).observe(seconds)
    if status == 429:
        RATE_LIMITED.labels(route).inc()


def observe_search(backend: str, seconds: float) -> None:
    """Record one query answered by ``backend`` ("embedded", "elasticsearch")."""
    SEARCH_LATENCY.labels(backend).observe(seconds)
