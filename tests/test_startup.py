"""What a crawl process imports at start: not Playwright, for a crawl that renders
nothing (the renderer is built on the first page to render)."""

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
