"""Both engines give one BM25 where pages lack a text field (no title, no anchor text, no
identifier): the same order and, within float noise, the same text scores relative to the
best (the ``bm25`` signal's value).

Elasticsearch computes a field's BM25 statistics (the documents counted for IDF, the
average length) over the documents holding a term in that field, tantivy over every
document; ``fields.EMPTY_FIELD`` gives every field of every page a term, so both count
the same documents.
"""

from __future__ import annotations

import pytest

from tests.contract.conftest import both_engines, doc

PAGES = [
    doc("http://s.test/a", "Parser reference",
        "The parser reads grammar files and reports conflicts.", anchors="parser"),
    doc("http://s.test/b", "", "parser parser options for the grammar and its tables"),
    doc("http://s.test/c", "",
        "A grammar is a set of rules. Conflicts are reported by the parser."),
    doc("http://s.test/d", "Grammar rules", "Rules of a grammar, written in yacc_style form."),
    doc("http://s.test/e", "", "Nothing about that here, only cooking and gardening."),
    doc("http://s.test/f", "", "More unrelated text about weather and rain."),
    doc("http://s.test/g", "Conflicts",
        "shift reduce conflicts in a grammar and how the parser resolves them",
        anchors="conflicts"),
    doc("http://s.test/h", "", "yet another page without a title, on trains"),
    doc("http://s.test/i", "Rain", "rain and a grammar of clouds"),
]

QUERIES = ["parser", "grammar conflicts", "grammar rules parser", "rain",
           "how does the parser report conflicts in a grammar"]


@pytest.fixture(scope="module")
def engines(make_embedded_backend, make_elasticsearch_backend):
    yield from both_engines(make_embedded_backend, make_elasticsearch_backend, PAGES)


@pytest.mark.parametrize("query", QUERIES)
def test_same_order_same_text_scores(engines, query):
    found = {name: [(h.url, h.explain["bm25"]["value"])
                    for h in b.search(query, size=10, explain=True).hits]
             for name, b in engines.items()}
    embedded, elasticsearch = found["embedded"], found["elasticsearch"]
    assert [u for u, _ in embedded] == [u for u, _ in elasticsearch], found
    assert [s for _, s in embedded] == pytest.approx([s for _, s in elasticsearch],
                                                     rel=1e-4, abs=1e-6), found
