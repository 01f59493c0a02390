"""Embedded (tantivy) backend specifics: storage location, commits, readers in other processes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from crawler.config import Config
from crawler.urls import doc_id_for
from harness.documents import document as doc
from index import get_backend
from index.base import Document
from index.engines.embedded.backend import EmbeddedBackend
from index.fields import FieldWeights, document_fields, keyword_key, site_name, url_depth
from index.query import parse
from index.signals import (
    DEFAULT_SIGNALS,
    WEIGHTS_FILE,
    Candidate,
    RankContext,
    Ranker,
    SiteHome,
    StaticRank,
    TextRelevance,
    load_weights,
)

ROOT = Path(__file__).resolve().parents[1]


def test_default_location_is_under_data_dir(tmp_path):
    backend = get_backend(Config(data_dir=tmp_path), cache=False)
    assert isinstance(backend, EmbeddedBackend)
    assert backend.path == tmp_path / "index"
    backend.ensure_index()
    assert (tmp_path / "index" / "meta.json").exists()
    backend.close()


def test_documents_survive_reopening(tmp_path):
    backend = EmbeddedBackend(tmp_path)
    backend.index([doc("http://a.test/", "kept")])
    backend.close()
    reopened = EmbeddedBackend(tmp_path)
    assert reopened.search("kept").total == 1
    reopened.close()


def test_hits_of_an_index_written_in_the_first_hit_format_read_alike(tmp_path, monkeypatch):
    # The first format stored a hit as one JSON object with its snippet text; such an index
    # still opens and its hits (snippets included) read as those of the current format.
    import json

    from index.engines.embedded import schema as tantivy_schema

    page = doc("http://a.test/p", "Old page", "Some text. " * 50 + "The kept word here.")
    current = EmbeddedBackend(tmp_path / "current")
    current.index([page])
    current.refresh()
    monkeypatch.setattr(tantivy_schema, "_stored_hit_bytes", lambda shown, snippet: json.dumps(
        {**shown, "snippet": snippet.text, "snippet_terms": ""}).encode())
    old = EmbeddedBackend(tmp_path / "old")
    old.index([page])
    old.refresh()
    monkeypatch.undo()
    for backend in (current, old):
        backend.close()
    hits = [EmbeddedBackend(tmp_path / name).search("kept word").hits
            for name in ("current", "old")]
    assert hits[0] == hits[1]
    assert "<mark>kept</mark>" in hits[1][0].snippet


def test_commit_every_n_docs_without_refresh(tmp_path):
    writer = EmbeddedBackend(tmp_path, commit_every_docs=5, commit_interval_s=3600)
    reader = EmbeddedBackend(tmp_path)
    writer.index(doc(f"http://a.test/{i}", "x") for i in range(7))
    reader.refresh()
    assert reader.stats()["docs"] == 5
    assert writer.stats()["pending"] == 2
    writer.close()
    reader.refresh()
    assert reader.stats()["docs"] == 7


def test_commit_after_interval(tmp_path):
    writer = EmbeddedBackend(tmp_path, commit_every_docs=10**6, commit_interval_s=0)
    reader = EmbeddedBackend(tmp_path)
    writer.index([doc("http://a.test/1", "x")])
    reader.refresh()
    assert reader.stats()["docs"] == 1
    writer.close()


def test_second_writer_gets_a_clear_error(tmp_path):
    first = EmbeddedBackend(tmp_path)
    first.index([doc("http://a.test/1", "x")])
    second = EmbeddedBackend(tmp_path)
    with pytest.raises(RuntimeError, match="one process"):
        second.index([doc("http://a.test/2", "y")])
    first.close()
    second.index([doc("http://a.test/2", "y")])
    second.close()


def test_reader_in_another_process_sees_new_commits_without_refresh(tmp_path):
    reader = EmbeddedBackend(tmp_path)
    reader.ensure_index()
    assert reader.search("fresh").total == 0
    script = textwrap.dedent(
        f"""
        from index.base import Document
        from index.engines.embedded.backend import EmbeddedBackend
        b = EmbeddedBackend({str(tmp_path)!r})
        b.index([Document(id="00000000000000aa", url="http://a.test/", host="a.test",
                          title="fresh page")])
        b.close()
        """
    )
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=True, timeout=60)
    deadline = time.monotonic() + 10
    while reader.search("fresh").total == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert reader.search("fresh").total == 1
    reader.close()


def test_field_weights_are_data(tmp_path):
    body_only = EmbeddedBackend(
        tmp_path, field_weights=FieldWeights(title=0, anchors=0, url=0)
    )
    body_only.index(
        [doc("http://a.test/1", "needle"), doc("http://a.test/2", "", "needle")]
    )
    body_only.refresh()
    assert [h.url for h in body_only.search("needle").hits] == ["http://a.test/2"]
    body_only.close()


def test_url_terms_are_searchable(tmp_path):
    backend = EmbeddedBackend(tmp_path)
    backend.index([doc("http://a.test/guides/installation.html", "Setup")])
    backend.refresh()
    assert backend.search("installation").total == 1
    backend.close()


def _candidates():
    return [Candidate("a", 5.0, {"pagerank": 0.0}), Candidate("b", 4.0, {"pagerank": 1.0})]


def test_ranker_weights_and_unknown_signal():
    context = RankContext.of(parse("x"))
    ranker = Ranker.for_engine("embedded", overrides={"pagerank": 10.0})
    assert ranker.weights == {**load_weights("embedded"), "pagerank": 10.0}
    assert [c.ref for c in ranker.rank(_candidates(), context)] == ["b", "a"]
    unranked = Ranker.for_engine("embedded", overrides={"pagerank": 0})
    assert unranked.rank(_candidates(), context)[0].ref == "a"
    with pytest.raises(ValueError, match="pagerrank"):
        Ranker.for_engine("embedded", overrides={"pagerrank": 1.0})


def test_the_weights_file_is_the_only_source_of_weights():
    import json

    hand = json.loads(WEIGHTS_FILE.read_text())
    for engine in ("embedded", "elasticsearch"):
        assert set(hand[engine]) == {s.name for s in DEFAULT_SIGNALS}
        assert Ranker.for_engine(engine).weights == hand[engine]
    assert not any(hasattr(s, "default_weight") for s in DEFAULT_SIGNALS)
    with pytest.raises(ValueError, match="No weight for the ranking signal"):
        Ranker(DEFAULT_SIGNALS, {"bm25": 1.0})


def test_engine_weights_come_from_the_weights_file(tmp_path):
    hand = {engine: load_weights(engine) for engine in ("embedded", "elasticsearch")}
    assert Ranker.for_engine("embedded").weight("pagerank") == hand["embedded"]["pagerank"]
    assert (Ranker.for_engine("elasticsearch").weight("sitehome")
            == hand["elasticsearch"]["sitehome"])
    assert Ranker.for_engine("embedded", overrides={"lang": 0.7}).weight("lang") == 0.7
    fitted = tmp_path / "weights.json"
    fitted.write_text('{"embedded": {"label": 0.9}}')
    backend = EmbeddedBackend(tmp_path / "index", weights_file=str(fitted))
    assert backend.ranker.weight("label") == 0.9
    # not in the file: the hand weight of index/weights.json
    assert backend.ranker.weight("lang") == hand["embedded"]["lang"]
    with pytest.raises(ValueError, match="no weights for the 'elasticsearch' engine"):
        Ranker.for_engine("elasticsearch", weights_file=fitted)


def test_custom_signals(tmp_path):
    class Fresh(StaticRank):
        name = "fresh"
        fields = ("fetched_at",)

        def value(self, candidate, context):
            return candidate.get("fetched_at")

    backend = EmbeddedBackend(tmp_path, signals=[TextRelevance(), Fresh()],
                              rank_weights={"fresh": 100.0})
    old, new = doc("http://a.test/old", "news"), doc("http://a.test/new", "news")
    old.fetched_at, new.fetched_at = 1.0, 2.0
    backend.index([old, new])
    backend.refresh()
    assert [h.id for h in backend.search("news").hits] == [new.id, old.id]
    backend.close()


def test_max_window_bounds_deep_pages(tmp_path):
    backend = EmbeddedBackend(tmp_path, max_window=5, rerank_depth=5)
    backend.index(doc(f"http://a.test/{i}", "many") for i in range(12))
    backend.refresh()
    assert len(backend.search("many", page=1, size=4).hits) == 4
    deep = backend.search("many", page=3, size=4)
    assert deep.hits == [] and deep.total == 12
    backend.close()


def test_text_relevance_is_relative_to_the_best_candidate():
    ranker = Ranker.for_engine("embedded", [TextRelevance()])
    ranked = ranker.rank([Candidate("a", 2.0), Candidate("b", 8.0)], RankContext.of(parse("x")))
    assert [(c.ref, c.score) for c in ranked] == [("b", 1.0), ("a", 0.25)]


def test_url_depth_and_site_names():
    assert url_depth("http://a.test/") == 0
    assert url_depth("http://a.test/index.html") == 0
    assert url_depth("http://a.test/en-US/index.html") == 1
    assert url_depth("http://a.test/library/os.html?x=1") == 3
    assert site_name("docs.python.org") == "python"
    assert site_name("debian-handbook.test:8080") == "debianhandbook"
    assert site_name("www.example.com") == "example"


def test_only_a_query_that_is_a_site_name_names_the_site():
    assert "django" in parse("django docs").named_sites
    assert "debianhandbook" in parse("Debian Handbook").named_sites
    assert "django" in parse("django -flask site:x.test").named_sites
    assert "django" not in parse("django queryset filter").named_sites
    context = RankContext.of(parse("django docs"))
    home = {"url_depth": 0, "site_name": keyword_key("django")}
    assert SiteHome().value(Candidate("a", 0.0, home), context) == 1.0
    assert SiteHome().value(Candidate("a", 0.0, {**home, "url_depth": 1}), context) == 0.0


def test_few_exact_matches_fall_back_to_any_word(tmp_path):
    backend = EmbeddedBackend(tmp_path, min_strict_hits=2)
    backend.index(
        [
            doc("http://a.test/blame", "git-blame", "show what revision last modified each line"),
            doc("http://a.test/log", "git-log", "show commit logs"),
        ]
    )
    backend.refresh()
    found = backend.search("who modified this line")
    assert [h.url for h in found.hits][0] == "http://a.test/blame"
    assert backend.search("blame -log").total == 1
    backend.close()


def test_pages_named_by_every_query_word_rank_first(tmp_path):
    weights = FieldWeights(title=0.1, anchors=0.1, url=0.1, body=1.0)
    writer = EmbeddedBackend(tmp_path)
    writer.index(
        [
            doc("http://a.test/1", "stash", "stash changes " * 20),
            doc("http://a.test/2", "stash changes", "a page about something else entirely"),
        ]
    )
    writer.close()
    plain = EmbeddedBackend(tmp_path, field_weights=weights, rank_weights={"label": 0})
    labelled = EmbeddedBackend(tmp_path, field_weights=weights, rank_weights={"label": 5.0})
    assert plain.search("stash changes").hits[0].url == "http://a.test/1"
    assert labelled.search("stash changes").hits[0].url == "http://a.test/2"


def test_index_with_another_schema_gets_a_clear_error(tmp_path):
    import tantivy

    builder = tantivy.SchemaBuilder()
    builder.add_text_field("other")
    tantivy.Index(builder.build(), path=str(tmp_path))
    with pytest.raises(RuntimeError, match="another schema"):
        EmbeddedBackend(tmp_path).ensure_index()


@pytest.mark.parametrize("before_embedded_by", [False, True])
def test_pages_without_the_models_vectors_are_found(tmp_path, monkeypatch, before_embedded_by):
    """``unembedded`` asks tantivy for the documents without the model's ``embedded_by``
    term; an index written before the field opens with the schema it has, takes writes
    and is walked instead."""
    import numpy as np
    import tantivy

    from index.engines.embedded import backend as embedded_backend
    from index.engines.embedded.schema import schema
    from index.semantic import MODEL_VERSIONS, TRANSFORMER, pack

    if before_embedded_by:
        tantivy.Index(schema(embedded_by=False), path=str(tmp_path))
    else:
        def walk(*args):
            raise AssertionError("the index has the field: no walk")

        monkeypatch.setattr(embedded_backend, "_walk_unembedded", walk)
    backend = EmbeddedBackend(tmp_path)
    pages = [doc(f"http://old.test/{i}", f"Page {i}", f"Words of page {i}.") for i in range(5)]
    backend.index(pages)
    backend.refresh()
    ids = [p.id for p in pages]
    assert sorted(backend.unembedded(10, TRANSFORMER)) == sorted(ids)
    read = sorted(backend.get_many(ids[:3]), key=lambda d: ids.index(d.id))
    unit = np.full((1, 384), 384**-0.5)
    read[0].vectors = pack(unit)  # the transformer's
    read[1].vectors = pack(unit, MODEL_VERSIONS["static"])
    read[2].vectors = pack(unit).partition(":")[2]  # stored before versions: the transformer's
    backend.write_vectors(read)
    assert sorted(backend.unembedded(10, TRANSFORMER)) == sorted([ids[1], *ids[3:]])
    assert sorted(backend.unembedded(10, MODEL_VERSIONS["static"])) == sorted(
        [ids[0], ids[2], *ids[3:]])
    assert len(backend.unembedded(2, TRANSFORMER)) == 2
    backend.close()


@pytest.mark.parametrize("before_embedded_by", [False, True])
def test_a_question_reads_vectors_only_where_a_page_holds_them(tmp_path, monkeypatch,
                                                               before_embedded_by):
    """A question is re-ranked by its results' sections only once some page holds the
    model's vectors (an ``embedded_by`` term of its version): before, the plan reads the
    results it shows and never reaches the re-ranking. An index written before the field
    cannot say, so its questions are read to the match's depth as before."""
    import numpy as np
    import tantivy

    from index.engines.embedded.schema import schema
    from index.semantic import MODEL_VERSIONS, SectionMatch, pack

    if before_embedded_by:
        tantivy.Index(schema(embedded_by=False), path=str(tmp_path))
    reranked = []
    monkeypatch.setattr(SectionMatch, "rerank",
                        lambda self, ranked, text, ahead=None:
                        reranked.append(text) or list(ranked))
    backend = EmbeddedBackend(tmp_path)
    pages = [doc(f"http://legend.test/{i}", f"Legend {i}", f"Move the plot legend {i}.")
             for i in range(3)]
    backend.index(pages)
    backend.close()
    backend = EmbeddedBackend(tmp_path)  # its first search a question
    question, plain = parse("how do I move the plot legend"), parse("legend move")
    assert question.question and backend.semantic.match() is not None
    found = backend.search(question)
    before = [h.id for h in found.hits]
    assert len(before) == 3
    if not before_embedded_by:  # as with semantic matching off
        off = EmbeddedBackend(tmp_path, semantic=False).search(question)
        assert (off.hits, off.total) == (found.hits, found.total)
    assert reranked == ([question.raw] if before_embedded_by else [])
    assert backend._section_match(plain) is backend.semantic.match()  # the plan drops it
    (read,) = backend.get_many([pages[0].id])
    read.vectors = pack(np.full((1, 384), 384**-0.5), MODEL_VERSIONS["static"])
    backend.write_vectors([read])
    assert (backend._section_match(question) is None) is not before_embedded_by
    (read,) = backend.get_many([pages[0].id])
    read.vectors = pack(np.full((1, 384), 384**-0.5))  # the transformer's
    backend.write_vectors([read])
    reranked.clear()
    assert sorted(h.id for h in backend.search(question).hits) == sorted(before)
    assert reranked == [question.raw]
    backend.close()


