"""Adversarial hosts: crawler traps, broken servers and hostile content.

Each host has a fixed name and is served next to the normal ``site{i}.test`` hosts; no normal
page links to them, so a crawl reaches them only from seeds. All are on 127.0.0.1 and the
server's port except two, which the crawler's resolver override must map as
``TestWeb.addresses()`` says:

- ``dead.test`` -> 127.0.0.2: nothing listens there, so connecting gives "connection refused"
  (as long as the server binds 127.0.0.1, the default).
- ``blackhole.test`` -> 127.0.0.3: the server's second listening socket, on the same port,
  accepts connections and never answers.
"""

from __future__ import annotations

import base64
import html
import json
import random
import struct
import zlib
from collections.abc import Iterator
from typing import ClassVar
from urllib.parse import parse_qs, unquote

from testweb import text
from testweb.kinds import HTML_TYPE, HostKind, Web, not_found, register
from testweb.messages import PageInfo, PageLink, Request, Response

DEAD_ADDRESS = "127.0.0.2"
BLACKHOLE_ADDRESS = "127.0.0.3"


def article(
    host: HostKind, path: str, title: str, blocks: list[tuple[str, str]],
    links: list[tuple[str, str]], keyword: str, head: str = "",
) -> tuple[PageInfo, str]:
    """A plain page: ``blocks`` ((tag, text) with tag h1/h2/p) form the article and the
    ground-truth main text; ``links`` ((url, label), absolute) follow in a nav."""
    body = "\n".join(f"<{tag}>{html.escape(t)}</{tag}>" for tag, t in blocks)
    nav = " ".join(f'<a href="{html.escape(u)}">{html.escape(label)}</a>' for u, label in links)
    doc = (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">{head}"
           f"<title>{html.escape(title)}</title></head>\n<body>\n<article>\n{body}\n</article>\n"
           f"<nav>{nav}</nav>\n</body></html>\n")
    info = PageInfo(
        url=host.url(path), status=200, title=title,
        main_text="\n".join(t for _, t in blocks),
        headings=tuple(t for tag, t in blocks if tag in ("h1", "h2")),
        links=tuple(PageLink(u, label) for u, label in links), keyword=keyword,
    )
    return info, doc


def paragraphs(
    rng: random.Random, n: int, keyword: str | None = None
) -> list[tuple[str, str]]:
    """n paragraphs of Zipf text; the keyword (if any) goes into the first."""
    out = []
    for i in range(n):
        sentences = []
        for j in range(text.between(rng, 2, 4)):
            ws = text.sentence(rng)
            if keyword and i == 0 and j == 0:
                ws.insert(1, keyword)
            ws[0] = ws[0].capitalize()
            sentences.append(" ".join(ws) + ".")
        out.append(("p", " ".join(sentences)))
    return out


class SpecialHost(HostKind):
    """A host with one fixed name (``host_name``) and address (``address``)."""

    host_name: ClassVar[str] = ""
    address: ClassVar[str] = "127.0.0.1"

    def __init__(self, web: Web):
        super().__init__(web, self.host_name)

    def handle(self, request: Request) -> Response:
        built = self.build(request.path)
        if built is None:
            return not_found()
        return Response(200, {"Content-Type": HTML_TYPE}, built[1].encode())

    def page(self, path: str) -> PageInfo | None:
        built = self.build(path.split("?", 1)[0])
        return built[0] if built else None

    def build(self, path: str) -> tuple[PageInfo, str] | None:
        """Ground truth and HTML of a path, or None for a 404."""
        return None

    def _rng_kw(self, path: str) -> tuple[random.Random, str]:
        return (text.rng_for(self.web.seed, self.name, path),
                text.keyword_for(self.web.seed, self.name, path))


