"""Cached copies, completion and facets in a real browser: a result's cached copy shows its
banner and the stored page with none of its scripts run; the box offers titles; a facet
link narrows the results."""

import pytest
from playwright.sync_api import expect

from crawler.urls import doc_id_for
from index.base import Document
from pipelines.warc import RotatingWarcWriter
from webui.search.backend import get_search_backend

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

STORED = b"""<!doctype html><html><head><title>Wombat burrows</title>
<script>document.title = "SCRIPT RAN"; document.documentElement.dataset.ran = "1";</script>
</head><body onload="document.body.dataset.ran = '1'">
<h1>Wombats dig burrows</h1>
<p id="text">A wombat burrow can be 30 metres long. <a id="next" href="/tunnels">Tunnels</a></p>
<script>document.getElementById("text").textContent = "SCRIPT RAN"; alert("ran");</script>
<img src="x" onerror="alert('onerror ran')" alt="a wombat">
</body></html>"""


@pytest.fixture(scope="module")
def warc_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("warc")


@pytest.fixture(scope="module", autouse=True)
def pages(warc_dir):
    writer = RotatingWarcWriter(warc_dir, "b", prefix="test", max_bytes=10**8,
                                software="test", min_free_bytes=0)
    name, offset = writer.write("http://burrow.test/wombat", 200,
                                [("Content-Type", "text/html")], STORED,
                                fetched_at=1_760_000_000.0)
    writer.close()
    docs = [Document(id=doc_id_for("http://burrow.test/wombat"), url="http://burrow.test/wombat",
                     host="burrow.test", title="Wombat burrows", lang="en",
                     body="A wombat burrow can be 30 metres long.", warc_file=name,
                     warc_offset=offset, fetched_at=1_760_000_000.0)]
    docs += [Document(id=doc_id_for(f"http://marsupial{n % 2}.test/{n}"),
                      url=f"http://marsupial{n % 2}.test/{n}", host=f"marsupial{n % 2}.test",
                      title=f"Wombat facts {n}", body=f"The wombat, fact number {n}.",
                      lang="de" if n % 2 else "en")
             for n in range(6)]
    backend = get_search_backend()
    backend.index(docs)
    backend.refresh()
    backend.close()


@pytest.fixture(autouse=True)
def warc_setting(settings, warc_dir):
    settings.WARC_DIR = str(warc_dir)


def test_cached_copy_shows_the_banner_and_runs_no_script(page, live_server, shoot):
    page.goto(live_server.url + "/?q=wombat+burrow", wait_until="domcontentloaded")
    hit = page.locator("li.hit", has_text="Wombat burrows")
    hit.locator("a.cached").click()
    banner = page.locator(".cache-banner")
    expect(banner).to_contain_text("2025-10-09 08:53 UTC")
    expect(banner.locator("a.original")).to_have_attribute("href", "http://burrow.test/wombat")
    frame = page.frame_locator("iframe.cached-copy")
    expect(frame.locator("h1")).to_have_text("Wombats dig burrows")
    expect(frame.locator("#text")).to_contain_text("30 metres long")
    expect(frame.locator("#next")).to_have_attribute("href", "http://burrow.test/tunnels")
    expect(frame.locator("#next")).to_have_attribute("target", "_blank")
    assert frame.locator("html[data-ran], body[data-ran], script").count() == 0
    inner = page.frame(url=lambda u: "/cache/frame" in u)
    assert inner is not None and inner.title() == "Wombat burrows"
    expect(page).not_to_have_title("SCRIPT RAN")
    shoot("cached-copy")  # the page fixture fails the test on any dialog, error or CSP report


def test_missing_cached_copy_is_a_clear_404(browser, live_server):
    page = browser.new_page()  # not the strict page fixture: the 404 is logged as an error
    response = page.goto(live_server.url + "/cache?id=0123456789abcdef")
    assert response.status == 404
    expect(page.locator("p.error")).to_contain_text("No indexed page has this id")
    expect(page.locator("iframe")).to_have_count(0)
    page.close()


def test_search_box_offers_titles(page, live_server):
    page.goto(live_server.url + "/")
    page.locator("input[name=q]").press_sequentially("wombat f", delay=30)
    options = page.locator("#completions option")
    expect(options.first).to_have_attribute("value", "Wombat facts 0")
    expect(options).to_have_count(6)


def test_facet_links_narrow_the_results(page, live_server, shoot):
    page.goto(live_server.url + "/?q=wombat")
    expect(page.locator("nav.facets")).to_contain_text("marsupial0.test")
    shoot("facets")
    expect(page.locator("nav.facets")).to_contain_text("de (3)")
    page.locator("nav.facets a", has_text="de").click()
    expect(page.locator("input[name=q]")).to_have_value("wombat lang:de")
    expect(page.locator("li.hit")).to_have_count(3)
    expect(page.locator("nav.facets strong")).to_have_text("de")
    expect(page.locator("li.hit .url")).to_contain_text(["marsupial1.test"] * 3)
