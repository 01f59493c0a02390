"""Backends under contract: every test in this package runs once per entry of BACKENDS.

A backend joins by appending its name to ``BACKENDS`` and providing two session-scoped
fixtures: ``make_<name>_backend``, a callable returning a new, empty backend (its own
index) that the suite may fill, query and ``close()``, whose keyword arguments are
constructor options every backend takes (``signals``, ``rank_weights``); and
``reopen_<name>_backend(backend, **options)``, another backend on the index of one it made
(after ``backend`` is closed: the embedded engine has one writer), as a process started
with other settings opens it.

The tests' shared setup: ``holding`` (a backend with pages written and searchable),
``others`` (pages sharing a query's words without answering it), ``urls`` (a search's
result URLs).
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from harness.documents import document as doc
from index.base import Document
from index.engines.embedded.backend import EmbeddedBackend
from tests.fixtures_es import es_url  # noqa: F401  (the fixture, for the Elasticsearch param)

BACKENDS = ["embedded", "elasticsearch"]


@pytest.fixture(scope="session")
def make_embedded_backend(tmp_path_factory):
    """Each call: an embedded backend in a fresh directory."""

    def make(**options):
        return EmbeddedBackend(tmp_path_factory.mktemp("index"), **options)

    return make


@pytest.fixture(scope="session")
def reopen_embedded_backend():
    """Each call: an embedded backend on the directory of ``backend``."""

    def reopen(backend, **options):
        return EmbeddedBackend(backend.path, **options)

    return reopen


@pytest.fixture(scope="session")
def reopen_elasticsearch_backend(es_url):  # noqa: F811
    """Each call: an Elasticsearch backend on the alias of ``backend`` (dropped with it)."""
    from index.engines.elasticsearch.backend import ElasticsearchBackend

    def reopen(backend, **options):
        return ElasticsearchBackend(es_url, index_prefix=backend.alias,
                                    spool_dir=backend.writer.spool_dir, bulk_interval_s=0.05,
                                    **options)

    return reopen


@pytest.fixture(scope="session")
def make_elasticsearch_backend(es_url, tmp_path_factory):  # noqa: F811
    """Each call: an Elasticsearch backend on its own alias; all are dropped at the end."""
    import uuid

    from index.engines.elasticsearch.backend import ElasticsearchBackend

    made = []

    def make(**options):
        backend = ElasticsearchBackend(
            es_url,
            index_prefix=f"contract-{uuid.uuid4().hex[:10]}",
            spool_dir=tmp_path_factory.mktemp("es-spool"),
            bulk_interval_s=0.05,
            **options,
        )
        made.append(backend)
        return backend

    yield make
    for backend in made:
        cleanup = ElasticsearchBackend(
            es_url, index_prefix=backend.alias, spool_dir=backend.writer.spool_dir
        )
        cleanup.drop()
        cleanup.client.close()


def _open(request, name):
    backend = request.getfixturevalue(f"make_{name}_backend")()
    backend.ensure_index()
    return backend


def holding(backend, pages: Iterable[Document]):
    """``backend`` with ``pages`` written and searchable (refreshed)."""
    backend.index(list(pages))
    backend.refresh()
    return backend


def both_engines(make_embedded, make_elasticsearch, pages: Iterable[Document]):
    """A new backend of each engine (``make_<name>_backend``) holding ``pages``, by engine
    name; a module fixture yields from it, and each backend is closed after."""
    pages = list(pages)
    made = {"embedded": make_embedded(), "elasticsearch": make_elasticsearch()}
    for backend in made.values():
        backend.ensure_index()
        holding(backend, pages)
    yield made
    for backend in made.values():
        backend.close()


def others(host: str, title: str, body: str, count: int = 4) -> list[Document]:
    """``count`` pages of ``host`` (``http://host/0`` ...) titled ``title 0`` ..., all
    holding ``body``: the pages that share a query's words without answering it."""
    return [doc(f"http://{host}/{n}", f"{title} {n}", body) for n in range(count)]


def urls(results) -> list[str]:
    """The URLs of a search's hits, in order."""
    return [h.url for h in results.hits]


@pytest.fixture(params=BACKENDS)
def backend(request):
    """A new, empty backend of each kind, for tests that write."""
    backend = _open(request, request.param)
    yield backend
    backend.close()


CORPUS = {
    "tutorial": doc(
        "http://a.test/python",
        "Python Tutorial",
        "Learn the Python programming language step by step. Running examples included.",
    ),
    "snakes": doc(
        "http://b.test/snakes",
        "Snakes of the world",
        "The python is a large snake. Monty Python's Flying Circus is a comedy, not a snake.",
    ),
    "java": doc(
        "http://docs.b.test/java",
        "Java Guide",
        "Java is a programming language. The quick brown fox jumps over the lazy dog.",
    ),
    "fox": doc(
        "http://c.test/fox",
        "Foxes",
        "The quick fox is quick. To be or not to be, that is the question.",
    ),
    "bb": doc(
        "http://bb.test/python",
        "Python at bb",
        "A python page on another host, to check that site matching is by label.",
    ),
    "cafe": doc(
        "http://cafe.test/menu",
        "Café Ünïcödé",
        "Le café est très bon. Привет мир. हिन्दी भाषा. Die Straße.",
    ),
    "evil": doc(
        "http://evil.test/xss",
        "<script>alert(1)</script> Evil",
        "Beware <script>alert('x')</script> &amp; python <b>bold</b> &lt;tag&gt;",
    ),
    "garden_title": doc(
        "http://g1.test/garden", "Gardening", "Tips on soil, seeds and water."
    ),
    "garden_body": doc(
        "http://g2.test/home",
        "Home tips",
        "Some words about gardening and many other chores: cooking, cleaning, painting.",
    ),
    "ospath": doc(
        "http://code.test/os",
        "os.path module",
        "Use os.path.join to build file names portably.",
    ),
    "os_apart": doc(
        "http://other.test/os", "Old systems", "The os is old, a path is long."
    ),
}


@pytest.fixture(scope="module", params=BACKENDS)
def corpus(request):
    """A backend of each kind holding ``CORPUS``, shared read-only by a module's tests."""
    backend = holding(_open(request, request.param), CORPUS.values())
    yield backend
    backend.close()


@pytest.fixture(scope="session")
def corpus_docs() -> dict[str, Document]:
    """``CORPUS`` by name, to compare hits against."""
    return CORPUS


@pytest.fixture(scope="session")
def make_doc():
    """The ``doc(url, title, body, **fields)`` helper."""
    return doc