@register
class CalendarHost(SpecialHost):
    """``calendar.test``: ``/calendar/<year>/<month>`` links to the previous and next month,
    forever in both directions (any year >= 1), and ``/calendar/<year>`` to its 12 months and
    the next year. Pages differ only by a line of text: an infinite, near-duplicate space."""

    kind = "calendar"
    host_name = "calendar.test"
    START = (2026, 1)

    def build(self, path: str) -> tuple[PageInfo, str] | None:
        parts = path.strip("/").split("/")
        if path == "/":
            y, m = self.START
            return article(self, path, "Community calendar", [("h1", "Community calendar")],
                           [(self.url(f"/calendar/{y}/{m}"), "This month"),
                            (self.url(f"/calendar/{y}"), "This year")], "")
        if parts[0] != "calendar" or not all(p.isdigit() for p in parts[1:]):
            return None
        if len(parts) == 2 and int(parts[1]) >= 1:
            y = int(parts[1])
            links = [(self.url(f"/calendar/{y}/{m}"), f"{y}-{m:02d}") for m in range(1, 13)]
            links.append((self.url(f"/calendar/{y + 1}"), "Next year"))
            return article(self, path, f"Calendar {y}", [("h1", f"Calendar {y}")], links, "")
        if len(parts) == 3 and int(parts[1]) >= 1 and 1 <= int(parts[2]) <= 12:
            y, m = int(parts[1]), int(parts[2])
            prev = (y, m - 1) if m > 1 else (y - 1, 12)
            nxt = (y, m + 1) if m < 12 else (y + 1, 1)
            links = [(self.url(f"/calendar/{nxt[0]}/{nxt[1]}"), "Next month")]
            if prev[0] >= 1:
                links.insert(0, (self.url(f"/calendar/{prev[0]}/{prev[1]}"), "Previous month"))
            title = f"Events in {y}-{m:02d}"
            blocks = [("h1", title), ("p", f"No events are scheduled for {y}-{m:02d} yet.")]
            return article(self, path, title, blocks, links, "")
        return None


@register
class SessionsHost(SpecialHost):
    """``sessions.test``: 30 items ``/item/<k>`` behind an infinite URL space. Every link
    carries a fresh session id derived from the requesting URL: ``;jsessionid=<hex>`` in the
    path, ``?sid=<hex>`` in the query, or both. Content ignores the session ids, so a crawler
    that strips them sees exactly ``/`` and the 30 items."""

    kind = "sessions"
    host_name = "sessions.test"
    ITEMS = 30

    def handle(self, request: Request) -> Response:
        built = self._build(request.target)
        if built is None:
            return not_found()
        return Response(200, {"Content-Type": HTML_TYPE}, built[1].encode())

    def page(self, path: str) -> PageInfo | None:
        built = self._build(path)
        return built[0] if built else None

    @staticmethod
    def strip_session(target: str) -> str:
        """The path of a target without ``;jsessionid=`` and query."""
        return target.split("?", 1)[0].split(";", 1)[0]

    def _build(self, target: str) -> tuple[PageInfo, str] | None:
        path = self.strip_session(target)
        if path == "/":
            k = -1
        elif path.startswith("/item/") and path[6:].isdigit() and int(path[6:]) < self.ITEMS:
            k = int(path[6:])
        else:
            return None
        rng, keyword = self._rng_kw(path)
        title = "Shop home" if k < 0 else f"Item {k}: " + text.title_case(text.words(rng, 3))
        links = []
        for j in ([*range(self.ITEMS)] if k < 0 else [(k + d) % self.ITEMS for d in (1, 2, 7)]):
            sid = text.digest(self.web.seed, target, j)[:8].hex()
            style = j % 3
            if style == 0:
                link = f"/item/{j};jsessionid={sid}"
            elif style == 1:
                link = f"/item/{j}?sid={sid}"
            else:
                link = f"/item/{j};jsessionid={sid}?sid={sid[::-1]}&ref=list"
            links.append((self.url(link), f"Item {j}"))
        blocks = [("h1", title), *paragraphs(rng, 2, keyword)]
        return article(self, target, title, blocks, links, keyword)


