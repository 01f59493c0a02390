"""Changing hosts: known change rates, conditional GET, deletions and moves, simulated time."""

from __future__ import annotations

import email.utils
import http.client
import json
import re
import time

import pytest

import testweb
from testweb import TestWeb
from testweb.fresh import DAY, EPOCH, HOUR, LIFETIME, Clock, FreshHost

T = EPOCH + 20 * DAY  # after every deletion and move


class FixedTime:
    """A clock that only moves when told."""

    def __init__(self, now: float):
        self.now = now

    def __call__(self) -> float:
        return self.now


def fresh_web(now: float = T, pages: int = 300) -> tuple[TestWeb, FreshHost, FixedTime]:
    clock = FixedTime(now)
    web = TestWeb(1, 8000, seed=2, fresh_hosts=2, fresh_pages=pages, clock=clock)
    return web, web.host("fresh0.test"), clock


def test_clock_offset_speed_and_advance():
    real = FixedTime(1000.0)
    clock = Clock(offset=50.0, speed=10.0, real=real)
    assert clock() == 1050.0
    real.now = 1002.0
    assert clock() == 1002.0 + 50.0 + 2.0 * 9.0
    assert clock.advance(100.0) == clock() == 1002.0 + 150.0 + 18.0


def test_change_rates_match_their_periods():
    web, host, _ = fresh_web(pages=1000)
    periods = [host.period(n) for n in range(1000)]
    assert 0.33 < periods.count(None) / 1000 < 0.47
    assert 0.06 < periods.count(HOUR) / 1000 < 0.14
    assert web.fresh_hosts == ["fresh0.test", "fresh1.test"]
    assert host.paths() == [f"/p/{n}" for n in range(1000)]
    hourly = periods.index(HOUR)
    changes = host.change_times(hourly, EPOCH + 3 * DAY, EPOCH + 13 * DAY)
    assert 230 <= len(changes) <= 250
    assert all(EPOCH + 3 * DAY < t <= EPOCH + 13 * DAY for t in changes)
    assert host.change_times(periods.index(None), EPOCH, EPOCH + 30 * DAY) == []


def test_version_counts_changes_and_content_follows_version():
    web, host, clock = fresh_web()
    checked = 0
    for n in range(60):
        state = host.state(f"/p/{n}", T)
        if state.status != 200:
            continue
        t2 = T + 5 * HOUR
        later = host.state(f"/p/{n}", t2)
        assert later.version - state.version == len(host.change_times(n, T, t2))
        a, b = host.page(f"/p/{n}", T), host.page(f"/p/{n}", t2)
        assert (a.main_text == b.main_text) == (later.version == state.version)
        assert (a.keyword == b.keyword) == (later.version == state.version)
        assert (later.etag == state.etag) == (later.version == state.version)
        if later.version == state.version:
            assert later.last_modified == state.last_modified
        else:
            assert T < later.last_modified <= t2
        clock.now = t2
        assert web.render("fresh0.test", f"/p/{n}").body.decode().count(b.keyword) >= 1
        clock.now = T
        checked += 1
    assert checked > 40


def test_conditional_get():
    web, host, clock = fresh_web()
    n = next(n for n in range(300)
             if host.period(n) == HOUR and host.state(f"/p/{n}").status == 200)
    path = f"/p/{n}"
    first = web.render("fresh0.test", path)
    etag, modified = first.headers["ETag"], first.headers["Last-Modified"]
    assert first.status == 200
    assert web.render("fresh0.test", path, {"If-None-Match": etag}).status == 304
    assert web.render("fresh0.test", path, {"If-None-Match": '"x", ' + etag}).status == 304
    assert web.render("fresh0.test", path, {"If-None-Match": '"other"'}).status == 200
    not_modified = web.render("fresh0.test", path, {"If-Modified-Since": modified})
    assert not_modified.status == 304 and not_modified.body == b""
    assert not_modified.headers["ETag"] == etag
    earlier = email.utils.formatdate(host.state(path).last_modified - 10, usegmt=True)
    assert web.render("fresh0.test", path, {"If-Modified-Since": earlier}).status == 200
    clock.now = T + 3 * HOUR
    assert web.render("fresh0.test", path, {"If-None-Match": etag}).status == 200
    assert web.render("fresh0.test", path, {"If-Modified-Since": modified}).status == 200


