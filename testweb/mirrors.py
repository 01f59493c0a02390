"""Near-duplicate mirror hosts: the labelled set of ``testweb.nearcopies`` served over HTTP.

Article sites ``news{i}.test`` and their mirrors ``mirror{m}.news{i}.test`` serve the set's
pages at their paths (``/a/<n>.html``); ``/`` of each host links to all of its pages, so a
crawl seeded with the hosts' home pages reaches the whole set. Pages with the same label are
near-copies. Off unless ``mirror_articles`` > 0, since building the set runs the
crawler's extractor over every page (about 3 s for 600 articles).
"""

from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING
from urllib.parse import urljoin

from testweb.kinds import HTML_TYPE, HostKind, Web, not_found, register
from testweb.messages import PageInfo, PageLink, Request, Response

if TYPE_CHECKING:
    from testweb.nearcopies import LabelledPage

_ANCHOR = re.compile(r'<a href="([^"]*)"[^>]*>(.*?)</a>', re.S)


def labelled_pages(articles: int, seed: int) -> list[LabelledPage]:
    """The near-copy set for ``articles`` articles (and a third as many short pages)."""
    from testweb.nearcopies import generate  # imports the crawler's extractor

    return generate(articles=articles, short_pages=max(1, articles // 3), seed=seed)


@register
class MirrorHost(HostKind):
    """One host of the near-copy set: its pages by path, and an index at ``/``."""

    kind = "mirror"

    def __init__(self, web: Web, name: str, pages: list[LabelledPage]):
        super().__init__(web, name)
        self.pages = {p.url.split(name, 1)[1]: p for p in pages}

    def handle(self, request: Request) -> Response:
        if request.path == "/":
            return Response(200, {"Content-Type": HTML_TYPE}, self._index().encode())
        labelled = self.pages.get(request.path)
        if labelled is None:
            return not_found()
        return Response(200, {"Content-Type": HTML_TYPE}, labelled.html.encode())

    def _index(self) -> str:
        links = "\n".join(f'<li><a href="{self.url(path)}">{html.escape(p.title)}</a></li>'
                          for path, p in sorted(self.pages.items()))
        return (f"<!DOCTYPE html><html><head><title>{self.name}</title></head><body>"
                f"<h1>{self.name}</h1><ul>\n{links}\n</ul></body></html>\n")

    def page(self, path: str) -> PageInfo | None:
        labelled = self.pages.get(path.split("?", 1)[0])
        if labelled is None:
            return None
        url = self.url(path)
        links = tuple(PageLink(urljoin(url, html.unescape(href)), html.unescape(label))
                      for href, label in _ANCHOR.findall(labelled.html))
        return PageInfo(url=url, status=200, title=labelled.title, main_text=labelled.text,
                        headings=(labelled.title,), links=links, keyword="",
                        extra={"label": labelled.label, "copy": labelled.copy,
                               "visible_text": labelled.visible_text})

    def labels(self) -> dict[str, str]:
        """URL (with the server's port) -> near-copy label, for every page of this host."""
        return {self.url(path): p.label for path, p in self.pages.items()}
