"""Cached copies (/cache, /cache/frame), completion (/api/complete) and facets on the search
page and in the API, through Django's test client against the embedded index and a real
WARC file written by the crawl's own writer."""

from __future__ import annotations

import re

import pytest
from django.core.cache import cache
from django.utils import timezone

from crawler.urls import doc_id_for
from index.base import Document
from pipelines.warc import RotatingWarcWriter
from webui.search.backend import get_search_backend
from webui.search.complete import _logged_queries
from webui.search.models import QueryLogEntry

pytestmark = pytest.mark.django_db

HOSTILE = b"""<!doctype html><html><head><title>Quokka island</title>
<base href="http://elsewhere.test/">
<meta http-equiv="refresh" content="0;url=http://evil.test/">
<script>document.title = "script ran"</script>
<link rel="stylesheet" href="http://evil.test/track.css">
</head><body onload="alert(1)">
<h1 style="color:#333">Quokkas of Rottnest</h1>
<p>The quokka is a small wallaby. <a href="/more">Read more</a>
<a href="javascript:alert(2)">trap</a> <img src="x" onerror="alert(3)"></p>
<iframe src="http://evil.test/frame"></iframe>
<form action="http://evil.test/steal"><input name="pw"></form>
</body></html>"""
FETCHED_AT = 1_760_000_000.0  # 2025-10-09 08:53:20 UTC


def _doc(url: str, title: str, body: str, lang: str = "en", **fields) -> Document:
    host = url.split("/")[2]
    return Document(id=doc_id_for(url), url=url, host=host, title=title, body=body,
                    lang=lang, **fields)


@pytest.fixture(scope="module")
def warc_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("warc")


@pytest.fixture(scope="module", autouse=True)
def indexed(warc_dir):
    writer = RotatingWarcWriter(warc_dir, "t", prefix="test", max_bytes=10**8,
                                software="test", min_free_bytes=0)
    name, offset = writer.write("http://rottnest.test/quokka", 200,
                                [("Content-Type", "text/html; charset=utf-8")], HOSTILE,
                                fetched_at=FETCHED_AT)
    writer.close()
    docs = [
        _doc("http://rottnest.test/quokka", "Quokka island", "The quokka is a small wallaby.",
             warc_file=name, warc_offset=offset, fetched_at=FETCHED_AT),
        _doc("http://rottnest.test/gone", "Quokka gone", "quokka whose WARC file is gone",
             warc_file="missing.warc.gz", warc_offset=0),
        _doc("http://rottnest.test/escape", "Quokka escape", "quokka outside the directory",
             warc_file="../../etc/passwd", warc_offset=0),
        _doc("http://rottnest.test/bad", "Quokka offset", "quokka at a bad offset",
             warc_file=name, warc_offset=7),
        _doc("http://wallaby.test/1", "Quokka diet", "quokka eat leaves", lang="de"),
        _doc("http://wallaby.test/2", "Quokka diet", "quokka eat grass", lang="de"),
    ]
    backend = get_search_backend()
    backend.ensure_index()
    backend.index(docs)
    backend.refresh()
    backend.close()
    return {d.url: d for d in docs}


@pytest.fixture(autouse=True)
def setup(settings, warc_dir):
    settings.WARC_DIR = str(warc_dir)
    cache.clear()
    _logged_queries.cache_clear()


def test_results_link_their_cached_copy(client, indexed):
    html = client.get("/", {"q": "quokka"}).content.decode()
    doc = indexed["http://rottnest.test/quokka"]
    assert f'href="/cache?id={doc.id}"' in html
    assert f'href="/cache?id={indexed["http://wallaby.test/1"].id}"' not in html  # no WARC


def test_cache_page_frames_the_copy_with_a_banner(client, indexed):
    doc = indexed["http://rottnest.test/quokka"]
    response = client.get("/cache", {"id": doc.id})
    assert response.status_code == 200
    html = response.content.decode()
    assert "2025-10-09 08:53 UTC" in html
    assert 'href="http://rottnest.test/quokka"' in html
    frame = re.search(r"<iframe[^>]*>", html).group(0)
    assert 'sandbox="allow-popups allow-popups-to-escape-sandbox"' in frame
    assert "allow-scripts" not in frame and "allow-same-origin" not in frame
    assert f'src="/cache/frame?id={doc.id}"' in frame


