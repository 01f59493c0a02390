"""The SearchBackend contract: every backend passes these same tests with the same results."""

from __future__ import annotations

import re

import pytest

from index.base import Results
from index.query import QueryError
from tests.contract.conftest import holding


def names(results: Results, corpus_docs) -> set[str]:
    by_id = {d.id: name for name, d in corpus_docs.items()}
    return {by_id[h.id] for h in results.hits}


# --- queries on a fixed corpus ---------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("python", {"tutorial", "snakes", "bb", "evil"}),
        ("programming python", {"tutorial"}),
        ("PYTHON Programming", {"tutorial"}),
        ("running", {"tutorial"}),
        ("runs", {"tutorial"}),
        ("languages", {"tutorial", "java"}),
        ("python -snake", {"tutorial", "bb", "evil"}),
        ('python -"flying circus"', {"tutorial", "bb", "evil"}),
        ('"quick fox"', {"fox"}),
        ('"quick brown fox"', {"java"}),
        ('"to be or not to be"', {"fox"}),
        ("to be or not to be", {"fox"}),
        ("site:b.test", {"snakes", "java"}),
        ("site:docs.b.test", {"java"}),
        ("site:B.TEST snake", {"snakes"}),
        ("python -site:b.test", {"tutorial", "bb", "evil"}),
        ("site:a.test OR site:c.test", {"tutorial", "fox"}),
        ("java OR snake", {"snakes", "java"}),
        ("java | comedy", {"snakes", "java"}),
        ("(java OR snake) programming", {"java"}),
        ("language -(java OR python)", set()),
        ("os path", {"ospath", "os_apart"}),
        ("CAFÉ", {"cafe"}),
        ("cafe", {"cafe"}),
        ("strasse", {"cafe"}),
        ("мир", {"cafe"}),
        ("हिन्दी", {"cafe"}),
        ("ＰＹＴＨＯＮ tutorial", {"tutorial"}),
        ("nonexistentword", set()),
    ],
)
def test_query_operators(corpus, corpus_docs, query, expected):
    results = corpus.search(query, size=20)
    assert names(results, corpus_docs) == expected
    assert results.total == len(expected)


def test_an_identifier_matches_whole_first_then_its_parts_apart(corpus, corpus_docs):
    # the page holding os.path whole comes first; plain any-word BM25 reads os.path as
    # "os path" and finds the page holding them apart too, so it follows
    by_id = {d.id: name for name, d in corpus_docs.items()}
    found = [by_id[h.id] for h in corpus.search("os.path", size=20).hits]
    assert found == ["ospath", "os_apart"]


def test_a_phrase_never_matches_across_a_block_break(backend, make_doc):
    # a doxygen member table: "value" ends one cell, "lookup" starts the next; the two
    # words are adjacent in the text but not a phrase of it (analysis.BLOCK_GAP)
    cells = make_doc("http://d.test/cells", "Class members",
                     "Public functions\nreturns the value\nlookup a key in the table")
    prose = make_doc("http://d.test/prose", "Lookups",
                     "A value lookup finds a key in the table, in one step.")
    holding(backend, [cells, prose])
    assert [h.url for h in backend.search('"value lookup"').hits] == [prose.url]
    assert [h.url for h in backend.search('"lookup a key"').hits] == [cells.url]
    assert [h.url for h in backend.search("value_lookup").hits][:1] == [prose.url]
    # both pages hold both words; only the prose holds them near each other
    near = {h.url: h.explain["near"]["value"]
            for h in backend.search("value lookup", explain=True).hits}
    assert near == {prose.url: 1.0, cells.url: 0.0}


@pytest.mark.parametrize(
    "query", ["", "   ", "-site:a.test", '"', "OR", "()", "- -", "-xyzzy"]
)
def test_empty_or_wordless_queries_find_nothing(corpus, query):
    # "-xyzzy": exclusions alone read literally (test_literal.py), a word no page holds
    results = corpus.search(query)
    assert results.hits == [] and results.total == 0


@pytest.mark.parametrize(
    "query", ['python "programming', "python) (", "((python", "python OR"]
)
def test_garbage_around_a_word_still_searches(corpus, query):
    assert corpus.search(query).total > 0


