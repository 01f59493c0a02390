"""Sitemap parsing: robots.txt lines, indexes, urlsets, gzip, garbage."""

import gzip

from crawler.sitemaps import SitemapEntry, parse_sitemap, robots_sitemaps
from testweb.web import TestWeb

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def test_robots_sitemap_lines():
    body = (b"User-agent: *\nDisallow: /x\nSitemap: http://a.test/s1.xml\n"
            b"  sitemap:http://a.test/s2.xml.gz  \nSITEMAP: http://a.test/s1.xml\n# Sitemap: no\n")
    assert robots_sitemaps(body) == ["http://a.test/s1.xml", "http://a.test/s2.xml.gz"]
    assert robots_sitemaps(b"User-agent: *\nDisallow:\n") == []


def test_urlset_index_and_gzip():
    urlset = (f'<?xml version="1.0"?><urlset {NS}><url><loc> http://a.test/p </loc>'
              f"<lastmod>2026-01-02</lastmod></url><url><loc>http://a.test/q</loc></url>"
              "</urlset>").encode()
    expected = [SitemapEntry("http://a.test/p", "2026-01-02"), SitemapEntry("http://a.test/q")]
    assert parse_sitemap(urlset) == ("urlset", expected)
    assert parse_sitemap(gzip.compress(urlset)) == ("urlset", expected)
    index = (f"<sitemapindex {NS}><sitemap><loc>http://a.test/s.xml</loc></sitemap>"
             "</sitemapindex>").encode()
    assert parse_sitemap(index) == ("sitemapindex", [SitemapEntry("http://a.test/s.xml")])


def test_limits_and_garbage():
    many = f"<urlset {NS}>" + "".join(f"<url><loc>http://a.test/{i}</loc></url>"
                                       for i in range(100)) + "</urlset>"
    assert len(parse_sitemap(many.encode(), max_entries=10)[1]) == 10
    bomb = gzip.compress(b"<urlset>" + b" " * 2_000_000 + b"</urlset>")
    assert parse_sitemap(bomb, max_size=1_000_000) == ("", [])
    for junk in (b"", b"\x1f\x8bnot gzip", b"<html><p>page</p></html>", b"\x89PNG\x00\x00"):
        assert parse_sitemap(junk) == ("", [])


def test_testweb_sitemaps_host():
    web = TestWeb(1, 9000)
    robots = web.render("sitemaps.test", "/robots.txt").body
    (index_url,) = robots_sitemaps(robots)
    kind, children = parse_sitemap(web.render("sitemaps.test", "/sitemap_index.xml").body)
    assert index_url.endswith("/sitemap_index.xml") and kind == "sitemapindex"
    pages = []
    for child in children:
        path = child.loc.split(":9000", 1)[1]
        pages += parse_sitemap(web.render("sitemaps.test", path).body)[1]
    host = web.host("sitemaps.test")
    assert [p.loc for p in pages] == [web.url("sitemaps.test", f"/p/{n}") for n in range(40)]
    assert pages[4].lastmod == host.lastmod(4)


def test_released_sitemap_urls_stay_within_the_recent_links_bound(monkeypatch):
    from scrapy.utils.test import get_crawler

    import spiders.web
    from spiders.web import WebSpider

    monkeypatch.setattr(spiders.web, "RECENT_LINKS", 10)
    crawler = get_crawler(WebSpider, {"CONTROL_STORE": "", "SITEMAP_RELEASE": 1000})
    spider = WebSpider.from_crawler(crawler, seeds="http://a.test/")
    spider._sitemap_backlog.add("a.test", ((f"http://a.test/p{n}", "") for n in range(50)))
    released = list(spider.release_sitemap_urls("a.test"))
    assert len(released) == 50
    assert len(spider._recent_links) <= 11


def test_release_takes_a_few_urls_and_keeps_the_rest_in_order():
    from scrapy.utils.test import get_crawler

    from spiders.web import WebSpider

    crawler = get_crawler(WebSpider, {"CONTROL_STORE": "", "SITEMAP_RELEASE": 10})
    spider = WebSpider.from_crawler(crawler, seeds="http://a.test/")
    backlog = spider._sitemap_backlog
    backlog.add("a.test", ((f"http://a.test/p{n}", f"2026-01-{n % 28 + 1:02d}")
                           for n in range(100)))
    backlog.add("a.test", [("http://a.test/p3", "")])  # a repeat: skipped, not counted
    urls = []
    while True:
        batch = list(spider.release_sitemap_urls("a.test"))
        if not batch:
            break
        assert len(batch) <= 10
        urls += [r.url for r in batch]
    assert urls == [f"http://a.test/p{n}" for n in range(100)]
    assert batch == [] and len(backlog) == 0 and "a.test" not in backlog


def test_sitemap_backlog_is_capped_and_compact():
    """At most ``max_pending`` entries, kept compressed: a backlog that held the entries
    as tuples (~200 bytes each) fails the size check."""
    import tracemalloc

    from crawler.sitemaps import SitemapBacklog

    backlog = SitemapBacklog(max_pending=30_000)
    entries = {h: [(f"http://site{h}.test:38887/p/{n}", f"2026-11-{n % 28 + 1:02d}T10:00:00Z")
                   for n in range(1_001)] for h in range(40)}
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        added = sum(backlog.add(f"site{h}.test", rows) for h, rows in entries.items())
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert added == len(backlog) == 30_000
    assert backlog.add("site0.test", [("http://site0.test/x", "")]) == 0  # full
    assert held / added < 40, f"{held / added:.1f} bytes per queued sitemap URL"
    first = backlog.pop("site0.test")
    assert first[0] == ("http://site0.test:38887/p/0", "2026-11-01T10:00:00Z")
    assert len(backlog) == 30_000 - len(first)
    backlog.push_front("site0.test", first[5:])
    assert backlog.pop("site0.test")[0] == entries[0][5]