@register
class RedirectsHost(SpecialHost):
    """``redirects.test``: ``/loop/a`` <-> ``/loop/b`` (302 loop), ``/self`` (301 to itself),
    ``/chain/<k>`` (301 to ``/chain/<k-1>``, absolute Location; ``/chain/0`` is a page),
    ``/rel/<k>`` (302 with a relative Location), ``/temp`` (307) and ``/perm`` (308) to
    ``/chain/0``, ``/cross`` (302 to site0.test), ``/meta`` (a 200 page with a meta refresh to
    ``/meta-target``). Not linked from ``/``: ``/cross-perm`` (301 to site0.test) and
    ``/cross-meta`` (a meta refresh to site0.test), for crawls scoped to this host."""

    kind = "redirects"
    host_name = "redirects.test"
    MAX_CHAIN = 1000

    def redirect(self, path: str) -> tuple[int, str] | None:
        """(status, Location) of a redirecting path, or None if it does not redirect."""
        if path == "/loop/a":
            return 302, self.url("/loop/b")
        if path == "/loop/b":
            return 302, self.url("/loop/a")
        if path == "/self":
            return 301, self.url("/self")
        if path == "/temp":
            return 307, self.url("/chain/0")
        if path == "/perm":
            return 308, self.url("/chain/0")
        if path == "/cross":
            return 302, self.web.url(self.web.normal_hosts[0], "/")
        if path == "/cross-perm":
            return 301, self.web.url(self.web.normal_hosts[0], "/")
        for prefix, status, absolute in (("/chain/", 301, True), ("/rel/", 302, False)):
            number = path[len(prefix):]
            if path.startswith(prefix) and number.isdigit() and 0 < int(number) <= self.MAX_CHAIN:
                nxt = f"{int(number) - 1}"
                return status, self.url(prefix + nxt) if absolute else nxt
        return None

    def handle(self, request: Request) -> Response:
        hop = self.redirect(request.path)
        if hop is not None:
            status, location = hop
            body = f'<a href="{html.escape(location)}">moved</a>'.encode()
            return Response(status, {"Location": location, "Content-Type": HTML_TYPE}, body)
        return super().handle(request)

    def build(self, path: str) -> tuple[PageInfo, str] | None:
        rng, keyword = self._rng_kw(path)
        if path == "/":
            targets = ["/loop/a", "/self", "/chain/5", "/chain/20", "/chain/50", "/rel/3",
                       "/temp", "/perm", "/cross", "/meta"]
            return article(self, path, "Redirects", [("h1", "Redirects")],
                           [(self.url(t), t) for t in targets], keyword)
        if path in ("/chain/0", "/rel/0", "/meta-target"):
            title = f"Redirect target {path}"
            return article(self, path, title, [("h1", title), *paragraphs(rng, 1, keyword)],
                           [(self.url("/"), "Home")], keyword)
        if path in ("/meta", "/cross-meta"):
            target = (self.url("/meta-target") if path == "/meta"
                      else self.web.url(self.web.normal_hosts[0], "/"))
            refresh = f'<meta http-equiv="refresh" content="0; url={target}">'
            return article(self, path, "Meta refresh", [("h1", "Meta refresh")], [], keyword,
                           head=refresh)
        return None


