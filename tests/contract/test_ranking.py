"""Ranking signals every backend applies alike: language, compounds, navigational queries,
site mentions, pages lacking a minor word and the any-word fallback."""

from __future__ import annotations

import pytest

from index.query import QUESTION_COVERAGE
from index.signals import SiteHome, TextRelevance
from tests.contract.conftest import BACKENDS, doc, holding, others, urls


def test_pages_in_the_query_language_rank_first(backend):
    holding(
        backend,
        [
            doc("http://h.test/fr/nfs", "NFS", "serveur nfs nfs nfs", lang="fr"),
            doc("http://h.test/en/nfs", "NFS", "nfs file server", lang="en"),
        ],
    )
    assert urls(backend.search("nfs"))[0] == "http://h.test/en/nfs"


def test_the_query_language_outweighs_a_better_text_score(backend):
    # No language tree in the paths (nothing for Original to demote): only the page's
    # language lifts the English page over the French one the words favour.
    holding(
        backend,
        [
            doc("http://h.test/serveur-nfs", "NFS", "serveur nfs nfs nfs", lang="fr"),
            doc("http://h.test/nfs-server", "NFS", "nfs file server", lang="en"),
            doc("http://h.test/nfs-notes", "NFS", "notes nfs nfs", lang=""),
        ],
    )
    assert urls(backend.search("nfs")) == [
        "http://h.test/nfs-server", "http://h.test/nfs-notes", "http://h.test/serveur-nfs"]


def test_a_compound_of_query_words_in_a_title_ranks_the_page_first(backend):
    holding(
        backend,
        [
            doc("http://g.test/check-ignore", "git-check-ignore", "git ignore files " * 5),
            doc("http://g.test/gitignore", "gitignore", "files git should ignore"),
        ]
        + [doc(f"http://g.test/{n}", f"git-{n}", "git") for n in range(20)],
    )
    assert urls(backend.search("ignore files git"))[0] == "http://g.test/gitignore"


def test_a_compound_of_query_words_in_the_text_counts_for_the_page(backend):
    # The indexer's man page writes "fulltext" where the query says "full text" (so it
    # lacks "full"); the reference page holds every word apart, and by text alone leads.
    holding(
        backend,
        [
            doc("http://c.test/man/squatter", "SQUATTER",
                "squatter creates a text index of each mailbox for search; reindex "
                "changed mailboxes (fulltext) every three hours, and the settings of "
                "the indexer " * 2),
            doc("http://c.test/man/imapd.conf", "IMAPD.CONF",
                "a full mailbox, the search engine, the index and the text of a message; "
                * 3 + "and more settings " * 5),
        ]
        + others("c.test", "notes", "full mailbox", 8),
    )
    assert urls(backend.search("mailbox full text search index"))[:2] == [
        "http://c.test/man/squatter", "http://c.test/man/imapd.conf"]


def test_a_navigational_query_finds_the_home_page(backend):
    pages = [doc("http://django.test/", "Welcome", "the web framework")]
    pages += [
        doc(f"http://django.test/topics/{n}.html", f"Django topic {n}", "django docs " * 5)
        for n in range(20)
    ]
    holding(backend, pages)
    assert urls(backend.search("django docs"))[0] == "http://django.test/"
    assert urls(backend.search("django topic"))[0] != "http://django.test/"


def test_a_product_name_before_docs_finds_the_home_page_of_its_site(backend):
    # "Knot DNS" is the product, knot.test its site: the name's first word names it
    pages = [doc("http://knot.test/", "Welcome", "the authoritative server")]
    pages += [doc(f"http://knot.test/man/{n}.html", f"knot dns tool {n}",
                  "knot dns docs " * 5) for n in range(20)]
    holding(backend, pages)
    assert urls(backend.search("knot dns docs"))[0] == "http://knot.test/"
    # a topic ending in "page" names no site
    assert urls(backend.search("knot dns page"))[0] != "http://knot.test/"


def test_a_name_written_out_before_docs_finds_the_home_page_of_its_initials_site(backend):
    # Request Tracker's site is rt.test: its pages are titled by their modules, and the
    # words of its name are those of many pages ("request", "tracker")
    pages = [doc("http://rt.test/", "", "install and upgrade documentation")]
    pages += others("rt.test", "RT::Tracker", "request tracker documentation " * 5, 20)
    holding(backend, pages)
    assert urls(backend.search("request tracker documentation"))[0] == "http://rt.test/"
    # the words alone are a topic
    assert urls(backend.search("request tracker"))[0] != "http://rt.test/"


def test_a_site_named_and_described_by_its_home_page_finds_that_home_page(backend):
    # kitty's home page is titled "kitty" and says what kitty is in its first words; the
    # pages titled "terminal" are about one of its features
    home = doc("http://kitty.test/", "kitty",
               "kitty\nThe fast, feature-rich, GPU based terminal emulator\n"
               + "Offloads rendering to the GPU for lower system load\n" * 4
               + "graphics protocol keyboard protocol layouts " * 20
               + "remote control of the terminal " * 5)
    pages = [home]
    pages += [doc(f"http://kitty.test/kittens/{n}.html", f"kitty terminal kitten {n}",
                  "query the terminal kitty " * 5) for n in range(20)]
    pages += others("kitty.test", "graphics protocol", "the kitty graphics protocol " * 5, 3)
    pages += [doc(f"http://kitty.test/rc/{n}.html", f"remote control {n}",
                  "control kitty remote " * 3) for n in range(3)]
    holding(backend, pages)
    assert urls(backend.search("kitty terminal"))[0] == home.url
    assert urls(backend.search("terminal kitty"))[0] == home.url
    # words the home page holds past its first words are a topic of the site's
    assert urls(backend.search("kitty remote control"))[0] != home.url
    assert urls(backend.search("kitty graphics protocol"))[0] != home.url


def test_a_site_described_by_the_title_of_one_of_its_pages_finds_that_page(backend):
    # Gri's home page says in its first words that Gri draws contour plots; the page
    # titled "Gri: contour plots" is the one "gri contour plot" names
    home = doc("http://gri.test/", "The Gri graphing language",
               "Gri is a language for scientific graphics: x-y plots, contour plots and "
               "image plots, with fine control over every detail\n" + "examples " * 40)
    topic = doc("http://gri.test/ContourPlots.html", "Gri: contour plots",
                "how to draw a contour plot of gridded data with gri " * 3)
    pages = [home, topic]
    pages += others("gri.test", "Gri: commands", "gri plot command " * 3, 10)
    # every Slurm page is titled "Slurm Workload Manager - ...", as its home page is
    slurm = doc("http://slurm.test/", "Slurm Workload Manager - Overview",
                "Slurm is an open source cluster management and job scheduling system")
    pages += [slurm, doc("http://slurm.test/accounting.html", "Slurm Workload Manager -",
                         "slurm workload manager accounting " * 5)]
    pages += others("slurm.test", "Slurm Workload Manager - page",
                    "slurm workload manager " * 3, 10)
    holding(backend, pages)
    assert urls(backend.search("gri contour plot"))[0] == topic.url
    assert urls(backend.search("gri contour plot", page=2, size=1))[0] == home.url
    # the words of the home page's own title still ask for it
    assert urls(backend.search("gri graphing language"))[0] == home.url
    assert urls(backend.search("slurm workload manager"))[0] == slurm.url


