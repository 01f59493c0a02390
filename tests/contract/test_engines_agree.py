"""The engines rank alike: the same pages in both, the same queries, the same top results.

The two engines score on different scales (the embedded ranker re-scores the top BM25
matches in Python; Elasticsearch multiplies its BM25 score by the boost signals), so scores
differ; what the signals decide must not. Tolerance, stated: for every query the same
first result, and at least two of the top three shared.
"""

from __future__ import annotations

import pytest

from index.formula import TEXT
from index.signals import DEFAULT_SIGNALS
from tests.contract.conftest import CORPUS, both_engines, doc

SIGNALS = [s.name for s in DEFAULT_SIGNALS if s.stage != TEXT]

PAGES = list(CORPUS.values()) + [
    doc("http://django.test/", "Welcome", "the web framework for perfectionists", lang="en"),
    *[doc(f"http://django.test/topics/{n}.html", f"Django topic {n}",
          f"django docs about topic {n} and the orm", lang="en") for n in range(6)],
    doc("http://django.test/sessions", "Sessions", "session requests cookies", lang="en"),
    doc("http://requests.test/sessions", "Sessions", "session requests cookies", lang="en"),
    doc("http://requests.test/", "Requests: HTTP for humans", "requests library", lang="en"),
    doc("http://h.test/fr/nfs", "NFS", "serveur nfs nfs nfs partage", lang="fr"),
    doc("http://h.test/en/nfs", "NFS", "nfs file server share", lang="en"),
    doc("http://g.test/gitignore", "gitignore", "files git should ignore", lang="en"),
    doc("http://g.test/check-ignore", "git-check-ignore", "git ignore files " * 5, lang="en",
        spam_score=0.25),
    doc("http://g.test/blame", "git-blame", "show what revision last modified each line"),
    doc("http://g.test/log", "git-log", "show commit logs"),
    doc("http://g.test/tutorial", "git tutorial", "a tutorial introduction to git"),
    *[doc(f"http://g.test/cmd/{n}", f"git-{n}", "git command reference") for n in range(8)],
    doc("http://m1.test/copy", "Mirror page", "mirror copy text", cluster_id="mirror"),
    doc("http://m2.test/copy", "Mirror page", "mirror copy text", cluster_id="mirror"),
    # "value" ends a table cell and "lookup" starts the next: no phrase spans the two
    doc("http://d.test/cells", "Class members",
        "Public functions\nreturns the value\nlookup a key in the table"),
    doc("http://d.test/prose", "Lookups", "A value lookup finds a key in the table."),
]

QUERIES = [
    "python", "programming python", "django docs", "django topic 3", "requests session",
    "django session", "nfs", "ignore files git", "who modified this line", "git tutorial",
    "git tutorial beginners", "quick fox", '"quick brown fox"', "os.path", "cafe",
    "requests", "mirror copy", "session -django", "git site:g.test log", "java OR snake",
    "how do I ignore files in git", "what should I use to show commit logs", "os.path.join",
    "how can I see who modified each line of a file in git", "value lookup",
    '"value lookup"', "value_lookup",
]


@pytest.fixture(scope="module")
def engines(make_embedded_backend, make_elasticsearch_backend):
    yield from both_engines(make_embedded_backend, make_elasticsearch_backend, PAGES)


@pytest.mark.parametrize("query", QUERIES)
def test_same_pages_same_top_results(engines, query):
    tops = {name: [h.url for h in b.search(query, size=3).hits] for name, b in engines.items()}
    embedded, elasticsearch = tops["embedded"], tops["elasticsearch"]
    assert embedded[:1] == elasticsearch[:1], tops
    assert len(set(embedded) & set(elasticsearch)) >= min(2, len(embedded)), tops


@pytest.mark.parametrize("query", ["django docs", "requests session", "nfs", "git tutorial",
                                   "how do I ignore files in git", "value lookup"])
def test_signal_values_agree(engines, query):
    """What each signal says of a page is the same on both engines, every signal (text
    relevance aside: each engine's own BM25)."""
    explained = {
        name: {h.url: h.explain for h in b.search(query, size=5, explain=True).hits}
        for name, b in engines.items()
    }
    shared = set(explained["embedded"]) & set(explained["elasticsearch"])
    assert shared
    for url in shared:
        for signal in SIGNALS:
            values = [explained[name][url][signal]["value"] for name in explained]
            assert values[0] == pytest.approx(values[1]), (url, signal, values)