@register
class BigRobotsHost(SpecialHost):
    """``bigrobots.test``: a 10 MiB robots.txt (``ROBOTS_BYTES``, with a Content-Length) of
    ``Disallow`` lines for paths nothing links to; ``/early/`` is disallowed in its first
    lines, ``/late/`` only past the first 600 KiB (``LATE_AT``), which RFC 9309 lets a
    crawler leave unread. ``/`` links to ``/early/page`` and ``/late/page``."""

    kind = "bigrobots"
    host_name = "bigrobots.test"
    ROBOTS_BYTES = 10 * 1024 * 1024
    LATE_AT = 600 * 1024
    _HEAD = b"User-agent: *\nDisallow: /early/\n"
    _LATE = b"Disallow: /late/\n"

    def handle(self, request: Request) -> Response:
        if request.path == "/robots.txt":
            return Response(200, {"Content-Type": "text/plain"}, stream=self._robots(),
                            length=self.ROBOTS_BYTES)
        return super().handle(request)

    def _robots(self) -> Iterator[bytes]:
        left = self.ROBOTS_BYTES
        for piece in (self._HEAD, self._filler(self.LATE_AT - len(self._HEAD)), self._LATE):
            yield piece
            left -= len(piece)
        while left > 0:
            piece = self._filler(min(left, 64 * 1024))
            left -= len(piece)
            yield piece

    @staticmethod
    def _filler(size: int) -> bytes:
        """``size`` bytes of ``Disallow`` lines (the last one padded to fit)."""
        line = b"Disallow: /never-linked/x\n"
        whole, part = divmod(size, len(line))
        return line * whole + (b"#" * (part - 1) + b"\n" if part else b"")

    def build(self, path: str) -> tuple[PageInfo, str] | None:
        rng, keyword = self._rng_kw(path)
        if path == "/":
            links = [(self.url("/early/page"), "Early"), (self.url("/late/page"), "Late")]
            return article(self, path, "Big robots.txt", [("h1", "Big robots.txt")], links,
                           keyword)
        if path in ("/early/page", "/late/page"):
            title = f"Page {path}"
            return article(self, path, title, [("h1", title), *paragraphs(rng, 1, keyword)],
                           [(self.url("/"), "Home")], keyword)
        return None


@register
class SlowHost(SpecialHost):
    """``slow.test``: ``/`` and ``/p/<n>`` (n < 20), every response (robots.txt and 404s too)
    delayed by ``TestWeb.slow_delay`` seconds (``--slow-delay``, default 3)."""

    kind = "slow"
    host_name = "slow.test"
    PAGES = 20

    def handle(self, request: Request) -> Response:
        response = super().handle(request)
        response.delay = self.web.slow_delay
        return response

    def build(self, path: str) -> tuple[PageInfo, str] | None:
        rng, keyword = self._rng_kw(path)
        if path == "/":
            links = [(self.url(f"/p/{n}"), f"Page {n}") for n in range(self.PAGES)]
            return article(self, path, "Slow site", [("h1", "Slow site")], links, keyword)
        number = path[3:]
        if path.startswith("/p/") and number.isdigit() and int(number) < self.PAGES:
            title = f"Slow page {number}"
            return article(self, path, title, [("h1", title), *paragraphs(rng, 2, keyword)],
                           [(self.url("/"), "Home")], keyword)
        return None


@register
class DeadHost(SpecialHost):
    """``dead.test``: resolves to 127.0.0.2 where nothing listens (connection refused). A
    request that reaches the server anyway (resolver not set up) has its connection closed
    without an answer."""

    kind = "dead"
    host_name = "dead.test"
    address = DEAD_ADDRESS

    def handle(self, request: Request) -> Response:
        return Response(0, abort=True)


@register
class BlackHoleHost(SpecialHost):
    """``blackhole.test``: resolves to 127.0.0.3, where the server's second socket accepts
    connections and never answers. Requests that reach the main socket hang as well."""

    kind = "blackhole"
    host_name = "blackhole.test"
    address = BLACKHOLE_ADDRESS

    def handle(self, request: Request) -> Response:
        return Response(0, hang=True)


@register
class GiantHost(SpecialHost):
    """``giant.test``: ``/giant`` streams ``TestWeb.giant_bytes`` (default 60 MiB) of HTML with
    a Content-Length; ``/giant-unsized`` the same without one (ends when the connection
    closes). ``/`` links to both."""

    kind = "giant"
    host_name = "giant.test"
    CHUNK = 64 * 1024
    HEAD = b"<!DOCTYPE html><html><head><title>Giant page</title></head><body>\n"
    TAIL = b"</body></html>\n"

    def handle(self, request: Request) -> Response:
        if request.path in ("/giant", "/giant-unsized"):
            sized = request.path == "/giant"
            return Response(200, {"Content-Type": HTML_TYPE}, stream=self._chunks(),
                            length=self.web.giant_bytes if sized else None)
        return super().handle(request)

    def _chunks(self) -> Iterator[bytes]:
        total = self.web.giant_bytes
        rng = text.rng_for(self.web.seed, self.name, "chunk")
        filler = []
        while sum(map(len, filler)) < self.CHUNK:
            filler.append(("<p>" + " ".join(text.sentence(rng)) + ".</p>\n").encode())
        chunk = b"".join(filler)[:self.CHUNK]
        yield self.HEAD
        left = total - len(self.HEAD) - len(self.TAIL)
        while left > 0:
            piece = chunk[:left]
            left -= len(piece)
            yield piece
        yield self.TAIL

    def build(self, path: str) -> tuple[PageInfo, str] | None:
        if path == "/":
            links = [(self.url("/giant"), "Giant page"), (self.url("/giant-unsized"),
                                                          "Giant page without length")]
            return article(self, path, "Giant pages", [("h1", "Giant pages")], links, "")
        return None