def test_a_library_name_before_api_reference_finds_the_home_page_of_its_site(backend):
    # a C library's API reference is its manual's home page; the pages naming every word
    # of "libsoup api reference" are class pages and guides
    pages = [doc("http://libsoup.test/", "libsoup-3.0", "an HTTP client and server library")]
    pages += others("libsoup.test", "libsoup class", "libsoup api reference " * 5, 20)
    holding(backend, pages)
    assert urls(backend.search("libsoup api reference"))[0] == "http://libsoup.test/"
    # a name written with a hyphen too
    pages = [doc("http://json-glib.test/", "Json", "a JSON parser and generator")]
    pages += others("json-glib.test", "json-glib class", "json-glib api reference " * 5, 20)
    holding(backend, pages)
    assert urls(backend.search("json-glib api reference"))[0] == "http://json-glib.test/"
    # a reference named among other words is a topic: "pattern reference count"
    assert urls(backend.search("libsoup class reference count"))[0] != "http://libsoup.test/"


def test_a_user_guide_or_javadoc_named_after_a_project_finds_its_home_page(backend):
    # CUnit's user guide is its site's home page; the pages naming every word of "cunit
    # user guide" are its chapters. JOpt Simple's javadoc is its site's overview.
    pages = [doc("http://cunit.test/", "CUnit", "a unit testing framework for C")]
    pages += others("cunit.test", "CUnit chapter", "cunit user guide " * 5, 20)
    pages += [doc("http://jopt-simple.test/", "Overview", "a command line parser")]
    pages += others("jopt-simple.test", "jopt simple class", "jopt simple javadoc " * 5, 20)
    holding(backend, pages)
    assert urls(backend.search("cunit user guide"))[0] == "http://cunit.test/"
    assert urls(backend.search("cunit user's guide"))[0] == "http://cunit.test/"
    assert urls(backend.search("jopt simple javadoc"))[0] == "http://jopt-simple.test/"
    # a guide for another reader is a page of its own: "cunit porting guide"
    assert urls(backend.search("cunit chapter guide"))[0] != "http://cunit.test/"


def test_a_name_written_with_a_version_before_docs_finds_the_home_page_of_its_site(backend):
    # mod_perl's site is modperl.test; "mod_perl 2.0 documentation" asks for its home page,
    # not the pages naming "mod_perl", "2.0" and "documentation" most often
    pages = [doc("http://modperl.test/", "Welcome to mod_perl", "embed a perl interpreter")]
    pages += others("modperl.test", "mod_perl 2.0 guide",
                    "mod_perl 2.0 documentation " * 5, 20)
    holding(backend, pages)
    assert urls(backend.search("mod_perl 2.0 documentation"))[0] == "http://modperl.test/"
    # the version beside a topic names no site
    assert urls(backend.search("mod_perl 2.0 guide"))[0] != "http://modperl.test/"


def test_a_library_named_with_lib_finds_the_home_page_of_its_project_site(backend):
    # libflac is the FLAC project's library, flac.test its site; alsa-lib ALSA's: the
    # pages naming every word are the API's headers and groups
    pages = [doc("http://flac.test/", "FLAC", "the free lossless audio codec")]
    pages += others("flac.test", "FLAC export.h", "libflac api documentation " * 5, 20)
    pages += [doc("http://alsa.test/", "ALSA project", "the sound library")]
    pages += others("alsa.test", "ALSA sequencer", "alsa-lib api documentation " * 5, 20)
    holding(backend, pages)
    assert urls(backend.search("libflac api documentation"))[0] == "http://flac.test/"
    assert urls(backend.search("alsa-lib api documentation"))[0] == "http://alsa.test/"
    # a topic naming the library is no navigational query
    assert urls(backend.search("libflac export symbols"))[0] != "http://flac.test/"


def test_a_project_written_with_its_language_finds_the_home_page_of_its_site(backend):
    # coverage.py is the project, coverage.test its site; pages writing "coverage.py"
    # more often rank below its home page, which names it once
    pages = [doc("http://coverage.test/", "Coverage", "measures code coverage of programs")]
    pages += others("coverage.test", "coverage.py topic", "run coverage.py " * 5, 20)
    holding(backend, pages)
    assert urls(backend.search("coverage.py"))[0] == "http://coverage.test/"
    # a file of the project is no project: conf.py names no site
    holding(backend, [doc("http://conf.test/", "Conf", "a meeting"),
                      doc("http://sphinx.test/conf.html", "The conf.py file", "conf.py")])
    assert urls(backend.search("conf.py settings"))[:1] != ["http://conf.test/"]


def test_a_directory_listing_is_no_home_page(backend):
    # A site served as its server's listing of the manuals it holds ("Index of /"): the
    # listing names no manual, so a query naming the site and its manual asks for the
    # manual's entry page, not the listing (nut.test, aspell.test, haproxy.test).
    listing = doc("http://nut.test/", "Index of /", "FAQ/ developer-guide/ user-manual/")
    manual = doc("http://nut.test/user-manual/index.html", "NUT User Manual",
                 "the nut user manual")
    pages = [listing, manual, *others("nut.test", "nut user manual chapter",
                                      "the nut user manual " * 3, 20)]
    holding(backend, pages)
    assert urls(backend.search("nut user manual"))[0] == manual.url
    # a home page of its own is still the site's home
    home = doc("http://nut.test/", "Network UPS Tools", "the nut project")
    holding(backend, [home, *pages[1:]])
    assert urls(backend.search("nut user manual"))[0] == home.url


def test_a_manual_named_by_its_site_is_the_page_heading_both(backend):
    # "fftw manual" on a site served as a listing, so no home page: the manual's entry
    # page heads "FFTW User Manual"; the FAQ names FFTW more often and in its headings,
    # but heads no manual
    listing = doc("http://fftw.test/", "Index of /", "fftw-faq.html/ html/")
    manual = doc("http://fftw.test/html/", "Top (FFTW 3.3.10)",
                 "This manual documents version 3.3.10 of the library, a C subroutine library"
                 " for computing the discrete Fourier transform in one or more dimensions, of"
                 " arbitrary input size, and of both real and complex data.",
                 headings="FFTW 3.3.10\nFFTW User Manual\nTable of Contents")
    faq = doc("http://fftw.test/fftw-faq.html/section3.html", "FFTW FAQ - Section 3",
              "FFTW 3 is faster than FFTW 2, and the FFTW manual says why: FFTW 3 plans."
              " FFTW 3 saves FFTW plans.",
              headings="FFTW FAQ - Section 3 Using FFTW")
    holding(backend, [listing, manual, faq])
    found = backend.search("fftw manual", explain=True)
    assert urls(found)[0] == manual.url
    assert found.hits[0].explain["defines"]["value"] == 1.0


def test_a_named_home_page_is_found_past_the_rescored_window(backend):
    # More pages match the word far better than the home page than either engine
    # re-scores (EMBEDDED_RERANK_DEPTH, ES_RERANK_DEPTH): the home page is still a
    # candidate, as ``statsmodels`` finds statsmodels' home among 6,000 pages naming it.
    pages = [doc("http://widget.test/", "Welcome", "the gadget framework")]
    pages += [doc(f"http://widget.test/api/{n}.html", f"widget {n}", "widget widget " * 5)
              for n in range(130)]
    pages += [doc(f"http://other.test/{n}.html", f"other {n}", "gadget") for n in range(300)]
    holding(backend, pages)
    assert urls(backend.search("widget"))[0] == "http://widget.test/"