def test_phrase_snippet_marks_the_phrase_not_its_words_elsewhere(tmp_path):
    backend = EmbeddedBackend(tmp_path)
    backend.index([doc("http://c.test/fox", "Foxes", "The quick fox is quick.")])
    backend.refresh()
    (hit,) = backend.search('"quick fox"').hits
    assert hit.snippet == "The <mark>quick</mark> <mark>fox</mark> is quick."
    backend.close()


def test_settings_tune_the_backend(tmp_path):
    settings = {
        "EMBEDDED_COMMIT_DOCS": "50",
        "EMBEDDED_FIELD_WEIGHTS": {"title": 5.0},
        "EMBEDDED_RANK_WEIGHTS": {"pagerank": 0.5},
    }
    backend = get_backend(Config(data_dir=tmp_path), settings=settings, rerank_depth=7)
    assert backend.options.commit_every_docs == 50
    assert backend.options.field_weights == FieldWeights(title=5.0)
    assert backend.ranker.weights == {**load_weights("embedded"), "pagerank": 0.5}
    assert backend.options.rerank_depth == 7


def test_doc_freq_backs_the_suggester(tmp_path):
    backend = EmbeddedBackend(tmp_path)
    backend.index([doc("http://a.test/", "rare word"), doc("http://b.test/", "", "rare")])
    backend.refresh()
    assert backend.doc_freq("rare") == 1 and backend.doc_freq("absent") == 0  # per field, the most
    assert backend.suggest("rere word") == "rare word"
    backend.close()