@register
class BombHost(SpecialHost):
    """``bomb.test``: ``/bomb`` is 1 GiB of HTML (spaces) gzip-compressed to about 1 MB and
    sent with ``Content-Encoding: gzip``, whatever the request's Accept-Encoding."""

    kind = "bomb"
    host_name = "bomb.test"
    INFLATED_MIB = 1024
    _body: ClassVar[bytes | None] = None

    def handle(self, request: Request) -> Response:
        if request.path == "/bomb":
            headers = {"Content-Type": HTML_TYPE, "Content-Encoding": "gzip"}
            return Response(200, headers, self.bomb())
        return super().handle(request)

    @classmethod
    def bomb(cls) -> bytes:
        """The gzip body; built once. After a full flush the deflate state resets, so the
        compressed form of each identical 1 MiB block is the same bytes and can be repeated."""
        if cls._body is None:
            head = b"<!DOCTYPE html><html><head><title>Bomb</title></head><body><p>"
            tail = b"</p></body></html>\n"
            block = b" " * (1 << 20)
            deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
            first = deflate.compress(head) + deflate.compress(block)
            first += deflate.flush(zlib.Z_FULL_FLUSH)
            repeat = deflate.compress(block) + deflate.flush(zlib.Z_FULL_FLUSH)
            last = deflate.compress(tail) + deflate.flush()
            crc = zlib.crc32(head)
            for _ in range(cls.INFLATED_MIB):
                crc = zlib.crc32(block, crc)
            crc = zlib.crc32(tail, crc)
            size = len(head) + cls.INFLATED_MIB * len(block) + len(tail)
            gzip_header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
            cls._body = (gzip_header + first + repeat * (cls.INFLATED_MIB - 1) + last
                         + struct.pack("<II", crc & 0xFFFFFFFF, size & 0xFFFFFFFF))
        return cls._body

    def build(self, path: str) -> tuple[PageInfo, str] | None:
        if path == "/":
            return article(self, path, "Bomb", [("h1", "Bomb")], [(self.url("/bomb"), "Bomb")],
                           "")
        return None


@register
class BinaryHost(SpecialHost):
    """``binary.test``: ``/file/<n>`` (n < 10) is 100 kB of random bytes (a PNG signature,
    NULs) served as ``text/html; charset=utf-8``; ``/`` links to them."""

    kind = "binary"
    host_name = "binary.test"
    FILES = 10
    SIZE = 100_000

    def handle(self, request: Request) -> Response:
        number = request.path[6:]
        if request.path.startswith("/file/") and number.isdigit() and int(number) < self.FILES:
            rng = text.rng_for(self.web.seed, self.name, request.path)
            body = b"\x89PNG\r\n\x1a\n\x00\x00" + rng.randbytes(self.SIZE - 10)
            return Response(200, {"Content-Type": HTML_TYPE}, body)
        return super().handle(request)

    def build(self, path: str) -> tuple[PageInfo, str] | None:
        if path == "/":
            links = [(self.url(f"/file/{n}"), f"File {n}") for n in range(self.FILES)]
            return article(self, path, "Files", [("h1", "Files")], links, "")
        return None