def test_a_page_shows_in_the_query_language_among_its_translations(backend):
    # The German translation scores more by text (short, the name repeated); the English
    # one stands for the pair, at the pair's place.
    holding(backend, [
        doc("http://t.test/de/mod/core.html", "Kern", "AllowOverride AllowOverride Regel",
            lang="de"),
        doc("http://t.test/en/mod/core.html", "Core features",
            "AllowOverride says which directives an htaccess file may set, and the "
            "server reads every such file on the way to the one it serves, so keep "
            "them few and small when the site is busy", lang="en"),
        doc("http://t.test/en/howto.html", "How to", "AllowOverride All", lang="en"),
    ])
    found = backend.search("AllowOverride")
    assert "http://t.test/de/mod/core.html" not in urls(found)
    assert "http://t.test/en/mod/core.html" in urls(found)


def test_pages_of_a_site_the_query_mentions_rank_first(backend):
    holding(
        backend,
        [
            doc("http://django.test/sessions", "Sessions", "session requests"),
            doc("http://requests.test/sessions", "Sessions", "session requests"),
        ],
    )
    assert urls(backend.search("requests session"))[0] == "http://requests.test/sessions"
    assert urls(backend.search("django session"))[0] == "http://django.test/sessions"


def test_a_page_lacking_a_minor_word_of_a_long_query_competes(backend):
    pages = [doc("http://g.test/tutorial", "git tutorial", "a tutorial introduction to git")]
    pages += [doc(f"http://p.test/{n}", "faq", f"python for beginners, tutorial {n}, git")
              for n in range(3)]
    pages += [doc(f"http://o.test/{n}", "other", "beginners") for n in range(20)]
    holding(backend, pages)
    found = backend.search("git tutorial beginners")
    assert urls(found)[0] == "http://g.test/tutorial"
    # the four compete; the pages holding only "beginners" follow them (fewer than a page
    # of results: the words reading, index/plan.py)
    assert set(urls(found)[:4]) == {"http://g.test/tutorial"} | {
        f"http://p.test/{n}" for n in range(3)}
    assert set(urls(found)[4:]) <= {f"http://o.test/{n}" for n in range(20)}
    # the rarest word is never left out: "git tutorial" pages lack "faq", and follow
    found = urls(backend.search("faq git tutorial"))
    assert set(found[:3]) == {f"http://p.test/{n}" for n in range(3)}
    assert found[3] == "http://g.test/tutorial"


def test_without_a_page_holding_every_word_one_lacking_a_minor_word_ranks_first(backend):
    # no page holds all four words: the page lacking only "score" (a minor word, on many
    # pages) ranks before the any-word pages, however often these repeat the words they
    # hold (index/plan.py, SearchPlan.first); ranked in one any-word pass, the page
    # repeating "maximise" and "score" came first on Elasticsearch
    holding(
        backend,
        [doc("http://t.test/answer", "Search strategies",
             "a targeted search tries to maximise a value by moving towards it")]
        + [doc(f"http://t.test/score-{n}", f"Scores {n}", "the score table lists each score")
           for n in range(12)]
        + [doc("http://t.test/other", "Maximise",
               "maximise maximise the score score score score maximise score")]
        + [doc(f"http://t.test/search-{n}", f"Search {n}", "search the pages") for n in range(3)],
    )
    found = backend.search("targeted search maximise score")
    assert urls(found)[:2] == ["http://t.test/answer", "http://t.test/other"]
    assert found.total == 17  # every page holding a word, as plain any-word BM25 finds


def test_without_a_page_holding_every_word_any_word_matches(backend):
    holding(
        backend,
        [
            doc("http://a.test/blame", "git-blame", "show what revision last modified each line"),
            doc("http://a.test/log", "git-log", "show commit logs"),
        ],
    )
    assert urls(backend.search("who modified this line"))[0] == "http://a.test/blame"
    assert backend.search("blame -log").total == 1
    assert backend.search("blame log").total == 2  # neither page has both words


def test_snippets_mark_a_phrase_only_where_it_occurs(backend):
    holding(backend, [doc("http://f.test/", "Foxes", "The quick fox is quick. A fox runs.")])
    (hit,) = backend.search('"quick fox"').hits
    assert "<mark>quick</mark> <mark>fox</mark> is quick." in hit.snippet
    assert "A fox runs" in hit.snippet  # the words alone, outside the phrase, stay plain
    (hit,) = backend.search('"quick fox" runs').hits
    assert "<mark>runs</mark>" in hit.snippet


def test_an_unknown_word_gets_a_suggestion(backend):
    holding(backend, [doc(f"http://z.test/{n}", "Zebra", "the striped zebra of africa")
                      for n in range(3)])
    assert backend.search("zebar").suggestion == "zebra"
    assert backend.search("striped zebar").suggestion == "striped zebra"
    assert backend.search("zebra").suggestion is None
    assert backend.suggest("zebar africa") == "zebra africa"
    assert backend.suggest('"zebar crossing" -lion') is None  # phrases are left as typed


def test_near_copies_are_counted_on_every_page(backend):
    holding(
        backend,
        [doc(f"http://m{n}.test/page", "Mirror", "mirror text", cluster_id="c") for n in range(4)]
        + [doc(f"http://o{n}.test/", "Other", "mirror other") for n in range(3)],
    )
    results = backend.search("mirror", size=2)
    assert results.hits[0].similar == 3 and results.hits[0].cluster_id == "c"
    rest = backend.search("mirror", page=2, size=2).hits
    assert [h.similar for h in rest] == [0, 0]


def test_explain_gives_each_signal_its_value_and_contribution(backend):
    holding(
        backend,
        [doc("http://django.test/", "Welcome", "the web framework", lang="en"),
         doc("http://django.test/topics/docs", "Django docs", "django docs", lang="fr")],
    )
    plain = backend.search("django docs")
    assert all(h.explain is None for h in plain.hits)
    hits = {h.url: h.explain for h in backend.search("django docs", explain=True).hits}
    home, topic = hits["http://django.test/"], hits["http://django.test/topics/docs"]
    assert set(home) >= {"bm25", "pagerank", "sitehome", "label", "site", "lang", "allwords"}
    assert home["sitehome"]["value"] == 1.0 and topic["sitehome"]["value"] == 0.0
    assert home["lang"]["value"] == 1.0 and topic["lang"]["value"] == 0.0
    # beside a site's name "docs" is optional: "django" is in both pages' labels (the URL)
    assert topic["label"]["value"] == home["label"]["value"] == 1.0
    assert topic["site"]["value"] == home["site"]["value"] == 1.0
    assert topic["bm25"]["value"] == 1.0  # the best text match
    for part in home.values():
        assert part["contribution"] == pytest.approx(part["weight"] * part["value"], abs=1e-6)


