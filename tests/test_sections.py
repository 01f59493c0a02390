"""Sections: where the crawl splits a page (real documentation pages of the corpus and the
rules on small pages), and which section answers a query."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawler.extract import decode_html, extract
from index import sections
from index.snippets import SnippetSource, located_snippet
from testweb.docsites import DOC_SITES


def _real(host: str, path: str):
    site = next(s for s in DOC_SITES if s.host == host)
    file = Path(site.root) / path
    if not file.is_file():
        pytest.skip(f"{site.package} is not installed (scripts/apt-packages.txt)")
    return extract(decode_html(file.read_bytes())[0], f"http://{host}/{path}")


def _by_anchor(page) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for s in page.sections:
        out.setdefault(s.anchor, []).append(s.heading)
    return out


def _check_offsets(page) -> None:
    starts = [s.start for s in page.sections]
    assert starts == sorted(set(starts))
    for s in page.sections:
        # a section starts at its heading's line
        assert page.text[s.start:].startswith(s.heading[:20]), s
        assert s.start == 0 or page.text[s.start - 1] == "\n"


def test_apache_directives_are_sections_with_their_ids():
    page = _real("httpd.test", "en/mod/core.html")
    headings = _by_anchor(page)
    assert headings["allowoverride"][0] == "AllowOverride Directive"
    assert headings["documentroot"][0] == "DocumentRoot Directive"
    # a sub-heading without an id links to the directive it is under
    assert "See also" in headings["allowoverride"]
    assert len(page.sections) > 100
    _check_offsets(page)


def test_sphinx_definitions_and_sections():
    page = _real("python.test", "library/os.html")
    headings = _by_anchor(page)
    assert headings["os.environ"] == ["os.environ"]
    assert headings["os.fsencode"] == ["os.fsencode(filename)"]  # the permalink mark dropped
    assert headings["process-parameters"] == ["Process Parameters"]  # <section id>
    _check_offsets(page)
    environ = next(s for s in page.sections if s.anchor == "os.environ")
    assert "mapping object" in page.text[environ.start:environ.start + 200]


def test_docbook_section_ids_come_from_the_block_a_title_opens():
    page = _real("postgresql.test", "ddl-basics.html")
    assert page.sections[0].anchor == "DDL-BASICS"
    assert page.sections[0].heading.endswith("Table Basics")
    _check_offsets(page)


def test_man_page_options_are_sections_under_their_heading():
    page = _real("git.test", "git-grep.html")
    by_heading = {s.heading: s.anchor for s in page.sections}
    assert by_heading["--untracked"] == "_options"  # no id of its own: the OPTIONS heading's
    assert by_heading["DESCRIPTION"] == "_description"
    _check_offsets(page)


def test_page_text_is_what_it_was_without_sections():
    page = extract("<main><p>intro</p><h2 id='a'>Alpha</h2><p>one</p><dl><dt>term</dt>"
                   "<dd>plain definition</dd><dt id='f'>func()</dt><dd>does</dd>"
                   "<dt><code>-x</code></dt><dd>an option</dd></dl>"
                   "<h3>Sub</h3><p>two</p><h2></h2><a name='b'></a><h2>Beta</h2></main>",
                   "http://a.test/")
    assert page.text.split("\n") == ["intro", "Alpha", "one", "term", "plain definition",
                                     "func()", "does", "-x", "an option", "Sub", "two", "Beta"]
    got = [(page.text[s.start:].split("\n")[0], s.anchor, s.heading) for s in page.sections]
    # a plain term starts no section, an option does (under its heading's anchor), and so
    # does a heading without id (under the heading above it); an empty heading none
    assert got == [("Alpha", "a", "Alpha"), ("func()", "f", "func()"), ("-x", "a", "-x"),
                   ("Sub", "a", "Sub"), ("Beta", "b", "Beta")]
    assert extract("<p>no headings</p>", "http://a.test/").sections == []


TEXT = "Intro words\nInstall\nrun the installer with apt\nKey legend\nthe legend of a plot"
STORED = sections.encode([(TEXT.index("Install"), "install", "Install"),
                          (TEXT.index("Key"), "key", "Key legend")])


@pytest.mark.parametrize("text", [TEXT, SnippetSource.of(TEXT)])
def test_the_section_the_snippet_is_from_answers(text):
    snippet, at = located_snippet(text, ["plot"], 40)
    assert "<mark>plot</mark>" in snippet and at == TEXT.index("plot")
    found = sections.answer(sections.decode(STORED), at, ["plot", "instal"])
    assert (found.section.anchor, found.section.heading) == ("key", "Key legend")
    assert [j.anchor for j in found.jumps] == ["install"]  # its heading names a query word
    found = sections.answer(sections.decode(STORED), TEXT.index("words"), ["word", "legend"])
    assert found.section is None  # the page's opening: the page itself
    assert [j.anchor for j in found.jumps] == ["key"]
    assert located_snippet(text, ["zebra"], 40)[1] == -1
    assert sections.answer(sections.decode(STORED), -1, ["zebra"]) == sections.Answer(None, ())
    assert sections.answer([], 5, ["key"]) is None


def test_stored_sections_round_trip_the_whole_page_up_to_a_bound():
    stored = [(0, "a", "Tab\there"), (100, "b", "Two\nLines"), (10**6, "c", "far")]
    assert sections.decode(sections.encode(stored)) == [
        sections.Section(0, "a", "Tab here", frozenset({"tab", "here"})),
        sections.Section(100, "b", "Two Lines", frozenset({"two", "line"})),
        sections.Section(10**6, "c", "far", frozenset({"far"}))]
    many = [(i * 10, f"s{i}", f"Part {i}") for i in range(sections.HIT_SECTIONS + 50)]
    assert len(sections.decode(sections.encode(many))) == sections.HIT_SECTIONS
    assert sections.decode(sections.encode([])) == []


def test_answer_from_the_stored_form_is_the_answer_of_its_decoded_sections():
    many = sections.encode([(i * 7, f"s{i}", f"Part {i} {'plot' if i % 5 == 0 else 'other'}")
                            for i in range(200)])
    # headings naming one, two or three query terms, anchors shared, a term inside words
    ranked = sections.encode([(i * 5, f"a{i % 7}", " ".join(
        ("Plots", "Legends of plots", "Part of a legend", "Installing parts")[:1 + i % 4]))
        for i in range(60)])
    for stored in (STORED, many, ranked, ""):
        for at in (-1, 0, 3, 60, 700, 10**6):
            for terms in (["plot"], ["plot", "instal"], ["word", "legend"], ["zebra"], [],
                          ["part", "plot", "legend"], ["i", "o", "p"], ["1", "par"]):
                assert sections.answer_stored(stored, at, terms) == sections.answer(
                    sections.decode(stored), at, terms), (at, terms)