@register
class BrokenHost(SpecialHost):
    """``broken.test``: ``/`` and ``/broken/<n>`` (n < 20): no html/head/body tags, upper-case
    tags, unclosed ``<p>`` and ``<div>``, unquoted and relative hrefs, mis-nested inline tags,
    stray end tags, entities without semicolons, a comment and a script holding markup. The
    ground truth is what an HTML5 parser makes of it (``main_text`` joins the h1, h2 and
    paragraph texts; the comment and script are not text)."""

    kind = "broken"
    host_name = "broken.test"
    PAGES = 20

    def build(self, path: str) -> tuple[PageInfo, str] | None:
        number = path[8:]
        if path == "/":
            n = -1
        elif path.startswith("/broken/") and number.isdigit() and int(number) < self.PAGES:
            n = int(number)
        else:
            return None
        rng, keyword = self._rng_kw(path)
        title = "Broken " + text.title_case(text.words(rng, 3))
        h2 = text.title_case(text.words(rng, 3))
        p1, p2, p3 = (t for _, t in paragraphs(rng, 3, keyword))
        w1, w2 = text.words(rng, 2)
        targets = [(n + 1) % self.PAGES, (n + 5) % self.PAGES]
        doc = (
            f"<TITLE>{title}</TITLE>\n<META charset=utf-8>\n"
            "<!-- a comment with <p>fake text</p> that is not text -->\n"
            f"<DIV class=main><H1>{title}</h1>\n"
            f"<p>{p1}\n"
            f"<P>{p2} <b>{w1} <i>{w2}</b> more</i> &amp words &copy\n"
            "</span></div></div>\n"
            f"<h2>{h2}</H2>\n"
            f"<p>{p3}\n"
            "<script>document.write('<p>script text</p>'); var x = '</div>';</script>\n"
            f"<li><a href=/broken/{targets[0]}>Next broken</a>\n"
            f"<li><a href='{targets[1]}' class=x class=y>Relative broken</a>\n"
            "<div><div>"
        )
        p2_text = f"{p2} {w1} {w2} more & words \u00a9"
        blocks = [("h1", title), ("p", p1), ("p", p2_text), ("h2", h2), ("p", p3)]
        links = [PageLink(self.url(f"/broken/{targets[0]}"), "Next broken"),
                 PageLink(self.url(f"/broken/{targets[1]}"), "Relative broken")]
        info = PageInfo(
            url=self.url(path), status=200, title=title,
            main_text="\n".join(t for _, t in blocks), headings=(title, h2),
            links=tuple(links), keyword=keyword,
        )
        return info, doc


# The true text of each charset page; it is encodable in its charset.
CHARSET_TEXTS = {
    "iso-8859-1": ("Café crème brûlée",
                   "Voilà une façade naïve près de la rivière à Noël, où l'élève déçu mangeait."),
    "windows-1251": ("Съешь же ещё этих булок",
               "Съешь же ещё этих мягких французских булок да выпей чаю, сказал учёный."),
    "shift_jis": ("日本語のページ", "東京都の天気は晴れです。今日は良い一日になるでしょう。"),
}


