"""docs/settings.md is the reference of every setting in crawler/settings.py, generated from
its comments (``python -m crawler.settings_doc``): it is up to date, and every setting has a
meaning there."""

from __future__ import annotations

from crawler import settings
from crawler import settings_doc as doc
from tests.test_settings import SETTING_NAMES


def test_the_reference_is_up_to_date():
    assert doc.TARGET.read_text(encoding="utf-8") == doc.generate(), (
        "docs/settings.md is out of date: run python -m crawler.settings_doc")


def test_every_setting_is_in_the_reference_with_a_meaning():
    sections = doc.parse(doc.SOURCE.read_text(encoding="utf-8"), vars(settings))
    listed = [s.name for section in sections for group in section.groups
              for s in group.settings]
    assert sorted(listed) == sorted(SETTING_NAMES)
    assert doc.undocumented(sections) == [], (
        "give these settings a comment in crawler/settings.py (at the end of the line or "
        "above them), then run python -m crawler.settings_doc")


def test_a_comment_block_introduces_the_settings_below_it():
    source = (
        "# --- the part ---\n"
        "# Shared by the two below.\n"
        "A = 1\n"
        "B = {\n"
        "    'x': 2,  # inner\n"
        "}\n"
        "C = 3  # its own\n"
        "\n"
        "# --- second part, whose title\n"
        "# goes on ---\n"
        "D = 'd'\n"
    )
    sections = doc.parse(source, {"B": {"x": 2}})
    assert [s.title for s in sections] == ["the part", "second part, whose title goes on"]
    first = sections[0].groups
    assert [g.intro for g in first] == ["Shared by the two below."]
    assert [(s.name, s.default, s.comment) for s in first[0].settings] == [
        ("A", "`1`", ""), ("B", "`{'x': 2}`", ""), ("C", "`3`", "its own")]
    assert [(s.name, s.default) for s in sections[1].groups[0].settings] == [("D", "`'d'`")]
    page = doc.render(sections)
    assert "| `C` | `3` | its own |" in page
    assert "Shared by the two below.\n\n| setting |" in page
