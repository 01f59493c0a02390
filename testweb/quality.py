"""Hosts that waste a crawl's fetches: a cross-host mirror, a path-based calendar,
a 404-link subtree with soft 404s, and spam hosts of each kind.

- ``mirror.test`` serves the pages of ``site0.test`` (its links rewritten to itself) with a
  banner inside the article and a footer that change on *every fetch* (a per-host counter:
  the only host kind whose answers are not a pure function of the request), and a link back
  to the original page; no ``rel=canonical``. ``page()`` gives the original's ground truth.
- ``events.test``: ``/<y>/<m>/<d>/`` (previous/next day, previous/next month,
  ``?view=week`` and ``?view=list`` variants), ``/<y>/<m>/`` (its days) forever; short pages
  that differ only in dates.
- ``deadlinks.test``: ``/doc/<n>`` (n < 40) real articles, each linking to six URLs under
  ``/archive/`` that all answer 404 and to one ``/moved/<n>`` that answers 200 with a
  "page not found" template (a soft 404).
- Spam (``SPAM_HOSTS``, by kind): ``stuffing.test`` (keyword stuffing), ``hidden.test``
  (an ordinary article plus keyword lists hidden with CSS), ``doorway.test`` (thin pages,
  one per keyword and city, all pointing at one target), ``farm0.test`` .. ``farm4.test``
  (a link farm: thin pages linking into each other in a clique) and ``cloak.test``
  (cloaking: a crawler's User-Agent gets an ordinary article, a browser gets spam).
"""

from __future__ import annotations

import datetime
import html
import itertools
import random
from typing import ClassVar

from testweb import text
from testweb.adversarial import SpecialHost, article, paragraphs
from testweb.kinds import HTML_TYPE, NormalHost, not_found, register
from testweb.messages import PageInfo, Request, Response

MIRRORED_HOST = "site0.test"
MIRROR_HOST = "mirror.test"
SPAM_WORDS = ("cheap", "pills", "casino", "viagra", "loans", "bonus", "free", "win", "cash",
              "replica", "watches", "bitcoin", "discount", "pharmacy", "online", "best")
FARM_HOSTS = tuple(f"farm{i}.test" for i in range(5))
#: spam host -> kind of spam (the ground truth of ``TestWeb.spam_hosts``)
SPAM_HOSTS: dict[str, str] = {
    "stuffing.test": "keyword_stuffing",
    "hidden.test": "hidden_text",
    "doorway.test": "doorway",
    **{name: "link_farm" for name in FARM_HOSTS},
    "cloak.test": "cloaking",
}
#: User-Agent substrings ``cloak.test`` treats as crawlers
CRAWLER_AGENTS = ("bot", "crawl", "spider", "scrapy", "websearch")


def _spam_words(rng: random.Random, n: int) -> list[str]:
    return [SPAM_WORDS[int(rng.random() * len(SPAM_WORDS))] for _ in range(n)]


@register
class CrossMirrorHost(SpecialHost):
    """``mirror.test``: a copy of ``site0.test`` with per-fetch noise and a link back."""

    kind = "cross_mirror"
    host_name = MIRROR_HOST

    def __init__(self, web):
        super().__init__(web)
        self._fetches = itertools.count()

    def _original(self) -> NormalHost:
        return self.web.host(MIRRORED_HOST)  # type: ignore[return-value]

    def handle(self, request: Request) -> Response:
        if request.path == "/robots.txt":
            return not_found()
        original = self._original()
        built = original._built(request.path)
        if built is None:
            return not_found()
        n = next(self._fetches)
        rng = random.Random(n)
        doc = built[1].decode()
        doc = doc.replace(self.web.url(MIRRORED_HOST, ""), self.web.url(MIRROR_HOST, ""))
        banner = (f"<p class=\"banner\">Mirror edition {n}: "
                  f"{html.escape(' '.join(text.words(rng, 8)))}</p>")
        href = html.escape(original.url(request.path))
        back = (f"<p class=\"mirror\">Original page: <a href=\"{href}\">"
                f"{html.escape(original.site_name)}</a>. Visitor {n}, "
                f"{html.escape(' '.join(text.words(rng, 6)))}</p>")
        doc = doc.replace("<main>\n", "<main>\n" + banner + "\n", 1)
        doc = doc.replace("</footer>", back + "</footer>", 1)
        return Response(200, {"Content-Type": HTML_TYPE}, doc.encode())

    def page(self, path: str) -> PageInfo | None:
        return self._original().page(path)