@register
class CharsetHost(SpecialHost):
    """``charset.test``: ``/header/<cs>`` declares the charset only in the Content-Type
    header, ``/meta/<cs>`` only in a ``<meta charset>`` (Content-Type ``text/html`` without
    charset), for cs in iso-8859-1, windows-1251, shift_jis; the true text is ``CHARSET_TEXTS``."""

    kind = "charset"
    host_name = "charset.test"

    def handle(self, request: Request) -> Response:
        parts = request.path.strip("/").split("/")
        if len(parts) == 2 and parts[0] in ("header", "meta") and parts[1] in CHARSET_TEXTS:
            doc = self._charset_page(parts[0], parts[1])[1]
            content_type = f"text/html; charset={parts[1]}" if parts[0] == "header" \
                else "text/html"
            return Response(200, {"Content-Type": content_type}, doc.encode(parts[1]))
        return super().handle(request)

    def page(self, path: str) -> PageInfo | None:
        parts = path.strip("/").split("/")
        if len(parts) == 2 and parts[0] in ("header", "meta") and parts[1] in CHARSET_TEXTS:
            return self._charset_page(parts[0], parts[1])[0]
        return super().page(path)

    def _charset_page(self, declared: str, charset: str) -> tuple[PageInfo, str]:
        path = f"/{declared}/{charset}"
        keyword = text.keyword_for(self.web.seed, self.name, path)
        title, body = CHARSET_TEXTS[charset]
        meta = f'<meta charset="{charset}">' if declared == "meta" else ""
        blocks = [("h1", title), ("p", f"{body} {keyword}")]
        rendered = "\n".join(f"<{t}>{html.escape(s)}</{t}>" for t, s in blocks)
        doc = (f"<!DOCTYPE html>\n<html><head>{meta}<title>{title}</title></head>\n"
               f"<body><article>\n{rendered}\n</article></body></html>\n")
        info = PageInfo(url=self.url(path), status=200, title=title,
                        main_text="\n".join(t for _, t in blocks), headings=(title,), links=(),
                        keyword=keyword, extra={"charset": charset, "declared": declared})
        return info, doc

    def build(self, path: str) -> tuple[PageInfo, str] | None:
        if path == "/":
            links = [(self.url(f"/{d}/{cs}"), f"{cs} by {d}")
                     for d in ("header", "meta") for cs in CHARSET_TEXTS]
            return article(self, path, "Charsets", [("h1", "Charsets")], links, "")
        return None


@register
class JsHost(SpecialHost):
    """``js.test``: ``/`` and ``/app/<n>`` (n < 20) are an empty ``<div id="root">`` plus an
    inline script that decodes base64 JSON and writes the title, heading, paragraphs and links
    (to other apps) into the page. Without running JavaScript there is no text (a
    ``<noscript>`` line) and no link; ``page()`` gives the text after rendering."""

    kind = "js"
    host_name = "js.test"
    PAGES = 20
    SCRIPT = (
        "(function(){var d=JSON.parse(atob(document.getElementById('data').textContent));"
        "document.title=d.title;var r=document.getElementById('root');"
        "var h=document.createElement('h1');h.textContent=d.title;r.appendChild(h);"
        "d.paragraphs.forEach(function(t){var p=document.createElement('p');p.textContent=t;"
        "r.appendChild(p);});d.links.forEach(function(l){var a=document.createElement('a');"
        "a.href=l[0];a.textContent=l[1];r.appendChild(a);});})();"
    )

    def build(self, path: str) -> tuple[PageInfo, str] | None:
        number = path[5:]
        if path == "/":
            n = -1
        elif path.startswith("/app/") and number.isdigit() and int(number) < self.PAGES:
            n = int(number)
        else:
            return None
        rng, keyword = self._rng_kw(path)
        title = "App " + text.title_case(text.words(rng, 3))
        paras = [t for _, t in paragraphs(rng, 3, keyword)]
        targets = range(self.PAGES) if n < 0 else [(n + 1) % self.PAGES, (n + 3) % self.PAGES]
        links = [(self.url(f"/app/{t}"), f"App {t}") for t in targets]
        data = base64.b64encode(json.dumps(
            {"title": title, "paragraphs": paras, "links": links}).encode()).decode()
        doc = (
            "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Loading</title></head>\n"
            "<body><div id=\"root\"></div><noscript>Please enable JavaScript.</noscript>\n"
            f"<script type=\"application/octet-stream\" id=\"data\">{data}</script>\n"
            f"<script>{self.SCRIPT}</script>\n</body></html>\n"
        )
        info = PageInfo(url=self.url(path), status=200, title=title,
                        main_text="\n".join([title, *paras]), headings=(title,),
                        links=tuple(PageLink(u, label) for u, label in links), keyword=keyword)
        return info, doc