def test_question_words_score_in_the_text_not_in_what_a_page_is_called(backend):
    # "what" frames the question: a page holding it in its title is not about it, one
    # holding it in its text may answer it (both hold "tuple" alike)
    holding(
        backend,
        [doc("http://q.test/whatsnew", "What's new in what", "tuple notes"),
         doc("http://q.test/sequences", "Notes", "what tuple notes")],
    )
    urls = [h.url for h in backend.search("what tuple").hits]
    assert urls == ["http://q.test/sequences", "http://q.test/whatsnew"]


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_custom_signals_work_on_every_engine(request, backend_name):
    class Shortest(SiteHome):
        """Shallow URLs first: 1 / (1 + depth)."""

        name = "shallow"
        fields = ("url_depth",)

        def value(self, candidate, context):
            return 1.0 / (1.0 + candidate.get("url_depth"))

        def es_functions(self, context, weight, parts):
            return [{"filter": {"term": {"url_depth": 0}}, "weight": weight}]

    backend = request.getfixturevalue(f"make_{backend_name}_backend")(
        signals=[TextRelevance(), Shortest()], rank_weights={"shallow": 5.0})
    backend.ensure_index()
    holding(backend, [doc("http://s.test/a/b/c", "shallow deep", "word " * 9),
                      doc("http://s.test/", "home", "word")])
    assert [h.url for h in backend.search("word").hits][0] == "http://s.test/"
    backend.close()


@pytest.fixture(params=BACKENDS)
def with_and_without_spam(request):
    """Two new backends of one kind: the spam signal at its weight, and switched off."""
    make = request.getfixturevalue(f"make_{request.param}_backend")
    pair = (make(), make(rank_weights={"spam": 0.0}))
    for backend in pair:
        backend.ensure_index()
    yield pair
    for backend in pair:
        backend.close()


def test_a_spam_page_ranks_below_an_ordinary_page_it_would_beat(with_and_without_spam):
    stuffed = "cheap loans cheap loans cheap loans bonus " * 8
    pages = [doc("http://spam.test/loans", "Cheap loans", stuffed, spam_score=0.9),
             doc("http://bank.test/loans", "Loans explained",
                 "how cheap loans work and what they cost")]
    demoting, plain = with_and_without_spam
    for backend in (demoting, plain):
        holding(backend, pages)
    assert urls(plain.search("cheap loans"))[0] == "http://spam.test/loans"  # text alone
    results = demoting.search("cheap loans", explain=True)
    assert urls(results) == ["http://bank.test/loans", "http://spam.test/loans"]
    spam = results.hits[1].explain["spam"]
    assert spam["value"] == pytest.approx(0.9)
    assert spam["factor"] == pytest.approx(1 - 0.9 * spam["weight"], abs=1e-6)


def test_pages_without_spam_keep_their_order_and_scores(with_and_without_spam):
    pages = [doc(f"http://n{i}.test/", f"Garden {i}", "garden roses " * (i + 1) + "shed " * i,
                 pagerank=i / 4) for i in range(4)]
    demoting, plain = with_and_without_spam
    for backend in (demoting, plain):
        holding(backend, pages)
    ranked = [(h.url, round(h.score, 4)) for h in demoting.search("garden roses").hits]
    assert ranked == [(h.url, round(h.score, 4)) for h in plain.search("garden roses").hits]
    assert len(ranked) == 4


def test_a_question_finds_the_answer_lacking_its_question_words(backend):
    answer = doc("http://g.test/gitignore", "gitignore",
                 "Specify intentionally untracked files to ignore. Git ignores files listed.")
    index_page = doc("http://g.test/faq", "Questions",
                     "how do I clone? how do I ignore whitespace? files in git, should I? "
                     "what are hooks?")
    holding(backend, [answer, index_page]
                     + [doc(f"http://g.test/{n}", f"git-{n}", "git files") for n in range(10)])
    found = backend.search("how do I ignore files in git")
    assert urls(found)[0] == "http://g.test/gitignore"
    # the question words still score: of two pages with the topic, the one that has them
    # (as keywords, the pages holding every word come first, those lacking one follow)
    assert set(urls(backend.search("ignore files git"))[:2]) == {
        "http://g.test/gitignore", "http://g.test/faq"}


def test_a_questions_framing_words_do_not_rank_a_page_of_questions_first(backend):
    # A FAQ writes "how do I" in every entry; the words framing a question say a question
    # is asked, not what about, so the page whose text answers it ranks first.
    answer = doc("http://t.test/tunnels", "Tunnels",
                 "to forward a port through the ssh server from your pc, add a tunnel. "
                 "tunnel settings list source and destination ports.")
    faq = doc("http://t.test/faq", "Questions",
              "how do I forward a port? how do I reach my server? how do I keep my pc "
              "awake? how do I use ssh? how do I? my my")
    holding(backend, [answer, faq]
                     + [doc(f"http://t.test/{n}", f"page {n}", "server notes") for n in range(8)])
    found = urls(backend.search("how do I forward a port from my pc through the ssh server"))
    assert found[:2] == ["http://t.test/tunnels", "http://t.test/faq"]


def test_query_words_near_each_other_rank_first(backend):
    filler = " ".join(f"w{n}" for n in range(30))
    holding(backend, [
        doc("http://p.test/apart", "page", f"proxy {filler} cache {filler} server"),
        doc("http://p.test/near", "page", f"{filler} proxy cache server {filler}"),
    ])
    found = backend.search("proxy cache server", explain=True)
    assert urls(found) == ["http://p.test/near", "http://p.test/apart"]
    near = {h.url: h.explain["near"]["value"] for h in found.hits}
    assert near == {"http://p.test/near": 1.0, "http://p.test/apart": 0.0}


def test_nearness_is_the_share_of_adjacent_word_pairs_a_page_holds_together(backend):
    # a question's topic is a few adjacent words: the page holding "command line program"
    # together holds two of the query's last three adjacent pairs (MAX_NEAR_GROUPS) near
    # each other, though its other words are far away; one with every word apart holds
    # none, one with the words together all of them
    filler = " ".join(f"w{n}" for n in range(30))
    holding(backend, [
        doc("http://n.test/together", "page",
            f"test {filler} the command line program {filler} quickly"),
        doc("http://n.test/apart", "page",
            f"test {filler} command {filler} line {filler} program {filler} quickly"),
        doc("http://n.test/all", "page", f"{filler} test a command line program quickly"),
    ])
    found = backend.search("how do I test a command line program quickly", explain=True)
    near = {h.url: h.explain["near"]["value"] for h in found.hits}
    assert near == {"http://n.test/all": 1.0, "http://n.test/together": round(2 / 3, 6),
                    "http://n.test/apart": 0.0}


def test_a_long_query_matches_pages_lacking_a_few_of_its_words(backend):
    words = "configure apache virtual hosts ssl certificates redirect port".split()
    holding(backend, [
        doc("http://a.test/all", "all", " ".join(words)),
        doc("http://a.test/most", "most", " ".join(words[:-2]) + " other words"),
        doc("http://a.test/few", "few", " ".join(words[:3])),
    ])
    found = backend.search(" ".join(words))
    assert urls(found) == ["http://a.test/all", "http://a.test/most"]
    # an operator query matches as written (a short option like -x would be a word: the
    # literal reading, test_literal.py)
    assert backend.search('"configure apache" virtual hosts ssl certificates redirect -xyz'
                          ).total == 1