def test_pages_in_the_query_language_rank_first(tmp_path):
    backend = EmbeddedBackend(tmp_path)
    backend.index(
        [
            Document(id=doc_id_for(f"http://h.test/{lang}/nfs"), url=f"http://h.test/{lang}/nfs",
                     host="h.test", title="NFS", body=text, lang=lang)
            for lang, text in [("fr", "serveur nfs nfs nfs"), ("en", "nfs file server")]
        ]
    )
    backend.refresh()
    assert backend.search("nfs").hits[0].url == "http://h.test/en/nfs"
    french = EmbeddedBackend(tmp_path, language="fr")
    assert french.search("nfs").hits[0].url == "http://h.test/fr/nfs"
    unweighted = EmbeddedBackend(tmp_path, rank_weights={"lang": 0})
    assert unweighted.search("nfs").hits[0].url == "http://h.test/fr/nfs"
    backend.close()


def test_a_compound_of_query_words_in_a_title_ranks_the_page_first(tmp_path):
    backend = EmbeddedBackend(tmp_path)
    backend.index(
        [
            doc("http://g.test/check-ignore", "git-check-ignore", "git ignore files " * 5),
            doc("http://g.test/gitignore", "gitignore", "files git should ignore"),
        ]
        + [doc(f"http://g.test/{n}", f"git-{n}", "git") for n in range(20)]
    )
    backend.refresh()
    assert backend.search("ignore files git").hits[0].url == "http://g.test/gitignore"
    off = EmbeddedBackend(tmp_path, compound_fields=FieldWeights(0, 0, 0, 0))
    assert off.search("ignore files git").hits[0].url == "http://g.test/check-ignore"
    backend.close()


