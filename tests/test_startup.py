"""What a crawl process imports at start: not Playwright, for a crawl that renders
nothing (the renderer is built on the first page to render)."""

import os
import subprocess
import sys

from harness import ROOT

STARTUP = """
import sys
from scrapy.utils.reactor import install_reactor
from scrapy.utils.test import get_crawler

install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")
from crawler import settings
from crawler.handlers import GuardedDownloadHandler

crawler = get_crawler(settings_dict={k: getattr(settings, k) for k in dir(settings)
                                     if k.isupper()})
handler = GuardedDownloadHandler.from_crawler(crawler)
assert handler._build_renderer is not None  # rendering is on
print(" ".join(name for name in ("scrapy_playwright", "playwright") if name in sys.modules)
      or "-")
"""


def test_a_crawl_that_renders_nothing_does_not_import_playwright():
    done = subprocess.run([sys.executable, "-c", STARTUP], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["-"]


EXTENSIONS = """
import sys
from scrapy.extension import ExtensionManager
from scrapy.utils.reactor import install_reactor
from scrapy.utils.test import get_crawler

install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")
from crawler import settings

values = {k: getattr(settings, k) for k in dir(settings) if k.isupper()}
values["REMOTE_CONTROL_ENABLED"] = sys.argv[1] == "on"
values["REMOTE_CONTROL_JOBS_DIR"] = sys.argv[2]
crawler = get_crawler(settings_dict=values)
names = [type(e).__name__ for e in ExtensionManager.from_crawler(crawler).middlewares]
print("RemoteControl" in names, "aiohttp" in sys.modules)
"""


def test_remote_control_is_imported_only_when_enabled(tmp_path):
    """Scrapy's RemoteControl module imports aiohttp (0.1 s of CPU at every start): a crawl
    with REMOTE_CONTROL_ENABLED off never imports it; on, the extension is Scrapy's."""
    seen = {}
    for state in ("off", "on"):
        done = subprocess.run([sys.executable, "-c", EXTENSIONS, state, str(tmp_path)],
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        seen[state] = done.stdout.split()
    assert seen == {"off": ["False", "False"], "on": ["True", "True"]}


DOWNLOADER = """
import sys
from scrapy.core.downloader.middleware import DownloaderMiddlewareManager
from scrapy.extension import ExtensionManager
from scrapy.utils.reactor import install_reactor
from scrapy.utils.test import get_crawler

install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")
from crawler import settings

values = {k: getattr(settings, k) for k in dir(settings) if k.isupper()}
values["COOKIES_ENABLED"] = sys.argv[1] == "on"
crawler = get_crawler(settings_dict=values)
ExtensionManager.from_crawler(crawler)
chain = DownloaderMiddlewareManager.from_crawler(crawler).middlewares
print(*(name in sys.modules for name in ("tldextract", "prometheus_client",
                                         "twisted.web.server")))
print(*(f"{type(m).__module__}.{type(m).__name__}" for m in chain))
"""


def test_cookies_and_the_metrics_endpoint_are_imported_only_when_on():
    """Scrapy's CookiesMiddleware module imports tldextract, the metrics endpoint
    prometheus_client and twisted.web.server (0.08 s of CPU at every start): a crawl with
    COOKIES_ENABLED and CRAWL_METRICS_PORT off (the defaults) imports none of them; with
    cookies on, the middleware is Scrapy's, at Scrapy's place in the chain."""
    seen = {}
    for state in ("off", "on"):
        done = subprocess.run([sys.executable, "-c", DOWNLOADER, state], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        imported, chain = done.stdout.splitlines()
        seen[state] = imported.split(), [name.rsplit(".", 1)[1] for name in chain.split()]
    assert seen["off"][0] == ["False", "False", "False"]
    assert "CookiesMiddleware" not in seen["off"][1]
    assert seen["on"][0] == ["True", "False", "False"]
    chain = seen["on"][1]
    # where Scrapy puts it: after DefaultHeadersMiddleware (400), before HttpProxyMiddleware
    assert chain.index("DefaultHeadersMiddleware") < chain.index("CookiesMiddleware") \
        < chain.index("HttpProxyMiddleware")


LOCAL_MODULES = """
import sqlite3
import sys

import crawler.freshness
import crawler.scheduler
import index.cache

print("redis" in sys.modules, crawler.scheduler.store_down() == (sqlite3.OperationalError,))
import redis.exceptions

print(crawler.scheduler.store_down() == (redis.exceptions.ConnectionError,
                                         redis.exceptions.TimeoutError, sqlite3.OperationalError))
"""


def test_a_local_crawl_imports_no_redis_and_a_redis_store_down_is_still_caught():
    """The scheduler, the recrawl feeder and the result cache import no redis (0.1 s of CPU
    at a crawl's start) for a crawl without Redis; once redis is imported (a Redis store
    imports it before it can raise), its connection errors are the store's being down."""
    done = subprocess.run([sys.executable, "-c", LOCAL_MODULES], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True", "True"]


CONTROL_STORE = """
import sys

from django.db import connection

from webui.control.rules import DjangoControlStore

store = DjangoControlStore()
store.prepare()
assert store.host_rules() == [] and store.seed_urls() == []
tables = connection.introspection.table_names()
print("webui.control.admin" in sys.modules, "django_admin_log" in tables)
"""


def test_the_crawl_control_store_sets_up_django_without_the_admin_s_registrations(tmp_path):
    """A crawl's control store reads the control models without loading every app's
    admin.py (the admin's autodiscover); the database it creates has the admin's tables
    all the same (the same migrations as ``manage.py migrate``)."""
    env = {**os.environ, "DATA_DIR": str(tmp_path)}
    for name in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, "-c", CONTROL_STORE], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]
