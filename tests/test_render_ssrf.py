"""The renderer inside the SSRF guard: chromium reaches the network only through the
crawler's proxy (crawler/browserproxy.py), which resolves through the crawler's resolver
and connects only to allowed addresses.

The test web runs on 127.0.0.1, which this crawl allows (``SSRF_ALLOWED_NETWORKS``
127.0.0.1/32); a second test web listens on the same port at 127.0.0.5, a loopback address
the guard refuses, and logs every request it gets: a bypass of any kind shows up there.
"""

from __future__ import annotations

from urllib.parse import quote, urlsplit

import pytest

import testweb
from harness.crawlrun import final_stats, migrate, run_crawl
from tests.test_hostile_crawl import add_host_rule, items_of, settings_for

pytestmark = [pytest.mark.slow, pytest.mark.browser]

FORBIDDEN = "127.0.0.5"


@pytest.fixture(scope="module")
def escape_crawl(tmp_path_factory):
    """One crawl of every escape attempt, rendered in chromium; (stats, items, logs)."""
    data_dir = tmp_path_factory.mktemp("render-ssrf")
    with testweb.run(hosts=1, log=data_dir / "testweb.log") as web:
        port = web.port
        with testweb.run(hosts=1, port=port, log=data_dir / "forbidden.log",
                         extra_args=["--bind", FORBIDDEN]) as forbidden:
            migrate(data_dir)
            for pattern in ("escape.test", "rebind.example"):
                add_host_rule(data_dir, pattern, render_js=True)  # straight to the browser
            to = f"http://{FORBIDDEN}:{port}/"

            def escape(path: str, target: str) -> str:
                return web.web.url("escape.test", f"{path}?to={quote(target, safe='')}")

            seeds = [
                escape("/redirect", to + "redirect"),  # a redirect hop to loopback
                escape("/redirect", "http://metadata.example/latest/meta-data/"),  # link-local
                escape("/location", to + "location"),  # location.replace() while loading
                escape("/srcdoc", to),  # an about:srcdoc frame fetching and navigating
                f"http://rebind.example:{port}/rebound",  # 127.0.0.1 first, then 127.0.0.5
            ]
            settings = settings_for(
                data_dir,
                RESOLVE_OVERRIDES=(f"*.test=127.0.0.1,rebind.example={FORBIDDEN},"
                                   "metadata.example=169.254.169.254"),
                SSRF_ALLOWED_NETWORKS="127.0.0.1/32",
                TWISTED_DNS_RESOLVER="tests.rebinding.RebindingResolver",
                REBIND_FIRST_ANSWERS="rebind.example=127.0.0.1",
                FRONTIER_ROBOTS=False,
                RENDER_TIMEOUT_MS=10_000,
            )
            result = run_crawl(data_dir, seeds, settings=settings, args={"max_pages": 20},
                               timeout=240)
            assert result.returncode == 0, result.stderr[-3000:]
    log_text = (data_dir / "crawl.log").read_text()
    return (final_stats(log_text), items_of(data_dir / "items.jsonl"),
            web.read_log(), forbidden.read_log(), log_text)


def test_the_browser_fetches_nothing_from_a_refused_address(escape_crawl):
    stats, items, log, forbidden_log, crawl_log = escape_crawl
    assert forbidden_log == [], forbidden_log
    # the browser did load the pages that tried to escape
    paths = {(line["host"], line["path"].split("?")[0]) for line in log}
    assert {("escape.test", "/redirect"), ("escape.test", "/location"),
            ("escape.test", "/srcdoc")} <= paths, paths
    assert "rebind.example" not in {line["host"] for line in log}


def test_refusals_are_counted(escape_crawl):
    stats, *_ = escape_crawl
    # redirect hop, location change, the srcdoc frame's navigation, the rebound name
    assert stats.get("ssrf/refused/loopback", 0) >= 4, stats
    assert stats.get("ssrf/refused/link_local", 0) >= 1, stats
    assert stats.get("render/ssrf_refused", 0) >= 5, stats
    # the srcdoc frame's fetch() to another host is dropped before the proxy
    assert stats.get("playwright/request_count/aborted", 0) >= 1, stats


def test_only_the_page_that_stayed_home_is_indexed(escape_crawl):
    _, items, *_ = escape_crawl
    urls = [item["url"] for item in items]
    assert len(urls) == 1 and "/srcdoc" in urls[0], urls
    assert {urlsplit(u).hostname for u in urls} == {"escape.test"}
