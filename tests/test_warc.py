import asyncio
import gzip
import inspect
import json
import random

import pytest
from scrapy import signals
from scrapy.http import HtmlResponse, Request
from scrapy.utils.test import get_crawler

from batch.rebuild import iter_responses, page_item_from_response, read_response, warc_files
from crawler.items import PageItem
from crawler.options import settings_to_options
from crawler.signals import cluster_elected
from crawler.urls import doc_id_for
from pipelines.warc import RotatingWarcWriter, WarcPipeline


def test_writer_rotates_by_size_and_offsets_point_at_responses(tmp_path):
    rng = random.Random(1)
    writer = RotatingWarcWriter.from_settings(None, tmp_path, worker="w1", max_bytes=20_000)
    written = []
    for i in range(40):
        body = json.dumps({"page": i, "pad": rng.randbytes(1500).hex()}).encode()
        location = writer.write(
            f"http://h{i % 3}.test/p/{i}?q=1",
            200,
            [("Content-Type", "application/json"), ("Transfer-Encoding", "chunked")],
            body,
            request_headers=[("User-Agent", "t")],
            fetched_at=1_700_000_000 + i,
        )
        written.append((location, body))
    writer.close()
    files = warc_files(tmp_path)
    assert len(files) > 2
    assert all(p.name.startswith("crawl-") and p.name.endswith("-w1.warc.gz") for p in files)
    assert [p.name for p in files] == writer.files
    for i, ((name, offset), body) in enumerate(written):
        record = read_response(tmp_path, name, offset)
        assert record.url == f"http://h{i % 3}.test/p/{i}?q=1"
        assert record.body == body
        assert record.status == 200
        assert record.header("Content-Length") == str(len(body))
        assert record.header("Transfer-Encoding") == ""
        assert record.fetched_at == 1_700_000_000 + i
    assert [(r.url, r.body, (r.warc_file, r.warc_offset)) for r in iter_responses(files)] == [
        (f"http://h{i % 3}.test/p/{i}?q=1", body, location)
        for i, (location, body) in enumerate(written)
    ]


def test_the_rebuild_makes_the_item_the_spider_made_truncation_and_hidden_words_too(tmp_path):
    """Spider and rebuild share ``crawler.extract.item_from_response``; the size cut travels in
    the record (``WARC-Truncated``), the hidden words are counted from the stored body."""
    from crawler.extract import item_from_response

    body = (b"<html><head><title>T</title></head><body><p>seen words here</p>"
            b'<div style="display:none">hidden stuffing words</div><p>cut he')
    headers = [("Content-Type", "text/html; charset=utf-8"), ("Content-Language", "en")]
    writer = RotatingWarcWriter.from_settings(None, tmp_path, worker="w1")
    name, offset = writer.write("http://a.test/p", 200, headers, body, fetched_at=1_700_000_000,
                                truncated=True)
    plain = writer.write("http://a.test/q", 200, headers, body, fetched_at=1_700_000_000)
    writer.close()
    _page, crawled = item_from_response("http://a.test/p", 200, body, 1_700_000_000.0,
                                        content_type=headers[0][1], language="en",
                                        truncated=True, warc_file=name, warc_offset=offset)
    rebuilt = page_item_from_response(read_response(tmp_path, name, offset))
    assert rebuilt == crawled
    assert (rebuilt.truncated, rebuilt.hidden_words, rebuilt.lang) == (True, 3, "en")
    assert page_item_from_response(read_response(tmp_path, *plain)).truncated is False


def test_request_record_follows_its_response(tmp_path):
    from warcio.archiveiterator import ArchiveIterator

    writer = RotatingWarcWriter.from_settings(None, tmp_path, worker="w")
    writer.write(
        "http://a.test/x", 404, [], b"nope", method="GET", request_headers=[("Accept", "text/html")]
    )
    writer.close()
    with open(warc_files(tmp_path)[0], "rb") as fh:
        records = [(r.rec_type, r.rec_headers, r.http_headers) for r in ArchiveIterator(fh)]
    assert [t for t, _, _ in records] == ["warcinfo", "response", "request"]
    response_id = records[1][1].get_header("WARC-Record-ID")
    assert records[2][1].get_header("WARC-Concurrent-To") == response_id
    assert (records[2][2].protocol, records[2][2].statusline) == ("GET", "/x HTTP/1.1")
    assert records[2][2].get_header("Accept") == "text/html"