def test_identifiers_match_whole_and_split(backend):
    holding(backend, [
        doc("http://c.test/join", "path functions", "Call os.path.join(a, b) to join paths."),
        doc("http://c.test/prose", "about paths", "The os has a path; join them together."),
        doc("http://c.test/conf", "Directives", "Set AllowOverride None in the config."),
        doc("http://c.test/ignore", "Ignoring", "List patterns in .gitignore files."),
        doc("http://c.test/json", "JSON operators", "Use ->> to get a field as text."),
        doc("http://c.test/mod", "Modules", "Load mod_rewrite and define __init__ here."),
    ])
    assert urls(backend.search("os.path.join"))[0] == "http://c.test/join"
    assert urls(backend.search("allow override"))[0] == "http://c.test/conf"  # split
    assert urls(backend.search("AllowOverride")) == ["http://c.test/conf"]  # whole
    assert urls(backend.search(".gitignore")) == ["http://c.test/ignore"]
    assert urls(backend.search("->> field")) == ["http://c.test/json"]
    assert urls(backend.search("mod_rewrite")) == ["http://c.test/mod"]
    assert urls(backend.search("__init__")) == ["http://c.test/mod"]


def test_the_page_defining_an_identifier_ranks_above_mentions(backend):
    holding(backend, [
        doc("http://d.test/mentions", "Recipes",
            "Path names for recipes: os.path.join(a, *p) joins paths."),
        doc("http://d.test/reference", "Path functions",
            "Functions for path names. os.path.join(a, *p) joins paths.",
            headings="Path functions\nos.path.join(a, *p)\nos.path.split(p)"),
    ])
    found = backend.search("os.path.join", explain=True)
    assert urls(found)[0] == "http://d.test/reference"
    assert {h.url: h.explain["defines"]["value"] for h in found.hits} == {
        "http://d.test/reference": 1.0, "http://d.test/mentions": 0.0}


def test_the_qualifiers_page_defining_a_member_ranks_above_its_uses(backend):
    # a reference names a member under a heading of its module's (class's) page, rarely
    # with the qualifier; the pages using it write the qualified name whole
    holding(backend, [
        doc("http://l.test/util", "Util",
            "Generic lenses. del_ws_spc deletes whitespace and writes one space.",
            headings="Util\ndel_ws\ndel_ws_spc\neol"),
        *[doc(f"http://l.test/lens-{n}", f"Lens {n}",
              f"let sep = Util.del_ws_spc in a lens for file {n}; Util.del_ws_spc again.")
          for n in range(3)],
        doc("http://l.test/other", "Other", "del_ws_spc and tools for util scripts."),
    ])
    found = backend.search("Util.del_ws_spc", explain=True)
    assert urls(found)[0] == "http://l.test/util"
    assert found.hits[0].explain["defines_name"]["value"] == 1.0
    assert set(urls(found)) == {"http://l.test/util", "http://l.test/other",
                                *(f"http://l.test/lens-{n}" for n in range(3))}
    found = backend.search("Lens::del_ws_spc", explain=True)  # no page of Lens defines it
    assert all(h.explain["defines"]["value"] == 0.0 for h in found.hits)


def test_a_member_written_after_its_class_with_a_hash_finds_the_class_page(backend):
    # Ruby's and Javadoc's references write an instance method Class#method: the class's
    # page heads the method by its name; a page of another class names both words, one
    # in its text, and its heading the method it calls
    holding(backend, [
        doc("http://r.test/Section.html", "Class: Asciidoctor::Section",
            "A section of a document. sectnum returns the section number, as 1.2. "
            + "It holds blocks and a title. " * 6,
            headings="Class: Asciidoctor::Section\n#sectnum(delimiter = '.')\n#title"),
        doc("http://r.test/Html5Converter.html", "Class: Asciidoctor::Converter::Html5Converter",
            "Converts a section to HTML: sectnum of the section, then its title.",
            headings="Class: Asciidoctor::Converter::Html5Converter\n#convert_section"),
    ])
    found = backend.search("Section#sectnum", explain=True)
    assert urls(found)[0] == "http://r.test/Section.html"
    assert found.hits[0].explain["defines_name"]["value"] == 1.0


RDOC_CLASS_PAGE = """<html><head><title>module Asciidoctor::Extensions - RDoc Documentation</title>
</head><body><main id="main-container" class="main">
<h1 id="module-Asciidoctor::Extensions" class="module">module Asciidoctor::Extensions</h1>
<section class="description"><p>Extensions provide a way to participate in parsing and
converting a document. Extensions are added to a registry.</p></section>
<section id="public-class-method-details" class="method-section">
<header><h3>Public Class Methods</h3></header>
<div id="method-c-create" class="method-detail "><div class="method-heading">
<span class="method-name">create</span><span class="method-args">(name = nil, &amp;block)</span>
<span class="method-click-advice">click to toggle source</span></div>
<div class="method-description"><p>Create a new Registry.</p></div></div>
<div id="method-c-register" class="method-detail "><div class="method-heading">
<span class="method-name">register</span><span class="method-args">(*args, &amp;block)</span>
<span class="method-click-advice">click to toggle source</span></div>
<div class="method-description"><p>Public: Adds a Group of extensions under a name.</p>
</div></div></section></main></body></html>"""


def _extracted(url: str, html: str):
    from crawler.extract import extract, page_item
    from pipelines.index import document_from_item

    return document_from_item(page_item(extract(html, url), url, 200, 0.0))


def test_an_rdoc_class_page_defines_its_methods_qualified_by_the_class(backend):
    # RDoc heads a method with <div class="method-heading"> in the method's <div
    # class="method-detail" id="method-c-register">, no <h1>-<h6>: among the headings, the
    # class page defines Extensions.register, which the guide calling it writes more often
    guide = ("<html><head><title>Block macros</title></head><body><main><h1>Block macros"
             "</h1><h2>A macro of your own</h2><p>" + "Call Extensions.register with a "
             "block: Extensions.register do block_macro end. " * 4 + "</p></main></body></html>")
    class_page = _extracted("http://a.test/Asciidoctor/Extensions.html", RDOC_CLASS_PAGE)
    holding(backend, [class_page, _extracted("http://a.test/guide.html", guide)])
    assert class_page.headings.splitlines()[-2:] == ["create (name = nil, &block)",
                                                     "register (*args, &block)"]
    found = backend.search("Extensions.register", explain=True)
    assert urls(found)[0] == "http://a.test/Asciidoctor/Extensions.html"
    assert found.hits[0].explain["defines_name"]["value"] == 1.0


TEXI2HTML_PAGE = """<html><head><title>Gambit</title></head><body>
<h2 class="chapter">13. Threads</h2>
<p>Threads synchronize with mutexes and condition variables.</p>
<a name="Definition_of_mutex-lock!"></a><a name="Procedure_mutex-lock!"></a>
<table width="100%"><tr><td align="left"> <code>(</code><code><b>mutex-lock!</b></code><i>
<var>mutex</var> [<var>timeout</var> [<var>thread</var>]]</i><code>)</code></td>
<td align="right">procedure</td></tr></table>
<p>This procedure locks mutex. If the mutex is currently locked, the current thread waits
for the mutex to be unlocked or until the timeout is reached.</p>
<a name="Definition_of_mutex-unlock!"></a>
<table width="100%"><tr><td align="left"> <code>(</code><code><b>mutex-unlock!</b></code>
<i><var>mutex</var></i><code>)</code></td><td align="right">procedure</td></tr></table>
<p>This procedure unlocks the mutex.</p>
<p>""" + "The thread system keeps its queues apart from the scheduler. " * 8 + """</p>
</body></html>"""


