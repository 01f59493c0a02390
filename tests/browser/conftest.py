"""Playwright driving Debian's chromium against a live Django server (pytest-django)."""

import os
import shutil

import pytest

from tests.conftest import ARTIFACTS

# Playwright's sync API runs an event loop in this thread; the test's own ORM calls are
# still synchronous and safe.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = "/usr/bin/chromium"
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def browser():
    """Chromium for one test module: Playwright's event loop must stop before other modules
    run (they may call asyncio.run)."""
    if not os.path.exists(CHROMIUM):
        pytest.fail("chromium is not installed: apt-get install -y chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    """A fresh desktop-sized page; fails the test on any CSP violation or JS error."""
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    page.set_default_timeout(10_000)
    problems: list[str] = []
    page.on("console", lambda m: m.type == "error" and problems.append(m.text))
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    yield page
    context.close()
    assert not problems, problems


@pytest.fixture(scope="session")
def artifacts():
    shutil.rmtree(ARTIFACTS / "browser", ignore_errors=True)
    (ARTIFACTS / "browser").mkdir(parents=True, exist_ok=True)
    return ARTIFACTS / "browser"


@pytest.fixture
def shoot(page, artifacts):
    """Screenshot the page at desktop and phone width: ``shoot("name")``."""

    def shoot(name: str) -> None:
        page.screenshot(path=str(artifacts / f"{name}-desktop.png"), full_page=True)
        page.set_viewport_size(PHONE)
        page.screenshot(path=str(artifacts / f"{name}-phone.png"), full_page=True)
        page.set_viewport_size(DESKTOP)

    return shoot