def test_records_are_written_without_temporary_files_as_warcio_writes_them(tmp_path,
                                                                           monkeypatch):
    """The payloads' lengths are known, so warcio copies no payload to a temporary file nor
    digests it twice; the records and their headers' order are those warcio writes for a
    payload of unknown length."""
    from warcio.archiveiterator import ArchiveIterator
    from warcio.recordbuilder import RecordBuilder

    def no_temporary_file():
        raise AssertionError("a payload copied to a temporary file")

    monkeypatch.setattr(RecordBuilder, "_create_temp_file", staticmethod(no_temporary_file))
    writer = RotatingWarcWriter.from_settings(None, tmp_path, worker="w")
    writer.write("http://a.test/x?q=1", 200, [("Content-Type", "text/html")], b"<p>hi</p>",
                 method="POST", request_headers=[("Accept", "text/html")],
                 request_body=b"a=1", fetched_at=1_700_000_000)
    writer.close()
    with open(warc_files(tmp_path)[0], "rb") as fh:
        records = [(r.rec_type, r.rec_headers.headers, r.content_stream().read())
                   for r in ArchiveIterator(fh, check_digests="raise")]
    names = {t: [name for name, _ in headers] for t, headers, _ in records}
    assert names["response"] == [
        "WARC-Date", "WARC-Type", "WARC-Record-ID", "WARC-Target-URI",
        "WARC-Payload-Digest", "WARC-Block-Digest", "Content-Type", "Content-Length"]
    assert names["request"] == [
        "WARC-Type", "WARC-Record-ID", "WARC-Target-URI", "WARC-Date", "WARC-Concurrent-To",
        "WARC-Payload-Digest", "WARC-Block-Digest", "Content-Type", "Content-Length"]
    assert [body for t, _, body in records if t != "warcinfo"] == [b"<p>hi</p>", b"a=1"]


def _html_response(url: str, html: str, encoding: str | None = None) -> HtmlResponse:
    body = html.encode()
    headers = {"Content-Type": "text/html; charset=utf-8"}
    if encoding == "gzip":
        body = gzip.compress(body)
        headers["Content-Encoding"] = "gzip"
    return HtmlResponse(url, body=body, headers=headers, request=Request(url))


def test_pipeline_records_downloads_and_locates_items(tmp_path):
    crawler = get_crawler(settings_dict={"WARC_DIR": str(tmp_path), "WARC_WORKER_ID": "t"})
    pipeline = WarcPipeline.from_crawler(crawler)
    html = (
        "<html><head><title>Hello</title></head><body><main><p>Hello there world</p>"
        "<a href='/b'>to b</a></main></body></html>"
    )
    response = _html_response("http://a.test/", html, encoding="gzip")
    crawler.signals.send_catch_log(
        signals.response_downloaded, response=response, request=response.request, spider=None
    )
    redirect = HtmlResponse(
        "http://a.test/old",
        status=301,
        headers={"Location": "/"},
        request=Request("http://a.test/old"),
    )
    crawler.signals.send_catch_log(
        signals.response_downloaded, response=redirect, request=redirect.request, spider=None
    )
    item = PageItem(
        url="http://a.test/",
        fetched_url="http://a.test/",
        host="a.test",
        status=200,
        fetched_at=0.0,
        text="Hello there world",
    )
    pipeline.process_item(item)
    pipeline.close_spider()
    assert item.warc_file.endswith("-t.warc.gz")
    record = read_response(tmp_path, item.warc_file, item.warc_offset)
    assert record.body == html.encode()  # content encoding undone on read
    assert [r.status for r in iter_responses(warc_files(tmp_path))] == [200, 301]
    rebuilt = page_item_from_response(record)
    assert (rebuilt.url, rebuilt.title, rebuilt.text) == (
        "http://a.test/",
        "Hello",
        "Hello there world\nto b",
    )
    assert [link.url for link in rebuilt.links] == ["http://a.test/b"]
    assert (rebuilt.warc_file, rebuilt.warc_offset) == (item.warc_file, item.warc_offset)
    assert crawler.stats.get_value("warc/records") == 4