def test_a_texi2html_definition_table_defines_its_name(backend):
    # texi2html heads a procedure with <a name="Definition_of_mutex-lock!"> and a table,
    # no <h1>-<h6> or <dt>: the anchor's name is the page's definition of mutex-lock!,
    # which a shorter page calling it more often does not define
    example = ("<html><head><title>Examples</title></head><body><h1>Examples</h1><p>"
               + "(mutex-lock! m) (set! count (+ count 1)) (mutex-unlock! m) " * 2
               + "</p></body></html>")
    manual = _extracted("http://g.test/gambit.html", TEXI2HTML_PAGE)
    holding(backend, [manual, _extracted("http://g.test/examples.html", example)])
    assert manual.headings.splitlines()[-2:] == ["mutex-lock!", "mutex-unlock!"]
    found = backend.search("mutex-lock!", explain=True)
    assert urls(found)[0] == "http://g.test/gambit.html"
    assert found.hits[0].explain["defines"]["value"] == 1.0


TEXINFO_DECLARING_PAGE = """<html><head><title>Wisdom Export (FFTW 3.3.10)</title></head>
<body lang="en"><div class="subsection" id="Wisdom-Export">
<span id="Wisdom-Export-1"></span><h4 class="subsection">4.7.1 Wisdom Export</h4>
<div class="example"><pre class="example">int fftw_export_wisdom_to_filename(const char *filename);
void fftw_export_wisdom_to_file(FILE *output_file);
</pre></div>
<span id="index-fftw_005fexport_005fwisdom_005fto_005ffilename-1"></span>
<span id="index-fftw_005fexport_005fwisdom_005fto_005ffile"></span>
<p>These functions export all currently accumulated wisdom in a form from which it can
be later imported and restored.</p></div></body></html>"""

TEXINFO_MENTIONING_PAGE = """<html><head><title>Saving Plans (FFTW 3.3.10)</title></head>
<body lang="en"><div class="section" id="Saving-Plans">
<h3 class="section">3.3 Saving Plans</h3>
<p>To save the wisdom, call fftw_export_wisdom_to_filename with the file's name.</p>
<span id="index-fftw_005fexport_005fwisdom_005fto_005ffilename"></span>
<p>Then fftw_export_wisdom_to_filename writes it; fftw_export_wisdom_to_filename returns
non-zero on success, and fftw_export_wisdom_to_filename is safe to call often.</p>
<div class="example"><pre class="example">fftw_export_wisdom_to_filename("wisdom");
</pre></div></div></body></html>"""


def test_a_texinfo_index_anchor_beside_a_declaration_defines_the_name(backend):
    # texinfo puts a name's index anchor on every page mentioning it; the page declaring
    # it in the <pre> beside the anchor defines it, the page calling it does not
    declaring = _extracted("http://f.test/Wisdom-Export.html", TEXINFO_DECLARING_PAGE)
    mentioning = _extracted("http://f.test/Saving-Plans.html", TEXINFO_MENTIONING_PAGE)
    holding(backend, [declaring, mentioning])
    assert declaring.headings.splitlines()[1:] == ["fftw_export_wisdom_to_filename",
                                                    "fftw_export_wisdom_to_file"]
    assert mentioning.headings.splitlines() == ["3.3 Saving Plans"]
    found = backend.search("fftw_export_wisdom_to_filename", explain=True)
    assert urls(found)[0] == "http://f.test/Wisdom-Export.html"
    assert found.hits[0].explain["defines_name"]["value"] == 1.0


TEXINFO_ITEMIZED_PAGE = """<html><head><title>Planner Flags (FFTW 3.3.10)</title></head>
<body lang="en"><div class="subsection" id="Planner-Flags">
<h4 class="subsection">4.3.2 Planner Flags</h4>
<p>All of the planner routines take a flags argument, a bitwise OR of the flags below.</p>
<h4 class="subsubheading">Planning-rigor flags</h4>
<ul>
<li> <span id="index-FFTW_005fESTIMATE-2"></span>
<code>FFTW_ESTIMATE</code> specifies that a simple heuristic picks a plan quickly.
</li><li> <span id="index-FFTW_005fMEASURE-2"></span>
<code>FFTW_MEASURE</code> tells FFTW to find an optimized plan by actually computing
several transforms and measuring their execution time.
</li></ul>
<p>""" + "Planning with more rigor takes longer and may give a faster plan. " * 6 + """</p>
</div></body></html>"""

TEXINFO_MENTIONING_ITEM_PAGE = """<html><head><title>MPI transposes (FFTW 3.3.10)</title></head>
<body lang="en"><div class="subsection" id="Transposes">
<h4 class="subsection">6.7.3 Transposes</h4>
<ul><li>A transpose planned with FFTW_MEASURE runs faster: <span
id="index-FFTW_005fMEASURE-3"></span><code>FFTW_MEASURE</code> measures it.</li></ul>
<p>Plan it with FFTW_MEASURE once and reuse it; FFTW_MEASURE is worth it.</p>
</div></body></html>"""


def test_a_texinfo_item_led_by_its_index_anchor_and_name_defines_the_name(backend):
    # an @itemize's @item @code{FFTW_MEASURE} with its @vindex: the item begins with the
    # index anchor and the name as code, where the page describes it; an anchor among an
    # item's words is a mention, and that shorter page names it more often
    defining = _extracted("http://f.test/Planner-Flags.html", TEXINFO_ITEMIZED_PAGE)
    mentioning = _extracted("http://f.test/Transposes.html", TEXINFO_MENTIONING_ITEM_PAGE)
    holding(backend, [defining, mentioning])
    assert defining.headings.splitlines()[-2:] == ["FFTW_ESTIMATE", "FFTW_MEASURE"]
    assert mentioning.headings.splitlines() == ["6.7.3 Transposes"]
    found = backend.search("FFTW_MEASURE", explain=True)
    assert urls(found)[0] == "http://f.test/Planner-Flags.html"
    assert found.hits[0].explain["defines_name"]["value"] == 1.0


def test_a_type_assertion_is_the_phrase_of_its_words_not_a_call(backend):
    # Go's x.(T) is no call of "x.": T is not the user's value but the expression's own
    # word, so the page writing x.(T) leads a page holding x and t apart more often
    holding(backend, [
        doc("http://g.test/spec.html", "The Go Programming Language Specification",
            "Type assertions. For an expression x of interface type and a type T, the "
            "primary expression x.(T) asserts that x is not nil and that the value stored "
            "in x is of type T. " + "Each type has a method set and an underlying type. "
            * 6),
        doc("http://z.test/Z.html", "Z",
            "val add : t -> t -> t. Addition of x and y. val neg : t -> t. Negation of x. "
            "val abs : t -> t. Absolute value of x. type t, the type of x."),
    ])
    assert urls(backend.search("x.(T)"))[0] == "http://g.test/spec.html"


