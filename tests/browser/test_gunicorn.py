"""The search page as production serves it: gunicorn, static files collected and served by
whitenoise, in Debian's chromium (no CSP violation, no JavaScript error, no failed load)."""

import pytest
from playwright.sync_api import expect

from tests.webserver import gunicorn, index_pages, prepare

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("gunicorn-browser")
    prepare(data_dir)
    index_pages(data_dir, 14)
    with gunicorn(data_dir) as web:
        yield web


def test_search_page_under_gunicorn(page, server, shoot):
    failed: list[str] = []

    def on_failed(request):
        # site.js aborts a completion request a newer keystroke or the navigation made stale;
        # that is the page working, not a failed load.
        if "/api/complete" in request.url and request.failure == "net::ERR_ABORTED":
            return
        failed.append(f"{request.failure} {request.url}")

    page.on("requestfailed", on_failed)
    page.on("response", lambda r: r.status >= 400 and failed.append(f"{r.status} {r.url}"))
    page.goto(server.url + "/")
    # the collected site.css applied (body margin 0, the brand in bold)
    assert page.evaluate("getComputedStyle(document.body).margin") == "0px"
    assert page.evaluate("getComputedStyle(document.querySelector('.brand')).fontWeight") == "700"
    page.locator("body").click()
    page.keyboard.press("/")  # site.js, served by whitenoise, focuses the box
    expect(page.locator("input[name=q]")).to_be_focused()
    with page.expect_response(lambda r: r.url.endswith("/api/complete?q=okapi")) as completion:
        page.keyboard.type("okapi")
    assert completion.value.ok
    page.keyboard.press("Enter")
    expect(page.locator("p.meta")).to_contain_text("Results 1–10 of about 14")
    expect(page.locator("li.hit")).to_have_count(10)
    expect(page.locator("li.hit mark").first).to_have_text("okapi")
    page.click("a[rel=next]")
    expect(page.locator("p.meta")).to_contain_text("Results 11–14 of about 14")
    shoot("gunicorn-results")
    assert failed == []
    assert "development server" not in server.output()
    assert '"GET /static/webui/site.js' in server.output()  # gunicorn's access log