def test_pipeline_writes_items_it_did_not_see_downloaded(tmp_path):
    crawler = get_crawler(settings_dict={"WARC_DIR": str(tmp_path)})
    pipeline = WarcPipeline.from_crawler(crawler)
    item = PageItem(
        url="http://b.test/",
        fetched_url="http://b.test/",
        host="b.test",
        status=200,
        fetched_at=1_700_000_000.0,
        raw_headers={"Content-Type": "text/html"},
        raw_body=b"<p>raw</p>",
    )
    pipeline.process_item(item)
    pipeline.close_spider()
    record = read_response(tmp_path, item.warc_file, item.warc_offset)
    assert (record.url, record.body, record.fetched_at) == (
        "http://b.test/",
        b"<p>raw</p>",
        1_700_000_000.0,
    )
    assert crawler.stats.get_value("warc/from_item") == 1


def test_non_html_and_error_responses_make_no_item(tmp_path):
    writer = RotatingWarcWriter.from_settings(None, tmp_path)
    writer.write(
        "http://a.test/robots.txt", 200, [("Content-Type", "text/plain")], b"User-agent: *"
    )
    writer.write("http://a.test/missing", 404, [("Content-Type", "text/html")], b"<p>no</p>")
    writer.close()
    responses = list(iter_responses(warc_files(tmp_path)))
    assert [page_item_from_response(r) for r in responses] == [None, None]


def answer(results):
    """A result page as (total, ranked hits, hits tied at the page's lowest score).

    Equal scores tie in engine order, which depends on index segments: hits of equal score
    are sorted by cluster (or id), and of those tied at the page's end only the count is
    kept (which of them make the page is engine order too).
    """
    ranked = [(round(h.score, 4), h.cluster_id or h.id, h.similar) for h in results.hits]
    lowest = min((r[0] for r in ranked), default=0.0)
    above = sorted((r for r in ranked if r[0] > lowest), key=lambda r: (-r[0], r[1]))
    return results.total, above, sum(r[0] == lowest for r in ranked)


def assert_same_answer(a, b, tolerance: float = 0.02) -> None:
    """``a`` and ``b`` rank the same hits with scores within ``tolerance`` (relative): an
    index whose documents were rewritten (the page a cluster shows swapped, ``set_shown``)
    still counts the old versions in its BM25 statistics until its segments merge, which
    moves every score a little (1.1% on this test's pages with one indexing thread,
    ``EMBEDDED_WRITER_THREADS``, whose fewer segments merge later); hits that close may
    swap places, across the page's lower scores too: each hit clear of the page's lowest
    score on one side is on the other's page."""
    assert a.total == b.total
    ranked_a = sorted((h.score for h in a.hits), reverse=True)
    ranked_b = sorted((h.score for h in b.hits), reverse=True)
    assert ranked_a == pytest.approx(ranked_b, rel=tolerance)
    lowest = min(ranked_a, default=0.0) * (1 + 2 * tolerance)

    def keys(hits, above=0.0):
        return {(h.cluster_id or h.id, h.similar) for h in hits if h.score > above}

    assert keys(a.hits, lowest) <= keys(b.hits) and keys(b.hits, lowest) <= keys(a.hits)


async def _outputs(parsed) -> list:
    return [out async for out in parsed]


