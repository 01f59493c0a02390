"""Redirects and meta refreshes obey the crawl's scope: with one host allowed (by
``allowed_hosts`` or an admin allow rule), a 302, a 301 and a ``<meta refresh>`` to another
host are neither fetched nor indexed, while redirects and refreshes within the host still
lead to their targets."""

from __future__ import annotations

import time
from urllib.parse import urlsplit

import pytest

import testweb
from harness.crawlrun import final_stats, migrate, run_crawl
from tests.test_hostile_crawl import add_host_rule, items_of, settings_for

pytestmark = pytest.mark.slow

OFF_SCOPE = ("/cross", "/cross-perm", "/cross-meta")  # 302, 301, meta refresh to site0.test
IN_SCOPE = ("/meta", "/chain/2", "/temp")  # meta refresh, 301s, 307 within redirects.test


def crawl_redirects(tmp_path, args: dict, rule: str = ""):
    """Crawl redirects.test's redirecting paths; ``(hosts fetched, items, stats)``."""
    log = tmp_path / "testweb.log"
    with testweb.run(hosts=1, log=log) as web:
        migrate(tmp_path)
        if rule:
            add_host_rule(tmp_path, rule, action="allow")
        seeds = [web.web.url("redirects.test", p) for p in OFF_SCOPE + IN_SCOPE]
        result = run_crawl(tmp_path, seeds, settings=settings_for(tmp_path),
                           args={"max_depth": 1, **args}, timeout=120)
        assert result.returncode == 0, result.stderr[-3000:]
        time.sleep(0.3)
        fetched = {(line["host"], line["path"]) for line in web.read_log()}
    items = items_of(tmp_path / "items.jsonl")
    return fetched, items, final_stats((tmp_path / "crawl.log").read_text(errors="replace"))


def check(fetched, items, stats) -> None:
    assert {host for host, _ in fetched} == {"redirects.test"}
    assert all("//redirects.test" in item["url"] for item in items)
    assert stats["scope/offsite/redirect"] == len(OFF_SCOPE)
    indexed = {urlsplit(item["url"]).path for item in items}
    assert {"/meta-target", "/chain/0"} <= indexed  # in-scope hops still end at their pages
    assert ("redirects.test", "/chain/1") in fetched


def test_redirects_out_of_allowed_hosts_are_not_followed(tmp_path):
    check(*crawl_redirects(tmp_path, {"allowed_hosts": "redirects.test"}))


def test_redirects_out_of_admin_allow_rules_are_not_followed(tmp_path):
    check(*crawl_redirects(tmp_path, {}, rule="redirects.test"))
