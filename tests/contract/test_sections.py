"""Sections on every engine: a hit links to the section its snippet is from and offers the
sections whose headings name the query to jump to; a document's sections are stored as
given."""

from __future__ import annotations

from tests.contract.conftest import doc

FILLER = "Words about something else entirely, said at some length. " * 6
LINES = ["Plotting guide", "Some opening words about plots in general. " + FILLER,
         "Installing", "Run the installer, then restart the shell. " + FILLER,
         "Legends", "The key command places the legend of a plot outside or inside it. " + FILLER,
         "Multiplot keys", "Several plots side by side share one key when asked. " + FILLER]
BODY = "\n".join(LINES)


def _sections():
    return tuple((BODY.index(h), a, h) for h, a in
                 (("Installing", "install"), ("Legends", "legend"), ("Multiplot keys", "multi")))


def test_a_hit_links_to_the_answering_section(backend):
    page = doc("http://plots.test/guide.html", "Plotting guide", BODY, sections=_sections())
    other = doc("http://plots.test/other.html", "Other", "legend and key without sections")
    backend.index([page, other])
    backend.refresh()
    assert backend.get(page.id).sections == _sections()

    hits = {h.url: h for h in backend.search("legend key").hits}
    hit = hits[page.url]
    assert (hit.anchor, hit.section) == ("legend", "Legends")
    assert "<mark>legend</mark>" in hit.snippet and "installer" not in hit.snippet
    assert hit.jumps == [{"anchor": "multi", "heading": "Multiplot keys"}]
    assert (hits[other.url].anchor, hits[other.url].jumps) == ("", [])

    # words of the opening: the page itself, no section; a heading naming them: a jump
    hit = backend.search("opening words installing").hits[0]
    assert (hit.url, hit.anchor, hit.section) == (page.url, "", "")
    assert hit.jumps == [{"anchor": "install", "heading": "Installing"}]


def test_a_section_past_the_snippet_text_is_offered_as_a_jump(backend):
    from index.snippets import SCAN_CHARS

    body = FILLER * (SCAN_CHARS // len(FILLER) + 5)
    late = len(body)
    body += "\nFrobnicate option\nThe frobnicate option turns the frobnicator on."
    page = doc("http://plots.test/reference.html", "Reference", body,
               sections=((late + 1, "frobnicate", "Frobnicate option"),))
    backend.index([page])
    backend.refresh()
    hit = backend.search("frobnicate").hits[0]
    assert late > SCAN_CHARS and hit.url == page.url
    assert hit.jumps == [{"anchor": "frobnicate", "heading": "Frobnicate option"}]