def test_too_long_query_raises_query_error(corpus):
    with pytest.raises(QueryError):
        corpus.search("python " * 1000)


def test_title_outranks_body(corpus, corpus_docs):
    hits = corpus.search("gardening").hits
    assert [h.id for h in hits] == [
        corpus_docs["garden_title"].id,
        corpus_docs["garden_body"].id,
    ]


def test_hit_fields(corpus, corpus_docs):
    results = corpus.search("programming python")
    (hit,) = results.hits
    d = corpus_docs["tutorial"]
    assert (hit.id, hit.url, hit.title, hit.host) == (d.id, d.url, d.title, d.host)
    assert hit.score > 0
    assert results.page == 1 and results.size == 10 and results.took_ms >= 0
    assert results.query == "programming python"


def test_snippet_marks_query_terms(corpus):
    (hit,) = corpus.search("programming python").hits
    assert "<mark>Python</mark>" in hit.snippet
    assert "<mark>programming</mark>" in hit.snippet


def test_snippet_escapes_everything_else(corpus):
    (hit,) = corpus.search("python site:evil.test").hits
    assert re.sub(r"</?mark>", "", hit.snippet).count("<") == 0
    assert "&lt;script&gt;" in hit.snippet
    assert "&amp;amp;" in hit.snippet and "&amp;lt;tag&amp;gt;" in hit.snippet
    assert "<mark>python</mark>" in hit.snippet
    assert (
        hit.title == "<script>alert(1)</script> Evil"
    )  # plain text: the page escapes it


def test_snippet_without_body_match_is_the_start_of_the_body(corpus, corpus_docs):
    (hit,) = corpus.search("site:c.test").hits
    assert hit.snippet.startswith("The quick fox")


def test_unicode_snippet(corpus):
    (hit,) = corpus.search("cafe").hits
    assert "<mark>café</mark>" in hit.snippet
    assert hit.title == "Café Ünïcödé"


# --- writes ---------------------------------------------------------------------------


def test_ensure_index_is_idempotent(backend):
    backend.ensure_index()
    backend.ensure_index()
    assert backend.stats()["docs"] == 0


def test_index_then_get_round_trips_every_field(backend, make_doc):
    d = make_doc(
        "http://a.test/x",
        "Title",
        "Body text",
        description="desc",
        anchors="anchor words",
        lang="en",
        fetched_at=1_700_000_000.5,
        pagerank=0.25,
        cluster_id="c1",
        dup_count=2,
        warc_file="crawl-0001.warc.gz",
        warc_offset=1234,
    )
    assert backend.index([d]) == 1
    backend.refresh()
    assert backend.get(d.id) == d
    assert backend.get("0" * 16) is None


def test_index_replaces_by_id(backend, make_doc):
    backend.index([make_doc("http://a.test/x", "Old title", "old words")])
    backend.refresh()
    backend.index([make_doc("http://a.test/x", "New title", "new words")])
    backend.refresh()
    assert backend.search("old").total == 0
    results = backend.search("new")
    assert results.total == 1 and results.hits[0].title == "New title"
    assert backend.stats()["docs"] == 1


def test_replace_within_one_batch_keeps_the_last(backend, make_doc):
    backend.index(
        [make_doc("http://a.test/x", "First"), make_doc("http://a.test/x", "Second")]
    )
    backend.refresh()
    assert backend.stats()["docs"] == 1
    assert backend.get(make_doc("http://a.test/x").id).title == "Second"


def test_index_accepts_a_generator(backend, make_doc):
    count = backend.index(make_doc(f"http://a.test/{i}", f"page {i}") for i in range(7))
    backend.refresh()
    assert count == 7 and backend.stats()["docs"] == 7


def test_delete(backend, make_doc):
    docs = [make_doc(f"http://a.test/{i}", "word") for i in range(3)]
    backend.index(docs)
    backend.refresh()
    assert backend.delete([docs[0].id, "ffffffffffffffff"]) == 2
    backend.refresh()
    assert backend.get(docs[0].id) is None
    assert {h.id for h in backend.search("word").hits} == {docs[1].id, docs[2].id}
    assert backend.stats()["docs"] == 2


