"""Cheap requests that would cost a lot: deep pages, big pages, facets and ``explain`` on
the search API, and the cached copy of a 9 MB page. Each anonymous request stays within
~10x a first page of results."""

from __future__ import annotations

import random
import statistics
import time
import tracemalloc

import pytest

from crawler.config import Config
from crawler.urls import doc_id_for
from index.base import Document
from index.engines.embedded.backend import EmbeddedBackend
from pipelines.warc import RotatingWarcWriter
from testweb import text
from webui.search import backend as search_backend
from webui.search import views

pytestmark = pytest.mark.django_db

PAGES = 1500


def _page(i: int) -> Document:
    rng = text.rng_for("cost", i)
    url = f"http://host{i % 30}.test/p/{i}"
    body = "okapi " + " ".join(" ".join(text.sentence(rng)) for _ in range(12))
    return Document(id=doc_id_for(url), url=url, host=url.split("/")[2],
                    title=text.title_case(text.words(rng, 5)), body=body, lang="en")


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    """An index of PAGES pages that all match "okapi" (so depth costs what it can)."""
    data_dir = tmp_path_factory.mktemp("cost")
    backend = EmbeddedBackend.from_config(Config(data_dir=data_dir))
    backend.ensure_index()
    backend.index(_page(i) for i in range(PAGES))
    backend.refresh()
    yield backend, data_dir
    backend.close()


@pytest.fixture
def served(index, monkeypatch, settings):
    """The web UI searching ``index`` (no result cache: every query is computed)."""
    backend, data_dir = index
    for module in (search_backend, views):
        monkeypatch.setattr(module, "get_search_backend", lambda: backend)
    settings.SEARCH_RATE_LIMIT = 0
    settings.SEARCH_QUERY_LOG = False
    return backend, data_dir


def test_deep_big_and_explained_pages_are_bounded(client, admin_client, served):
    def status(c, **params):
        return c.get("/api/search", {"q": "okapi", **params}).status_code

    # the request: explain is for staff, the page size and depth are bounded
    assert status(client, page=100, size=100, facets=1, explain=1) == 403
    assert status(client, page=100, size=100, facets=1) == 400
    assert status(client, size=51) == 400
    assert status(client, page=21, size=50) == 400  # past the 1,000th result
    assert status(client, page=101) == 400
    assert status(client, page=20, size=50, facets=1) == 200  # the dearest allowed
    assert status(client, page=100, facets=1) == 200
    assert status(admin_client, explain=1) == 200


def test_no_anonymous_request_costs_more_than_ten_first_pages(client, served):
    words = sorted({w for i in range(60) for w in text.words(text.rng_for("q", i), 1)})[:12]

    def cpu_ms(**params) -> float:
        samples = []
        for word in words:
            started = time.process_time()
            response = client.get("/api/search", {"q": f"okapi {word}", **params})
            samples.append((time.process_time() - started) * 1000)
            assert response.status_code == 200, response.content
        return statistics.median(samples)

    cpu_ms()  # warm up
    normal = cpu_ms()
    dearest = max(cpu_ms(page=20, size=50, facets=1), cpu_ms(page=100, facets=1),
                  cpu_ms(size=50, facets=1))
    assert dearest <= 10 * normal, (dearest, normal)


def test_cached_copy_of_a_9_mb_page_is_bounded(client, served, settings, tmp_path):
    backend, _ = served
    url = "http://big.test/words"
    words = random.Random(9).choices(text.VOCABULARY, k=1_400_000)  # ~9 MB, as gzip does
    body = ("<!doctype html><title>Words</title><p>okapi " + " ".join(words)).encode()
    assert 8 * 2**20 < len(body) < 10 * 2**20
    writer = RotatingWarcWriter(tmp_path, "t", prefix="big", max_bytes=10**9,
                                software="test", min_free_bytes=0)
    name, offset = writer.write(url, 200, [("Content-Type", "text/html; charset=utf-8")], body,
                                fetched_at=1_760_000_000.0)
    writer.close()
    backend.index([Document(id=doc_id_for(url), url=url, host="big.test", title="Words",
                            body="okapi", warc_file=name, warc_offset=offset)])
    backend.refresh()
    settings.WARC_DIR = str(tmp_path)

    def peak_mb(path: str) -> tuple[float, bytes]:
        tracemalloc.start()
        try:
            response = client.get(path, {"id": doc_id_for(url)})
            return tracemalloc.get_traced_memory()[1] / 2**20, response.content
        finally:
            tracemalloc.stop()

    banner_mb, banner = peak_mb("/cache")
    assert b"big.test/words" in banner and b"2025-10-09" in banner
    assert banner_mb < 2, banner_mb  # the record's headers, not its 9 MB body
    frame_mb, frame = peak_mb("/cache/frame")
    assert b"<p>okapi " in frame and b"The stored page goes on" in frame
    assert len(frame) < 1.2 * settings.CACHED_COPY_MAX_BYTES
    assert frame_mb < 12, frame_mb
