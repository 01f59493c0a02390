"""The Elasticsearch backend on a real single-node server: index design, queries, reindex."""

from __future__ import annotations

import threading
import uuid

import pytest

from harness.documents import document as doc
from index.engines.elasticsearch.backend import (
    ElasticsearchBackend,
    ElasticsearchOptions,
    QueryCompiler,
    mappings,
)
from index.engines.elasticsearch.mapping import ADDED_FIELDS, merge_for_serving
from index.query import parse
from index.semantic import TRANSFORMER

pytest_plugins = ["tests.fixtures_es"]
pytestmark = pytest.mark.services


@pytest.fixture(scope="module")
def make_backend(es_url, tmp_path_factory):
    """Each call: a backend on its own alias; every alias is dropped after the module."""
    made: list[ElasticsearchBackend] = []

    def make(**options) -> ElasticsearchBackend:
        options.setdefault("bulk_interval_s", 0.05)
        backend = ElasticsearchBackend(
            es_url,
            index_prefix=f"test-{uuid.uuid4().hex[:10]}",
            spool_dir=tmp_path_factory.mktemp("spool"),
            **options,
        )
        backend.ensure_index()
        made.append(backend)
        return backend

    yield make
    for backend in made:
        backend.drop()
        backend.client.close()


CORPUS = [
    doc("http://a.test/python", "Python Tutorial", "Learn the Python language. Running code."),
    doc("http://b.test/snakes", "Snakes", "The python is a large snake, not a language."),
    doc("http://docs.b.test/java", "Java Guide", "Java is a programming language."),
    doc("http://c.test/fox", "Foxes", "The quick brown fox. To be or not to be."),
    doc("http://evil.test/x", "<b>Evil</b>", "Beware <script>alert('x')</script> python & co"),
    doc("http://m1.test/p", "Mirror", "Gardening tips for python lovers", cluster_id="c1"),
    doc("http://m2.test/p", "Mirror", "Gardening tips for python lovers", cluster_id="c1"),
    doc("http://m3.test/p", "Mirror", "Gardening tips for python lovers", cluster_id="c1"),
]


@pytest.fixture(scope="module")
def corpus(make_backend):
    backend = make_backend()
    backend.index(CORPUS)
    backend.refresh()
    return backend


def urls(results) -> list[str]:
    return [h.url for h in results.hits]


def test_index_design_uses_only_core_analysis_and_numeric_static_rank(corpus):
    mapping = corpus.client.indices.get_mapping(index=corpus.alias)
    ((index_name, body),) = mapping.items()
    props = body["mappings"]["properties"]
    assert index_name == f"{corpus.alias}-v1"
    assert {props[f]["analyzer"] for f in ("title", "body", "anchors", "url")} == {"whitespace"}
    assert props["host"]["type"] == props["cluster"]["type"] == props["site"]["type"] == "keyword"
    assert props["pagerank"]["type"] == "float" and props["fetched_at"]["type"] == "double"
    # The integ-test server has no mapper-extras module, so no rank_feature field.
    assert "pagerank_rf" not in props
    assert "pagerank_rf" in mappings(rank_feature=True)["properties"]


def test_terms_are_analyzed_in_python(corpus):
    results = corpus.search("running")
    assert urls(results) == ["http://a.test/python"]
    assert "<mark>Running</mark>" in results.hits[0].snippet


def test_phrase_exclude_or_and_site(corpus):
    assert urls(corpus.search('"python language"')) == ["http://a.test/python"]
    assert "http://b.test/snakes" not in urls(corpus.search("python -snake"))
    assert set(urls(corpus.search("java OR fox"))) == {
        "http://docs.b.test/java",
        "http://c.test/fox",
    }
    assert set(urls(corpus.search("language site:b.test"))) == {
        "http://b.test/snakes",
        "http://docs.b.test/java",
    }
    assert urls(corpus.search("language site:docs.b.test")) == ["http://docs.b.test/java"]
    assert urls(corpus.search("-xyzzy")) == []  # exclusions alone: their words, read literally


def test_near_copies_collapse_with_a_count(corpus):
    results = corpus.search("gardening")
    assert len(results.hits) == 1
    assert results.hits[0].cluster_id == "c1" and results.hits[0].similar == 2
    assert results.total == 3


def requests_of(backend, query: str) -> int:
    before = backend.stats()["search/requests"]
    backend.search(query)
    return backend.stats()["search/requests"] - before