def test_a_page_lacking_a_word_scores_it_joined_to_another(tmp_path):
    # "fulltext" where the query says "full text": the page lacking "full" leads the
    # page holding every word apart only by the compound in its text.
    backend = EmbeddedBackend(tmp_path)
    backend.index([
        doc("http://c.test/squatter", "SQUATTER",
            "squatter creates a text index of each mailbox for search; reindex changed "
            "mailboxes (fulltext) every three hours, and the settings of the indexer " * 2),
        doc("http://c.test/imapd.conf", "IMAPD.CONF",
            "a full mailbox, the search engine, the index and the text of a message; " * 3
            + "and more settings " * 5),
    ] + [doc(f"http://c.test/{n}", f"notes {n}", "full mailbox") for n in range(8)])
    backend.refresh()
    query = "mailbox full text search index"
    assert backend.search(query).hits[0].url == "http://c.test/squatter"
    backend.close()


def _blend_pages() -> list[Document]:
    """A page lacking "beginners" of "git tutorial beginners" and three holding every word
    (tests/contract/test_ranking.py: the first competes, on both engines)."""
    pages = [doc("http://g.test/tutorial", "git tutorial", "a tutorial introduction to git")]
    pages += [doc(f"http://p.test/{n}", "faq", f"python for beginners, tutorial {n}, git")
              for n in range(3)]
    pages += [doc(f"http://o.test/{n}", "other", "beginners") for n in range(20)]
    return pages


def test_no_page_lacking_a_word_competes_with_blending_off(tmp_path):
    backend = EmbeddedBackend(tmp_path, blend_words=0)
    backend.index(_blend_pages())
    backend.refresh()
    # it follows the three holding every word (the words reading, index/plan.py)
    found = [h.url for h in backend.search("git tutorial beginners").hits]
    assert "http://g.test/tutorial" not in found[:3]
    backend.close()


def test_pages_lacking_a_word_only_when_few_pages_have_every_word(tmp_path):
    backend = EmbeddedBackend(tmp_path, blend_below=3)
    backend.index(_blend_pages())
    backend.refresh()
    # three pages have every word: enough, the page lacking "beginners" is not looked for
    # (it follows them, with the words reading, index/plan.py)
    assert "http://g.test/tutorial" not in [
        h.url for h in backend.search("git tutorial beginners").hits
    ][:3]
    backend.close()


