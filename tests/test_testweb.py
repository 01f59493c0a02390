"""The test web: deterministic content, robots variants, the server, its log, the ground truth."""

from __future__ import annotations

import http.client
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import testweb
from testweb import TestWeb

ROOT = Path(__file__).resolve().parent.parent


def _get(conn: http.client.HTTPConnection, host: str, path: str, method: str = "GET",
         headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    conn.request(method, path, headers={"Host": host, **(headers or {})})
    response = conn.getresponse()
    body = response.read()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, body


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("testweb") / "requests.jsonl"
    with testweb.run(hosts=12, seed=3, log=log, pages=500) as handle:
        yield handle


# -- content, without a server ------------------------------------------------------------------


def test_same_seed_same_bytes_other_seed_other_bytes():
    a, b, c = TestWeb(5, 8000, seed=1), TestWeb(5, 8000, seed=1), TestWeb(5, 8000, seed=2)
    for path in ["/", "/p/0", "/p/42", "/private/7", "/robots.txt"]:
        assert a.render("site3.test", path).body == b.render("site3.test", path).body
    assert a.render("site3.test", "/p/42").body != c.render("site3.test", "/p/42").body
    assert a.render("site3.test", "/p/42").body != a.render("site4.test", "/p/42").body


def test_cache_does_not_change_content():
    cached = TestWeb(3, 8000, seed=5, cache_pages=2)
    fresh = [TestWeb(3, 8000, seed=5).render("site1.test", f"/p/{n}").body for n in range(6)]
    for _ in range(2):
        assert [cached.render("site1.test", f"/p/{n}").body for n in range(6)] == fresh
    assert len(cached.cache) == 2


def test_page_ground_truth_matches_html():
    web = TestWeb(10, 8123, seed=0)
    for path in ["/", "/p/0", "/p/17", "/p/9999", "/private/3"]:
        body = web.render("site5.test", path).body.decode()
        info = web.page("site5.test", path)
        assert info is not None and info.url == f"http://site5.test:8123{path}"
        assert f"<title>{info.title}</title>" in body
        assert re.fullmatch(r"kw[0-9a-f]{10}", info.keyword)
        assert body.count(info.keyword) >= 1 and info.keyword in info.main_text
        assert f"<h1>{info.headings[0]}</h1>" in body
        for heading in info.headings[1:]:
            assert f"<h2>{heading}</h2>" in body
        hrefs = re.findall(r'href="(http[^"]+)"', body)
        assert hrefs == [link.url for link in info.links]
        assert all(link.url.startswith("http://site") and ":8123/" in link.url
                   for link in info.links)
        article = body[body.index("<article>"):body.index("</article>")]
        article_text = re.sub(r"<[^>]+>", "", article).split()
        assert article_text == info.main_text.split()
        assert "Subscribe" not in info.main_text and "Copyright" not in info.main_text


def test_pages_look_like_text_pages():
    web = TestWeb(20, 8000, seed=0)
    infos = [web.page("site7.test", f"/p/{n}") for n in range(200)]
    assert len({i.keyword for i in infos}) == 200
    link_counts = [len(i.links) for i in infos]
    assert 15 <= sum(link_counts) / len(link_counts) <= 25
    other_host = [link for i in infos for link in i.links
                  if not link.url.startswith("http://site7.test:")]
    assert 0.05 < len(other_host) / sum(link_counts) < 0.25
    words = [w.lower() for i in infos for w in i.main_text.split()]
    assert len(words) / len(infos) > 200
    counts: dict[str, int] = {}
    for w in words:
        counts[w] = counts.get(w, 0) + 1
    ranked = sorted(counts.values(), reverse=True)
    assert ranked[0] > 5 * ranked[20] and len(counts) > 1500  # a long-tailed distribution


def test_home_links_first_pages_and_pages_chain():
    web = TestWeb(3, 8000, seed=0, pages_per_host=300)
    home = {link.url for link in web.page("site2.test", "/").links}
    assert {web.url("site2.test", f"/p/{n}") for n in range(100)} <= home
    nxt = [link.url for link in web.page("site2.test", "/p/150").links if link.text == "Next"]
    assert nxt == [web.url("site2.test", "/p/151")]
    assert web.page("site2.test", "/p/299") is not None
    assert web.render("site2.test", "/p/300").status == 404
    assert web.render("site2.test", "/p/012").status == 404
    assert web.render("site2.test", "/private/100").status == 404


def test_robots_variants():
    web = TestWeb(40, 8000, seed=0)
    variants = {h: web.host(h).robots for h in web.normal_hosts}
    assert [variants[f"site{i}.test"] for i in range(4)] == [
        "none", "disallow", "crawl-delay", "sitemap"]
    assert web.render("site0.test", "/robots.txt").status == 404
    assert web.render("site1.test", "/robots.txt").body == b"User-agent: *\nDisallow: /private/\n"
    assert b"Crawl-delay: 1\n" in web.render("site2.test", "/robots.txt").body
    robots3 = web.render("site3.test", "/robots.txt").body.decode()
    assert "Sitemap: http://site3.test:8000/sitemap.xml" in robots3
    sitemap = web.render("site3.test", "/sitemap.xml")
    assert sitemap.status == 200 and sitemap.body.count(b"<loc>") == 1001
    assert web.render("site1.test", "/sitemap.xml").status == 404
    delayed = [h for h, v in variants.items() if v == "crawl-delay"]
    assert 1 <= len(delayed) <= 12  # most hosts have no delay
    assert set(variants.values()) == {"none", "disallow", "crawl-delay", "sitemap"}
    info = web.page("site1.test", "/p/5")
    assert any("/private/" in link.url for link in info.links)


def test_unknown_host_and_method():
    web = TestWeb(2, 8000)
    assert web.render("site2.test", "/").status == 404
    assert web.render("example.com", "/").status == 404
    assert web.render("site1.test", "/", method="POST").status == 405


# -- the server ------------------------------------------------------------------------------


def test_server_serves_the_ground_truth_over_keep_alive(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    paths = ["/", "/p/1", "/p/499", "/robots.txt", "/private/2"]
    for path in paths:
        status, headers, body = _get(conn, f"site4.test:{server.port}", path)
        expected = server.web.render("site4.test", path)
        assert (status, body) == (expected.status, expected.body)
        assert headers["content-length"] == str(len(body))
        assert headers["connection"] == "keep-alive"
    local_port = conn.sock.getsockname()[1]
    status, headers, body = _get(conn, "site4.test", "/p/1", method="HEAD")
    assert status == 200 and body == b""
    assert headers["content-length"] == str(len(server.web.render("site4.test", "/p/1").body))
    assert conn.sock.getsockname()[1] == local_port  # still the same connection
    conn.close()


def test_server_unknown_host_and_missing_page(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    assert _get(conn, "nowhere.test", "/")[0] == 404
    assert _get(conn, "site99.test", "/")[0] == 404
    assert _get(conn, "site1.test", "/p/500")[0] == 404
    assert _get(conn, "site1.test", "/")[0] == 200
    conn.close()


def test_connection_close_is_honoured(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    status, headers, _ = _get(conn, "site1.test", "/", headers={"Connection": "close"})
    assert status == 200 and headers["connection"] == "close"
    conn.close()


def test_pipelined_requests_answer_in_order(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(b"GET /p/1 HTTP/1.1\r\nHost: site2.test\r\n\r\n"
                     b"GET /p/2 HTTP/1.1\r\nHost: site2.test\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    first, second = (server.web.render("site2.test", p).body for p in ("/p/1", "/p/2"))
    assert data.index(first) < data.index(second)


def test_log_lines_are_flushed_while_running(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    _get(conn, "site7.test", "/p/77?x=1")
    conn.close()
    deadline = time.time() + 3
    while time.time() < deadline:
        lines = [r for r in server.read_log() if r["path"] == "/p/77?x=1"]
        if lines:
            break
        time.sleep(0.05)
    (line,) = lines
    assert set(line) == {"start", "end", "host", "path", "method", "status", "bytes", "conn"}
    assert line["host"] == "site7.test" and line["method"] == "GET" and line["status"] == 200
    assert line["bytes"] == len(server.web.render("site7.test", "/p/77").body)
    assert line["start"] <= line["end"] <= time.time()
    assert isinstance(line["conn"], int)


def test_log_keeps_connection_ids_and_is_flushed_on_sigterm(tmp_path):
    log = tmp_path / "log.jsonl"
    with testweb.run(hosts=2, log=log, pages=10) as handle:
        for _ in range(2):
            conn = http.client.HTTPConnection("127.0.0.1", handle.port, timeout=10)
            for n in range(3):
                _get(conn, "site0.test", f"/p/{n}")
            conn.close()
        assert handle.stop() == 0
        records = handle.read_log()
    assert len(records) == 6
    conns = [r["conn"] for r in records]
    assert conns[:3] == [conns[0]] * 3 and conns[3:] == [conns[3]] * 3 and conns[0] != conns[3]


def test_cli_help_and_ready_line(tmp_path):
    out = subprocess.run([sys.executable, "-m", "testweb", "--help"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    for option in ("--hosts", "--port", "--log", "--seed", "--bind", "--pages"):
        assert option in out
    with testweb.run(hosts=3, pages=10) as handle:
        assert handle.port > 0
        assert handle.base_url("site1.test") == f"http://site1.test:{handle.port}"
        assert handle.home_url("site1.test") == f"http://site1.test:{handle.port}/"
