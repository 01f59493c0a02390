"""The adversarial hosts of the test web behave as documented, over a real server."""

from __future__ import annotations

import base64
import gzip
import html
import http.client
import io
import re
import socket
import struct
import time
import zlib
from urllib.parse import urljoin, urlsplit

import pytest

import testweb
from testweb import TestWeb
from testweb.adversarial import CHARSET_TEXTS, HOSTILE_LINKS, BombHost, SessionsHost
from testweb.quality import SPAM_HOSTS

#: the crawl-quality hosts (testweb/quality.py, tests/test_testweb_quality.py)
QUALITY_HOSTS = {"mirror.test", "events.test", "deadlinks.test", *SPAM_HOSTS}

SLOW = 1.0


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("adversarial") / "requests.jsonl"
    with testweb.run(hosts=3, seed=1, log=log, pages=50, slow_delay=SLOW) as handle:
        yield handle


def fetch(server, host: str, target: str, method: str = "GET", timeout: float = 10,
          headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
    try:
        conn.request(method, target, headers={"Host": host, **(headers or {})})
        response = conn.getresponse()
        return (response.status, {k.lower(): v for k, v in response.getheaders()},
                response.read())
    finally:
        conn.close()


def target_of(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def test_special_hosts_and_addresses():
    web = TestWeb(2, 9000)
    special = web.special_hosts()
    assert set(special) == {
        "calendar.test", "sessions.test", "redirects.test", "slow.test", "dead.test",
        "blackhole.test", "giant.test", "bomb.test", "binary.test", "broken.test",
        "charset.test", "js.test", "hostile.test", "robots500.test", "robotsjunk.test",
        "meta.test", "frames.test", "sitemaps.test", "escape.test", "bigrobots.test",
        *QUALITY_HOSTS}
    assert special["dead.test"] == "127.0.0.2" and special["blackhole.test"] == "127.0.0.3"
    addresses = web.addresses()
    assert addresses["site0.test"] == addresses["calendar.test"] == "127.0.0.1"
    assert web.hosts() == ["site0.test", "site1.test"]
    assert set(web.all_hosts()) == set(addresses) and set(special) < set(addresses)
    normal_links = {urlsplit(link.url).hostname for n in range(50)
                    for link in web.page("site1.test", f"/p/{n}").links}
    assert normal_links <= {"site0.test", "site1.test"}  # traps are reached only from seeds


def test_calendar_goes_on_forever(server):
    url = server.web.page("calendar.test", "/").links[0].url
    seen = set()
    for _ in range(40):
        status, _, body = fetch(server, "calendar.test", target_of(url))
        assert status == 200
        seen.add(url)
        url = re.search(r'href="([^"]+)">Next month', body.decode()).group(1)
    assert len(seen) == 40 and url.endswith("/calendar/2029/5")
    assert fetch(server, "calendar.test", "/calendar/9999/12")[0] == 200
    assert fetch(server, "calendar.test", "/calendar/2026/13")[0] == 404
    first = server.web.page("calendar.test", "/calendar/1/1")
    assert [link.text for link in first.links] == ["Next month"]


def test_session_ids_explode_but_strip_to_a_few_pages(server):
    frontier = [server.web.home_url("sessions.test")]
    urls, paths = set(), set()
    while frontier and len(urls) < 300:
        url = frontier.pop()
        if url in urls:
            continue
        urls.add(url)
        status, _, body = fetch(server, "sessions.test", target_of(url))
        assert status == 200
        paths.add(SessionsHost.strip_session(target_of(url)))
        frontier += [html.unescape(u) for u in re.findall(r'href="([^"]+)"', body.decode())]
    assert len(urls) == 300 and len(paths) <= SessionsHost.ITEMS + 1
    assert any(";jsessionid=" in u for u in urls) and any("?sid=" in u for u in urls)
    a = server.web.page("sessions.test", "/item/4;jsessionid=abc")
    b = server.web.page("sessions.test", "/item/4?sid=def")
    assert a.main_text == b.main_text and a.links != b.links


def test_redirects(server):
    assert fetch(server, "redirects.test", "/loop/a")[:2][0] == 302
    assert fetch(server, "redirects.test", "/loop/a")[1]["location"].endswith("/loop/b")
    assert fetch(server, "redirects.test", "/loop/b")[1]["location"].endswith("/loop/a")
    status, headers, _ = fetch(server, "redirects.test", "/self")
    assert status == 301 and headers["location"] == server.web.url("redirects.test", "/self")
    url, hops = server.web.url("redirects.test", "/chain/20"), 0
    while True:
        status, headers, body = fetch(server, "redirects.test", target_of(url))
        if status != 301:
            break
        url, hops = urljoin(url, headers["location"]), hops + 1
    assert (hops, status) == (20, 200)
    assert server.web.page("redirects.test", "/chain/0").keyword in body.decode()
    status, headers, _ = fetch(server, "redirects.test", "/rel/3")
    assert status == 302 and headers["location"] == "2"
    assert fetch(server, "redirects.test", "/temp")[0] == 307
    assert fetch(server, "redirects.test", "/perm")[0] == 308
    assert fetch(server, "redirects.test", "/cross")[1]["location"] == server.home_url("site0.test")
    body = fetch(server, "redirects.test", "/meta")[2].decode()
    assert re.search(r'http-equiv="refresh" content="0; url=http://redirects.test:\d+/meta-target"',
                     body)
    assert fetch(server, "redirects.test", "/meta-target")[0] == 200


def test_slow_host_takes_its_delay(server):
    started = time.monotonic()
    status, _, body = fetch(server, "slow.test", "/p/3")
    assert status == 200 and time.monotonic() - started >= SLOW
    assert server.web.page("slow.test", "/p/3").keyword in body.decode()


def test_dead_host_refuses_connections(server):
    assert server.resolve_map()["dead.test"] == "127.0.0.2"
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.2", server.port), timeout=5)
    with pytest.raises((http.client.RemoteDisconnected, ConnectionResetError)):
        fetch(server, "dead.test", "/")


def test_black_hole_accepts_and_never_answers(server):
    assert server.resolve_map()["blackhole.test"] == "127.0.0.3"
    with socket.create_connection(("127.0.0.3", server.port), timeout=5) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: blackhole.test\r\n\r\n")
        sock.settimeout(1.0)
        with pytest.raises(TimeoutError):
            sock.recv(1)
    with pytest.raises(TimeoutError):
        fetch(server, "blackhole.test", "/", timeout=1.0)


def read_all(response: http.client.HTTPResponse) -> int:
    total = 0
    while chunk := response.read(1 << 20):
        total += len(chunk)
    return total


def test_giant_pages(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.request("GET", "/giant", headers={"Host": "giant.test"})
    response = conn.getresponse()
    length = int(response.getheader("Content-Length"))
    assert length >= 50 * 1024 * 1024 and read_all(response) == length
    conn.request("GET", "/giant-unsized", headers={"Host": "giant.test"})
    response = conn.getresponse()
    assert response.getheader("Content-Length") is None
    assert read_all(response) == length
    conn.close()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.request("GET", "/giant?abort", headers={"Host": "giant.test"})
    assert conn.getresponse().read(1 << 20)
    conn.close()
    deadline = time.time() + 5
    while time.time() < deadline:
        aborted = [r for r in server.read_log() if r["path"] == "/giant?abort"]
        if aborted:
            break
        time.sleep(0.1)
    assert aborted and aborted[0]["bytes"] < length


def test_compression_bomb(server):
    status, headers, body = fetch(server, "bomb.test", "/bomb", headers={"Accept-Encoding": "gzip"})
    assert status == 200 and headers["content-encoding"] == "gzip"
    assert len(body) < 2 * 1024 * 1024
    assert struct.unpack("<I", body[-4:])[0] > 1024**3 % 2**32  # ISIZE: the inflated size
    inflater, total, data = zlib.decompressobj(31), 0, body
    while data and total < 128 << 20:  # inflating all of it takes seconds on a busy machine
        total += len(inflater.decompress(data, 16 << 20))
        data = inflater.unconsumed_tail
    assert total >= 128 << 20 and len(body) - len(data) < len(body) / 4
    head = gzip.GzipFile(fileobj=io.BytesIO(body)).read(100)
    assert head.startswith(b"<!DOCTYPE html><html><head><title>Bomb</title>")


def test_binary_served_as_html(server):
    status, headers, body = fetch(server, "binary.test", "/file/3")
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert b"\x00" in body and len(body) == 100_000
    with pytest.raises(UnicodeDecodeError):
        body.decode("utf-8")


def test_broken_html_ground_truth(server):
    lxml_html = pytest.importorskip("lxml.html")
    info = server.web.page("broken.test", "/broken/4")
    body = fetch(server, "broken.test", "/broken/4")[2].decode()
    assert "<html" not in body.lower() and "<TITLE>" in body
    tree = lxml_html.fromstring(body)
    assert tree.findtext(".//title") == info.title
    tree.make_links_absolute(info.url)
    assert [a.get("href") for a in tree.iter("a")] == [link.url for link in info.links]
    text = " ".join(tree.text_content().split())
    for word in info.main_text.split()[:40]:
        assert word in text
    assert info.keyword in text


@pytest.mark.parametrize("declared", ["header", "meta"])
@pytest.mark.parametrize("charset", list(CHARSET_TEXTS))
def test_charsets(server, declared, charset):
    status, headers, body = fetch(server, "charset.test", f"/{declared}/{charset}")
    info = server.web.page("charset.test", f"/{declared}/{charset}")
    assert status == 200
    with pytest.raises(UnicodeDecodeError):
        body.decode("utf-8")
    decoded = html.unescape(body.decode(charset))
    title, text = CHARSET_TEXTS[charset]
    assert f"<title>{title}</title>" in decoded and text in decoded
    assert info.title == title and text in info.main_text
    if declared == "header":
        assert headers["content-type"] == f"text/html; charset={charset}"
        assert "<meta charset" not in decoded
    else:
        assert headers["content-type"] == "text/html"
        assert f'<meta charset="{charset}">' in decoded


def test_js_only_pages(server):
    info = server.web.page("js.test", "/app/2")
    body = fetch(server, "js.test", "/app/2")[2].decode()
    assert '<div id="root"></div>' in body and "<a " not in body and "<p>" not in body
    assert info.keyword not in body and info.main_text.split("\n")[1] not in body
    data = re.search(r'id="data">([^<]+)<', body).group(1)
    rendered = base64.b64decode(data).decode()
    assert info.keyword in rendered and info.title in rendered
    assert len(info.links) == 2


def test_hostile_content(server):
    info = server.web.page("hostile.test", "/p/1")
    body = fetch(server, "hostile.test", "/p/1")[2].decode()
    title = re.search(r"<title>(.*?)</title>", body).group(1)
    assert "<script>alert('title')" in info.title and html.unescape(title) == info.title
    assert "<script>alert" not in title
    assert "<img src=x onerror" in info.main_text and "<img src=x" not in body
    assert "&amp;amp;" in body and "&amp;" in info.main_text
    hrefs = [html.unescape(h) for h in re.findall(r'href="([^"]+)"', body)]
    assert set(HOSTILE_LINKS) <= set(hrefs)
    assert "<script>document.title='pwned';</script>" in body
    assert "pwned" not in info.main_text
    evil = next(link.url for link in info.links if "%3Cscript%3E" in link.url)
    status, _, evil_body = fetch(server, "hostile.test", target_of(evil))
    assert status == 200 and "Path &lt;script&gt;alert(5)&lt;/script&gt;" in evil_body.decode()


def test_every_special_home_page(server):
    for host in server.web.special_hosts():
        if host in ("dead.test", "blackhole.test"):
            continue
        status, _, body = fetch(server, host, "/", timeout=10)
        info = server.web.page(host, "/")
        assert status == 200 and info is not None, host
        # js.test's title is written by the script; cloak.test shows a person other content
        if host not in ("js.test", "cloak.test"):
            assert html.escape(info.title) in body.decode(), host


def test_robots_edge_cases(server):
    status, headers, _ = fetch(server, "robots500.test", "/robots.txt")
    assert status == 503
    assert fetch(server, "robots500.test", "/p/1")[0] == 200  # exists, must not be fetched
    status, _, body = fetch(server, "robotsjunk.test", "/robots.txt")
    assert status == 200 and b"\x00" in body and b"Disallow" not in body
    protego = pytest.importorskip("protego")
    rules = protego.Protego.parse(body.decode("utf-8", "replace"))
    assert rules.can_fetch(server.web.url("robotsjunk.test", "/p/1"), "*")


def test_meta_signals(server):
    web = server.web
    cases = {
        "/noindex": '<meta name="robots" content="noindex">',
        "/nofollow": '<meta name="robots" content="nofollow">',
        "/canonical": f'<link rel="canonical" href="{web.url("meta.test", "/canonical-target")}">',
        "/description": '<meta name="description" content="A page about gardens',
        "/base": f'<base href="{web.url("meta.test", "/sub/dir/")}">',
    }
    for path, marker in cases.items():
        status, headers, body = fetch(server, "meta.test", path)
        assert status == 200 and marker in body.decode(), path
        assert "x-robots-tag" not in headers
    assert web.page("meta.test", "/noindex").extra == {"meta_robots": "noindex"}
    assert web.page("meta.test", "/canonical").extra["canonical"].endswith("/canonical-target")
    for signal in ("noindex", "nofollow"):
        status, headers, body = fetch(server, "meta.test", f"/{signal}-header")
        assert headers["x-robots-tag"] == signal and b'name="robots"' not in body
    base_links = [link.url for link in web.page("meta.test", "/base").links]
    assert web.url("meta.test", "/sub/dir/page") in base_links
    assert web.url("meta.test", "/sub/up") in base_links
    for url in base_links:
        assert fetch(server, "meta.test", target_of(url))[0] == 200
    for code in ("en", "de", "fr", "es"):
        body = fetch(server, "meta.test", f"/lang/{code}")[2].decode()
        assert f'<html lang="{code}">' in body
        assert web.page("meta.test", f"/lang/{code}").extra == {"lang": code}


def test_bomb_is_a_valid_gzip_stream():
    class SmallBomb(BombHost):
        INFLATED_MIB = 8
        _body = None

    body = SmallBomb.bomb()
    inflated = zlib.decompressobj(31)
    data = inflated.decompress(body)
    assert inflated.eof and not inflated.unused_data  # the CRC and length trailer checked out
    assert len(data) > 8 << 20 and data.endswith(b"</p></body></html>\n")
    assert len(body) < 16 * 1024


def test_sitemap_index_and_gzipped_sitemap(server):
    robots = fetch(server, "sitemaps.test", "/robots.txt")[2].decode()
    index_url = re.search(r"Sitemap: (\S+)", robots).group(1)
    index = fetch(server, "sitemaps.test", target_of(index_url))[2].decode()
    assert "<sitemapindex" in index
    found = {}
    for loc in re.findall(r"<loc>([^<]+)</loc>", index):
        status, headers, body = fetch(server, "sitemaps.test", target_of(loc))
        assert status == 200 and "content-encoding" not in headers
        if loc.endswith(".gz"):
            assert headers["content-type"] == "application/gzip"
            body = gzip.decompress(body)
        found.update(re.findall(r"<loc>([^<]+)</loc><lastmod>([^<]+)</lastmod>", body.decode()))
    host = server.web.host("sitemaps.test")
    assert found == {server.web.url("sitemaps.test", f"/p/{n}"): host.lastmod(n)
                     for n in range(40)}
    assert server.web.page("sitemaps.test", "/").links == ()
    for url in list(found)[:3] + list(found)[-3:]:
        status, _, body = fetch(server, "sitemaps.test", target_of(url))
        assert status == 200 and b"<a " not in body
        assert server.web.page("sitemaps.test", target_of(url)).links == ()