def test_hits_read_a_prepared_snippet_source_not_the_page(tmp_path):
    from index.hits import snippet_for
    from index.snippets import SCAN_CHARS

    backend = EmbeddedBackend(tmp_path)
    long_page = doc("http://c.test/long", "Long", "filler words here. " * 3_000
                    + "The gadget is at the end.")
    short_page = doc("http://c.test/short", "Short", "A gadget, and a gadget's manual.")
    assert len(long_page.body) > 2 * SCAN_CHARS
    backend.index([long_page, short_page])
    backend.refresh()
    parsed = parse("gadget")
    by_url = {hit.url: hit for hit in backend.search(parsed).hits}
    for page in (long_page, short_page):
        assert by_url[page.url].snippet == snippet_for(page.to_dict(), parsed, 220)
    # The whole page is still stored for get() and re-adding.
    assert backend.get(long_page.id) == long_page
    backend.close()


def test_a_clause_that_only_scores_leaves_out_only_fields_that_score_nothing(tmp_path):
    import tantivy

    backend = EmbeddedBackend(tmp_path)
    backend.index([
        doc("http://h.test/a", "widgets", "HowTo configure widgets"),  # "how" in idents only
        doc("http://h.test/b", "how widgets", "how to configure widgets"),
        doc("http://h.test/c", "widgets", "configure widgets"),
    ])
    backend.refresh()
    parsed = parse("how configure widgets")
    assert [w.term for w in parsed.optional_words] == ["how"]
    compiler = backend._search.compiler()
    searcher = backend._tantivy().searcher()
    required = compiler.compile(parsed.matching)

    def scores(scoring: bool) -> list:
        query = tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, required)]
            + [(tantivy.Occur.Should, compiler.word(w, compiler.field_weights, scoring))
               for w in parsed.optional_words])
        return sorted((a.doc, round(s, 6)) for s, a in searcher.search(query, limit=10).hits)

    assert len(scores(True)) == 3
    assert scores(True) == scores(False)
    backend.close()


def test_a_word_is_compiled_only_for_the_fields_some_page_holds_it_in(tmp_path):
    backend = EmbeddedBackend(tmp_path)
    backend.index([
        doc("http://h.test/a", "widgets", "configure widgets and gadgets"),
        doc("http://h.test/b", "gadgets", "gadgets only, and the HowTo of them"),
        doc("http://h.test/c", "sprockets", "widgets beside sprockets"),
    ])
    backend.refresh()
    searcher = backend._tantivy().searcher()
    everywhere = backend._search.compiler()
    held = backend._search.compiler(searcher)
    parsed = parse("widgets gadgets")

    def found(query) -> list:
        return sorted((a.doc, round(s, 6)) for s, a in searcher.search(query, limit=10).hits)

    for word in parsed.required_words:
        assert found(held.word(word, held.field_weights)) == found(
            everywhere.word(word, everywhere.field_weights))
    assert found(held.compile(parsed.matching)) == found(everywhere.compile(parsed.matching))
    # no title, anchor text or URL holds "configure": no page can be labelled by it
    assert held.label(parse("configure widgets")) is None
    assert everywhere.label(parse("configure widgets")) is not None
    assert held.label(parsed) is not None
    # "widgets" is in one title and two bodies, never in the URL field
    assert held.doc_freq("title", "widget") == 1
    assert held.doc_freq("url", "widget") == 0
    assert backend.search("configure widgets").total == 1
    backend.close()


def test_a_term_seen_held_is_not_read_again_and_a_term_seen_absent_is(tmp_path):
    """The compilers of later searches share the terms some page was seen to hold; a term
    no page held is read again, so a page indexed since is found."""
    backend = EmbeddedBackend(tmp_path)
    backend.index([doc("http://h.test/a", "widgets", "configure widgets")])
    backend.refresh()
    reads: list[tuple[str, str]] = []
    first = backend._search.compiler(backend._tantivy().searcher())
    assert first.doc_freq("body", "widget") == 1
    first.word(parse("widgets").root, first.field_weights)
    first.word(parse("gadgets").root, first.field_weights)
    assert ("body", "widget") in backend._search.held
    assert ("title", "gadget") not in backend._search.held

    class Counting:
        def __init__(self, searcher):
            self.searcher = searcher

        def doc_freq(self, name, term):
            reads.append((name, term))
            return self.searcher.doc_freq(name, term)

    later = backend._search.compiler(Counting(backend._tantivy().searcher()))
    later.word(parse("widgets").root, later.field_weights)
    assert ("body", "widget") not in reads and ("title", "widget") not in reads
    backend.index([doc("http://h.test/b", "gadgets", "gadgets beside widgets")])
    backend.refresh()
    later = backend._search.compiler(Counting(backend._tantivy().searcher()))
    later.word(parse("gadgets").root, later.field_weights)
    assert ("title", "gadget") in reads and ("title", "gadget") in backend._search.held
    assert [h.url for h in backend.search("gadgets").hits] == ["http://h.test/b"]
    backend.close()


def test_blocks_of_body_anchors_and_headings_keep_a_gap_between_them():
    from index.analysis import BLOCK_BREAK
    from index.engines.elasticsearch.mapping import blocks

    page = doc("http://d.test/a/b", "Class\nmembers", "get the value\nlookup a key",
               anchors="the value\nlookup", headings="value\nlookup()")
    text = document_fields(page).text
    for name in ("body", "anchors", "headings"):
        assert BLOCK_BREAK in text[name], name
    assert BLOCK_BREAK not in text["title"] + text["url"] + text["idents"]
    # Elasticsearch indexes the blocks as an array, its position_increment_gap between two
    assert blocks(text["body"]) == [block for block in blocks(text["body"]) if block.strip()]
    assert [b.split() for b in blocks(text["body"])] == [["get", "the", "valu"],
                                                        ["lookup", "a", "key"]]
    assert blocks(text["title"]) == text["title"] == "class member"


