"""The plain values that host kinds, the ground-truth API and the server exchange."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Request:
    """One parsed HTTP request; ``host`` is lower-case without port, ``target`` the raw
    path and query."""

    method: str
    host: str
    target: str
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def path(self) -> str:
        """The target without its query string."""
        return self.target.split("?", 1)[0]

    @property
    def query(self) -> str:
        """The query string without ``?`` (empty if none)."""
        return self.target.split("?", 1)[1] if "?" in self.target else ""


@dataclass
class Response:
    """What a host answers: status, headers and body bytes.

    ``delay`` makes the server wait that many seconds before answering (slow hosts);
    ``stream`` (if set) yields the body in chunks instead of ``body`` (giant pages), and
    ``length`` is then the Content-Length to announce (None: close-delimited). ``hang``
    makes the server never answer; ``abort`` makes it close the connection without answering.
    """

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    delay: float = 0.0
    stream: Iterator[bytes] | None = None
    length: int | None = None
    hang: bool = False
    abort: bool = False


@dataclass(frozen=True)
class PageLink:
    """A link as written in a page: absolute URL and anchor text."""

    url: str
    text: str


@dataclass(frozen=True)
class PageInfo:
    """The ground truth of one generated page.

    ``main_text`` is the text of the article alone (title heading, section headings and
    paragraphs, one per line), without navigation, sidebar, footer or pager: what a perfect
    boilerplate remover extracts. ``links`` lists every ``<a href>`` of the page in document
    order, resolved to absolute URLs.
    """

    url: str
    status: int
    title: str
    main_text: str
    headings: tuple[str, ...]
    links: tuple[PageLink, ...]
    keyword: str
    extra: dict[str, object] = field(default_factory=dict)