def test_a_page_costs_three_requests_unless_a_second_pass_is_needed(make_backend):
    backend = make_backend()
    many = [doc(f"http://many{i}.test/", f"Garden {i}", "garden tools spade rake hose")
            for i in range(40)]
    few = [doc("http://few.test/", "Orchard", "orchard apple pear ladder")]
    mirrors = [doc(f"http://mirror{i}.test/", "Mirror", "compost heap mirror text",
                   cluster_id="cm") for i in range(3)]
    backend.index(many + few + mirrors)
    backend.refresh()
    # the best text score (the formula's scale), the ranked window and "did you mean" in
    # one more request; the page's hits and their near-copy counts in one more ...
    assert requests_of(backend, "compost") == 3
    assert backend.search("compost").hits[0].similar == 2
    # ... or the window and the hits in one, from the collapse's inner hits (one pass,
    # every match scored)
    inner = make_backend(near_copies="inner_hits")
    inner.index(mirrors)
    inner.refresh()
    assert requests_of(inner, "compost") == 2
    assert inner.search("compost").hits[0].similar == 2
    assert backend.search("compost").total == inner.search("compost").total == 3
    # a short plain query many pages hold in full: no second pass, no word IDF
    backend.options.blend_below = 10
    assert requests_of(backend, "garden spade rake") == 3
    # few full matches: the words' IDF from the term statistics, then pages lacking a
    # minor word compete, ranked in a second window with its own best text score; the
    # first window's hits are not read (6); fewer than a page of results, so the words
    # reading follows (index/plan.py, plain_words_below): its strict and any-word passes
    assert requests_of(backend, "orchard apple ladder") == 6 + 5
    # no page holds every word: the any-word pass (5), then the pages lacking one minor
    # word, which rank first (index/plan.py, SearchPlan.first: its strict pass, the IDF and
    # its second window, 5; here none) ...
    assert requests_of(backend, "orchard garden spade") == 5 + 5
    # ... and when some do, the other pages of the any-word pass after them (5 more, for
    # a window past them: 16); the words reading, the same any-word reading, is not run
    assert requests_of(backend, "compost mirror zebra") == 16
    stats = backend.stats()
    assert stats["search/queries"] == 7 and stats["search/requests"] == 49
    assert stats["search/requests_per_query"] == round(49 / 7, 3)


def test_the_rescored_window_scores_what_one_pass_scores(make_backend):
    """Two phases (the text query's top matches rescored by the signals) give the pages
    the one-pass ranking's scores; a window that collapses to too few groups is searched
    again deeper."""
    two = make_backend(rerank_depth=1)
    pages = [doc(f"http://copy{i}.test/", "Lantern lantern", "lantern wick oil lantern",
                 cluster_id="big", pagerank=0.1 * i) for i in range(8)]
    pages += [doc(f"http://single{i}.test/a/b", f"Lamp {i}", "lantern " + "oil " * i,
                  pagerank=0.05 * i) for i in range(6)]
    two.index(pages)
    two.refresh()
    one = ElasticsearchBackend(two.hosts, index_prefix=two.alias,
                               spool_dir=two.writer.spool_dir, rerank_depth=0)
    wide = ElasticsearchBackend(two.hosts, index_prefix=two.alias,
                                spool_dir=two.writer.spool_dir)
    try:
        for page in (1, 2):
            # the first window (4 pages, all copies) holds one group: searched 4x deeper
            got = two.search("lantern", page=page, size=3)
            expected = one.search("lantern", page=page, size=3)
            assert [(h.id, h.score, h.similar) for h in got.hits] == \
                [(h.id, h.score, h.similar) for h in expected.hits]
            assert got.total == expected.total == 14
        first = wide.search("lantern", size=3).hits[0]
        assert first.cluster_id == "big" and first.similar == 7
        assert first.url == "http://copy7.test/"  # the copy the signals rank first
    finally:
        for backend in (one, wide):
            backend.writer.close()
            backend.client.close()


def test_hits_read_a_bounded_snippet_text_not_the_page(make_backend):
    from index.hits import snippet_for
    from index.snippets import SCAN_CHARS

    backend = make_backend()
    long_page = doc("http://long.test/", "Long", "filler words here. " * 3000 + " needle")
    short = doc("http://short.test/", "Short", "a short page about a needle and thread")
    backend.index([long_page, short])
    backend.refresh()
    stored = backend.client.get(index=backend.alias, id=long_page.id)["_source"]
    assert len(stored["snippet"]) == SCAN_CHARS < len(long_page.body)
    results = backend.search("needle")
    by_url = {h.url: h for h in results.hits}
    parsed = parse("needle")
    for page in (long_page, short):  # the same snippet as from the whole stored page
        assert by_url[page.url].snippet == snippet_for(page.to_dict(), parsed, 220)
    assert "<mark>needle</mark>" in by_url[short.url].snippet


