"""Hosts for robots.txt edge cases and page-level signals an extractor must read.

- ``robots500.test``: robots.txt answers 503, so by RFC 9309 the whole host is disallowed;
  its pages (``/``, ``/p/<n>``, n < 10) exist and must not be fetched.
- ``robotsjunk.test``: robots.txt is 200 with binary garbage, which parses to no rules, so
  everything is allowed.
- ``meta.test``: one page per signal, each with its truth in ``PageInfo.extra``:
  ``/noindex`` and ``/nofollow`` (``<meta name="robots">``), ``/noindex-header`` and
  ``/nofollow-header`` (``X-Robots-Tag``), ``/canonical`` (``rel=canonical`` to
  ``/canonical-target``), ``/base`` (``<base href>`` under ``/sub/dir/`` with relative links),
  ``/description`` (``<meta name="description">``), ``/lang/<code>`` (en, de, fr, es text with
  ``<html lang>``).
- ``frames.test``: a site reachable only through frames, as javadoc and edoc sites are.
  ``/`` is a frameset of ``/menu`` and ``/intro`` and of two frames a crawl scoped to the
  host must not fetch (``site0.test``, ``10.0.0.1``), its ``<noframes>`` linking
  ``/noframes-only``; ``/menu`` links ``/p/<n>`` (n < 5), ``/intro`` embeds ``/embedded``
  in an ``<iframe>``. A crawler that reads only ``<a href>`` fetches ``/`` alone.
- ``sitemaps.test``: pages reachable only through sitemaps. robots.txt names
  ``/sitemap_index.xml``, a sitemap index of ``/sitemap-1.xml`` (plain) and
  ``/sitemap-2.xml.gz`` (gzip file, ``application/gzip``, no Content-Encoding), which list
  ``/p/0`` .. ``/p/19`` and ``/p/20`` .. ``/p/39`` with their ``lastmod``; ``/`` links nowhere.
"""

from __future__ import annotations

import gzip
import html
from dataclasses import replace
from typing import ClassVar

from testweb import text
from testweb.adversarial import SpecialHost, article, paragraphs
from testweb.kinds import register
from testweb.messages import PageInfo, PageLink, Request, Response


class _SmallSite(SpecialHost):
    """``/`` links to ``/p/<n>`` (n < 10); each page has text and a keyword."""

    PAGES = 10

    def build(self, path: str) -> tuple[PageInfo, str] | None:
        rng, keyword = self._rng_kw(path)
        number = path[3:]
        if path == "/":
            links = [(self.url(f"/p/{n}"), f"Page {n}") for n in range(self.PAGES)]
            return article(self, path, self.name, [("h1", self.name)], links, keyword)
        if path.startswith("/p/") and number.isdigit() and int(number) < self.PAGES:
            title = f"{self.name} page {number}"
            return article(self, path, title, [("h1", title), *paragraphs(rng, 2, keyword)],
                           [(self.url("/"), "Home")], keyword)
        return None


@register
class Robots5xxHost(_SmallSite):
    """``robots500.test``: robots.txt is a 503; nothing on the host may be crawled."""

    kind = "robots500"
    host_name = "robots500.test"

    def handle(self, request: Request) -> Response:
        if request.path == "/robots.txt":
            return Response(503, {"Content-Type": "text/plain", "Retry-After": "3600"},
                            b"Service Unavailable")
        return super().handle(request)


@register
class RobotsJunkHost(_SmallSite):
    """``robotsjunk.test``: robots.txt is binary garbage (no rules: all allowed)."""

    kind = "robotsjunk"
    host_name = "robotsjunk.test"

    def handle(self, request: Request) -> Response:
        if request.path == "/robots.txt":
            rng = text.rng_for(self.web.seed, self.name, "robots")
            junk = b"\x00\xff\xfe" + bytes(b for b in rng.randbytes(2000) if b not in b"\r\n:")
            return Response(200, {"Content-Type": "text/plain"}, junk)
        return super().handle(request)


LANG_TEXTS = {
    "en": "The weather was fine and the children played in the garden until the evening came.",
    "de": "Das Wetter war schön und die Kinder spielten im Garten, bis der Abend kam und "
          "die Eltern sie zum Essen riefen.",
    "fr": "Le temps était beau et les enfants jouaient dans le jardin jusqu'à ce que le soir "
          "arrive et que les parents les appellent pour le dîner.",
    "es": "El tiempo era bueno y los niños jugaban en el jardín hasta que llegó la tarde y "
          "los padres los llamaron para cenar.",
}