def _crawl_through_pipelines(pages, data_dir):
    """The spider's parse and the pipelines, in crawl order, on responses made from pages."""
    from crawler.quality.dedup.pipeline import DedupPipeline
    from index.engines.embedded.backend import EmbeddedBackend
    from pipelines.index import IndexPipeline
    from pipelines.linkgraph import LinkGraphPipeline
    from spiders.web import WebSpider

    settings = {
        "CONTROL_STORE": "",
        "DATA_DIR": str(data_dir),
        "WARC_WORKER_ID": "w1",
        "WARC_MAX_BYTES": 30_000,
        "EXTRACT_WORKERS": 0,  # inline: parse's extraction never waits, no reactor needed
    }
    crawler = get_crawler(WebSpider, settings_dict=settings)
    spider = WebSpider.from_crawler(crawler, seeds="http://news0.test/")
    crawler.spider = spider
    spider.open_extractor()
    chain = [
        DedupPipeline.from_crawler(crawler),
        WarcPipeline.from_crawler(crawler),
        LinkGraphPipeline.from_crawler(crawler),
        IndexPipeline(EmbeddedBackend(data_dir / "index"), stats=crawler.stats,
                      **settings_to_options(None, IndexPipeline.SETTINGS, batch_size=50)),
    ]
    chain[-1].open_spider()
    # as IndexPipeline.from_crawler does: swaps of the page a cluster shows reach the index
    crawler.signals.connect(chain[-1].elected, signal=cluster_elected)
    items = []
    for page in pages:
        response = HtmlResponse(
            page.url,
            body=page.html.encode(),
            headers={"Content-Type": "text/html; charset=utf-8"},
            request=Request(page.url),
        )
        crawler.signals.send_catch_log(
            signals.response_downloaded, response=response, request=response.request, spider=spider
        )
        for out in asyncio.run(_outputs(spider.parse(response))):
            if isinstance(out, PageItem):
                for pipeline in chain:
                    out = pipeline.process_item(out)
                items.append(out)
    for pipeline in reversed(chain):
        if hasattr(pipeline, "close_spider"):
            pipeline.close_spider()
    return items


def test_rebuilt_index_answers_like_the_original(tmp_path):
    from batch.rebuild import rebuild_index
    from index.engines.embedded.backend import EmbeddedBackend
    from testweb.nearcopies import generate

    pages = generate(articles=40, short_pages=10, seed=3)
    twin = pages[0]
    pages.append(
        twin.__class__(
            **{**twin.__dict__, "url": "http://alias.test/same.html", "host": "alias.test"}
        )
    )
    items = _crawl_through_pipelines(pages, tmp_path / "crawl")
    assert len(warc_files(tmp_path / "crawl" / "warc")) > 3
    assert any(item.dup_of for item in items)
    assert any(item.cluster_id != item.doc_id and not item.dup_of for item in items)

    rebuilt = EmbeddedBackend(tmp_path / "rebuilt")
    report = rebuild_index(tmp_path / "crawl" / "warc", rebuilt)
    original = EmbeddedBackend(tmp_path / "crawl" / "index")
    original.ensure_index()
    assert report.aliases == {item.doc_id: item.dup_of for item in items if item.dup_of}
    assert report.documents == original.stats()["docs"] == rebuilt.stats()["docs"]
    fields = ("url", "host", "title", "body", "headings", "sections", "cluster_id", "anchors",
              "warc_file", "warc_offset")
    for item in items:
        before, after = original.get(item.doc_id), rebuilt.get(item.doc_id)
        assert (before is None) == (after is None) == bool(item.dup_of)
        if before is not None:
            assert [getattr(before, f) for f in fields] == [getattr(after, f) for f in fields]
    queries = [" ".join(p.title.split()[:2]) for p in pages[:12]]
    queries += [f'"{" ".join(pages[5].text.split()[3:6])}"', "-zzz " + pages[7].title.split()[0]]

    for query in queries:
        a, b = original.search(query, size=20), rebuilt.search(query, size=20)
        assert a.total > 0
        assert_same_answer(a, b)
    original.close()
    rebuilt.close()


def test_rebuild_indexes_anchor_text_of_inbound_links(tmp_path):
    from batch.rebuild import rebuild_index
    from index.engines.embedded.backend import EmbeddedBackend

    writer = RotatingWarcWriter.from_settings(None, tmp_path / "warc")
    html = {
        "http://a.test/": "<title>A</title><nav><a href='http://b.test/'>wonderful zebra guide"
        "</a></nav><main><p>alpha page words</p></main>",
        "http://b.test/": "<title>B</title><main><p>beta page words</p></main>",
    }
    for url, body in html.items():
        writer.write(url, 200, [("Content-Type", "text/html")], body.encode())
    writer.close()
    backend = EmbeddedBackend(tmp_path / "index")
    report = rebuild_index(tmp_path / "warc", backend)
    assert report.documents == 2
    assert backend.get(doc_id_for("http://b.test/")).anchors == "wonderful zebra guide"
    assert [h.url for h in backend.search("zebra").hits] == ["http://b.test/"]
    backend.close()


