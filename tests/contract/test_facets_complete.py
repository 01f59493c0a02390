"""Facets (matches per site and language), the ``lang:`` operator and title completion:
the same answers from every engine."""

from __future__ import annotations

import pytest

PAGES = [
    ("http://a.test/1", "Garden tools", "garden spade rake", "en"),
    ("http://a.test/2", "Garden tools", "garden hose", "en-GB"),
    ("http://a.test/3", "Gartenwerkzeug", "garden werkzeug", "de"),
    ("http://b.test/1", "Garden flowers", "garden roses", "en"),
    ("http://c.test/1", "Jardin", "garden jardin", "fr"),
    ("http://c.test/2", "Kitchen", "cooking pots", "en"),
]


@pytest.fixture
def pages(backend, make_doc):
    backend.index([make_doc(url, title, body, lang=lang) for url, title, body, lang in PAGES])
    backend.refresh()
    return backend


def test_facets_count_matches_per_site_and_language(pages):
    results = pages.search("garden", facets=True)
    assert results.total == 5
    assert results.facets == {
        "site": [("a.test", 3), ("b.test", 1), ("c.test", 1)],
        "lang": [("en", 3), ("de", 1), ("fr", 1)],
    }


def test_facets_follow_the_filters_and_are_off_by_default(pages):
    assert pages.search("garden").facets == {}
    results = pages.search("garden site:a.test", facets=True)
    assert results.facets["site"] == [("a.test", 3)]
    assert results.facets["lang"] == [("en", 2), ("de", 1)]
    assert pages.search("nothingmatches", facets=True).facets == {"site": [], "lang": []}


@pytest.mark.parametrize(
    ("query", "urls"),
    [
        ("garden lang:en", {"http://a.test/1", "http://a.test/2", "http://b.test/1"}),
        ("garden lang:EN-us", {"http://a.test/1", "http://a.test/2", "http://b.test/1"}),
        ("garden lang:de", {"http://a.test/3"}),
        ("garden -lang:en", {"http://a.test/3", "http://c.test/1"}),
        ("lang:fr OR lang:de", {"http://a.test/3", "http://c.test/1"}),
        ("garden lang:xx", set()),
    ],
)
def test_lang_operator(pages, query, urls):
    results = pages.search(query, size=20)
    assert {h.url for h in results.hits} == urls
    assert results.total == len(urls)


def test_complete_titles_by_prefix(pages):
    assert pages.complete("gar") == ["Garden tools", "Garden flowers", "Gartenwerkzeug"]
    assert pages.complete("GARDEN ") == ["Garden tools", "Garden flowers"]
    assert pages.complete("garden f") == ["Garden flowers"]
    assert pages.complete("gar", limit=1) == ["Garden tools"]
    assert pages.complete("zzz") == []
    assert pages.complete("  ") == []