@register
class EventsHost(SpecialHost):
    """``events.test``: a path-based calendar, ``/<y>/<m>/<d>/`` and ``/<y>/<m>/``, forever."""

    kind = "events"
    host_name = "events.test"
    START = datetime.date(2026, 3, 14)
    VIEWS = ("week", "list")

    def handle(self, request: Request) -> Response:
        built = self._build(request.path, request.query)
        if built is None:
            return not_found()
        return Response(200, {"Content-Type": HTML_TYPE}, built[1].encode())

    def page(self, path: str) -> PageInfo | None:
        target, _, query = path.partition("?")
        built = self._build(target, query)
        return built[0] if built else None

    def _day_url(self, day: datetime.date, view: str = "") -> str:
        suffix = f"?view={view}" if view else ""
        return self.url(f"/{day.year}/{day.month:02d}/{day.day:02d}/{suffix}")

    def _month_url(self, year: int, month: int) -> str:
        return self.url(f"/{year}/{month:02d}/")

    @staticmethod
    def _shift_month(year: int, month: int, by: int) -> tuple[int, int]:
        index = year * 12 + month - 1 + by
        return index // 12, index % 12 + 1

    def _build(self, path: str, query: str) -> tuple[PageInfo, str] | None:
        target = path + (f"?{query}" if query else "")
        if path == "/":
            d = self.START
            return article(self, "/", "Events", [("h1", "Events")],
                           [(self._day_url(d), "Today"), (self._month_url(d.year, d.month),
                                                         "This month")], "")
        parts = [p for p in path.split("/") if p]
        if not parts or not all(p.isdigit() for p in parts) or len(parts) not in (2, 3):
            return None
        try:
            if len(parts) == 2:
                year, month = int(parts[0]), int(parts[1])
                first = datetime.date(year, month, 1)
            else:
                day = datetime.date(int(parts[0]), int(parts[1]), int(parts[2]))
        except ValueError:
            return None
        if len(parts) == 2:
            links = []
            d = first
            while d.month == month:
                links.append((self._day_url(d), str(d.day)))
                d += datetime.timedelta(days=1)
            for label, by in (("Previous month", -1), ("Next month", 1)):
                y, m = self._shift_month(year, month, by)
                if y >= 1:
                    links.append((self._month_url(y, m), label))
            title = f"Events in {year}-{month:02d}"
            return article(self, target, title,
                           [("h1", title), ("p", f"Choose a day of {year}-{month:02d}.")],
                           links, "")
        view = query.partition("=")[2] if query.startswith("view=") else ""
        if view not in ("", *self.VIEWS):
            return None
        step = 7 if view == "week" else 1
        links = []
        for label, delta in (("Previous", -step), ("Next", step)):
            try:
                links.append((self._day_url(day + datetime.timedelta(days=delta), view), label))
            except OverflowError:
                continue
        for label, by in (("Previous month", -1), ("Next month", 1)):
            y, m = self._shift_month(day.year, day.month, by)
            if y >= 1:
                links.append((self._month_url(y, m), label))
        links += [(self._day_url(day, v), f"{v} view") for v in ("", *self.VIEWS) if v != view]
        iso = day.isoformat()
        title = f"Week of {iso}" if view == "week" else f"Events on {iso}"
        blocks = [("h1", title), ("p", f"No events are scheduled for {iso} yet."),
                  ("p", "Check back later or browse another day.")]
        return article(self, target, title, blocks, links, "")