def test_rebuild_keeps_the_sections_of_a_real_page(tmp_path):
    from pathlib import Path

    from batch.rebuild import rebuild_index
    from crawler.extract import decode_html, extract
    from index.engines.embedded.backend import EmbeddedBackend

    page = Path("/usr/share/doc/apache2-doc/manual/en/mod/core.html")
    if not page.is_file():
        pytest.skip("apache2-doc is not installed (scripts/apt-packages.txt)")
    url = "http://httpd.test/en/mod/core.html"
    writer = RotatingWarcWriter.from_settings(None, tmp_path / "warc")
    writer.write(url, 200, [("Content-Type", "text/html")], page.read_bytes())
    writer.close()
    backend = EmbeddedBackend(tmp_path / "index")
    rebuild_index(tmp_path / "warc", backend)
    extracted = extract(decode_html(page.read_bytes())[0], url)
    stored = backend.get(doc_id_for(url))
    assert stored.sections == tuple((s.start, s.anchor, s.heading) for s in extracted.sections)
    assert (stored.body.index("AllowOverride Directive"), "allowoverride",
            "AllowOverride Directive") in stored.sections
    hit = backend.search("AllowOverride").hits[0]
    assert (hit.anchor, hit.section) == ("allowoverride", "AllowOverride Directive")
    backend.close()