def test_a_new_index_on_a_single_node_has_one_shard_and_no_replica(make_backend):
    def sizing(backend) -> tuple[str, str]:
        (index,) = backend.client.indices.get_settings(index=backend.alias).values()
        settings = index["settings"]["index"]
        return settings["number_of_shards"], settings["number_of_replicas"]

    assert sizing(make_backend()) == ("1", "0")  # ES_SHARDS/ES_REPLICAS None: from the cluster
    assert sizing(make_backend(shards=2, replicas=0)) == ("2", "0")


def test_an_unreachable_cluster_raises_search_unavailable(tmp_path):
    from harness.services import free_port
    from index.base import SearchUnavailable

    dead = ElasticsearchBackend(f"http://127.0.0.1:{free_port()}", index_prefix="gone",
                                spool_dir=tmp_path / "spool", request_timeout_s=2)
    try:
        with pytest.raises(SearchUnavailable) as raised:
            dead.search("zebra")
        assert raised.value.retry_after >= 1
    finally:
        dead.close()


def test_snippets_and_titles_stay_escaped(corpus):
    (hit,) = corpus.search("beware").hits
    assert "<script>" not in hit.snippet and "&lt;script&gt;" in hit.snippet
    assert "<mark>Beware</mark>" in hit.snippet
    assert hit.title == "<b>Evil</b>"  # raw text; the page template escapes it


def test_did_you_mean(corpus):
    results = corpus.search("pyhton tutorial")
    assert results.suggestion == "python tutorial"
    assert corpus.search("python").suggestion is None


def test_get_delete_and_stats(make_backend):
    backend = make_backend()
    backend.index(CORPUS[:3])
    backend.refresh()
    assert backend.get(CORPUS[0].id).title == "Python Tutorial"
    assert backend.stats()["docs"] == 3 and backend.stats()["bytes"] > 0
    backend.delete([CORPUS[0].id, "unknown"])
    backend.refresh()
    assert backend.get(CORPUS[0].id) is None
    assert backend.stats()["docs"] == 2


def test_reindexing_the_same_documents_does_not_double(make_backend):
    backend = make_backend()
    backend.index(CORPUS)
    backend.index(CORPUS)
    backend.refresh()
    assert backend.stats()["docs"] == len(CORPUS)


def test_static_rank_orders_equal_text_matches(make_backend):
    backend = make_backend(rank_weights={"freshness": 0.0})
    low, high = doc("http://x.test/1", "Widget"), doc("http://y.test/2", "Widget")
    backend.index([low, high])
    backend.update_rank({low.id: 0.0, high.id: 1.0, "unknown": 5.0})
    backend.refresh()
    results = backend.search("widget")
    assert urls(results) == ["http://y.test/2", "http://x.test/1"]
    assert results.hits[0].pagerank == 1.0
    backend.update_rank({low.id: 3.0})
    backend.refresh()
    assert urls(backend.search("widget"))[0] == "http://x.test/1"


def test_freshness_decay_prefers_recent_pages(make_backend):
    import time

    backend = make_backend(rank_weights={"freshness": 1.0})
    old = doc("http://old.test/", "Gadget", fetched_at=time.time() - 365 * 86400)
    new = doc("http://new.test/", "Gadget", fetched_at=time.time())
    backend.index([old, new])
    backend.refresh()
    assert urls(backend.search("gadget")) == ["http://new.test/", "http://old.test/"]


def test_static_rank_uses_rank_feature_when_the_cluster_has_it(corpus):
    with_module = ElasticsearchBackend(corpus.hosts, index_prefix=corpus.alias,
                                       rank_weights={"freshness": 0.5})
    with_module._rank_feature = True  # as read from a mapping made on a full cluster
    body = with_module.search_body(parse("python"))
    with_module.client.close()
    ranked = _undemoted(body["query"])
    (feature,) = ranked["bool"]["should"]
    weight = with_module.ranker.weight("pagerank")
    assert feature["rank_feature"] == {"field": "pagerank_rf", "linear": {}, "boost": weight}
    scored = ranked["bool"]["must"][0]["function_score"]["functions"]
    kinds = {k for f in scored for k in f if k != "weight"}
    # freshness and the boosts' filters; rank is the feature
    assert "gauss" in kinds and "field_value_factor" not in kinds
    plain = _undemoted(corpus.search_body(parse("python"))["query"])
    assert any(f.get("field_value_factor", {}).get("field") == "pagerank"
               for f in plain["function_score"]["functions"])


