"""The synthetic documents of the benchmarks and tests: deterministic pages shaped like the
test web's articles (``testweb.text``: Zipf words, a title, 4-10 paragraphs, some anchor
text), page ``i`` the same wherever and however often it is made, so writer processes can
split the work and every side of a benchmark indexes the same pages."""

from __future__ import annotations

import random
from collections.abc import Iterator

from crawler.urls import doc_id_for
from index.analysis import STOPWORDS
from index.base import Document
from testweb import text

#: The generator's seed: change it and every generated figure changes.
SEED = 20261129
#: The fetch time of page 0 (page ``i`` was fetched ``i`` seconds later).
FETCHED_AT = 1_760_000_000.0


def document(url: str, title: str = "", body: str = "", **fields) -> Document:
    """A document for ``url`` with its id and host derived from it (the tests' own pages)."""
    host = url.split("://", 1)[1].split("/", 1)[0]
    return Document(id=doc_id_for(url), url=url, host=host, title=title, body=body, **fields)


def title_for(rng: random.Random) -> str:
    """A page title: the first draws of the page's generator."""
    return text.title_case(text.words(rng, text.between(rng, 3, 7)))


def page(i: int, hosts: int, pagerank: float = 0.0) -> Document:
    """Page ``i`` of ``hosts`` hosts (``host{i % hosts}.test``)."""
    rng = text.rng_for(SEED, i)
    host = f"host{i % hosts}.test"
    url = f"http://{host}/p/{i // hosts}"
    title = title_for(rng)
    paragraphs = []
    for _ in range(text.between(rng, 4, 10)):
        sentences = []
        for _ in range(text.between(rng, 3, 5)):
            sentences.append(" ".join(text.sentence(rng)).capitalize() + ".")
        paragraphs.append(" ".join(sentences))
    anchors = " ".join(" ".join(text.words(rng, 3)) for _ in range(text.between(rng, 0, 4)))
    return Document(
        id=doc_id_for(url),
        url=url,
        host=host,
        title=title,
        body="\n\n".join(paragraphs),
        anchors=anchors,
        fetched_at=FETCHED_AT + i,
        pagerank=pagerank,
    )


def generate(n: int, hosts: int) -> Iterator[Document]:
    """Pages ``0 .. n-1``."""
    return (page(i, hosts) for i in range(n))


def static_rank(i: int) -> float:
    """Page ``i``'s static rank, skewed like PageRank scaled to the best page (~1): the top
    10% of pages are above 0.43, the median page is at 0.004."""
    return round(text.rng_for(SEED, "rank", i).random() ** 8, 6)


def make_queries(n_docs: int, count: int) -> list[str]:
    """1-3 word queries from the titles of random pages among the first ``n_docs``
    (stopwords skipped)."""
    rng = random.Random(SEED)
    queries = []
    while len(queries) < count:
        title = title_for(text.rng_for(SEED, rng.randrange(n_docs)))
        words = [w for w in title.lower().split() if w not in STOPWORDS]
        if not words:
            continue
        k = min(len(words), 1 + len(queries) % 3)
        queries.append(" ".join(rng.sample(words, k)))
    return queries