def test_deletions_and_moves():
    web, host, clock = fresh_web()
    fates = {n: host._fate(n) for n in range(300)}
    gone = [n for n, (fate, _) in fates.items() if fate == "gone"]
    missing = [n for n, (fate, _) in fates.items() if fate == "missing"]
    moved = [n for n, (fate, _) in fates.items() if fate == "moved"]
    assert gone and missing and moved and len(gone + missing + moved) < 0.25 * 300
    for n in gone + missing + moved:
        when = fates[n][1]
        assert EPOCH <= when <= EPOCH + LIFETIME
        clock.now = when - 1
        assert web.render("fresh0.test", f"/p/{n}").status == 200
        assert web.render("fresh0.test", f"/moved/{n}").status == 404
        clock.now = when + 1
        response = web.render("fresh0.test", f"/p/{n}")
        if n in moved:
            assert response.status == 301
            assert response.headers["Location"] == web.url("fresh0.test", f"/moved/{n}")
            target = web.page("fresh0.test", f"/moved/{n}")
            assert target.url == response.headers["Location"]
            assert target.main_text == host._build(f"/p/{n}", n,
                                                   host.state(f"/moved/{n}").version)[0].main_text
        else:
            assert response.status == (410 if n in gone else 404)
            assert web.page("fresh0.test", f"/p/{n}") is None
    home = {link.url for link in web.page("fresh0.test", "/").links}
    assert web.url("fresh0.test", f"/p/{gone[0]}") in home  # stale links stay


def test_sitemap_lists_live_pages_with_lastmod():
    web, host, _ = fresh_web()
    assert "Sitemap: http://fresh0.test:8000/sitemap.xml" in web.render(
        "fresh0.test", "/robots.txt").body.decode()
    sitemap = web.render("fresh0.test", "/sitemap.xml").body.decode()
    locs = re.findall(r"<loc>http://fresh0.test:8000(/[^<]+)</loc><lastmod>([^<]+)</lastmod>",
                      sitemap)
    live = [p for p, _ in locs]
    assert all(host.state(p).status == 200 for p in live)
    dead = [f"/p/{n}" for n in range(300) if host.state(f"/p/{n}").status in (404, 410)]
    assert dead and not set(dead) & set(live)
    assert any(p.startswith("/moved/") for p in live)


def test_server_clock_can_be_advanced_and_serves_304(tmp_path):
    with testweb.run(hosts=1, pages=10, log=tmp_path / "log.jsonl",
                     clock_offset=T - time.time()) as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)

        def get(host, path, method="GET", headers=None):
            conn.request(method, path, headers={"Host": host, **(headers or {})})
            response = conn.getresponse()
            return response.status, dict(response.getheaders()), response.read()

        now = json.loads(get("clock.test", "/now")[2])["now"]
        host = server.web.host("fresh0.test")
        n = next(n for n in range(100)
                 if host.period(n) == HOUR and host.state(f"/p/{n}", now).status == 200)
        status, headers, body = get("fresh0.test", f"/p/{n}")
        assert status == 200 and host.page(f"/p/{n}", now).keyword in body.decode()
        assert get("fresh0.test", f"/p/{n}", headers={"If-None-Match": headers["ETag"]})[0] == 304
        advanced = json.loads(get("clock.test", "/advance?seconds=86400", method="POST")[2])
        assert advanced["now"] >= now + 86400
        status, headers2, _ = get("fresh0.test", f"/p/{n}",
                                  headers={"If-None-Match": headers["ETag"]})
        assert status == 200 and headers2["ETag"] != headers["ETag"]
        assert get("clock.test", "/advance?seconds=x", method="POST")[0] == 400
        conn.close()


@pytest.mark.parametrize("path", ["/p/300", "/p/07", "/moved/x", "/q"])
def test_fresh_unknown_paths(path):
    web, _, _ = fresh_web()
    assert web.render("fresh0.test", path).status == 404


def test_server_304_has_no_body_or_length(tmp_path):
    with testweb.run(hosts=1, pages=10, clock_offset=T - time.time()) as server:
        host = server.web.host("fresh0.test")
        n = next(n for n in range(100) if host.period(n) is None
                 and host.state(f"/p/{n}", T).status == 200)
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        conn.request("GET", f"/p/{n}", headers={"Host": "fresh0.test"})
        first = conn.getresponse()
        first.read()
        conn.request("GET", f"/p/{n}", headers={"Host": "fresh0.test",
                                                 "If-None-Match": first.getheader("ETag")})
        second = conn.getresponse()
        assert second.status == 304 and second.read() == b""
        assert second.getheader("Content-Length") is None
        assert second.getheader("ETag") == first.getheader("ETag")
        conn.request("GET", "/", headers={"Host": "fresh0.test"})  # the connection still works
        assert conn.getresponse().status == 200
        conn.close()