def test_manage_reindex_from_warc(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    from index.engines.embedded.backend import EmbeddedBackend

    writer = RotatingWarcWriter.from_settings(None, tmp_path / "warc")
    page = "<title>Quokka</title><main><p>The quokka smiles at visitors on the island.</p></main>"
    writer.write("http://q.test/", 200, [("Content-Type", "text/html")], page.encode())
    writer.write("http://q2.test/", 200, [("Content-Type", "text/html")], page.encode())
    writer.close()
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run(
        [sys.executable, "manage.py", "reindex", "--from-warc", str(tmp_path / "warc")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("1 documents indexed from 2 pages")
    assert "1 exact duplicates recorded as aliases" in done.stdout
    backend = EmbeddedBackend(tmp_path / "data" / "index")
    backend.ensure_index()
    assert [h.url for h in backend.search("quokka").hits] == ["http://q.test/"]
    backend.close()
    assert (tmp_path / "data" / "linkgraph" / "links.sqlite").exists()


@pytest.mark.slow
def test_crawl_then_reindex_from_warc_answers_like_the_crawl(tmp_path):
    """Process level: `scrapy crawl web` with the content pipelines, then `manage.py reindex`."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import testweb
    from harness.crawlrun import crawl_env, run_crawl
    from index.engines.embedded.backend import EmbeddedBackend

    pipelines = {
        "crawler.quality.dedup.pipeline.DedupPipeline": 100,
        "pipelines.warc.WarcPipeline": 200,
        "pipelines.linkgraph.LinkGraphPipeline": 300,
        "pipelines.index.IndexPipeline": 900,
    }
    crawl_dir = tmp_path / "crawl"
    with testweb.run(hosts=3, pages=15) as web:
        result = run_crawl(
            crawl_dir,
            [web.home_url(h) for h in web.hosts() if h.startswith("site")],
            settings={
                "ITEM_PIPELINES": json.dumps(pipelines),
                "DOWNLOAD_DELAY": 0.01,
                "CONTROL_STORE": "",
                "WARC_MAX_BYTES": 200_000,
                "INDEX_ANCHORS": False,
            },
            args={"allowed_hosts": "site*.test"},
            timeout=120,
        )
    assert result.returncode == 0, result.stderr[-3000:]
    files = warc_files(crawl_dir / "warc")
    statuses = [r.status for r in iter_responses(files)]
    assert statuses.count(200) >= 30
    rebuilt_dir = tmp_path / "rebuilt"
    done = subprocess.run(
        # the crawl above indexed no anchor text (INDEX_ANCHORS): compare like with like
        [
            sys.executable,
            "manage.py",
            "reindex",
            "--no-anchors",
            "--from-warc",
            str(crawl_dir / "warc"),
        ],
        cwd=Path(__file__).resolve().parent.parent,
        env=crawl_env(rebuilt_dir),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    original = EmbeddedBackend(crawl_dir / "index")
    rebuilt = EmbeddedBackend(rebuilt_dir / "index")
    original.ensure_index()
    rebuilt.ensure_index()
    assert original.stats()["docs"] == rebuilt.stats()["docs"] > 20
    titles = [
        original.get(r.hits[0].id).title
        for r in [original.search(w) for w in ("the", "a", "of")]
        if r.hits
    ]
    for query in [*titles, "site:" + web.hosts()[0]]:
        a, b = original.search(query, size=20), rebuilt.search(query, size=20)
        assert a.total > 0
        assert answer(a) == answer(b)
    original.close()
    rebuilt.close()
    assert os.path.exists(rebuilt_dir / "linkgraph" / "links.sqlite")


def test_full_disk_pauses_holds_items_and_resumes_when_space_returns(tmp_path):
    from pipelines.warc import WarcDiskFull

    writer = RotatingWarcWriter.from_settings(None, tmp_path, worker="w", min_free_bytes=1 << 62)
    with pytest.raises(WarcDiskFull):
        writer.write("http://a.test/", 200, [], b"x")
    assert list(tmp_path.glob("*.warc.gz")) == []  # nothing half-written left behind

    events = []
    pipeline = WarcPipeline(writer, retry_s=3600, pause=lambda: events.append("pause"),
                            resume=lambda: events.append("resume"))
    request = Request("http://a.test/")
    response = HtmlResponse("http://a.test/", body=b"<html>a</html>", request=request)
    pipeline.response_downloaded(response, request)
    assert pipeline.paused and events == ["pause"]
    item = PageItem(url="http://a.test/", fetched_url="http://a.test/", status=200,
                    host="a.test", fetched_at=0.0)
    waiting = pipeline.process_item(item)
    assert inspect.iscoroutine(waiting)  # what Scrapy awaits (a Deferred is deprecated)

    async def crawl():
        waited = asyncio.ensure_future(waiting)
        await asyncio.sleep(0)
        assert not waited.done()  # the item waits for its record
        pipeline._drain()  # still full: nothing changes
        await asyncio.sleep(0)
        assert pipeline.paused and not waited.done()
        writer.min_free_bytes = 0
        pipeline._drain()
        assert not pipeline.paused and events == ["pause", "resume"]
        return await waited

    assert asyncio.run(crawl()) is item
    assert item.warc_file and item.warc_offset == writer_offset(tmp_path)
    pipeline.close_spider()


def writer_offset(directory) -> int:
    """Offset of the first response record: right after the warcinfo record."""
    from warcio.archiveiterator import ArchiveIterator

    (path,) = directory.glob("*.warc.gz")
    with open(path, "rb") as f:
        for record in (it := ArchiveIterator(f)):
            if record.rec_type == "response":
                return it.get_record_offset()
    raise AssertionError("no response record")


def test_a_response_record_without_http_headers_is_a_clear_error(tmp_path):
    """A misread offset (a document's stale ``warc_offset``) can parse as a response record
    with no HTTP headers: read_response says so instead of failing on the missing headers."""
    import io

    from warcio.warcwriter import WARCWriter

    with open(tmp_path / "dns.warc.gz", "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        writer.write_record(writer.create_warc_record(
            "dns:rottnest.test", "response", payload=io.BytesIO(b"rottnest.test. 60 IN A 10.0.0.1"),
            warc_content_type="text/dns"))
    with pytest.raises(ValueError, match="without HTTP headers"):
        read_response(tmp_path, "dns.warc.gz", 0)


def test_header_pairs_of_scrapy_headers_are_those_of_their_items():
    from scrapy.http.headers import Headers

    from pipelines.warc import _header_pairs

    headers = Headers({"content-type": "text/html", "X-B3-TraceId": b"1",
                       "set-cookie": ["a=1", "b=2"], "Empty": []})
    assert _header_pairs(headers) == [
        (name.decode("latin-1"), value.decode("latin-1"))
        for name, values in headers.items() for value in values]
    assert _header_pairs({"Plain": "1", b"Raw": [b"2", "3"]}) == [
        ("Plain", "1"), ("Raw", "2"), ("Raw", "3")]
