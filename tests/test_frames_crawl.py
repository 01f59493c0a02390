"""A crawl follows frames: frames.test's pages are reached only through ``<frame src>``,
``<iframe src>`` and ``<noframes>`` links, each under the scope and SSRF checks of any link."""

from __future__ import annotations

import json

import pytest

import testweb
from harness.crawlrun import final_stats, migrate, run_crawl

pytestmark = pytest.mark.slow

HOST = "frames.test"


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("frames")
    log = data_dir / "testweb.log"
    with testweb.run(hosts=1, fresh_hosts=0, log=log) as web:
        migrate(data_dir)
        settings = {
            "LOG_FILE": str(data_dir / "crawl.log"),
            "LOG_LEVEL": "INFO",
            "FRONTIER_DELAY": 0.02,
            "FEEDS": json.dumps({str(data_dir / "items.jsonl"): {
                "format": "jsonlines", "fields": ["url", "title", "text"]}}),
        }
        # 10.0.0.1 in scope: its frame then meets the SSRF guard, as any link would
        result = run_crawl(data_dir, [web.home_url(HOST)], settings=settings,
                           args={"allowed_hosts": f"{HOST},10.0.0.1", "max_pages": 50})
        assert result.returncode == 0, result.stderr[-3000:]
        lines = web.settled_log()
        items = [json.loads(line) for line in
                 (data_dir / "items.jsonl").read_text().splitlines() if line.strip()]
        yield {"web": web.web, "lines": lines, "items": items,
               "stats": final_stats((data_dir / "crawl.log").read_text(errors="replace"))}


def test_every_page_behind_the_frames_is_fetched(crawl):
    fetched = {line["path"] for line in crawl["lines"]
               if line["host"] == HOST and line["status"] == 200}
    pages = {"/", "/menu", "/p/0", "/p/4", *crawl["web"].host(HOST).ARTICLES}
    assert pages <= fetched


def test_frames_out_of_scope_or_private_are_not_fetched(crawl):
    assert {line["host"] for line in crawl["lines"]} == {HOST}
    stats = crawl["stats"]
    assert stats.get("scope/out_of_scope", 0) >= 1  # site0.test
    assert stats.get("ssrf/refused/private", 0) >= 1  # 10.0.0.1


def test_the_frameset_is_indexed_with_its_fallback_text(crawl):
    web = crawl["web"]
    frameset = next(item for item in crawl["items"] if item["url"] == web.url(HOST, "/"))
    assert frameset["title"] == "Framed documentation"
    assert frameset["text"].startswith("This site uses frames.")
    assert "<" not in frameset["text"]
