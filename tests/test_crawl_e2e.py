"""End to end on the embedded default: crawl the local test web, then search it."""

import json
import re

import pytest

import testweb
from crawler.config import Config
from harness.crawlrun import migrate, run_crawl
from webui.search import backend as search_backend

pytestmark = [pytest.mark.slow, pytest.mark.django_db]


@pytest.fixture(scope="module")
def crawled(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("crawl")
    log = data_dir / "testweb.log"
    with testweb.run(hosts=6, log=log) as web:
        migrate(data_dir)
        seeds = [web.home_url(h) for h in web.hosts() if h.startswith("site")]
        result = run_crawl(
            data_dir,
            seeds,
            settings={"FRONTIER_DELAY": 0.02},
            args={"allowed_hosts": "*.test", "max_pages": 300},
        )
        assert result.returncode == 0, result.stderr[-3000:]
        lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
        yield data_dir, web, lines, result


@pytest.fixture
def crawl_backend(crawled, monkeypatch):
    data_dir = crawled[0]
    monkeypatch.setattr(search_backend, "get_config", lambda: Config(data_dir=data_dir))
    search_backend.get_search_backend.cache_clear()
    yield
    search_backend.get_search_backend().close()
    search_backend.get_search_backend.cache_clear()


def test_crawl_summary_and_scope(crawled):
    _, web, lines, result = crawled
    assert "crawl finished" in result.stderr
    # Scrapy's own hooks used as Scrapy 2.19 wants them (no Deferred returned to it).
    assert "ScrapyDeprecationWarning" not in result.stderr + result.stdout
    hosts = {line["host"] for line in lines}
    assert hosts <= {h for h in web.hosts() if h.startswith("site")}
    pages = [line for line in lines if line["status"] == 200 and line["path"] != "/robots.txt"]
    assert len(pages) >= 250


def test_robots_txt_obeyed(crawled):
    _, web, lines, _ = crawled
    disallowing = {h for h in web.hosts() if h.startswith("site") and web.web.host(h).robots_txt()}
    assert disallowing, "the test web must have hosts whose robots.txt disallows /private/"
    fetched_private = [
        line
        for line in lines
        if line["host"] in disallowing and line["path"].startswith("/private/")
    ]
    assert fetched_private == []
    robots_fetches = [line for line in lines if line["path"] == "/robots.txt"]
    assert {line["host"] for line in robots_fetches} == {line["host"] for line in lines}


def test_known_pages_found_through_api(crawled, crawl_backend, client):
    _, web, lines, _ = crawled
    fetched = [line for line in lines if line["status"] == 200 and line["path"].startswith("/p/")][
        :15
    ]
    assert fetched
    found = 0
    for line in fetched:
        info = web.web.page(line["host"], line["path"])
        data = client.get("/api/search", {"q": info.keyword}).json()
        urls = [hit["url"] for hit in data["results"]]
        # Test-web links take their anchor text from the paragraph around them, so a page
        # that a keyword's page links to may carry the keyword as anchor text too.
        found += info.url in urls[:3]
    assert found == len(fetched)


def test_title_and_site_filter(crawled, crawl_backend, client):
    _, web, lines, _ = crawled
    host = web.hosts()[1]
    home = web.web.page(host, "/")
    data = client.get("/api/search", {"q": f"site:{host} {home.title.split()[0]}"}).json()
    on_host = {line["path"] for line in lines if line["host"] == host
               and line["status"] == 200 and line["path"] != "/robots.txt"}
    # no more hits than the host has crawled pages, and its home page among them
    assert 1 <= data["total"] <= len(on_host)
    assert all(hit["url"].startswith(f"http://{host}:") for hit in data["results"])
    assert web.home_url(host) in [hit["url"] for hit in data["results"]]


def test_crawl_stats_exported_for_the_dashboard(crawled):
    from crawler.statsexport import FileStatsStore

    snapshots = FileStatsStore(crawled[0] / "stats").read()
    assert len(snapshots) >= 2
    last = snapshots[-1]
    assert last["stats"]["response_received_count"] > 0
    assert last["hosts"] and all(h.endswith(".test") for h in last["hosts"])


def test_dashboard_reads_the_crawls_stats(crawled, crawl_backend, admin_client, monkeypatch):
    monkeypatch.setenv("DATA_DIR", str(crawled[0]))
    text = admin_client.get("/dashboard/", {"window": 3600}).content.decode()
    pages = re.search(r'Pages fetched</div><div class="value">([\d,]+)<', text)
    assert pages and int(pages.group(1).replace(",", "")) > 50
    assert re.search(r"<td>site\d+\.test</td>", text)  # top hosts
    assert "Workers reporting" in text and text.count("<svg") == 5
