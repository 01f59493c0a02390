"""Host rules from the admin's database are obeyed by a real crawl."""

import json
import subprocess
import sys

import pytest

import testweb
from harness.crawlrun import ROOT, crawl_env, migrate, run_crawl

pytestmark = pytest.mark.slow

RULES = """
from webui.control.models import HostRule
HostRule.objects.create(pattern="site*.test", action="allow")
HostRule.objects.create(pattern="site0.test", action="block")
HostRule.objects.create(pattern="site1.test", action="allow", page_budget=5)
HostRule.objects.create(pattern="site2.test", action="allow", crawl_delay=0.5)
"""


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("rules")
    log = data_dir / "testweb.log"
    migrate(data_dir)
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", RULES],
        cwd=ROOT,
        env=crawl_env(data_dir),
        check=True,
        capture_output=True,
        timeout=120,
    )
    with testweb.run(hosts=4, log=log) as web:
        seeds = [web.home_url(h) for h in web.hosts()] + [web.web.url("calendar.test", "/")]
        result = run_crawl(
            data_dir, seeds, settings={"FRONTIER_DELAY": 0.02}, args={"max_pages": 120}
        )
        assert result.returncode == 0, result.stderr[-3000:]
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def by_host(lines, host):
    return sorted((line for line in lines if line["host"] == host), key=lambda x: x["start"])


def test_blocked_and_unallowed_hosts_are_never_fetched(crawl):
    assert by_host(crawl, "site0.test") == []
    assert by_host(crawl, "calendar.test") == []
    assert by_host(crawl, "site3.test")


def test_page_budget(crawl):
    # distinct pages: the cloaking probe fetches one of them again as a browser
    pages = {x["path"] for x in by_host(crawl, "site1.test") if x["path"] != "/robots.txt"}
    assert 1 <= len(pages) <= 5


def test_crawl_delay_override(crawl):
    lines = by_host(crawl, "site2.test")
    assert len(lines) >= 3
    gaps = [b["start"] - a["end"] for a, b in zip(lines, lines[1:], strict=False)]
    assert min(gaps) >= 0.5 - 0.01
