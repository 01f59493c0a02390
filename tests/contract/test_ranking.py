"""Ranking signals every backend applies alike: language, compounds, navigational queries,
site mentions, pages lacking a minor word and the any-word fallback."""

from __future__ import annotations

from tests.contract.conftest import doc


def urls(results) -> list[str]:
    return [h.url for h in results.hits]


def test_pages_in_the_query_language_rank_first(backend):
    backend.index(
        [
            doc("http://h.test/fr/nfs", "NFS", "serveur nfs nfs nfs", lang="fr"),
            doc("http://h.test/en/nfs", "NFS", "nfs file server", lang="en"),
        ]
    )
    backend.refresh()
    assert urls(backend.search("nfs"))[0] == "http://h.test/en/nfs"


def test_a_compound_of_query_words_in_a_title_ranks_the_page_first(backend):
    backend.index(
        [
            doc("http://g.test/check-ignore", "git-check-ignore", "git ignore files " * 5),
            doc("http://g.test/gitignore", "gitignore", "files git should ignore"),
        ]
        + [doc(f"http://g.test/{n}", f"git-{n}", "git") for n in range(20)]
    )
    backend.refresh()
    assert urls(backend.search("ignore files git"))[0] == "http://g.test/gitignore"


def test_a_navigational_query_finds_the_home_page(backend):
    pages = [doc("http://django.test/", "Welcome", "the web framework")]
    pages += [
        doc(f"http://django.test/topics/{n}.html", f"Django topic {n}", "django docs " * 5)
        for n in range(20)
    ]
    backend.index(pages)
    backend.refresh()
    assert urls(backend.search("django docs"))[0] == "http://django.test/"
    assert urls(backend.search("django topic"))[0] != "http://django.test/"


def test_pages_of_a_site_the_query_mentions_rank_first(backend):
    backend.index(
        [
            doc("http://django.test/sessions", "Sessions", "session requests"),
            doc("http://requests.test/sessions", "Sessions", "session requests"),
        ]
    )
    backend.refresh()
    assert urls(backend.search("requests session"))[0] == "http://requests.test/sessions"
    assert urls(backend.search("django session"))[0] == "http://django.test/sessions"


def test_a_page_lacking_a_minor_word_of_a_long_query_competes(backend):
    pages = [doc("http://g.test/tutorial", "git tutorial", "a tutorial introduction to git")]
    pages += [doc(f"http://p.test/{n}", "faq", f"python for beginners, tutorial {n}, git")
              for n in range(3)]
    pages += [doc(f"http://o.test/{n}", "other", "beginners") for n in range(20)]
    backend.index(pages)
    backend.refresh()
    found = backend.search("git tutorial beginners")
    assert urls(found)[0] == "http://g.test/tutorial"
    assert found.total == 4
    # the rarest word is never left out: "git tutorial" pages lack "faq"
    assert backend.search("faq git tutorial").total == 3


def test_without_a_page_holding_every_word_any_word_matches(backend):
    backend.index(
        [
            doc("http://a.test/blame", "git-blame", "show what revision last modified each line"),
            doc("http://a.test/log", "git-log", "show commit logs"),
        ]
    )
    backend.refresh()
    assert urls(backend.search("who modified this line"))[0] == "http://a.test/blame"
    assert backend.search("blame -log").total == 1
    assert backend.search("blame log").total == 2  # neither page has both words
