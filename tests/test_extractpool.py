"""The extraction pool: pooled pages equal inline ones; one page's failure, even one that
kills its worker process, loses no other page."""

import json
import os
from concurrent.futures.process import BrokenProcessPool

import pytest
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

import testweb
from crawler.extract import NotAPage, item_from_response
from crawler.extractpool import ExtractPool
from harness.crawlrun import migrate, run_crawl

PAGE = """<!doctype html><html lang="en"><head><title>Page {n}</title></head><body>
<nav><a href="/">Home</a></nav><main><h1 id="top">Heading {n}</h1>
<p>Paragraph {n} with <a href="/p/{m}.html">a link</a> and words enough to be a page.</p>
<h2 id="more">More</h2><p>Second section of page {n}.</p></main></body></html>"""


def page(n: int, **extra) -> dict:
    return {"url": f"http://a.test/p/{n}.html", "status": 200,
            "body": PAGE.format(n=n, m=n + 1).encode(), "fetched_at": 1.0,
            "content_type": "text/html; charset=utf-8", "depth": 1, **extra}


def dies_on_crash(**kwargs):
    """``item_from_response``, but the worker process dies on a URL naming ``crash``."""
    if "crash" in kwargs["url"]:
        os._exit(1)
    return item_from_response(**kwargs)


@pytest.fixture(scope="module")
def pool():
    pool = ExtractPool(2, function=dies_on_crash, stats=MemoryStatsCollector(get_crawler()))
    yield pool
    pool.close()


def test_pooled_pages_equal_inline_ones(pool):
    inline = ExtractPool(0)
    pages = [page(n) for n in range(12)]
    futures = [pool.run(**p) for p in pages]
    for p, future in zip(pages, futures, strict=True):
        got_page, got_item = future.result(timeout=60)
        want_page, want_item = inline.run(**p).result()
        assert got_item == want_item
        assert got_page == want_page
    assert got_item.sections and got_item.links


def test_an_error_reaches_its_caller_only(pool):
    bad = pool.run(**page(1, body=b"\x00\x01binary"))
    good = [pool.run(**page(n)) for n in range(2, 6)]
    with pytest.raises(NotAPage):
        bad.result(timeout=60)
    assert [f.result(timeout=60)[1].title for f in good] == [f"Page {n}" for n in range(2, 6)]


def test_a_page_that_kills_its_worker_loses_no_other_page():
    pool = ExtractPool(1, function=dies_on_crash, stats=MemoryStatsCollector(get_crawler()))
    before = [pool.run(**page(n)) for n in range(3)]
    crash = pool.run(**page(99, url="http://a.test/crash.html"))
    after = [pool.run(**page(n)) for n in range(3, 9)]
    with pytest.raises(BrokenProcessPool):
        crash.result(timeout=120)
    titles = [f.result(timeout=120)[1].title for f in before + after]
    assert titles == [f"Page {n}" for n in range(9)]
    assert pool.stats.get_value("extract/pool/killed_worker") == 1
    assert pool.stats.get_value("extract/pool/broken") >= 1
    assert pool.run(**page(10)).result(timeout=60)[1].title == "Page 10"
    pool.close()


@pytest.mark.slow
def test_a_crawl_keeps_the_same_pages_inline_and_pooled(tmp_path):
    """The spider and the pipelines after it make the same items of the same pages."""
    kept = {}
    with testweb.run(hosts=2, pages=12, log=tmp_path / "web.log") as web:
        hosts = ["site1.test"]
        seeds = [web.home_url(h) for h in hosts]
        for workers in (0, 2):
            data_dir = tmp_path / f"crawl{workers}"
            migrate(data_dir)
            feed = data_dir / "items.jsonl"
            result = run_crawl(data_dir, seeds, settings={
                "EXTRACT_WORKERS": workers, "FRONTIER_DELAY": 0.01,
                "FEEDS": json.dumps({str(feed): {"format": "jsonlines", "fields": [
                    "url", "title", "text", "links", "sections", "cluster_id"]}}),
            }, args={"allowed_hosts": ",".join(hosts)}, timeout=120)
            assert result.returncode == 0, result.stderr[-3000:]
            items = [json.loads(line) for line in feed.read_text().splitlines()]
            kept[workers] = {item["url"]: item for item in items}
    assert len(kept[0]) >= 10
    assert kept[0] == kept[2]