@pytest.mark.parametrize(
    ("pattern", "gone"),
    [
        ("a.test", {"http://a.test/1", "http://a.test/2"}),
        ("*.a.test", {"http://sub.a.test/1"}),
        ("A.TEST", {"http://a.test/1", "http://a.test/2"}),
        ("*.test", {"http://a.test/1", "http://a.test/2", "http://sub.a.test/1",
                    "http://b.test/1"}),
        ("nowhere.test", set()),
    ],
)
def test_delete_by_host(backend, make_doc, pattern, gone):
    urls = ["http://a.test/1", "http://a.test/2", "http://sub.a.test/1", "http://b.test/1",
            "http://a.test.example/1"]
    docs = {u: make_doc(u, "word") for u in urls}
    backend.index(docs.values())
    backend.refresh()
    assert backend.delete_by_host(pattern) == len(gone)
    left = {h.url for h in backend.search("word").hits}
    assert left == set(urls) - gone
    assert all(backend.get(docs[u].id) is None for u in gone)


def test_stats(backend, make_doc):
    backend.index(
        [make_doc(f"http://a.test/{i}", "word", "body " * 50) for i in range(5)]
    )
    backend.refresh()
    stats = backend.stats()
    assert stats["docs"] == 5 and stats["bytes"] > 0


def test_update_rank_reorders_equal_text_and_is_stored(backend, make_doc):
    low, high = (
        make_doc("http://a.test/low", "same words"),
        make_doc("http://b.test/high", "same words"),
    )
    backend.index([low, high])
    backend.refresh()
    assert (
        backend.update_rank({high.id: 1.0, low.id: 0.0, "ffffffffffffffff": 1.0}) == 2
    )
    backend.refresh()
    assert [h.id for h in backend.search("same words").hits] == [high.id, low.id]
    assert backend.get(high.id).pagerank == 1.0
    assert backend.get(high.id).title == "same words"
    assert backend.search("same words").hits[0].pagerank == 1.0
    backend.update_rank({high.id: 0.0, low.id: 1.0})
    backend.refresh()
    assert [h.id for h in backend.search("same words").hits] == [low.id, high.id]


def test_pagination_is_disjoint_and_complete(backend, make_doc):
    docs = [
        make_doc(f"http://h{i}.test/", f"topic {i}", "shared " * (1 + i % 5))
        for i in range(25)
    ]
    backend.index(docs)
    backend.refresh()
    pages = [backend.search("shared", page=p, size=10) for p in (1, 2, 3, 4)]
    assert [len(p.hits) for p in pages] == [10, 10, 5, 0]
    assert all(p.total == 25 for p in pages)
    ids = [h.id for p in pages for h in p.hits]
    assert len(ids) == len(set(ids)) == 25
    scores = [h.score for p in pages for h in p.hits]
    assert scores == sorted(scores, reverse=True)
    assert pages[1].page == 2


def test_collapse_keeps_the_best_of_a_cluster(backend, make_doc):
    best = make_doc("http://a.test/1", "mirror mirror", "mirror", cluster_id="k")
    copies = [
        make_doc(f"http://m{i}.test/", "other", "mirror", cluster_id="k")
        for i in range(2)
    ]
    single = make_doc("http://z.test/", "alone", "mirror")
    backend.index([best, *copies, single])
    backend.refresh()
    results = backend.search("mirror")
    assert [h.id for h in results.hits] == [best.id, single.id]
    assert [h.similar for h in results.hits] == [2, 0]
    assert results.hits[0].cluster_id == "k"


def test_documents_without_cluster_do_not_collapse(backend, make_doc):
    backend.index([make_doc(f"http://a.test/{i}", "twin", "twin") for i in range(3)])
    backend.refresh()
    assert len(backend.search("twin").hits) == 3


def test_empty_fields_and_long_text(backend, make_doc):
    long_body = "lorem ipsum " * 20_000 + " needle"
    docs = [
        make_doc("http://a.test/empty"),
        make_doc("http://a.test/long", "", long_body),
    ]
    backend.index(docs)
    backend.refresh()
    (hit,) = backend.search("needle").hits
    assert hit.id == docs[1].id
    assert backend.get(docs[0].id) == docs[0]

