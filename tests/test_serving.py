"""The web UI under gunicorn (as scripts/stack.sh and scripts/demo.sh run it): pages, API and
static files, /metrics merged over the workers, /healthz and /readyz."""

from __future__ import annotations

import gzip
import json
import re
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from harness.crawlrun import ROOT
from harness.services import free_port
from tests.webserver import get, gunicorn, index_pages, prepare

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("serving")
    prepare(data_dir)
    index_pages(data_dir)
    with gunicorn(data_dir, {"DJANGO_SETTINGS_MODULE": "tests.serving_settings"}) as web:
        yield web


def metric_samples(url: str) -> dict[tuple[str, tuple], float]:
    """Every sample of ``/metrics``, parsed by prometheus_client, keyed by name and labels."""
    status, headers, body = get(url + "/metrics")
    assert status == 200
    assert headers["Content-Type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_gunicorn_serves_page_api_and_compressed_static_files(server):
    status, _, body = get(server.url + "/")
    assert status == 200 and b'name="q"' in body
    status, _, body = get(server.url + "/api/search?q=okapi&size=5")
    assert status == 200
    assert json.loads(body)["total"] == 12
    # collectstatic wrote gzip variants, whitenoise serves them
    status, headers, body = get(server.url + "/static/webui/site.css",
                                {"Accept-Encoding": "gzip"})
    assert status == 200 and headers.get("Content-Encoding") == "gzip"
    assert b"{" in gzip.decompress(body)
    status, _, _ = get(server.url + "/static/webui/missing.css")
    assert status == 404
    log = server.output()
    assert "Booting worker" in log and "Using worker: gthread" in log
    assert "development server" not in log


def test_metrics_count_requests_searches_and_refusals_over_all_workers(server):
    before = metric_samples(server.url)
    statuses = [get(server.url + f"/api/search?q=okapi+part+{i}")[0] for i in range(40)]
    refused = statuses.count(429)
    answered = statuses.count(200)
    assert refused and answered and refused + answered == 40  # 5 per worker and window
    after = metric_samples(server.url)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    route = {"method": "GET", "route": "search:api"}
    assert delta("websearch_http_request_duration_seconds_count", status="200", **route) == answered
    assert delta("websearch_http_request_duration_seconds_count", status="429", **route) == refused
    assert delta("websearch_rate_limited_total", route="search:api") == refused
    assert delta("websearch_search_duration_seconds_count", backend="embedded") == answered
    assert delta("websearch_search_duration_seconds_bucket", backend="embedded",
                 le="+Inf") == answered
    assert value(after, "websearch_http_request_duration_seconds_count", method="GET",
                 route="static", status="200") >= 1
    # Which worker takes a connection is the kernel's choice: ask until both have answered
    # (one file per process), then the scrape must merge them.
    def files() -> list:
        return list((server.log.parent / "metrics" / "web").glob("histogram_*.db"))

    deadline, extra = time.monotonic() + 120, 0
    while len(files()) < 2 and time.monotonic() < deadline:
        assert get(server.url + "/healthz")[0] == 200
        extra += 1
    assert len(files()) == 2
    merged = metric_samples(server.url)
    health = {"method": "GET", "route": "monitoring:healthz", "status": "200"}
    assert (value(merged, "websearch_http_request_duration_seconds_count", **health)
            - value(after, "websearch_http_request_duration_seconds_count", **health)) == extra


def test_the_grafana_dashboard_uses_only_metrics_the_web_app_exports(server):
    text = (ROOT / "docs" / "grafana-dashboard.json").read_text()
    used = set(re.findall(r"websearch_(?:http|search|rate)_[a-z_]+", text))
    exported = {name for name, _ in metric_samples(server.url)}
    assert used and used <= exported, used - exported


def test_health_and_readiness(server):
    status, _, body = get(server.url + "/healthz")
    assert (status, json.loads(body)) == (200, {"status": "ok"})
    status, headers, body = get(server.url + "/readyz")
    assert status == 200, body
    assert json.loads(body) == {"status": "ready",
                                "checks": {"database": "ok", "index": "ok", "cache": "ok"}}
    assert "no-store" in headers["Cache-Control"]


def test_readyz_503_names_what_is_down(tmp_path):
    # nothing listens on these ports: a stopped Elasticsearch and a stopped PostgreSQL
    env = {"ELASTICSEARCH_URL": f"http://127.0.0.1:{free_port()}",
           "DATABASE_URL": f"postgresql://websearch@127.0.0.1:{free_port()}/websearch"}
    with gunicorn(tmp_path, env) as web:
        status, _, body = get(web.url + "/readyz")
        assert status == 503
        report = json.loads(body)
        assert report["status"] == "unavailable"
        assert report["down"] == ["database", "index"]
        assert report["checks"]["cache"] == "ok"
        assert "Connection" in report["checks"]["index"]
        assert get(web.url + "/healthz")[0] == 200  # the process itself is fine


def test_readyz_503_on_a_broken_embedded_index_then_200_once_repaired(tmp_path):
    prepare(tmp_path)
    (tmp_path / "index").write_text("not an index directory")
    with gunicorn(tmp_path, args=("--workers", "1")) as web:
        status, _, body = get(web.url + "/readyz")
        assert status == 503 and json.loads(body)["down"] == ["index"], body
        (tmp_path / "index").unlink()
        status, _, body = get(web.url + "/readyz")
        assert status == 200, body
