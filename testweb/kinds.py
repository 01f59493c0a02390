"""Host kinds: each kind of host is a class with ``handle(request) -> Response``.

New kinds (adversarial hosts, changing pages, mirrors) register themselves with
``@register`` and are instantiated by ``TestWeb``; the server knows nothing about them.
"""

from __future__ import annotations

import html
import random
from collections import OrderedDict
from collections.abc import Callable
from typing import ClassVar, Protocol

from testweb import text
from testweb.messages import PageInfo, PageLink, Request, Response

HOST_KINDS: dict[str, type[HostKind]] = {}

HTML_TYPE = "text/html; charset=utf-8"


def register(cls: type[HostKind]) -> type[HostKind]:
    """Class decorator: make a host kind known by its ``kind`` name."""
    HOST_KINDS[cls.kind] = cls
    return cls


class LRUCache:
    """A bounded mapping that forgets the least recently used entry first."""

    def __init__(self, maxsize: int):
        self.maxsize = maxsize
        self._data: OrderedDict[object, object] = OrderedDict()

    def get(self, key: object) -> object | None:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def put(self, key: object, value: object) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        if len(self._data) > self.maxsize:
            self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)


class Web(Protocol):
    """What a host kind reads of the web that holds it (``testweb.web.TestWeb``)."""

    seed: int
    pages_per_host: int
    cache: LRUCache
    slow_delay: float
    giant_bytes: int
    fresh_pages: int
    clock: Callable[[], float]
    normal_hosts: list[str]

    def host(self, name: str) -> HostKind:
        """The host object of a name (KeyError if unknown)."""

    def url(self, host: str, path: str = "/") -> str:
        """The absolute URL of a path on a host, with the server's port."""


def not_found(message: str = "Not Found") -> Response:
    """A small 404 page."""
    body = f"<!DOCTYPE html><html><head><title>404 {message}</title></head>" \
        f"<body><h1>{html.escape(message)}</h1></body></html>"
    return Response(404, {"Content-Type": HTML_TYPE}, body.encode())


def text_response(body: str, content_type: str = "text/plain; charset=utf-8") -> Response:
    """A 200 response with a text body."""
    return Response(200, {"Content-Type": content_type}, body.encode())


class HostKind:
    """One virtual host. Subclasses set ``kind`` and implement ``handle``.

    ``handle`` must be deterministic in (seed, host, request) unless the kind documents
    otherwise; ``page`` returns the ground truth of a path, or None where there is none.
    """

    kind: ClassVar[str] = ""

    def __init__(self, web: Web, name: str):
        self.web = web
        self.name = name

    def url(self, path: str) -> str:
        """The absolute URL of a path on this host, with the server's port."""
        return self.web.url(self.name, path)

    def handle(self, request: Request) -> Response:
        """Answer one request."""
        raise NotImplementedError

    def page(self, path: str) -> PageInfo | None:
        """The ground truth of a page of this host, or None."""
        return None


class _PageBuilder:
    """Accumulates a page's HTML and, in parallel, its ground truth."""

    def __init__(self) -> None:
        self.main_lines: list[str] = []
        self.headings: list[str] = []
        self.links: list[PageLink] = []

    def link(self, url: str, label: str, attrs: str = "") -> str:
        self.links.append(PageLink(url, label))
        return f'<a href="{html.escape(url)}"{attrs}>{html.escape(label)}</a>'