def _undemoted(query: dict) -> dict:
    """The ranked query inside the spam demotion (a multiplying function_score, outermost)."""
    outer = query["function_score"]
    assert outer["score_mode"] == outer["boost_mode"] == "multiply"
    return outer["query"]


def test_field_weights_come_from_settings():
    # idents: CamelCase words match there but score nothing (fields.IDENT_PARTS_WEIGHT)
    assert set(QueryCompiler().fields) == {"title^2", "anchors^1", "url^1", "body^1",
                                           "idents^0"}
    options = ElasticsearchOptions.from_settings(
        {"ES_FIELD_WEIGHTS": {"title": 5.0, "anchors": 0.0}, "ES_SHARDS": "4", "OTHER": 1}
    )
    assert options.shards == 4
    match = QueryCompiler(options.field_weights).compile(parse("python").root)["multi_match"]
    assert set(match["fields"]) == {"title^5", "url^1", "body^1", "idents^0"}
    assert match["analyzer"] == "whitespace"


def test_deep_pages_walk_with_search_after_and_match_from_size(make_backend):
    shallow = make_backend()
    docs = [doc(f"http://h{i}.test/", f"Page {i}", "common " * (1 + i % 7)) for i in range(60)]
    docs += [
        doc(f"http://dup{i}.test/", "Dup", "common common", cluster_id="dups") for i in range(5)
    ]
    shallow.index(docs)
    shallow.refresh()
    deep = ElasticsearchBackend(
        shallow.hosts, index_prefix=shallow.alias, spool_dir=shallow.writer.spool_dir, max_window=10
    )
    try:
        for page in (1, 2, 4, 6):
            a, b = (
                shallow.search("common", page=page, size=10),
                deep.search("common", page=page, size=10),
            )
            assert [(h.id, h.similar) for h in a.hits] == [(h.id, h.similar) for h in b.hits]
        # 60 single pages and one cluster of 5 near-copies: 61 results, 1 on page 7.
        assert len(deep.search("common", page=7, size=10).hits) == 1
    finally:
        deep.writer.close()
        deep.client.close()


def test_reindex_swaps_the_alias_without_a_failed_query(make_backend):
    backend = make_backend(bulk_docs=200)
    docs = [doc(f"http://r{i}.test/", f"Reindex {i}", "stable words here") for i in range(3000)]
    backend.index(docs)
    backend.refresh()
    before = backend.current_index()
    failures: list[BaseException] = []
    totals: list[int] = []
    stop = threading.Event()

    def query_loop():
        searcher = ElasticsearchBackend(backend.hosts, index_prefix=backend.alias)
        while not stop.is_set():
            try:
                totals.append(searcher.search("stable").total)
            except BaseException as exc:  # any failure during the swap is what we look for
                failures.append(exc)
        searcher.client.close()

    thread = threading.Thread(target=query_loop)
    thread.start()
    try:
        late = [doc(f"http://late{i}.test/", "Late", "stable") for i in range(50)]
        writer = threading.Thread(target=lambda: (backend.index(late), backend.writer.flush()))
        writer.start()
        new = backend.reindex()
        writer.join()
    finally:
        stop.set()
        thread.join()
    backend.refresh()
    assert not failures
    assert len(totals) > 5 and min(totals) >= 3000
    assert new != before and backend.current_index() == new
    assert not backend.client.indices.exists(index=before)
    assert backend.stats()["docs"] == 3050


def _segments(backend) -> int:
    shards = backend.client.indices.segments(index=backend.current_index())["indices"]
    return sum(copy["num_search_segments"] for index in shards.values()
               for copies in index["shards"].values() for copy in copies)


