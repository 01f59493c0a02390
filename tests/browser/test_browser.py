"""The web UI in a real browser: search and paginate, block a host in the admin and see its
pages go, the dashboard and the URL inspector. Screenshots go to test-artifacts/browser/."""

import re
import time

import pytest
from playwright.sync_api import expect

from crawler.statsexport import FileStatsStore
from crawler.urls import doc_id_for
from index.base import Document
from webui.search.backend import get_search_backend

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

HOSTILE_TITLE = "<img src=x onerror=alert(1)>Quagga <script>alert(2)</script>"


@pytest.fixture(scope="module", autouse=True)
def pages():
    backend = get_search_backend()
    docs = [
        Document(
            id=doc_id_for(f"http://plains{n % 3}.test/q/{n}"),
            url=f"http://plains{n % 3}.test/q/{n}",
            host=f"plains{n % 3}.test",
            title=f"The quagga, page {n}",
            body=f"The quagga was a subspecies of the plains equids. Record {n} of the archive "
            "describes its striped head and brown hindquarters.",
            pagerank=0.1 * (n % 5),
        )
        for n in range(23)
    ]
    docs.append(Document(id=doc_id_for("javascript:alert(3)"), url="javascript:alert(3)",
                         host="plains0.test", title=HOSTILE_TITLE,
                         body="quagga <script>alert(4)</script> trap"))
    backend.index(docs)
    backend.refresh()
    backend.close()


@pytest.fixture
def staff(django_user_model):
    django_user_model.objects.create_superuser("staff", "staff@example.test", "s3cret-pass")
    return "staff", "s3cret-pass"


def _login(page, live_server, staff, next_url):
    page.goto(f"{live_server.url}/admin/login/?next={next_url}")
    page.fill("#id_username", staff[0])
    page.fill("#id_password", staff[1])
    page.click("input[type=submit]")


def test_search_and_paginate(page, live_server, shoot):
    page.goto(live_server.url + "/")
    expect(page.locator("details.help")).to_contain_text("site:example.org")
    shoot("home")
    page.locator("body").click()
    page.keyboard.press("/")  # the keyboard shortcut focuses the box
    expect(page.locator("input[name=q]")).to_be_focused()
    page.keyboard.type("quagga")
    page.keyboard.press("Enter")
    expect(page.locator("p.meta")).to_contain_text("Results 1–10 of about 24")
    expect(page.locator("p.meta")).to_contain_text(re.compile(r"\d+\.\d ms"))
    expect(page.locator("li.hit")).to_have_count(10)
    expect(page.locator("li.hit mark").first).to_have_text(re.compile("quagga", re.I))
    page.keyboard.press("j")
    expect(page.locator("li.hit.selected")).to_have_count(1)
    shoot("results")
    page.click("a[rel=next]")
    expect(page.locator("p.meta")).to_contain_text("Results 11–20 of about 24")
    expect(page.locator("nav.pages .current")).to_have_text("2")
    page.click("nav.pages a >> text=3")
    expect(page.locator("p.meta")).to_contain_text("Results 21–24 of about 24")
    expect(page.locator("a[rel=next]")).to_have_count(0)
    shoot("results-page3")
    page.goto(live_server.url + "/?q=quagga+trap")
    # the hostile result is plain text: no element was injected, its URL is not a link
    hostile = page.locator("li.hit", has_text="javascript:alert(3)")
    expect(hostile).to_have_count(1)
    expect(hostile.locator("a")).to_have_count(0)
    expect(hostile.locator("h2")).to_contain_text("<img src=x onerror=alert(1)>")
    assert page.locator("li.hit img, li.hit script").count() == 0
    shoot("hostile")
    page.goto(live_server.url + '/?q="quagga+unicorn"+site:plains1.test')
    expect(page.locator("section.zero")).to_contain_text("No pages match")
    page.click("text=Without quotes")
    expect(page.locator("input[name=q]")).to_have_value("quagga unicorn site:plains1.test")
    shoot("zero-results")
    page.goto(live_server.url + "/?q=quaga")
    page.click(".suggestion a")
    expect(page.locator("input[name=q]")).to_have_value("quagga")
    expect(page.locator("li.hit")).to_have_count(10)


