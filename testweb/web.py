"""The ground truth of the test web: which hosts exist and what each serves.

The server answers every request through ``TestWeb.handle``, so tests and benchmarks that
build a ``TestWeb`` with the same (hosts, port, seed) know exactly what the server serves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from testweb.adversarial import SpecialHost
from testweb.docsites import DocSite, DocSiteHost
from testweb.fresh import Clock, ClockHost, FreshHost
from testweb.kinds import HOST_KINDS, HostKind, LRUCache, NormalHost, not_found
from testweb.messages import PageInfo, Request, Response
from testweb.mirrors import MirrorHost, labelled_pages
from testweb.quality import MIRROR_HOST, MIRRORED_HOST, SPAM_HOSTS
from testweb.signals import MetaHost  # noqa: F401 - registers the robots and meta hosts

DEFAULT_PAGES_PER_HOST = 10_000
DEFAULT_CACHE_PAGES = 4_096  # about 10 kB each with their ground truth
DEFAULT_SLOW_DELAY = 3.0
DEFAULT_GIANT_BYTES = 60 * 1024 * 1024
DEFAULT_FRESH_HOSTS = 2
DEFAULT_FRESH_PAGES = 100


class TestWeb:
    """A deterministic web of ``hosts`` normal sites ``site0.test`` .. ``site{N-1}.test``
    plus the special hosts of every registered ``SpecialHost`` kind (``calendar.test``, ...)
    and ``fresh_hosts`` hosts ``fresh0.test`` .. whose pages change over ``clock`` time, and,
    if ``mirror_articles`` > 0, the near-copy hosts ``news{i}.test`` and
    ``mirror{m}.news{i}.test`` (see ``testweb.mirrors``), and the real documentation sites
    of ``doc_sites`` (see ``testweb.docsites``), each on its own host.

    Content is a pure function of (seed, host, path); generated pages are kept in a bounded
    LRU cache. Absolute links carry ``port``, the port the server listens on.
    """

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        hosts: int,
        port: int,
        seed: int = 0,
        pages_per_host: int = DEFAULT_PAGES_PER_HOST,
        cache_pages: int = DEFAULT_CACHE_PAGES,
        slow_delay: float = DEFAULT_SLOW_DELAY,
        giant_bytes: int = DEFAULT_GIANT_BYTES,
        fresh_hosts: int = DEFAULT_FRESH_HOSTS,
        fresh_pages: int = DEFAULT_FRESH_PAGES,
        clock: Callable[[], float] | None = None,
        mirror_articles: int = 0,
        doc_sites: Sequence[DocSite] = (),
    ):
        if hosts < 1:
            raise ValueError("hosts must be >= 1")
        if pages_per_host < 1:
            raise ValueError("pages_per_host must be >= 1")
        self.port = port
        self.seed = seed
        self.pages_per_host = pages_per_host
        self.cache = LRUCache(cache_pages)
        self.slow_delay = slow_delay
        self.giant_bytes = giant_bytes
        self.fresh_pages = fresh_pages
        self.clock: Callable[[], float] = clock if clock is not None else Clock()
        self.normal_hosts: list[str] = [f"site{i}.test" for i in range(hosts)]
        self._hosts: dict[str, HostKind] = {
            name: NormalHost(self, name, i) for i, name in enumerate(self.normal_hosts)
        }
        self.fresh_hosts: list[str] = [f"fresh{i}.test" for i in range(fresh_hosts)]
        for name in self.fresh_hosts:
            self._hosts[name] = FreshHost(self, name)
        self._hosts[ClockHost.host_name] = ClockHost(self)
        self.mirror_hosts: list[str] = []
        if mirror_articles > 0:
            by_host: dict[str, list] = {}
            for labelled in labelled_pages(mirror_articles, seed):
                by_host.setdefault(labelled.host, []).append(labelled)
            self.mirror_hosts = sorted(by_host)
            for name in self.mirror_hosts:
                self._hosts[name] = MirrorHost(self, name, by_host[name])
        self.doc_hosts: list[str] = [site.host for site in doc_sites]
        for site in doc_sites:
            self._hosts[site.host] = DocSiteHost(self, site)
        for kind in HOST_KINDS.values():
            if issubclass(kind, SpecialHost) and kind.host_name:
                self._hosts[kind.host_name] = kind(self)

    @staticmethod
    def kinds() -> dict[str, type[HostKind]]:
        """The registered host kinds by name."""
        return dict(HOST_KINDS)

    def hosts(self) -> list[str]:
        """The normal hosts ``site0.test`` .. ``site{N-1}.test``: the web a plain crawl
        starts from. Special, fresh and mirror hosts are left out (see ``all_hosts``)."""
        return list(self.normal_hosts)

    def all_hosts(self) -> list[str]:
        """Every host name served: normal, special, fresh, clock.test, mirror and doc hosts."""
        return list(self._hosts)

    def special_hosts(self) -> dict[str, str]:
        """Special (adversarial) host name -> the address it must resolve to."""
        return {name: kind.address for name, kind in self._hosts.items()
                if isinstance(kind, SpecialHost)}

    def addresses(self) -> dict[str, str]:
        """Every host name -> address, for a crawler's resolver override (127.0.0.1 except
        ``dead.test`` and ``blackhole.test``)."""
        return {name: getattr(kind, "address", "127.0.0.1") for name, kind in self._hosts.items()}

    def mirror_labels(self) -> dict[str, str]:
        """URL -> near-copy label for every page of the mirror hosts (same label: copies)."""
        labels: dict[str, str] = {}
        for name in self.mirror_hosts:
            labels.update(self._hosts[name].labels())  # type: ignore[attr-defined]
        return labels

    def spam_hosts(self) -> dict[str, str]:
        """Spam host name -> its kind of spam (keyword_stuffing, hidden_text, doorway,
        link_farm, cloaking): the ground truth of spam detection."""
        return dict(SPAM_HOSTS)

    def cross_mirrors(self) -> dict[str, str]:
        """Cross-host mirror -> the host it copies (``mirror.test`` -> ``site0.test``)."""
        return {MIRROR_HOST: MIRRORED_HOST}

    def host(self, name: str) -> HostKind:
        """The host object of a name (KeyError if unknown)."""
        return self._hosts[name.lower()]

    def url(self, host: str, path: str = "/") -> str:
        """The absolute URL of a path on a host, with the server's port."""
        return f"http://{host}:{self.port}{path}"

    def home_url(self, host: str) -> str:
        """The home page URL of a host."""
        return self.url(host, "/")

    def handle(self, request: Request) -> Response:
        """Answer a request; unknown hosts get a 404."""
        kind = self._hosts.get(request.host)
        if kind is None:
            return not_found(f"Unknown host {request.host}")
        return kind.handle(request)

    def render(
        self, host: str, path: str, headers: dict[str, str] | None = None, method: str = "GET"
    ) -> Response:
        """What the server answers to ``method path`` with ``Host: host`` and these headers."""
        lower = {k.lower(): v for k, v in (headers or {}).items()}
        return self.handle(Request(method, host.lower().rsplit(":", 1)[0], path, lower))

    def page(self, host: str, path: str) -> PageInfo | None:
        """The ground truth of a page (title, main text, headings, links, keyword), or None."""
        kind = self._hosts.get(host.lower())
        return kind.page(path) if kind else None