@register
class MetaHost(SpecialHost):
    """``meta.test``: pages that each carry one signal; see the module docstring."""

    kind = "meta"
    host_name = "meta.test"
    SIGNALS: ClassVar[dict[str, dict[str, str]]] = {
        "/noindex": {"meta_robots": "noindex"},
        "/nofollow": {"meta_robots": "nofollow"},
        "/noindex-header": {"x_robots_tag": "noindex"},
        "/nofollow-header": {"x_robots_tag": "nofollow"},
        "/canonical": {"canonical": "/canonical-target"},
        "/base": {"base": "/sub/dir/"},
        "/description": {"description": "A page about gardens, written to be the snippet."},
    }

    def handle(self, request: Request) -> Response:
        response = super().handle(request)
        signal = self.SIGNALS.get(request.path, {})
        if "x_robots_tag" in signal:
            response.headers["X-Robots-Tag"] = signal["x_robots_tag"]
        return response

    def build(self, path: str) -> tuple[PageInfo, str] | None:
        rng, keyword = self._rng_kw(path)
        if path == "/":
            links = [(self.url(p), p) for p in [*self.SIGNALS, "/canonical-target"]]
            links += [(self.url(f"/lang/{code}"), code) for code in LANG_TEXTS]
            return article(self, path, "Signals", [("h1", "Signals")], links, keyword)
        if path.startswith("/lang/") and path[6:] in LANG_TEXTS:
            return self._lang(path, path[6:], keyword)
        if path == "/canonical-target" or path.startswith("/sub/"):
            title = f"Target {path}"
            return article(self, path, title, [("h1", title), *paragraphs(rng, 1, keyword)],
                           [], keyword)
        signal = self.SIGNALS.get(path)
        if signal is None:
            return None
        title = f"Signal {path}"
        blocks = [("h1", title), *paragraphs(rng, 2, keyword)]
        head, links = "", [(self.url("/canonical-target"), "Target")]
        if "meta_robots" in signal:
            head = f'<meta name="robots" content="{signal["meta_robots"]}">'
        elif "canonical" in signal:
            head = f'<link rel="canonical" href="{self.url(signal["canonical"])}">'
        elif "description" in signal:
            head = f'<meta name="description" content="{html.escape(signal["description"])}">'
        info, doc = article(self, path, title, blocks, links, keyword, head=head)
        extra = {k: (self.url(v) if k in ("canonical", "base") else v) for k, v in signal.items()}
        if "base" in signal:
            base = self.url(signal["base"])
            doc = doc.replace("<title>", f'<base href="{base}"><title>', 1)
            doc = doc.replace("</nav>", '<a href="page">Relative</a> '
                              '<a href="../up">Up</a></nav>', 1)
            links = (*info.links, PageLink(base + "page", "Relative"),
                     PageLink(self.url("/sub/up"), "Up"))
            return replace(info, links=links, extra=extra), doc
        return replace(info, extra=extra), doc

    def _lang(self, path: str, code: str, keyword: str) -> tuple[PageInfo, str]:
        title = f"{code}: {LANG_TEXTS[code][:30]}"
        body = f"{LANG_TEXTS[code]} {keyword}"
        info, doc = article(self, path, title, [("h1", title), ("p", body)], [], keyword)
        doc = doc.replace("<html>", f'<html lang="{code}">', 1)
        return replace(info, extra={"lang": code}), doc