@register
class EscapeHost(SpecialHost):
    """``escape.test``: pages that try to take a browser somewhere the crawler must not go,
    for the renderer's SSRF guard; the target is the ``to`` query parameter (any URL).
    ``/redirect?to=`` answers 302 to it; ``/location?to=`` is an article whose inline script
    does ``location.replace(to)`` while the page loads; ``/srcdoc?to=`` is an article with an
    ``about:srcdoc`` frame that ``fetch()``es ``to + "fetch"`` and then navigates itself to
    ``to + "navigate"``. Without ``to`` they are plain articles."""

    kind = "escape"
    host_name = "escape.test"

    def handle(self, request: Request) -> Response:
        to = parse_qs(request.query).get("to", [""])[0]
        if request.path == "/redirect" and to:
            return Response(302, {"Location": to, "Content-Type": HTML_TYPE}, b"moved")
        built = self.build(request.path, to)
        if built is None:
            return not_found()
        return Response(200, {"Content-Type": HTML_TYPE}, built[1].encode())

    def build(self, path: str, to: str = "") -> tuple[PageInfo, str] | None:
        if path not in ("/", "/redirect", "/location", "/srcdoc"):
            return None
        rng, keyword = self._rng_kw(path)
        title = f"Escape {path}"
        target = json.dumps(to).replace("<", "\\u003c")
        head = ""
        extra = ""
        if path == "/location" and to:
            head = f"<script>location.replace({target});</script>"
        if path == "/srcdoc" and to:
            frame = (f"<script>fetch({target} + 'fetch').catch(function(){{}});"
                     f"location.href = {target} + 'navigate';</script>")
            extra = f'<iframe srcdoc="{html.escape(frame)}"></iframe>'
        info, doc = article(self, path, title, [("h1", title), *paragraphs(rng, 2, keyword)],
                            [], keyword, head=head)
        return info, doc.replace("</article>", f"</article>{extra}")


HOSTILE_TITLE = "<script>alert('title')</script> & \"quotes\" 'single' <b>bold</b>"
HOSTILE_LINKS = (
    "javascript:alert(document.cookie)",
    "JaVaScRiPt:alert(1)",
    " javascript:alert(2)",
    "data:text/html,<script>alert(3)</script>",
)


@register
class HostileHost(SpecialHost):
    """``hostile.test``: text meant to break a UI that does not escape. ``/`` and ``/p/<n>``
    (n < 10) have titles and text holding ``<script>``, ``<img onerror>`` and entities
    (escaped in the HTML, so the true text contains them literally), a real ``<script>``
    element (not text), links to ``javascript:`` and ``data:`` URLs, and links to
    ``/x/<anything>``, whose title repeats the decoded path (``<script>`` in URLs)."""

    kind = "hostile"
    host_name = "hostile.test"
    PAGES = 10

    def build(self, path: str) -> tuple[PageInfo, str] | None:
        rng, keyword = self._rng_kw(path)
        number = path[3:]
        if path.startswith("/x/"):
            decoded = unquote(path[3:])
            title = f"Path {decoded}"
        elif path == "/" or (path.startswith("/p/") and number.isdigit()
                             and int(number) < self.PAGES):
            title = f"{HOSTILE_TITLE} {path}"
        else:
            return None
        evil = ("Text with <img src=x onerror=alert('img')> and </textarea><script>alert(4)"
                "</script> and &amp; &lt;b&gt; entities \u202e reversed")
        blocks = [("h1", title), ("p", evil), *paragraphs(rng, 1, keyword)]
        links = [(u, f"evil link {i}") for i, u in enumerate(HOSTILE_LINKS)]
        links += [(self.url(f"/p/{k}"), f"Hostile page {k} <script>") for k in range(self.PAGES)]
        links.append((self.url("/x/%3Cscript%3Ealert(5)%3C%2Fscript%3E"), "Script in the path"))
        links.append((self.url('/x/%22%3E%3Cimg%20src=x%20onerror=alert(6)%3E?q="><b>'),
                      "Quote in the URL"))
        info, doc = article(self, path, title, blocks, links, keyword)
        doc = doc.replace("</article>", "</article>\n<script>document.title='pwned';</script>")
        return info, doc
