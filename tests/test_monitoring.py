"""/healthz, /readyz and /metrics in one process (runserver, tests); under gunicorn's
workers they are tested by tests/test_serving.py."""

import pytest
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.django_db


def samples(client) -> dict:
    response = client.get("/metrics")
    assert response.status_code == 200
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(response.content.decode())
            for s in family.samples}


def test_metrics_of_a_single_process_move_with_requests(client):
    key = ("websearch_http_request_duration_seconds_count",
           (("method", "GET"), ("route", "monitoring:healthz"), ("status", "200")))
    before = samples(client).get(key, 0)
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/healthz").status_code == 200
    after = samples(client)
    assert after[key] == before + 2
    assert ("process_resident_memory_bytes", ()) in after  # the process's own registry


def test_unknown_paths_share_one_route_label(client):
    client.get("/no/such/page/1")
    client.get("/no/such/page/2")
    routes = {dict(labels).get("route") for name, labels in samples(client)
              if name == "websearch_http_request_duration_seconds_count"}
    assert "unmatched" in routes
    assert not any(r and r.startswith("/") for r in routes)


def test_readyz_in_process(client):
    response = client.get("/readyz")
    assert response.status_code == 200, response.content
    assert response.json()["checks"] == {"database": "ok", "index": "ok", "cache": "ok"}


def test_metrics_can_be_switched_off(client, settings):
    settings.WEB_METRICS_ENABLED = False
    assert client.get("/metrics").status_code == 404
