"""Search page and API through Django's test client against the embedded index."""

import json

import pytest
from django.core.management import call_command

from index.base import Document, doc_id_for
from webui.search.backend import get_search_backend

pytestmark = pytest.mark.django_db

DOCS = [
    ("http://alpha.test/", "Alpha home", "Welcome to alpha, the first letter site."),
    ("http://beta.test/zebra", "Zebra facts", "The zebra is a striped animal of Africa."),
    (
        "http://evil.test/x",
        "<script>alert('t')</script> evil",
        "zebra <img src=x onerror=alert(1)> stripes",
    ),
]


@pytest.fixture(scope="module", autouse=True)
def indexed():
    backend = get_search_backend()
    backend.ensure_index()
    backend.index(
        Document(id=doc_id_for(url), url=url, host=url.split("/")[2], title=t, body=b)
        for url, t, b in DOCS
    )
    backend.refresh()


def test_api_returns_hits(client):
    data = client.get("/api/search", {"q": "zebra"}).json()
    assert data["total"] >= 1
    urls = [hit["url"] for hit in data["results"]]
    assert "http://beta.test/zebra" in urls
    assert {"url", "title", "snippet", "score"} <= set(data["results"][0])


def test_api_rejects_empty_and_too_long(client):
    assert client.get("/api/search").status_code == 400
    assert client.get("/api/search", {"q": "a" * 600}).status_code == 400
    assert client.get("/api/search", {"q": "zebra", "page": "0"}).status_code == 400


def test_search_page_escapes_crawled_content(client):
    html = client.get("/", {"q": "zebra"}).content.decode()
    assert "<script>alert" not in html
    assert "<img src=x" not in html
    assert "&lt;script&gt;" in html
    assert "<mark>" in html.lower()


def test_search_page_empty_and_zero_results(client):
    assert client.get("/").status_code == 200
    html = client.get("/", {"q": "nonexistentwordxyz"}).content.decode()
    assert "No pages match" in html


def test_search_command_json(capsys):
    call_command("search", "zebra", "--json")
    payload = json.loads(capsys.readouterr().out)
    assert payload["results"][0]["url"] in {u for u, _, _ in DOCS}
    assert set(payload["results"][0]) >= {"url", "title", "score", "snippet"}