def _unit_rows(count: int, seed: int):
    import numpy as np

    rows = np.random.default_rng(seed).standard_normal((count, 384))
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.mark.parametrize("before_vectors_at", [False, True])
def test_section_vectors_are_read_alike_from_their_file_or_the_stored_fields(
        tmp_path, before_vectors_at):
    """A page's section vectors live in the file beside the index (found by its
    ``vectors_at`` column, never in its stored fields); an index written before the column
    keeps them in its stored fields. Both give the same documents back and the same
    questions re-ranked, pages with any count of windows; writing a page again with the
    same vectors adds no record."""
    import tantivy

    from index.engines.embedded.schema import schema, stored_hit
    from index.engines.embedded.vectors import VECTOR_FILE
    from index.semantic import pack

    if before_vectors_at:
        tantivy.Index(schema(vectors_at=False), path=str(tmp_path))
    backend = EmbeddedBackend(tmp_path)
    pages = [doc(f"http://legend.test/{i}", f"Legend {i}", f"Move the plot legend {i}. " * 5)
             for i in range(6)]
    backend.index(pages)
    backend.refresh()
    read = sorted(backend.get_many([p.id for p in pages[:4]]), key=lambda d: d.url)
    for i, page in enumerate(read):
        page.vectors = pack(_unit_rows(1 + 7 * i, i))  # 1, 8, 15 and 22 windows
    backend.write_vectors(read)
    assert (backend._vectors is None) is before_vectors_at
    vectors = {d.id: d.vectors for d in read}
    again = {d.id: d.vectors for d in backend.get_many([p.id for p in pages])}
    assert again == {p.id: vectors.get(p.id, "") for p in pages}
    assert sorted(backend.unembedded(10, "minilm-l6-v2-384")) == sorted(
        p.id for p in pages[4:])
    searcher = backend._tantivy().searcher()
    stored = [stored_hit(searcher, a)[0] for _, a in searcher.search(
        tantivy.Query.all_query(), 10).hits]
    assert sum("vectors" in s for s in stored) == (4 if before_vectors_at else 0)
    file = tmp_path / VECTOR_FILE
    size = file.stat().st_size if file.exists() else 0
    backend.update_rank({p.id: 0.5 for p in pages})  # every page written again
    assert {d.id: d.vectors for d in backend.get_many([p.id for p in pages])} == again
    assert (file.stat().st_size if file.exists() else 0) == size
    assert (size > 0) is not before_vectors_at
    question = parse("how do I move the plot legend")
    found = backend.search(question)
    backend.close()
    reopened = EmbeddedBackend(tmp_path)
    assert [(h.id, h.score, h.snippet) for h in reopened.search(question).hits] == [
        (h.id, h.score, h.snippet) for h in found.hits]
    reopened.close()


def test_both_formats_rank_a_question_alike(tmp_path, monkeypatch):
    """The same pages and vectors in an index of each format: every question's re-ranked
    order (its engine's scores and each page's best section) is the same."""
    import tantivy

    from index.engines.embedded.schema import schema
    from index.semantic import SectionMatch, pack

    similar = []
    best = SectionMatch.best
    monkeypatch.setattr(SectionMatch, "best", lambda self, stored, query: similar.append(
        best(self, stored, query)) or similar[-1])
    (tmp_path / "old").mkdir()
    tantivy.Index(schema(vectors_at=False), path=str(tmp_path / "old"))
    pages = [doc(f"http://plot.test/{i}", f"Plot legend {i}",
                 f"Legend {'key ' * i}of a plot. " * (3 + i)) for i in range(12)]
    for i, page in enumerate(pages):
        page.vectors = pack(_unit_rows(1 + i % 5, i)) if i % 4 else ""
    orders = []
    for name in ("old", "new"):
        backend = EmbeddedBackend(tmp_path / name)
        backend.index(pages)
        backend.refresh()
        similar.clear()
        orders.append(([(h.id, h.score) for h in backend.search(
            "how do I move the plot legend").hits], list(similar)))
        backend.close()
    assert orders[0] == orders[1]
    assert len(orders[0][1]) == 9


def test_a_reranked_question_reads_the_stored_fields_of_its_shown_hits_alone(
        tmp_path, monkeypatch):
    """In an index with the file of section vectors, a re-ranked question's results
    without vectors are known to have none (the stored fields hold no vectors there): the
    re-ranking reads no stored fields, only the hits shown are read, and the order is the
    one of the same pages in an index that keeps its vectors in its stored fields (read
    for every result)."""
    import tantivy

    from index.engines.embedded import search as search_module
    from index.engines.embedded.schema import schema
    from index.semantic import pack

    reads = []
    stored_hit = search_module.stored_hit
    monkeypatch.setattr(search_module, "stored_hit", lambda searcher, address: reads.append(
        address) or stored_hit(searcher, address))
    (tmp_path / "old").mkdir()
    tantivy.Index(schema(vectors_at=False), path=str(tmp_path / "old"))
    pages = [doc(f"http://plot.test/{i}", f"Plot legend {i}",
                 f"Legend {'key ' * i}of a plot. " * (3 + i)) for i in range(12)]
    for i, page in enumerate(pages):
        page.vectors = pack(_unit_rows(1 + i % 5, i)) if i % 2 else ""  # 6 without
    orders, shown_reads = [], []
    for name in ("old", "new"):
        backend = EmbeddedBackend(tmp_path / name)
        backend.index(pages)
        backend.refresh()
        reads.clear()
        found = backend.search("how do I move the plot legend", size=3)
        orders.append([(h.id, h.score, h.snippet) for h in found.hits])
        shown_reads.append(len(reads))
        backend.close()
    assert orders[0] == orders[1] and len(orders[0]) == 3
    assert shown_reads == [12, 3]