@register
class NormalHost(HostKind):
    """A site of text pages: ``/``, ``/p/<n>`` (n < pages_per_host), ``/private/<n>`` (n < 100).

    Every page has a title, an article (h1, h2 sections, paragraphs of Zipf-distributed words,
    a unique keyword, ~10 inline links, 20% of them to other hosts), a header nav, a sidebar
    and a footer that repeat across the host, and a pager to the next page. The home page
    links to the first 100 pages. Query strings are ignored, as many real sites do.

    robots.txt variants (``self.robots``): site0..site3 are fixed to ``none``, ``disallow``,
    ``crawl-delay``, ``sitemap`` so every variant exists; other hosts pick by a hash of
    (seed, host): 3/10 ``none`` (404), 3/10 ``disallow`` (``Disallow: /private/``), 1/10
    ``crawl-delay`` (``Crawl-delay: 1`` and the disallow), 3/10 ``sitemap`` (the disallow,
    a ``Sitemap:`` line and ``/sitemap.xml`` listing ``/`` and the first 1,000 pages).
    Every page's footer links into /private/, so a crawler's obeyance can be checked.
    """

    kind = "normal"
    ROBOTS_VARIANTS: ClassVar[tuple[str, ...]] = (
        "none", "none", "none", "disallow", "disallow", "disallow",
        "crawl-delay", "sitemap", "sitemap", "sitemap",
    )
    FIXED_ROBOTS: ClassVar[tuple[str, ...]] = ("none", "disallow", "crawl-delay", "sitemap")
    PRIVATE_PAGES = 100
    HOME_LINKS = 100
    SITEMAP_PAGES = 1000

    def __init__(self, web: Web, name: str, index: int):
        super().__init__(web, name)
        self.index = index
        self.pages = web.pages_per_host
        rng = text.rng_for(web.seed, name, "host")
        self.site_name = text.title_case(rng.sample(text.VOCABULARY[300:2500], 2))
        if index < len(self.FIXED_ROBOTS):
            self.robots = self.FIXED_ROBOTS[index]
        else:
            self.robots = self.ROBOTS_VARIANTS[text.digest(web.seed, name, "robots")[0] % 10]
        low = list(range(1, min(self.pages, 50)))
        self.nav_pages = sorted(rng.sample(low, min(4, len(low))))
        self.popular_pages = sorted(rng.sample(low, min(5, len(low))))
        self._header_part: tuple[str, list[PageLink]] | None = None
        self._sidebar_part: tuple[str, list[PageLink]] | None = None

    def handle(self, request: Request) -> Response:
        if request.method not in ("GET", "HEAD"):
            return Response(405, {"Content-Type": "text/plain", "Allow": "GET, HEAD"},
                            b"Method Not Allowed")
        path = request.path
        if path == "/robots.txt":
            return self._robots()
        if path == "/sitemap.xml" and self.robots == "sitemap":
            return self._sitemap()
        built = self._built(path)
        if built is None:
            return not_found()
        return Response(200, {"Content-Type": HTML_TYPE}, built[1])

    def page(self, path: str) -> PageInfo | None:
        built = self._built(path.split("?", 1)[0])
        return built[0] if built else None

    # -- pages -------------------------------------------------------------------------------

    def _built(self, path: str) -> tuple[PageInfo, bytes] | None:
        key = (self.name, path)
        hit = self.web.cache.get(key)
        if hit is not None:
            return hit  # type: ignore[return-value]
        built = self._build(path)
        if built is not None:
            self.web.cache.put(key, built)
        return built

    def _build(self, path: str) -> tuple[PageInfo, bytes] | None:
        if path == "/":
            return self._home()
        for prefix, limit in (("/p/", self.pages), ("/private/", self.PRIVATE_PAGES)):
            if path.startswith(prefix):
                number = path[len(prefix):]
                if number.isdigit() and str(int(number)) == number and int(number) < limit:
                    return self._article(path, int(number), private=prefix == "/private/")
                return None
        return None

    def title_of(self, path: str) -> str:
        """The article heading of a page (cheap: the first draws of the page's generator)."""
        return self._title(text.rng_for(self.web.seed, self.name, path))

    @staticmethod
    def _title(rng: random.Random) -> str:
        return text.title_case(text.words(rng, text.between(rng, 3, 7)))

    def _article(self, path: str, number: int, private: bool) -> tuple[PageInfo, bytes]:
        rng = text.rng_for(self.web.seed, self.name, path)
        heading = self._title(rng)
        keyword = text.keyword_for(self.web.seed, self.name, path)
        b = _PageBuilder()
        b.headings.append(heading)
        b.main_lines.append(heading)
        body = [f"<h1>{heading}</h1>"]
        sections = text.between(rng, 2, 4)
        link_budget = text.between(rng, 8, 11)
        paragraphs_total = 0
        plan = [text.between(rng, 2, 3) for _ in range(sections)]
        link_rate = link_budget / (sum(plan) * 4)  # 4 = mean sentences per paragraph
        for s in range(sections):
            if s:
                h2 = text.title_case(text.words(rng, text.between(rng, 2, 5)))
                b.headings.append(h2)
                b.main_lines.append(h2)
                body.append(f"<h2>{h2}</h2>")
            for _ in range(plan[s]):
                html_p, text_p = self._paragraph(
                    rng, b, number, link_rate, keyword if paragraphs_total == 0 else None,
                )
                paragraphs_total += 1
                body.append(html_p)
                b.main_lines.append(text_p)
        pager = []
        if not private:
            if number > 0:
                pager.append(b.link(self.url(f"/p/{number - 1}"), "Previous", ' rel="prev"'))
            if number + 1 < self.pages:
                pager.append(b.link(self.url(f"/p/{number + 1}"), "Next", ' rel="next"'))
        article = "\n".join(body)
        title = f"{heading} - {self.site_name}"
        main = f"<article>\n{article}\n</article>\n<nav class=\"pager\">{' '.join(pager)}</nav>"
        return self._page(b, path, title, main, keyword, rng, number)

    def _paragraph(
        self, rng: random.Random, b: _PageBuilder, number: int, link_rate: float,
        keyword: str | None,
    ) -> tuple[str, str]:
        html_parts: list[str] = []
        text_parts: list[str] = []
        n_sentences = text.between(rng, 3, 5)
        for i in range(n_sentences):
            ws = text.sentence(rng)
            if keyword and i == 0:
                ws.insert(text.between(rng, 1, len(ws)), keyword)
            ws[0] = ws[0].capitalize()
            plain = " ".join(ws) + "."
            text_parts.append(plain)
            if rng.random() < link_rate:
                start = text.between(rng, 0, len(ws) - 3)
                width = text.between(rng, 2, 3)
                anchor = " ".join(ws[start:start + width])
                a = b.link(self._target(rng, number), anchor)
                html_parts.append(" ".join([*ws[:start], a, *ws[start + width:]]) + ".")
            else:
                html_parts.append(plain)
        return "<p>" + " ".join(html_parts) + "</p>", " ".join(text_parts)

    def _target(self, rng: random.Random, number: int) -> str:
        """A link target: 20% other hosts, 5% private pages, else nearby or popular pages."""
        hosts = self.web.normal_hosts
        r = rng.random()
        if r < 0.2 and len(hosts) > 1:
            j = int(rng.random() * (len(hosts) - 1))
            other = hosts[j + (j >= self.index)]  # any normal host but this one
            path = "/" if rng.random() < 0.3 else f"/p/{self._popular(rng)}"
            return self.web.url(other, path)
        if r < 0.25:
            return self.url(f"/private/{int(rng.random() * self.PRIVATE_PAGES)}")
        if r < 0.6:
            return self.url(f"/p/{(number + text.between(rng, 1, 30)) % self.pages}")
        return self.url(f"/p/{self._popular(rng)}")

    def _popular(self, rng: random.Random) -> int:
        """A page number skewed towards low numbers (log-uniform), like real in-link counts."""
        return min(int(self.pages ** rng.random()) - 1, self.pages - 1)

    def _home(self) -> tuple[PageInfo, bytes]:
        rng = text.rng_for(self.web.seed, self.name, "/")
        keyword = text.keyword_for(self.web.seed, self.name, "/")
        b = _PageBuilder()
        heading = f"Welcome to {self.site_name}"
        b.headings.append(heading)
        intro = text.sentence(rng, 12, 20)
        intro.insert(text.between(rng, 1, len(intro)), keyword)
        intro[0] = intro[0].capitalize()
        intro_text = " ".join(intro) + "."
        latest = "Latest articles"
        b.headings.append(latest)
        b.main_lines.extend([heading, intro_text, latest])
        items = []
        for n in range(min(self.pages, self.HOME_LINKS)):
            label = self.title_of(f"/p/{n}")
            b.main_lines.append(label)
            items.append(f"<li>{b.link(self.url(f'/p/{n}'), label)}</li>")
        main = (f"<article>\n<h1>{heading}</h1>\n<p>{intro_text}</p>\n<h2>{latest}</h2>\n"
                f"<ul class=\"latest\">\n" + "\n".join(items) + "\n</ul>\n</article>")
        return self._page(b, "/", self.site_name, main, keyword, rng, 0)

    def _page(
        self, b: _PageBuilder, path: str, title: str, main: str, keyword: str,
        rng: random.Random, number: int,
    ) -> tuple[PageInfo, bytes]:
        """Wrap the main part in the host's boilerplate; links are listed in document order."""
        main_links = b.links
        b.links = []
        header = self._header(b)
        b.links.extend(main_links)
        sidebar = self._sidebar(b)
        private = self.PRIVATE_PAGES
        footer_link = b.link(self.url(f"/private/{(number * 7 + 3) % private}"), "Members area")
        description = html.escape(b.main_lines[1][:150] if len(b.main_lines) > 1 else title)
        doc = (
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{html.escape(title)}</title>\n"
            f"<meta name=\"description\" content=\"{description}\">\n"
            "<link rel=\"stylesheet\" href=\"/static/site.css\">\n</head>\n<body>\n"
            f"{header}\n<div class=\"layout\">\n<main>\n{main}\n</main>\n{sidebar}\n</div>\n"
            f"<footer class=\"site-footer\"><p>Copyright {self.site_name}. "
            f"All rights reserved. Terms and privacy.</p><p>{footer_link}</p></footer>\n"
            "</body>\n</html>\n"
        )
        info = PageInfo(
            url=self.url(path), status=200, title=title, main_text="\n".join(b.main_lines),
            headings=tuple(b.headings), links=tuple(b.links), keyword=keyword,
        )
        return info, doc.encode()

    def _header(self, b: _PageBuilder) -> str:
        if self._header_part is None:
            h = _PageBuilder()
            rng = text.rng_for(self.web.seed, self.name, "nav")
            labels = rng.sample(text.VOCABULARY[300:2500], len(self.nav_pages))
            items = [h.link(self.url("/"), "Home")]
            items += [h.link(self.url(f"/p/{n}"), label.capitalize())
                      for n, label in zip(self.nav_pages, labels, strict=True)]
            lis = "".join(f"<li>{a}</li>" for a in items)
            brand = html.escape(self.site_name)
            header = (f"<header class=\"site-header\"><div class=\"brand\">{brand}</div>"
                      f"<nav class=\"site-nav\"><ul>{lis}</ul></nav></header>")
            self._header_part = (header, h.links)
        b.links.extend(self._header_part[1])
        return self._header_part[0]

    def _sidebar(self, b: _PageBuilder) -> str:
        if self._sidebar_part is None:
            s = _PageBuilder()
            lis = "".join(f"<li>{s.link(self.url(f'/p/{n}'), self.title_of(f'/p/{n}'))}</li>"
                          for n in self.popular_pages)
            aside = (f"<aside class=\"sidebar\"><h3>Popular</h3><ul>{lis}</ul>"
                     "<p>Subscribe to our newsletter for weekly updates.</p></aside>")
            self._sidebar_part = (aside, s.links)
        b.links.extend(self._sidebar_part[1])
        return self._sidebar_part[0]

    # -- robots and sitemap ------------------------------------------------------------------

    def robots_txt(self) -> str | None:
        """The robots.txt of this host, or None when it has none (404)."""
        if self.robots == "none":
            return None
        lines = ["User-agent: *"]
        if self.robots == "crawl-delay":
            lines.append("Crawl-delay: 1")
        lines.append("Disallow: /private/")
        if self.robots == "sitemap":
            lines += ["", f"Sitemap: {self.url('/sitemap.xml')}"]
        return "\n".join(lines) + "\n"

    def _robots(self) -> Response:
        body = self.robots_txt()
        return not_found() if body is None else text_response(body)

    def sitemap_urls(self) -> list[str]:
        """The URLs listed in /sitemap.xml (empty if the host has none)."""
        if self.robots != "sitemap":
            return []
        return [self.url("/")] + [self.url(f"/p/{n}")
                                  for n in range(min(self.pages, self.SITEMAP_PAGES))]

    def _sitemap(self) -> Response:
        entries = "".join(f"<url><loc>{u}</loc><lastmod>2026-01-01</lastmod></url>\n"
                          for u in self.sitemap_urls())
        body = ('<?xml version="1.0" encoding="UTF-8"?>\n'
                '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
                f"{entries}</urlset>\n")
        return text_response(body, "application/xml")
