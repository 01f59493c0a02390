"""The test web's crawl-quality hosts (testweb/quality.py) behave as documented, over a
real server: the cross-host mirror with per-fetch noise, the path calendar, the 404
subtree and soft 404s, and the spam hosts (cloaking by User-Agent)."""

from __future__ import annotations

import http.client
import re

import pytest

import testweb
from crawler.extract import extract
from testweb import TestWeb
from testweb.quality import CRAWLER_AGENTS, FARM_HOSTS, SPAM_HOSTS


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("quality") / "requests.jsonl"
    with testweb.run(hosts=3, pages=50, log=log) as handle:
        yield handle


def fetch(server, host: str, target: str, agent: str = "websearch-bot/0.1"):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("GET", target, headers={"Host": host, "User-Agent": agent})
        response = conn.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    finally:
        conn.close()


def test_mirror_copies_site0_with_noise_on_every_fetch_and_a_link_back(server):
    status, first = fetch(server, "mirror.test", "/p/3")
    _, second = fetch(server, "mirror.test", "/p/3")
    _, original = fetch(server, "site0.test", "/p/3")
    assert status == 200 and first != second  # the banner and footer change per fetch
    url = server.web.url("mirror.test", "/p/3")
    a, b = extract(first, url), extract(original, server.web.url("site0.test", "/p/3"))
    assert b.text in a.text.replace("\n", "\n") or b.text.split("\n")[1] in a.text
    assert a.text != b.text and "canonical" not in first
    assert server.web.url("site0.test", "/p/3") in first  # the link back to the original
    assert f"site0.test:{server.port}/p/" not in first.replace(
        server.web.url("site0.test", "/p/3"), "")  # every other own link is the mirror's
    assert server.web.cross_mirrors() == {"mirror.test": "site0.test"}
    assert server.web.page("mirror.test", "/p/3").title == server.web.page(
        "site0.test", "/p/3").title


def test_path_calendar_goes_on_forever_with_short_pages(server):
    status, day = fetch(server, "events.test", "/2026/03/14/")
    assert status == 200
    for target in ("/2026/03/13/", "/2026/03/15/", "/2026/02/", "/2026/04/",
                   "/2026/03/14/?view=week", "/2026/03/14/?view=list"):
        assert f"events.test:{server.port}{target}" in day
    status, far = fetch(server, "events.test", "/9999/12/31/?view=week")
    assert status == 200 and "Week of 9999-12-31" in far
    _, month = fetch(server, "events.test", "/2024/02/")
    assert len(re.findall(r"/2024/02/\d\d/", month)) == 29  # a leap February
    assert fetch(server, "events.test", "/2026/02/30/")[0] == 404
    page = server.web.page("events.test", "/2026/03/14/")
    assert len(page.main_text.split()) < 25


def test_dead_subtree_and_soft_404s(server):
    status, doc = fetch(server, "deadlinks.test", "/doc/4")
    assert status == 200
    archive = re.findall(r'href="[^"]*(/archive/\d+)"', doc)
    assert len(archive) == 6
    assert all(fetch(server, "deadlinks.test", p)[0] == 404 for p in archive)
    status, moved = fetch(server, "deadlinks.test", "/moved/4")
    assert status == 200 and "Page not found" in moved
    dead = server.web.host("deadlinks.test").dead_urls()
    assert server.web.url("deadlinks.test", "/moved/4") in dead


def test_spam_hosts_of_each_kind(server):
    assert set(server.web.spam_hosts().values()) == {
        "keyword_stuffing", "hidden_text", "doorway", "link_farm", "cloaking"}
    _, stuffed = fetch(server, "stuffing.test", "/p/1")
    words = extract(stuffed, "http://stuffing.test/p/1").text.split()
    assert max(words.count(w) for w in set(words)) > 20
    _, hidden = fetch(server, "hidden.test", "/p/1")
    assert re.search(r'style="(display:none|visibility:hidden|font-size:0|position)', hidden)
    _, door = fetch(server, "doorway.test", "/p/12")
    assert server.web.url("stuffing.test", "/p/0") in door
    _, farm = fetch(server, "farm0.test", "/p/3")
    others = {h for h in FARM_HOSTS if h != "farm0.test"}
    assert {h for h in others if f"{h}:{server.port}" in farm} == others
    for agent in CRAWLER_AGENTS[:2]:
        _, as_bot = fetch(server, "cloak.test", "/p/1", agent=f"some{agent}/1.0")
        assert "casino" not in as_bot.lower() or "viagra" not in as_bot.lower()
    _, as_person = fetch(server, "cloak.test", "/p/1", agent="Mozilla/5.0")
    assert extract(as_person, "http://cloak.test/p/1").text != extract(
        as_bot, "http://cloak.test/p/1").text
    assert set(SPAM_HOSTS) <= set(TestWeb(2, 9000).special_hosts())


def test_new_hosts_are_logged_like_the_rest(server):
    fetch(server, "farm2.test", "/p/0")
    import time

    time.sleep(0.5)
    assert any(line["host"] == "farm2.test" and line["path"] == "/p/0"
               for line in server.read_log())