def test_a_bulk_loaded_index_is_merged_before_it_serves(make_backend):
    backend = make_backend(bulk_docs=50)
    for batch in range(4):  # one segment per refresh
        backend.index([doc(f"http://m{batch}-{i}.test/", f"Merge {i}", "merged words")
                       for i in range(50)])
        backend.writer.flush()
        backend.refresh()
    assert _segments(backend) > 1
    assert merge_for_serving(backend.client, backend.current_index()) == 1
    assert _segments(backend) == 1
    assert backend.search("merged").total == 200
    new = backend.reindex()  # the new index is merged before the alias moves to it
    assert backend.current_index() == new and _segments(backend) == 1
    assert backend.search("merged").total == 200


def test_manage_py_reindex(make_backend, es_url, monkeypatch):
    from django.core.management import call_command

    backend = make_backend()
    backend.index(CORPUS)
    backend.refresh()
    monkeypatch.setenv("ELASTICSEARCH_URL", es_url)
    call_command("reindex", "--prefix", backend.alias)
    assert backend.current_index() == f"{backend.alias}-v2"
    assert urls(backend.search('"python language"')) == ["http://a.test/python"]


def test_a_query_over_its_time_budget_returns_partial_results(make_backend):
    import random

    from elasticsearch import helpers

    backend = make_backend(query_timeout="1nanos", track_total_hits=1_000_000_000)
    rng = random.Random(1)
    vocab = [f"w{i}" for i in range(50)]

    def actions():
        for i in range(20_000):
            words = " ".join(rng.choice(vocab) for _ in range(30))
            source = {"id": str(i), "body": words, "cluster": str(i)}
            source["doc"] = {"id": str(i), "url": f"http://t.test/{i}", "body": words}
            yield {"_index": backend.alias, "_id": str(i), "_source": source}

    helpers.bulk(backend.client, actions(), chunk_size=5000, refresh=True)
    # Shards check the budget on a clock that ticks every 200 ms, so a query of ~100 ms does
    # not always time out; running it until one does (at most 60 times) is enough.
    query = " OR ".join(f'"{a} {b}"' for a, b in zip(vocab[:25], vocab[25:], strict=True))
    runs = []
    while len(runs) < 60 and not any(r.partial for r in runs):
        runs.append(backend.search(query))
    partial = [r for r in runs if r.partial]
    assert partial, [r.total for r in runs]
    unhurried = ElasticsearchBackend(
        backend.hosts, index_prefix=backend.alias, track_total_hits=1_000_000_000
    )
    complete = unhurried.search(query)
    unhurried.client.close()
    assert not complete.partial and complete.total > 0
    assert partial[0].total <= complete.total
    assert all(r.total == complete.total for r in runs if not r.partial)


def test_a_writer_that_starts_while_es_is_down_spools_and_the_next_one_replays(es_url, tmp_path):
    from harness.services import free_port

    prefix = f"test-{uuid.uuid4().hex[:10]}"
    down = ElasticsearchBackend(
        f"http://127.0.0.1:{free_port()}",
        index_prefix=prefix,
        spool_dir=tmp_path,
        bulk_interval_s=0.05,
        bulk_max_retries=1,
    )
    down.ensure_index()  # logs a warning instead of failing the crawl
    assert not down.writer.available
    down.index(CORPUS)
    down.index(CORPUS[:2])
    down.close()
    assert down.writer.spooled_files > 0
    up = ElasticsearchBackend(es_url, index_prefix=prefix, spool_dir=tmp_path)
    try:
        up.ensure_index()
        up.refresh()
        assert up.writer.spooled_files == 0
        assert up.stats()["docs"] == len(CORPUS)
        assert urls(up.search("running")) == ["http://a.test/python"]
    finally:
        up.drop()
        up.close()


def test_bulk_queue_is_bounded_and_producers_wait(make_backend):
    backend = make_backend(bulk_docs=20, bulk_queue_bytes=50_000)
    body = "bounded memory " * 300  # about 5 kB of text per page
    peak = 0
    docs = [doc(f"http://bp{i}.test/", f"Page {i}", body) for i in range(300)]
    for d in docs:
        backend.index([d])
        peak = max(peak, backend.writer._queued_bytes)
    backend.refresh()
    assert backend.stats_.get("index/bulk/backpressure_waits") > 0
    # the longest wait is recorded (bench/soak.py reports it as index_block_longest_ms)
    assert "index/bulk/backpressure_longest_ms" in backend.stats()
    assert peak <= 50_000 + 20_000  # the limit plus the one action that crossed it
    assert backend.stats()["docs"] == 300


