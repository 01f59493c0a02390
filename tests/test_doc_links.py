"""Links between the docs resolve: every relative Markdown link in README.md, CHANGELOG.md
and docs/*.md names a file of the repository, and so does every ``docs/<page>.md`` they
mention in plain text."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]

MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")
DOC_MENTION = re.compile(r"(?<![\w/.-])docs/[\w.-]+\.md\b")
EXTERNAL = ("http://", "https://", "mailto:", "#")


def broken_links(page: Path) -> list[str]:
    """The relative links and doc mentions of ``page`` that name no file."""
    text = page.read_text(encoding="utf-8")
    broken = []
    for target in MARKDOWN_LINK.findall(text):
        if target.startswith(EXTERNAL):
            continue
        path = target.split("#", 1)[0]
        if not (page.parent / path).exists():
            broken.append(target)
    broken += [m for m in DOC_MENTION.findall(text) if not (ROOT / m).exists()]
    return broken


@pytest.mark.parametrize("page", [p for p in PAGES if p.exists()], ids=lambda p: p.name)
def test_links_resolve(page: Path) -> None:
    assert broken_links(page) == []


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("[ok](page.md), [gone](missing.md#x), docs/no-such-page.md, "
                    "[web](https://example.org/)")
    assert broken_links(page) == ["missing.md#x", "docs/no-such-page.md"]


CONFLICT_MARKER = re.compile(r"^(<{7} |={7}$|>{7} )", re.MULTILINE)


def test_no_file_keeps_merge_conflict_markers():
    """A merge committed half resolved leaves ``<<<<<<<``/``=======``/``>>>>>>>`` lines."""
    import subprocess

    tracked = subprocess.run(
        ["git", "ls-files", "*.md", "*.py", "*.sh", "*.txt", "*.toml", "*.cfg", "*.json",
         "*.html"],
        cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    marked = [name for name in tracked
              if (ROOT / name).is_file()
              and CONFLICT_MARKER.search((ROOT / name).read_text(encoding="utf-8",
                                                                 errors="replace"))]
    assert marked == []
