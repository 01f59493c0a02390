import gzip
import json
import random

from scrapy import signals
from scrapy.http import HtmlResponse, Request
from scrapy.utils.test import get_crawler

from crawler.items import PageItem
from index.rebuild import iter_responses, page_item_from_response, read_response, warc_files
from pipelines.warc import RotatingWarcWriter, WarcPipeline


def test_writer_rotates_by_size_and_offsets_point_at_responses(tmp_path):
    rng = random.Random(1)
    writer = RotatingWarcWriter(tmp_path, worker="w1", max_bytes=20_000)
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
    assert [r.url for r in iter_responses(files)] == [
        f"http://h{i % 3}.test/p/{i}?q=1" for i in range(40)
    ]


def test_request_record_follows_its_response(tmp_path):
    from warcio.archiveiterator import ArchiveIterator

    writer = RotatingWarcWriter(tmp_path, worker="w")
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
    writer = RotatingWarcWriter(tmp_path)
    writer.write(
        "http://a.test/robots.txt", 200, [("Content-Type", "text/plain")], b"User-agent: *"
    )
    writer.write("http://a.test/missing", 404, [("Content-Type", "text/html")], b"<p>no</p>")
    writer.close()
    responses = list(iter_responses(warc_files(tmp_path)))
    assert [page_item_from_response(r) for r in responses] == [None, None]