@register
class DeadLinksHost(SpecialHost):
    """``deadlinks.test``: articles whose links into ``/archive/`` all answer 404, and
    ``/moved/<n>`` pages that answer 200 with a "page not found" template."""

    kind = "deadlinks"
    host_name = "deadlinks.test"
    DOCS = 40
    DEAD_PER_DOC = 6

    def build(self, path: str) -> tuple[PageInfo, str] | None:
        if path == "/":
            links = [(self.url(f"/doc/{n}"), f"Document {n}") for n in range(self.DOCS)]
            return article(self, "/", "Documents", [("h1", "Documents")], links, "")
        if path.startswith("/moved/") and path[7:].isdigit():
            blocks = [("h1", "Page not found"),
                      ("p", "Sorry, the page you are looking for could not be found. "
                            "It may have been moved or deleted.")]
            return article(self, path, "Page not found", blocks,
                           [(self.url("/"), "Home")], "")
        if not path.startswith("/doc/") or not path[5:].isdigit():
            return None
        n = int(path[5:])
        if n >= self.DOCS or str(n) != path[5:]:
            return None
        rng, keyword = self._rng_kw(path)
        title = text.title_case(text.words(rng, 4))
        links = [(self.url(f"/doc/{(n + d) % self.DOCS}"), f"Document {(n + d) % self.DOCS}")
                 for d in (1, 7)]
        links += [(self.url(f"/archive/{n * self.DEAD_PER_DOC + j}"), f"Archive {j}")
                  for j in range(self.DEAD_PER_DOC)]
        links.append((self.url(f"/moved/{n}"), "Older version"))
        return article(self, path, title, [("h1", title), *paragraphs(rng, 3, keyword)],
                       links, keyword)

    def dead_urls(self) -> set[str]:
        """Every URL of this host that answers 404, or a soft 404."""
        return ({self.url(f"/archive/{k}") for k in range(self.DOCS * self.DEAD_PER_DOC)}
                | {self.url(f"/moved/{n}") for n in range(self.DOCS)})


class SpamHost(SpecialHost):
    """A spam host: ``/`` lists ``/p/<n>`` (n < ``PAGES``), each built by ``spam_page``."""

    PAGES: ClassVar[int] = 150
    spam_kind: ClassVar[str] = ""

    def build(self, path: str) -> tuple[PageInfo, str] | None:
        if path == "/":
            links = [(self.url(f"/p/{n}"), f"Page {n}") for n in range(self.PAGES)]
            return article(self, "/", self.name, [("h1", self.name)], links, "")
        if not path.startswith("/p/") or not path[3:].isdigit():
            return None
        n = int(path[3:])
        if n >= self.PAGES or str(n) != path[3:]:
            return None
        rng, keyword = self._rng_kw(path)
        return self.spam_page(path, n, rng, keyword)

    def spam_page(self, path: str, n: int, rng: random.Random,
                  keyword: str) -> tuple[PageInfo, str]:
        """The ground truth and HTML of page ``n``."""
        raise NotImplementedError

    def _more(self, n: int, count: int = 3) -> list[tuple[str, str]]:
        return [(self.url(f"/p/{(n + d) % self.PAGES}"), "More") for d in range(1, count + 1)]


@register
class StuffingHost(SpamHost):
    """``stuffing.test``: a sentence, then the same few keywords over and over."""

    kind = "stuffing"
    host_name = "stuffing.test"
    spam_kind = "keyword_stuffing"

    def spam_page(self, path, n, rng, keyword):
        terms = _spam_words(rng, 3)
        title = " ".join(terms).title()
        stuffed = " ".join(terms * text.between(rng, 25, 40))
        blocks = [("h1", title), ("p", " ".join(text.sentence(rng)) + "."), ("p", stuffed)]
        return article(self, path, title, blocks, self._more(n), keyword)