@register
class FramesHost(SpecialHost):
    """``frames.test``: pages reached through frames; see the module docstring."""

    kind = "frames"
    host_name = "frames.test"
    PAGES = 5
    #: The articles of the host (the frameset and ``/menu`` are not articles).
    ARTICLES = ("/intro", "/embedded", "/noframes-only")
    #: What the frameset's ``<noframes>`` says.
    FALLBACK = "This site uses frames. Read the introduction or the page without frames."

    def frames(self) -> list[tuple[str, str]]:
        """``(url, name)`` of the frameset's frames, in order."""
        port = self.web.port
        return [(self.url("/menu"), "menuFrame"), (self.url("/intro"), "Introduction"),
                (f"http://site0.test:{port}/", "elsewhere"),
                (f"http://10.0.0.1:{port}/", "private")]

    def build(self, path: str) -> tuple[PageInfo, str] | None:
        rng, keyword = self._rng_kw(path)
        if path == "/":
            return self._frameset()
        if path == "/menu":
            links = [(self.url(f"/p/{n}"), f"Page {n}") for n in range(self.PAGES)]
            return article(self, path, "Contents", [("h1", "Contents")], links, "")
        number = path[3:]
        if path in self.ARTICLES or (path.startswith("/p/") and number.isdigit()
                                     and int(number) < self.PAGES):
            title = f"Framed {path}"
            info, doc = article(self, path, title, [("h1", title), *paragraphs(rng, 2, keyword)],
                                [], keyword)
            if path == "/intro":
                embedded = self.url("/embedded")
                doc = doc.replace("</article>", f'<iframe src="{embedded}" title="Example">'
                                  "</iframe></article>", 1)
                info = replace(info, links=(PageLink(embedded, "Example"),))
            return info, doc
        return None

    def _frameset(self) -> tuple[PageInfo, str]:
        frames = "".join(f'<FRAME SRC="{url}" NAME="{name}">' for url, name in self.frames())
        intro, only = self.url("/intro"), self.url("/noframes-only")
        doc = ('<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01 Frameset//EN">\n'
               "<HTML><HEAD><TITLE>Framed documentation</TITLE></HEAD>\n"
               f'<FRAMESET COLS="20%,*">{frames}\n<NOFRAMES><BODY><P>This site uses frames. '
               f'Read the <A HREF="{intro}">introduction</A> or the '
               f'<A HREF="{only}">page without frames</A>.</P></BODY></NOFRAMES>\n'
               "</FRAMESET></HTML>\n")
        links = [PageLink(url, name) for url, name in self.frames()]
        links.append(PageLink(only, "page without frames"))
        info = PageInfo(url=self.url("/"), status=200, title="Framed documentation",
                        main_text=self.FALLBACK, headings=(), links=tuple(links), keyword="")
        return info, doc


@register
class SitemapsHost(_SmallSite):
    """``sitemaps.test``: pages listed only in a sitemap index and its (gzipped) sitemaps."""

    kind = "sitemaps"
    host_name = "sitemaps.test"
    PAGES = 40
    SITEMAPS: ClassVar[dict[str, range]] = {"/sitemap-1.xml": range(0, 20),
                                            "/sitemap-2.xml.gz": range(20, 40)}

    def lastmod(self, n: int) -> str:
        """The lastmod a sitemap gives page n (a date in 2026)."""
        day = 1 + text.digest(self.web.seed, self.name, n, "lastmod")[0] % 28
        return f"2026-02-{day:02d}"

    def handle(self, request: Request) -> Response:
        path = request.path
        if path == "/robots.txt":
            body = f"User-agent: *\nDisallow:\n\nSitemap: {self.url('/sitemap_index.xml')}\n"
            return Response(200, {"Content-Type": "text/plain"}, body.encode())
        if path == "/sitemap_index.xml":
            entries = "".join(f"<sitemap><loc>{self.url(p)}</loc></sitemap>\n"
                              for p in self.SITEMAPS)
            return self._xml("sitemapindex", entries)
        if path in self.SITEMAPS:
            entries = "".join(f"<url><loc>{self.url(f'/p/{n}')}</loc>"
                              f"<lastmod>{self.lastmod(n)}</lastmod></url>\n"
                              for n in self.SITEMAPS[path])
            response = self._xml("urlset", entries)
            if path.endswith(".gz"):
                response.body = gzip.compress(response.body, mtime=0)
                response.headers["Content-Type"] = "application/gzip"
            return response
        return super().handle(request)

    @staticmethod
    def _xml(root: str, entries: str) -> Response:
        body = ('<?xml version="1.0" encoding="UTF-8"?>\n'
                f'<{root} xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
                f"{entries}</{root}>\n")
        return Response(200, {"Content-Type": "application/xml"}, body.encode())

    def build(self, path: str) -> tuple[PageInfo, str] | None:
        if path == "/":
            return article(self, path, self.name, [("h1", self.name)], [], "")
        built = super().build(path)
        if built is None:
            return None
        info, doc = built
        return replace(info, links=()), doc.replace(
            f'<a href="{self.url("/")}">Home</a>', "")