def test_a_method_called_on_a_variable_finds_the_page_heading_the_method(backend):
    # Perl's $r->headers_out: the API page heads the method by its name; a cookbook
    # page calls it more often. Read as the phrase "r headers out", no page defined it;
    # the API page heads the method and the variable it is called on ("obj: $r")
    holding(backend, [
        doc("http://p.test/RequestRec.html", "Apache2::RequestRec - Perl API",
            "$r->headers_out returns the table of the response's headers. "
            + "A request record holds the request and its response. " * 6,
            headings="Apache2::RequestRec\nheaders_out\nobj: $r ( Apache2::RequestRec object )"),
        doc("http://p.test/cooking.html", "Cooking recipes",
            "$r->headers_out->set(Location => $url); then $r->headers_out->add(Set-Cookie);"
            " $r->headers_out holds every header sent.",
            headings="Cooking recipes\nRedirects"),
    ])
    found = backend.search("$r->headers_out", explain=True)
    assert urls(found)[0] == "http://p.test/RequestRec.html"
    assert found.hits[0].explain["defines_name"]["value"] == 1.0


def test_a_package_page_titled_by_its_qualifier_defines_the_qualified_name(backend):
    # a manual heads a package's page with the package's own name and names the library
    # qualifying it in its title; another page's heading joins both words into a build
    # variable, where the package is not defined
    holding(backend, [
        doc("http://g.test/mmap.html", "Mmap: Reading and Writing Files - GNATColl docs",
            "GNATCOLL.Mmap maps a file into memory with the mmap system call. "
            + "Open a file, read a region, close it. " * 3,
            headings="Mmap: Reading and Writing Files"),
        doc("http://g.test/building.html", "Building GNATColl - GNATColl docs",
            "GNATCOLL_MMAP builds the mmap package of GNATColl. GNATCOLL_MADVISE builds "
            "madvise. Set them when you build GNATColl.",
            headings="Building GNATColl\nGNATCOLL_MMAP\nGNATCOLL_MADVISE"),
        doc("http://g.test/other.html", "Other - GNATColl docs",
            "Tools of GNATColl: see the mmap package for files."),
    ])
    found = backend.search("GNATCOLL.Mmap", explain=True)
    assert urls(found)[0] == "http://g.test/mmap.html"
    assert {h.url: h.explain["defines"]["value"] for h in found.hits}[
        "http://g.test/mmap.html"] == 1.0


def test_a_class_page_under_its_package_path_defines_the_qualified_name(backend):
    # Javadoc titles a class's page by the class alone and spells its package in the
    # URL path; the page listing the class's uses is titled and headed by the qualified
    # name whole. A class of the same name under another package's path defines another
    # name.
    holding(backend, [
        doc("http://j.test/joptsimple/OptionException.html",
            "OptionException (JOpt Simple API)",
            "Package joptsimple. Class OptionException. java.lang.RuntimeException. "
            "joptsimple.OptionException. Thrown when a problem occurs during option "
            "parsing. OptionException(options) creates it; options() gives its options.",
            headings="Class OptionException\nConstructor Summary\nOptionException"),
        doc("http://j.test/joptsimple/class-use/OptionException.html",
            "Uses of Class joptsimple.OptionException (JOpt Simple API)",
            "Uses of Class joptsimple.OptionException. "
            "No usage of joptsimple.OptionException",
            headings="Uses of Class joptsimple.OptionException"),
        doc("http://j.test/other/OptionException.html", "OptionException (Other API)",
            "Another library's exception of the same name as joptsimple's.",
            headings="Class OptionException"),
    ])
    found = backend.search("joptsimple.OptionException", explain=True)
    defines = {h.url: h.explain["defines"]["value"] for h in found.hits}
    assert defines["http://j.test/joptsimple/OptionException.html"] == 1.0
    assert defines["http://j.test/joptsimple/class-use/OptionException.html"] == 1.0
    assert defines["http://j.test/other/OptionException.html"] == 0.0
    ranked = urls(found)
    assert (ranked.index("http://j.test/joptsimple/OptionException.html")
            < ranked.index("http://j.test/other/OptionException.html"))


def test_a_long_reference_defining_a_named_identifier_ranks_above_mentions(backend):
    # a configuration reference defines hundreds of parameters on one page: BM25's length
    # normalisation gives it a low text score for any one of them, below the short pages
    # that mention the name; the page defining the identifier the query names wins
    params = "\n".join(f"param_{n}" for n in range(10))
    holding(backend, [
        doc("http://p.test/postconf", "Postfix configuration parameters",
            " ".join(f"param_{n} sets option {n} of the mail system, default {n}."
                     for n in range(10)) + " message_size_limit sets the largest message.",
            headings=f"Postfix configuration parameters\n{params}\nmessage_size_limit"),
        *[doc(f"http://p.test/faq-{n}", f"Mail FAQ {n}",
              "Raise message_size_limit when a large mail bounces back to its sender with "
              "an error saying the message is too big for the server to take.")
          for n in range(3)],
    ])
    found = backend.search("message_size_limit", explain=True)
    assert urls(found)[0] == "http://p.test/postconf"
    assert found.hits[0].explain["defines_name"]["value"] == 1.0
    # a query naming no identifier: the words' own pages, the signal says nothing
    found = backend.search("largest message", explain=True)
    assert all(h.explain["defines_name"]["value"] == 0.0 for h in found.hits)


def test_translations_of_a_page_are_shown_once(backend):
    holding(backend, [
        doc("http://h.test/en-US/nfs.html", "NFS server", "nfs file server share", lang="en"),
        doc("http://h.test/fr-FR/nfs.html", "Serveur NFS", "serveur nfs partage", lang="fr"),
        doc("http://h.test/de-DE/nfs.html", "NFS-Server", "nfs server freigabe", lang="de"),
        doc("http://h.test/ko-KR/nfs.html", "NFS server", "nfs file server share", lang="en"),
        doc("http://h.test/en-US/samba.html", "Samba", "samba nfs file share", lang="en"),
    ])
    found = backend.search("nfs", explain=True)
    # the original, not its English copy in the Korean tree, then the other page
    assert urls(found) == ["http://h.test/en-US/nfs.html", "http://h.test/en-US/samba.html"]
    assert found.hits[0].explain["original"]["value"] == 1.0
    first = found.hits[0]
    assert first.similar == 3 and first.languages == 2  # also in French and German
    assert found.hits[1].languages == 0