@register
class HiddenTextHost(SpamHost):
    """``hidden.test``: an ordinary article plus keyword lists hidden with CSS."""

    kind = "hidden"
    host_name = "hidden.test"
    spam_kind = "hidden_text"

    def spam_page(self, path, n, rng, keyword):
        title = text.title_case(text.words(rng, 4))
        blocks = [("h1", title), *paragraphs(rng, 2, keyword)]
        info, doc = article(self, path, title, blocks, self._more(n), keyword)
        hidden = " ".join(_spam_words(rng, 200))
        styles = ("display:none", "visibility:hidden", "font-size:0",
                  "position:absolute;left:-9999px")
        style = styles[n % len(styles)]
        doc = doc.replace("</article>", f'<div style="{style}">{hidden}</div>\n</article>', 1)
        return info, doc


@register
class DoorwayHost(SpamHost):
    """``doorway.test``: one thin page per keyword and city, all sending to one target."""

    kind = "doorway"
    host_name = "doorway.test"
    spam_kind = "doorway"
    CITIES = ("paris", "london", "berlin", "madrid", "rome", "vienna", "oslo", "lisbon",
              "dublin", "prague")

    def spam_page(self, path, n, rng, keyword):
        product = " ".join(_spam_words(random.Random(n // len(self.CITIES)), 2))
        city = self.CITIES[n % len(self.CITIES)]
        title = f"Best {product} in {city}".title()
        lines = [f"Best {product} in {city}.",
                 f"Looking for the best {product} in {city}? Get the best {product} in {city} "
                 f"today. Best {product} {city}, {product} {city} deals, {city} {product}."]
        blocks = [("h1", title), *[("p", line) for line in lines]]
        target = self.web.url("stuffing.test", "/p/0")
        return article(self, path, title, blocks,
                       [(target, f"Best {product}"), *self._more(n, 2)], keyword)


class FarmHost(SpamHost):
    """``farm<i>.test``: thin pages whose links go mostly to the other farm hosts."""

    kind = "farm"
    spam_kind = "link_farm"

    def spam_page(self, path, n, rng, keyword):
        title = " ".join(_spam_words(rng, 3)).title()
        blocks = [("h1", title), ("p", " ".join(_spam_words(rng, 12)) + ".")]
        links = []
        for other in FARM_HOSTS:
            if other != self.name:
                links += [(self.web.url(other, f"/p/{int(rng.random() * self.PAGES)}"), title)
                          for _ in range(6)]
        return article(self, path, title, blocks, [*links, *self._more(n, 2)], keyword)


for _i, _name in enumerate(FARM_HOSTS):
    register(type(f"FarmHost{_i}", (FarmHost,), {"kind": f"farm{_i}", "host_name": _name}))


@register
class CloakingHost(SpamHost):
    """``cloak.test``: crawlers (User-Agent naming a bot) get an article; browsers spam."""

    kind = "cloak"
    host_name = "cloak.test"
    spam_kind = "cloaking"

    def handle(self, request: Request) -> Response:
        agent = request.headers.get("user-agent", "").lower()
        built = self.build(request.path) if any(a in agent for a in CRAWLER_AGENTS) \
            else self.build_for_people(request.path)
        if built is None:
            return not_found()
        return Response(200, {"Content-Type": HTML_TYPE}, built[1].encode())

    def spam_page(self, path, n, rng, keyword):
        title = text.title_case(text.words(rng, 4))
        blocks = [("h1", title), *paragraphs(rng, 3, keyword)]
        return article(self, path, title, blocks, self._more(n), keyword)

    def build_for_people(self, path: str) -> tuple[PageInfo, str] | None:
        """What a browser gets: casino and pill offers."""
        if path != "/" and self.build(path) is None:
            return None
        rng = text.rng_for(self.web.seed, self.name, path, "people")
        title = " ".join(_spam_words(rng, 3)).title()
        blocks = [("h1", title), ("p", " ".join(_spam_words(rng, 60)))]
        return article(self, path, title, blocks, [], "")