@pytest.mark.parametrize("one_search,proximity,searches", [
    (False, True, 4), (True, True, 3), (False, False, 2), (True, False, 1)])
def test_a_question_reranked_by_its_sections_may_ask_one_search_and_no_proximity_run(
        tmp_path, monkeypatch, one_search, proximity, searches):
    """A question the plan re-ranks by its sections is searched, with
    ``EMBEDDED_QUESTION_ONE_SEARCH``, as the pages holding any of its words in one search,
    each ranked as matching it as asked (a page lacking a word keeps the whole ``allwords``
    bonus), and, with ``EMBEDDED_QUESTION_PROXIMITY`` off, without a proximity run (``near``
    0 where its words are next to each other). By default it is searched as with semantic
    matching off: a strict and a coordinated search, two runs."""
    from index.semantic import SectionMatch, pack

    monkeypatch.setattr(SectionMatch, "rerank", lambda self, ranked, text, ahead=None:
                        list(ranked))
    pages = [doc("http://plot.test/a", "Plots", "Move the plot legend out of the axes."),
             doc("http://plot.test/b", "Legends", "A legend names each line."),
             doc("http://plot.test/c", "Axes", "The axes hold the lines.")]
    for i, page in enumerate(pages):
        page.vectors = pack(_unit_rows(1, i))
    backend = EmbeddedBackend(tmp_path, question_one_search=one_search,
                              question_proximity=proximity)
    backend.index(pages)
    backend.refresh()
    asked = []

    class Counted:
        def __init__(self, searcher):
            self.searcher = searcher

        def __getattr__(self, name):
            return getattr(self.searcher, name)

        def search(self, query, **kwargs):
            asked.append(query)
            return self.searcher.search(query, **kwargs)

    index = backend._search.index
    counted = type("Index", (), {"schema": index().schema,
                                 "searcher": lambda self: Counted(index().searcher())})()
    monkeypatch.setattr(backend._search, "index", lambda: counted)
    question = "how do I move the plot legend"
    assert parse(question).question
    found = backend.search(question, explain=True)
    signals = {h.url[-1]: h.explain for h in found.hits}
    assert sorted(signals) == ["a", "b"] and found.total == 2
    assert len(asked) == searches
    assert signals["b"]["allwords"]["value"] == (1.0 if one_search else 0.5)
    assert signals["a"]["near"]["value"] == (1.0 if proximity else 0.0)
    off = EmbeddedBackend(tmp_path, semantic=False, question_one_search=one_search,
                          question_proximity=proximity)
    off._search.index = backend._search.index
    asked.clear()  # not re-ranked: as by default
    found = off.search(question, explain=True)
    assert len(asked) == 4 and found.total == 2
    assert found.hits[0].explain["near"]["value"] == 1.0
    backend.close()


def test_the_vector_file_survives_a_record_cut_short(tmp_path):
    """A record cut short (a crash before the commit of its page) is dropped when the file
    is next written; a reader that mapped the file sees the records written after."""
    from index.engines.embedded.vectors import VECTOR_FILE, VectorFile
    from index.semantic import pack

    writer = VectorFile(tmp_path)
    first = writer.append("a", pack(_unit_rows(2, 1)))
    writer.sync()
    reader = VectorFile(tmp_path)
    assert reader.packed(first) == pack(_unit_rows(2, 1))
    writer.close()
    with open(tmp_path / VECTOR_FILE, "ab") as f:
        f.write(b"\xff\x00\x00\x00\x01")
    writer = VectorFile(tmp_path)
    assert writer.append("a", pack(_unit_rows(2, 1))) == first
    second = writer.append("b", pack(_unit_rows(3, 2)))
    writer.sync()
    assert second == (tmp_path / VECTOR_FILE).stat().st_size - len(
        "minilm-l6-v2-384:b") - 3 * 384 - 14 + 1
    assert reader.read(second)[0] == "b"
    assert reader.packed(second) == pack(_unit_rows(3, 2))
    assert reader.read(0) is None and reader.read(None) is None
    writer.close()