def test_an_index_made_before_completion_takes_the_new_field(make_backend, es_url):
    backend = make_backend()
    index = backend.current_index()
    backend.drop()  # remake it as an older version of the mapping made it: no title_key
    old = mappings(False)
    for name in ADDED_FIELDS:
        del old["properties"][name]
    old["_source"]["excludes"] = [f for f in old["_source"]["excludes"] if f not in ADDED_FIELDS]
    backend.client.indices.create(index=index, aliases={backend.alias: {"is_write_index": True}},
                                  mappings=old)
    reopened = ElasticsearchBackend(es_url, index_prefix=backend.alias,
                                    spool_dir=backend.writer.spool_dir, bulk_interval_s=0.05)
    reopened.ensure_index()
    fields = reopened.client.indices.get_mapping(index=reopened.alias)[index]["mappings"]
    assert set(ADDED_FIELDS) <= set(fields["properties"])
    reopened.index([doc("http://old.test/1", "Quokka notes", "quokka")])
    reopened.refresh()
    assert reopened.complete("quo") == ["Quokka notes"]
    reopened.close()


def test_the_versions_read_for_the_embedding_batch_are_forgotten(make_backend):
    """``get_many`` remembers each page's version for ``write_vectors`` (written one past
    it); a page written forgets it, and so does the next read for a page read and not
    written (the batch skips a page that has its vectors by then, a run fails midway), so
    a backend that lives on (a Celery worker's) keeps one read's versions at most."""
    backend = make_backend()
    pages = [doc(f"http://read.test/{i}", f"Page {i}", f"Words of page {i}.") for i in range(6)]
    backend.index(pages)
    backend.refresh()
    ids = [p.id for p in pages]
    first = backend.get_many(ids[:3])
    for page in first[:2]:
        page.vectors = "AAAA"
    assert backend.write_vectors(first[:2]) == 2
    assert set(backend._read_at) == {ids[2]}  # read, not written
    for _ in range(20):  # reads the batch never writes back
        backend.get_many(ids[3:])
    assert set(backend._read_at) == set(ids[3:])
    second = backend.get_many(ids[3:])
    for page in second:
        page.vectors = "AAAA"
    backend.write_vectors(second)
    assert backend._read_at == {}
    assert backend.unembedded(10, TRANSFORMER) == [ids[2]]


def test_pages_indexed_before_the_model_was_recorded_are_written_back_once(make_backend):
    """A page an older backend indexed has vectors but no ``embedded_by``: the batch lists
    it, embeds again only a page whose vectors are another model's, and writes the others
    back as they are, which records their model; the next run lists nothing."""
    import numpy as np

    from batch.embed import EmbedSettings, embed_pending
    from index.engines.elasticsearch.mapping import document_source
    from index.semantic import MODEL_VERSIONS, TRANSFORMER, SectionMatch, pack

    class Unit:  # an encoder of the transformer's width, without the model
        dim = 384

        def encode(self, texts):
            return np.full((len(texts), self.dim), self.dim**-0.5, np.float32)

    backend = make_backend()
    pages = [doc(f"http://older.test/{i}", f"Page {i}", f"Words of page {i}.") for i in range(3)]
    unit = np.full((1, 384), 384**-0.5)
    pages[0].vectors = pack(unit).partition(":")[2]  # stored before versions: the transformer's
    pages[1].vectors = pack(unit)
    pages[2].vectors = pack(unit, MODEL_VERSIONS["static"])
    for page in pages:  # as a backend before embedded_by indexed them
        source = document_source(page, False, 1000)
        del source["embedded_by"]
        source["indexed_at"] = 1000
        backend.client.index(index=backend.alias, id=page.id, document=source, version=1000,
                             version_type="external", refresh=True)
    ids = sorted(p.id for p in pages)
    assert sorted(backend.unembedded(10, TRANSFORMER)) == ids
    report = embed_pending(backend, SectionMatch(Unit(), 4, 30), EmbedSettings(100, 64))
    assert (report.embedded, report.more) == (1, False)
    assert backend.unembedded(10, TRANSFORMER) == [] and backend._read_at == {}
    stored = {p.id: backend.get(p.id).vectors for p in pages}
    assert stored[pages[0].id] == pages[0].vectors and stored[pages[1].id] == pages[1].vectors
    assert stored[pages[2].id].startswith(f"{TRANSFORMER}:")
    assert embed_pending(backend, SectionMatch(Unit(), 4, 30), EmbedSettings(100, 64)
                         ).embedded == 0