def test_a_page_lacking_one_minor_word_of_a_five_word_query_competes_not_two(backend):
    holding(
        backend,
        [doc("http://v.test/all", "all", "make some apache virtual hosts"),
         doc("http://v.test/answer", "Virtual hosts", "make apache virtual hosts explained"),
         doc("http://v.test/two", "Virtual hosts", "apache virtual hosts explained"),
         doc("http://v.test/apache", "Apache", "apache alone")]
        + [doc(f"http://o.test/{n}", "other", "make some other things") for n in range(20)],
    )
    found = urls(backend.search("make some apache virtual hosts"))
    assert set(found[:2]) == {"http://v.test/all", "http://v.test/answer"}
    # the page lacking two words does not compete: it follows, as the any-word reading
    # ranks it (fewer than a page of results: the words reading, index/plan.py)
    assert found.index("http://v.test/two") >= 2


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_url_depth_favours_pages_near_the_root_once_weighted(request, backend_name):
    make = request.getfixturevalue(f"make_{backend_name}_backend")
    pages = [doc("http://d.test/a/b/c.html", "reference", "widget " * 9),
             doc("http://d.test/guide.html", "guide", "widget and more")]
    unweighted, weighted = make(), make(rank_weights={"depth": 50.0})
    for backend in (unweighted, weighted):
        backend.ensure_index()
        holding(backend, pages)
    assert urls(unweighted.search("widget"))[0] == "http://d.test/a/b/c.html"
    hits = weighted.search("widget", explain=True).hits
    assert hits[0].url == "http://d.test/guide.html"
    depth = {h.url: h.explain["depth"]["value"] for h in hits}
    assert depth == {"http://d.test/guide.html": 0.5, "http://d.test/a/b/c.html": 0.125}
    for backend in (unweighted, weighted):
        backend.close()


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_freshness_favours_recently_fetched_pages_once_weighted(request, backend_name):
    import math
    import time

    make = request.getfixturevalue(f"make_{backend_name}_backend")
    now, day = time.time(), 86_400.0
    pages = [doc("http://f.test/old", "release notes", "release notes " * 3,
                 fetched_at=now - 60 * day),
             doc("http://f.test/new", "release notes", "release notes",
                 fetched_at=now - 30 * day)]
    unweighted, weighted = make(rank_weights={"freshness": 0.0}), make(
        rank_weights={"freshness": 50.0})
    for backend in (unweighted, weighted):
        backend.ensure_index()
        holding(backend, pages)
    assert urls(unweighted.search("release notes"))[0] == "http://f.test/old"
    hits = weighted.search("release notes", explain=True).hits
    assert hits[0].url == "http://f.test/new"
    # a Gaussian decay of the fetch time: 0.5 at 30 days, 0.5 ** 4 at 60
    fresh = {h.url: h.explain["freshness"]["value"] for h in hits}
    assert fresh["http://f.test/new"] == pytest.approx(0.5, abs=1e-3)
    assert fresh["http://f.test/old"] == pytest.approx(math.pow(0.5, 4), abs=1e-3)
    for backend in (unweighted, weighted):
        backend.close()


def test_a_page_lacking_only_a_common_word_keeps_most_of_the_all_words_bonus(backend):
    # "python" is on nearly every page: the page about dataclass tables that does not say
    # it outranks one that holds every word only in passing, and keeps the bonus but for
    # the common word's share of the query (its text score's coordination factor too)
    holding(
        backend,
        [doc("http://d.test/dataclasses", "Declarative mapping",
             "dataclass mapped to a table: each dataclass field becomes a table column "
             "of the dataclass table"),
         doc("http://d.test/changes", "Changes",
             "python " + "release notes and fixes " * 12 + "dataclass " + "more notes " * 8
             + "table")]
        + [doc(f"http://d.test/{n}", f"Chapter {n}", f"python chapter {n}") for n in range(20)],
    )
    found = backend.search("python dataclass table", explain=True)
    assert urls(found)[:2] == ["http://d.test/dataclasses", "http://d.test/changes"]
    lacking, every = (h.explain["allwords"]["value"] for h in found.hits[:2])
    assert every == 1.0
    assert 0.9 < lacking < 1.0


def test_a_question_finds_its_answer_worded_otherwise(backend):
    # A question is worded as its asker speaks: the answer lacks two of its words ("throw
    # away"; a keyword query lets a page lack one minor word at most), yet it is found,
    # keeping part of the all-words bonus, beside the page holding every word.
    holding(
        backend,
        [doc("http://v.test/purging", "Purging",
             "purge an old page from the cache: the cache drops the old page"),
         doc("http://v.test/changes", "Changes",
             "release notes " * 30 + "throw away old page from cache")]
        + [doc(f"http://o.test/{n}", f"Other {n}", f"other page {n}") for n in range(20)],
    )
    found = backend.search("how do I throw away an old page from the cache", explain=True)
    allwords = {h.url: h.explain["allwords"]["value"] for h in found.hits[:2]}
    assert allwords == {"http://v.test/changes": 1.0,
                        "http://v.test/purging": pytest.approx(QUESTION_COVERAGE)}
    # the same words as keywords: the page lacking two of them does not compete; it
    # follows the page holding them all, as the any-word reading finds it
    found = backend.search("throw away old page cache")
    assert urls(found)[0] == "http://v.test/changes"
    assert found.extra.get("reading") == "words"
    # a sentence without a word framing it as a question (query.is_sentence) reads as one
    found = backend.search("throw away an old page from the cache", explain=True)
    allwords = {h.url: h.explain["allwords"]["value"] for h in found.hits[:2]}
    assert allwords == {"http://v.test/changes": 1.0,
                        "http://v.test/purging": pytest.approx(QUESTION_COVERAGE)}


def test_a_changelog_ranks_below_the_page_documenting_what_it_mentions(backend):
    # The change log names the option in every release that touched it; by text alone it
    # leads. Asked what changed, it ranks as any other page.
    holding(
        backend,
        [
            doc("http://l.test/history.html", "LAME Changelog",
                "lame 3.90 nogap fixed; nogap tags; the nogap option; nogap again " * 3),
            doc("http://l.test/detailed.html", "LAME switches",
                "nogap encodes files without gaps between them, lame option"),
        ]
        + [doc(f"http://l.test/p{n}.html", f"page {n}", "lame mp3 encoder") for n in range(8)],
    )
    assert urls(backend.search("lame nogap"))[0] == "http://l.test/detailed.html"
    assert urls(backend.search("lame nogap changelog"))[0] == "http://l.test/history.html"
    assert urls(backend.search("nogap 3.90"))[0] == "http://l.test/history.html"


def test_a_page_of_the_named_site_headed_by_the_other_words_defines_them(backend):
    # 'jansson custom memory allocator': the site's name is in the page's host, not in its
    # headings; the API reference headed "Custom Memory Allocation" defines what is asked
    # there, not the table of contents listing every title, nor another site's page
    # headed the same way
    holding(backend, [
        doc("http://jansson.test/", "Jansson Documentation",
            "This is the documentation for Jansson 2.14, last updated May 2024. Jansson is "
            "a C library for encoding, decoding and manipulating JSON data. Contents: "
            "getting started, tutorial, conformance, portability, API reference, custom "
            "memory allocation, memory allocation functions, custom allocator, reference "
            "counting, thread safety, changes in Jansson."),
        doc("http://jansson.test/apiref.html", "API Reference - Jansson documentation",
            "Jansson objects and arrays. " * 20 + "Custom memory allocation: by default "
            "Jansson uses malloc and free; json_set_alloc_funcs sets a custom allocator.",
            headings="API Reference\nCustom Memory Allocation\njson_set_alloc_funcs"),
        doc("http://other.test/alloc.html", "Custom memory allocation - Other",
            "Custom memory allocation in Other: an allocator of your own.",
            headings="Custom memory allocation"),
    ])
    found = backend.search("jansson custom memory allocator", explain=True)
    assert urls(found)[0] == "http://jansson.test/apiref.html"
    assert {h.url: h.explain["defines"]["value"] for h in found.hits} == {
        "http://jansson.test/apiref.html": 1.0, "http://jansson.test/": 0.0,
        "http://other.test/alloc.html": 0.0}
    # a word alone is never defined by its site's pages
    found = backend.search("jansson", explain=True)
    assert all(h.explain["defines"]["value"] == 0.0 for h in found.hits)