def test_vectors_no_page_points_at_are_compacted(tmp_path, monkeypatch):
    """A page's earlier vectors and a deleted page's are records no page points at: the
    compaction leaves them while they are under half the file, and once asked (or once the
    vectors replaced are half of it, as the embedding batch writes) writes every page's
    vectors to a new generation's file and deletes the old one; the pages read the same
    vectors and rank a question the same, in this process and in a reader's next reload."""
    import tantivy

    from index.engines.embedded import vectors as embedded
    from index.engines.embedded.vectors import (
        VECTOR_FILE,
        VECTORS_AT,
        VectorFile,
        vector_file_name,
    )
    from index.semantic import pack

    backend = EmbeddedBackend(tmp_path)
    pages = [doc(f"http://legend.test/{i}", f"Legend {i}", f"Move the plot legend {i}. " * 5)
             for i in range(8)]
    for i, page in enumerate(pages):
        page.vectors = pack(_unit_rows(4, i))
    backend.index(pages)
    backend.refresh()
    assert backend.compact_vectors() == {"compacted": False, "vector_bytes": (
        tmp_path / VECTOR_FILE).stat().st_size, "live_bytes": (
        tmp_path / VECTOR_FILE).stat().st_size}
    record = (tmp_path / VECTOR_FILE).stat().st_size // 8  # the ids are of one length

    monkeypatch.setattr(embedded, "COMPACT_MIN_BYTES", 1)
    backend.delete([pages[7].id])
    replaced = backend.get_many([p.id for p in pages[:4]])
    for page in replaced:
        page.vectors = pack(_unit_rows(4, 100 + int(page.url.rsplit("/", 1)[1])))
    backend.write_vectors(replaced)  # 4 of 12 records replaced: not half
    left = backend.compact_vectors()  # 5 of 12 dead, the deleted page's counted
    assert not left["compacted"]
    assert (left["vector_bytes"], left["live_bytes"]) == (12 * record, 7 * record)

    expected = {d.id: d.vectors for d in backend.get_many([p.id for p in pages])}
    assert len(expected) == 7
    reader = EmbeddedBackend(tmp_path)
    question = parse("how do I move the plot legend")
    ranked = [(h.id, h.score) for h in reader.search(question).hits]
    stale = reader._tantivy().searcher()  # a searcher from before the compaction
    done = backend.compact_vectors(force=True)
    assert done == {"compacted": True, "vector_bytes": 12 * record,
                    "live_bytes": 7 * record, "pages": 7, "vector_bytes_after": 7 * record}
    assert sorted(p.name for p in tmp_path.glob("section-vectors*")) == [vector_file_name(1)]
    assert {d.id: d.vectors for d in backend.get_many([p.id for p in pages])} == expected
    assert [(h.id, h.score) for h in backend.search(question).hits] == ranked
    reader.refresh()
    assert [(h.id, h.score) for h in reader.search(question).hits] == ranked
    # the old file is gone: a value of its generation reads nothing, never another record
    old = stale.fast_field_values(VECTORS_AT, [a for _, a in stale.search(
        tantivy.Query.all_query(), 10).hits])
    assert all(VectorFile(tmp_path).read(at) is None for at in old)

    again = backend.get_many(list(expected))
    for i, page in enumerate(again):
        page.vectors = pack(_unit_rows(4, 200 + i))
    backend.write_vectors(again)  # every page's vectors replaced: half the file
    assert sorted(p.name for p in tmp_path.glob("section-vectors*")) == [vector_file_name(2)]
    assert (tmp_path / vector_file_name(2)).stat().st_size == 7 * record
    backend.close()
    reopened = EmbeddedBackend(tmp_path)
    reopened.update_rank({page_id: 0.5 for page_id in expected})  # the same vectors: no record
    assert (tmp_path / vector_file_name(2)).stat().st_size == 7 * record
    assert {d.id: d.vectors for d in reopened.get_many(list(expected))} == {
        d.id: d.vectors for d in again}
    reopened.close()
    reader.close()


def test_a_check_a_later_reading_asks_again_is_searched_once(tmp_path, monkeypatch):
    """The words reading that follows a reading with few results (index/plan.py) asks the
    same strict, blend and proximity searches again when its words are the query's: they
    are searched once a query (``SearchMemo``), the first reading asking a page deeper,
    with the same results as each reading searching its own."""
    import index.engines.embedded.search as search

    backend = EmbeddedBackend(tmp_path)
    backend.index(_blend_pages())
    backend.refresh()
    asked: list[str] = []

    class Counting:
        def __init__(self, searcher):
            self.searcher = searcher

        def __getattr__(self, name):
            return getattr(self.searcher, name)

        def search(self, query, **kwargs):
            asked.append(repr(query))
            return self.searcher.search(query, **kwargs)

    index = backend._search.index
    backend._search.index = lambda: type("Index", (), {
        "schema": index().schema, "searcher": lambda self: Counting(index().searcher())})()
    shared = backend.search("git tutorial beginners")
    assert shared.extra.get("reading") == "words"
    runs = [query for query in asked if "PhraseQuery" in query]
    assert runs and len(runs) == len(set(runs)) and len(asked) == len(set(asked))

    def alone(memo, searcher, query, limit, count=False, ahead=0):
        found = searcher.search(query, limit=limit, count=count)
        return search._Found(found.hits, found.count if count else None)

    monkeypatch.setattr(search.SearchMemo, "search", alone)
    asked.clear()
    apart = backend.search("git tutorial beginners")
    assert len([query for query in asked if "PhraseQuery" in query]) > len(runs)
    assert len(asked) > len(set(asked))
    assert ([(h.url, h.score) for h in apart.hits], apart.total) == (
        [(h.url, h.score) for h in shared.hits], shared.total)
    backend.close()


def test_a_result_an_earlier_reading_showed_is_not_read_again(tmp_path, monkeypatch):
    """The words reading's results the first reading showed (index/plan.py: they come
    first) are told apart by the ids the first reading read (``SearchMemo.ids``): each
    shown hit's stored fields are read once."""
    import index.engines.embedded.search as search

    backend = EmbeddedBackend(tmp_path)
    backend.index(_blend_pages())
    backend.refresh()
    reads: list = []

    def counted(searcher, address):
        reads.append(search.address_key(address))
        return stored_hit(searcher, address)

    stored_hit = search.stored_hit
    monkeypatch.setattr(search, "stored_hit", counted)
    found = backend.search("git tutorial beginners")
    assert found.extra.get("reading") == "words" and len(found.hits) > 4
    assert len(reads) == len(set(reads)) == len(found.hits)
    backend.close()