def test_cache_frame_is_clean_and_locked_down(client, indexed):
    response = client.get("/cache/frame", {"id": indexed["http://rottnest.test/quokka"].id})
    assert response.status_code == 200
    policy = response["Content-Security-Policy"]
    assert policy.startswith("default-src 'none'") and "script-src" not in policy
    assert "sandbox" in policy and "frame-ancestors 'self'" in policy
    assert response["X-Frame-Options"] == "SAMEORIGIN"
    html = response.content.decode()
    assert "Quokkas of Rottnest" in html and 'style="color:#333"' in html
    for active in ("<script", "onload", "onerror", "javascript:", "<iframe", "<form",
                   "http-equiv", "<base", "<link", "track.css"):
        assert active not in html, active
    assert '<a href="http://rottnest.test/more" target="_blank"' in html


@pytest.mark.parametrize(
    ("doc_id", "message"),
    [
        ("", "Pass the id"),
        ("nothex!", "Pass the id"),
        ("0123456789abcdef", "No indexed page"),
        ("url:http://wallaby.test/1", "no stored copy"),
        ("url:http://rottnest.test/gone", "cannot be read"),
        ("url:http://rottnest.test/escape", "outside the WARC directory"),
        ("url:http://rottnest.test/bad", "cannot be read"),
    ],
)
def test_missing_copies_are_404_with_a_reason(client, indexed, doc_id, message):
    if doc_id.startswith("url:"):
        doc_id = indexed[doc_id[4:]].id
    for path in ("/cache", "/cache/frame"):
        response = client.get(path, {"id": doc_id})
        assert response.status_code == 404, path
        assert message.lower() in response.content.decode().lower(), path


def test_complete_returns_titles_by_prefix(client):
    data = client.get("/api/complete", {"q": "quokka d"}).json()
    assert data == {"query": "quokka d", "completions": ["Quokka diet"]}
    assert client.get("/api/complete", {"q": "QUOK"}).json()["completions"][0] == "Quokka diet"
    assert client.get("/api/complete", {"q": ""}).json()["completions"] == []
    too_long = client.get("/api/complete", {"q": "q" * 101})
    assert too_long.status_code == 400 and "at most 100" in too_long.json()["error"]


def test_complete_offers_queries_many_searched_before_titles(client):
    def log(query: str, times: int, results: int = 5) -> None:
        for _ in range(times):
            QueryLogEntry.objects.create(query=query, normalized=query, results=results,
                                         source="page", at=timezone.now())

    log("quokka diet plan", 4)
    log("Quokka Dinner", 3)
    log("quokka dingo fight", 9, results=0)  # found nothing: never offered
    log("quokka diary of jane doe", 2)  # searched too few times: never offered
    data = client.get("/api/complete", {"q": "quokka di"}).json()
    assert data["completions"] == ["quokka diet plan", "Quokka Dinner", "Quokka diet"]


def test_complete_is_rate_limited(client, settings):
    settings.SEARCH_RATE_LIMIT = 2
    assert client.get("/api/complete", {"q": "quo"}).status_code == 200
    assert client.get("/api/complete", {"q": "quok"}).status_code == 200
    limited = client.get("/api/complete", {"q": "quokk"})
    assert limited.status_code == 429 and limited["Retry-After"]


def test_search_box_offers_completions_and_works_without_them(client):
    html = client.get("/").content.decode()
    assert 'list="completions"' in html and 'data-complete="/api/complete"' in html
    assert '<datalist id="completions"></datalist>' in html
    assert 'action="/"' in html and 'name="q"' in html  # a plain form without JavaScript


def test_facets_narrow_by_site_and_language(client):
    html = client.get("/", {"q": "quokka"}).content.decode()
    assert "Sites:" in html and "Languages:" in html
    assert 'href="?q=quokka%20site%3Arottnest.test">rottnest.test</a> <span class="count">(4)' \
        in html
    assert 'href="?q=quokka%20lang%3Ade">de</a> <span class="count">(2)' in html
    narrowed = client.get("/", {"q": "quokka lang:de"}).content.decode()
    assert "of about 2" in narrowed
    assert '<strong aria-current="true">de</strong>' in narrowed


def test_api_facets_on_request(client):
    plain = client.get("/api/search", {"q": "quokka"}).json()
    assert "facets" not in plain
    data = client.get("/api/search", {"q": "quokka", "facets": 1}).json()
    assert data["facets"] == {
        "site": [{"value": "rottnest.test", "count": 4}, {"value": "wallaby.test", "count": 2}],
        "lang": [{"value": "en", "count": 4}, {"value": "de", "count": 2}],
    }
