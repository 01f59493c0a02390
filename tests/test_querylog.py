"""The anonymous query log: first-page searches, zero results, clicks, the dashboard's rates."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from django.contrib.auth.models import User

from crawler.urls import doc_id_for
from index.base import Document
from webui.search.backend import get_search_backend
from webui.search.models import QueryLogEntry
from webui.search.querylog import click_ref

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def pages():
    backend = get_search_backend()
    docs = [Document(id=doc_id_for(f"http://log{n}.test/"), url=f"http://log{n}.test/",
                     host=f"log{n}.test", title=f"Aardwolf page {n}", body="aardwolf giraffe")
            for n in range(3)]
    backend.index(docs)
    backend.refresh()
    yield
    backend.delete([d.id for d in docs])
    backend.refresh()


def test_first_pages_are_logged_without_who(client):
    client.get("/", {"q": "aardwolf"})
    client.get("/api/search", {"q": "nothingmatcheszz"})
    client.get("/", {"q": "aardwolf", "page": 2})  # not a first page
    rows = list(QueryLogEntry.objects.order_by("id"))
    assert [(r.query, r.results, r.source) for r in rows] == [
        ("aardwolf", 3, "page"), ("nothingmatcheszz", 0, "api")]
    assert rows[0].at.second == 0 and rows[0].clicked_rank is None
    fields = {f.name for f in QueryLogEntry._meta.get_fields()}
    assert not fields & {"ip", "address", "user", "session", "agent"}


def test_result_links_ping_and_the_click_is_recorded(client):
    html = client.get("/", {"q": "aardwolf"}).content.decode()
    entry = QueryLogEntry.objects.get()
    ref = quote(click_ref(entry.pk), safe="/")
    assert f'ping="/click?l={ref}&amp;r=1"' in html
    assert f'ping="/click?l={ref}&amp;r=3"' in html
    assert client.post(f"/click?l={ref}&r=2").status_code == 204
    assert client.post(f"/click?l={ref}&r=1").status_code == 204  # the first one counts
    entry.refresh_from_db()
    assert entry.clicked_rank == 2
    assert client.post("/click?l=x&r=1").status_code == 400
    assert client.get(f"/click?l={ref}&r=1").status_code == 405


def test_dashboard_shows_rates_and_top_zero_result_queries(client):
    for q in ("aardwolf", "aardwolf", "zebrafoo", "zebrafoo", "quaggabar"):
        client.get("/", {"q": q})
    first = QueryLogEntry.objects.filter(query="aardwolf").first()
    client.post(f"/click?l={quote(click_ref(first.pk))}&r=1")
    User.objects.create_superuser("admin", "a@a.test", "pw")
    client.login(username="admin", password="pw")
    html = client.get("/dashboard/").content.decode()
    assert "Zero-result rate</td><td class=\"num\">60%" in html
    assert "No-click rate (search page)</td><td class=\"num\">50%" in html
    zero = html.split("Top zero-result queries", 1)[1]
    assert zero.index("zebrafoo") < zero.index("quaggabar")


def test_the_log_is_off_by_setting(client, settings):
    settings.SEARCH_QUERY_LOG = False
    html = client.get("/", {"q": "aardwolf"}).content.decode()
    assert QueryLogEntry.objects.count() == 0 and "ping=" not in html


def test_old_rows_are_pruned(settings):
    import datetime as dt

    from django.utils import timezone

    from webui.search import querylog

    settings.SEARCH_QUERY_LOG_DAYS = 7
    now = timezone.now()
    for days in (1, 8, 30):
        QueryLogEntry.objects.create(query="q", normalized="q", results=1, source="api",
                                     at=now - dt.timedelta(days=days))
    assert querylog.prune() == 2
    assert QueryLogEntry.objects.count() == 1