def test_search_works_without_javascript(browser, live_server, artifacts):
    context = browser.new_context(java_script_enabled=False, viewport={"width": 390,
                                                                       "height": 844})
    page = context.new_page()
    page.goto(live_server.url + "/")
    page.fill("input[name=q]", "quagga archive")
    page.press("input[name=q]", "Enter")
    expect(page.locator("p.meta")).to_contain_text("Results 1–10")
    page.click("a[rel=next]")
    expect(page.locator("p.meta")).to_contain_text("Results 11–20")
    page.screenshot(path=str(artifacts / "no-javascript-phone.png"), full_page=True)
    context.close()


def test_block_a_host_in_the_admin(page, live_server, staff, shoot):
    page.goto(live_server.url + "/?q=quagga+site:plains2.test")
    expect(page.locator("p.meta")).to_contain_text("of about 7")
    _login(page, live_server, staff, "/admin/control/hostrule/add/")
    page.fill("#id_pattern", "plains2.test")
    page.select_option("#id_action", "block")
    page.fill("#id_crawl_delay", "2")
    page.fill("#id_note", "blocked in the browser test")
    shoot("admin-hostrule-add")
    page.click("input[name=_save]")
    expect(page.locator("ul.messagelist")).to_contain_text("7 page(s) removed from the index")
    expect(page.locator("#result_list")).to_contain_text("plains2.test")
    shoot("admin-hostrule-list")
    page.goto(live_server.url + "/?q=quagga+site:plains2.test")
    expect(page.locator("section.zero")).to_contain_text("No pages match")
    page.goto(live_server.url + "/?q=quagga+site:plains1.test")
    expect(page.locator("li.hit").first).to_be_visible()
    page.goto(live_server.url + "/admin/control/seed/bulk-add/")
    page.fill("#id_urls", "http://plains1.test/\nhttp://plains0.test/q/1")
    shoot("admin-seeds-bulk")
    page.click("input[type=submit]")
    expect(page.locator("ul.messagelist")).to_contain_text("Added 2 seed(s)")


def test_dashboard(page, live_server, staff, shoot, data_dir):
    store = FileStatsStore(data_dir / "stats")
    now = time.time()
    for worker, speed in (("box1-101", 12), ("box2-202", 7)):
        for n in range(40):
            store.append({
                "ts": now - 40 * 30 + n * 30, "worker": worker,
                "stats": {
                    "response_received_count": n * 30 * speed + (n % 4) * 20,
                    "downloader/exception_type_count/twisted.internet.error.TimeoutError": n,
                    "downloader/response_status_count/503": n // 3,
                    "frontier/cluster/queue_depth": 5000 + 120 * n - n * n * 2,
                    "frontier/cluster/hosts_cooldown": 20 + n % 7,
                    "frontier/dropped/budget": 4 * n,
                    "scope/out_of_scope": 9 * n,
                    "index/indexed": n * 25 * speed,
                },
                "hosts": {"plains0.test": 40 * n, "plains1.test": 25 * n, "slow.test": 3 * n},
            })
    _login(page, live_server, staff, "/dashboard/")
    expect(page.locator("h1")).to_have_text("Crawl dashboard")
    expect(page.locator("figure.plot svg")).to_have_count(5)
    expect(page.locator("figure.plot polyline").first).to_be_visible()
    expect(page.locator(".tables")).to_contain_text("TimeoutError")
    expect(page.locator(".tables")).to_contain_text("plains0.test")
    expect(page.locator(".cards")).to_contain_text("Documents in index")
    shoot("dashboard")


def test_inspector(page, live_server, staff, shoot):
    _login(page, live_server, staff, "/dashboard/inspect")
    page.fill("input[name=url]", "HTTP://Plains0.test/q/3?utm_source=mail")
    page.click("form.inspect button")
    expect(page.locator(".verdict")).to_contain_text("Indexed")
    expect(page.locator("table.kv")).to_contain_text("http://plains0.test/q/3")
    expect(page.locator("table.kv")).to_contain_text("PageRank")
    shoot("inspector")
    page.click("text=Recrawl now")
    expect(page.locator("ul.messages")).to_contain_text("at top priority")
    page.fill("input[name=url]", "http://unknown.test/nothing")
    page.click("form.inspect button")
    expect(page.locator(".verdict")).to_contain_text("has not discovered this URL")
    shoot("inspector-not-indexed")
