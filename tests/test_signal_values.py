"""Each signal's one-pass ``values`` (what ``Ranker.rank`` reads, ``Signal.column``) gives,
candidate by candidate, what its ``value`` says: the two are written apart for speed, so
this keeps them one definition."""

from __future__ import annotations

import itertools

import pytest

from index.base import Document
from index.fields import is_changelog, keyword_key
from index.query import asks_for_changes, parse
from index.signals import DEFAULT_SIGNALS, Candidate, RankContext, Signal

NOW = 1_800_000_000.0


def candidates() -> list[Candidate]:
    """Candidates over every field value the signals tell apart, missing fields included."""
    made = []
    sites = [None, keyword_key("django.test"), keyword_key("other.test")]
    langs = [None, keyword_key("en"), keyword_key("de")]
    for n, (site, lang, depth, flag) in enumerate(
            itertools.product(sites, langs, [None, 0, 3], [False, True])):
        fields = {"site_name": site, "lang": lang, "url_depth": depth,
                  "pagerank": [None, 0.0, 0.4][n % 3],
                  "fetched_at": [None, NOW - 86_400 * n][n % 2],
                  "lang_copy": [None, 0, 1][n % 3], "spam": [None, -0.5, 0.3, 2.0][n % 4]}
        made.append(Candidate(ref=n, text_score=[0.0, 3.5, -1.0][n % 3],
                              fields={k: v for k, v in fields.items() if v is not None or n % 5},
                              labelled=flag, near=[0.0, 0.5, 1.0][n % 3], defines=not flag,
                              coverage=[1.0, 0.7, 0.0][n % 3], text_top=[0.0, 7.0][n % 2]))
    return made


@pytest.mark.parametrize("signal", DEFAULT_SIGNALS, ids=lambda s: s.name)
@pytest.mark.parametrize("text", ["django sessions", "django docs site:django.test",
                                  "wie installiere ich django", "how do I ignore files"])
def test_values_in_one_pass_equal_value_a_candidate_at_a_time(signal: Signal, text: str):
    context = RankContext.of(parse(text), now=NOW)
    cands = candidates()
    assert signal.column()(cands, context) == [signal.value(c, context) for c in cands]


def test_a_subclass_overriding_value_alone_is_asked_a_candidate_at_a_time():
    base = next(s for s in DEFAULT_SIGNALS if type(s).values is not Signal.values)

    class Halved(type(base)):
        def value(self, candidate, context):
            return super().value(candidate, context) / 2

    halved, context, cands = Halved(), RankContext.of(parse("django"), now=NOW), candidates()
    assert halved.column()(cands, context) == [base.value(c, context) / 2 for c in cands]


@pytest.mark.parametrize(("url", "title", "changelog"), [
    ("http://l.test/history.html", "LAME Changelog", True),
    ("http://s.test/news.html", "Slurm Workload Manager - Release Notes", True),
    ("http://v.test/whats-new/changes-7.1.html", "Changes in Varnish 7.1 — Varnish", True),
    ("http://p.test/releasenotes/9.4.0.html", "9.4.0 — Pillow (PIL Fork)", True),
    ("http://n.test/apis01.html", "I.1. Changes from 2.7.4 to 2.8.0", True),
    ("http://m.test/user/Changes.html", "CHANGES", True),
    ("http://w.test/ChSrcContribute.html", "3.10. Contribute Your Changes", False),
    ("http://n.test/history.html", "History of NTP", False),
    ("http://n.test/apes05.html", "E.5. News articles and Press releases", False),
    ("http://p.test/Chapter3.html", "Using PuTTY", False),
])
def test_a_changelog_is_told_by_its_title_or_url(url, title, changelog):
    assert is_changelog(Document(id="d", url=url, host="h.test", title=title)) is changelog


@pytest.mark.parametrize(("query", "asks"), [
    ("lame changelog", True), ("what's new in 3.100", True), ("release notes 2.1", True),
    ("lame --nogap", False), ("track01.wav", False), ("std.healthy", False),
])
def test_a_query_asks_for_changes_by_its_words_or_a_version(query, asks):
    assert asks_for_changes(parse(query)) is asks


def test_an_index_of_names_is_told_by_its_title():
    from index.fields import is_name_index

    for title in ("Index — Mako 1.2.4 Documentation", "Concept Index (FFTW 3.3.10)",
                  "Index of values", "Python Module Index — Psycopg",
                  "GNU gettext utilities: General Index", "Index of Scanner Options"):
        assert is_name_index(title), title
    for title in ("Index of /", "Indexing", "CREATE INDEX", "Full text index",
                  "The index of chapters", "Index page"):
        assert not is_name_index(title), title


def test_a_page_is_titled_by_words_its_title_or_a_part_of_it_is():
    from index.fields import titled_by

    assert titled_by("Gri: contour plots", ["contour", "plot"], "gri")
    assert titled_by("LuaSQL License", ["licens"], "luasql")
    assert titled_by("Start Conditions (Lexical Analysis With Flex, for Flex 2.6.4)",
                     ["start", "condit"], "flex")
    assert titled_by("LAME MP3 Encoder :: The LAME Mailing List", ["mail", "list"], "lame")
    assert not titled_by("kitty terminal kitten 1", ["termin"], "kitty")
    assert not titled_by("Gri: contour plots of gridded data", ["contour", "plot"], "gri")
    assert not titled_by("Gri: contour plots", [], "gri")
