"""Links between the docs resolve: every relative Markdown link in README.md, CHANGELOG.md
and docs/*.md names a file of the repository (and a heading of it, with an ``#anchor``), and
so does every ``docs/<page>.md`` they or the code (comments, docstrings, scripts, templates)
mention in plain text, with the heading it names (``docs/operations.md "Worker memory"``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]

MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")
DOC_MENTION = re.compile(r"(?<![\w/.-])docs/[\w.-]+\.md\b")
#: A page named with one of its headings: ``docs/x.md "Heading"``, ``(x.md, "Heading")``.
HEADING_MENTION = re.compile(r"(?<![\w/.-])((?:docs/)?[\w.-]+\.md),? \"([^\"]+)\"")
EXTERNAL = ("http://", "https://", "mailto:", "#")
#: The files of the code whose ``docs/<page>.md`` mentions must resolve.
CODE_FILES = ("*.py", "*.sh", "*.html", "*.txt", "*.toml", "*.cfg", "*.conf", "*.yml",
              "Makefile")


def headings(page: Path) -> list[str]:
    """The headings of a Markdown page (outside code blocks), as written."""
    found, fenced = [], False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            found.append(line.lstrip("#").strip())
    return found


def anchor(heading: str) -> str:
    """The fragment GitHub gives a heading: lower case, punctuation dropped, spaces as ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def _names_a_heading(page: Path, fragment: str) -> bool:
    return fragment in {anchor(h) for h in headings(page)}


def broken_mentions(text: str, base: Path) -> list[str]:
    """The ``docs/<page>.md`` mentions of ``text`` that name no file, and the pages named
    with a heading they lack (a page without ``docs/`` is relative to ``base``)."""
    broken = [m for m in DOC_MENTION.findall(text) if not (ROOT / m).exists()]
    for name, heading in HEADING_MENTION.findall(text):
        page = ROOT / name if name.startswith("docs/") else base / name
        if page.exists() and heading not in headings(page):
            broken.append(f'{name} "{heading}"')
    return broken


def broken_links(page: Path) -> list[str]:
    """The relative links and doc mentions of ``page`` that name no file or no heading."""
    text = page.read_text(encoding="utf-8")
    broken = []
    for target in MARKDOWN_LINK.findall(text):
        if target.startswith(EXTERNAL[:3]):
            continue
        path, _, fragment = target.partition("#")
        linked = page.parent / path if path else page
        if not linked.exists():
            broken.append(target)
        elif fragment and linked.suffix == ".md" and not _names_a_heading(linked, fragment):
            broken.append(target)
    return broken + broken_mentions(text, page.parent)


@pytest.mark.parametrize("page", [p for p in PAGES if p.exists()], ids=lambda p: p.name)
def test_links_resolve(page: Path) -> None:
    assert broken_links(page) == []


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# A page\n\n## Its part: `x.py`\n\n[ok](page.md), [gone](missing.md#x), "
                    "docs/no-such-page.md, [web](https://example.org/), [here](#its-part-xpy), "
                    "[there](page.md#a-page), [nowhere](#no-part), (page.md, \"A page\"), "
                    "(page.md, \"No page\")")
    assert broken_links(page) == ["missing.md#x", "#no-part", "docs/no-such-page.md",
                                  'page.md "No page"']


def code_files() -> list[Path]:
    """The tracked files of the code (not the docs) that may mention a docs page."""
    import subprocess

    tracked = subprocess.run(["git", "ls-files", *CODE_FILES], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split()
    return [ROOT / name for name in tracked if (ROOT / name).is_file()]


def test_the_code_points_at_docs_that_exist():
    """A comment or docstring that sends the reader to ``docs/x.md`` (or to one of its
    headings) names a page and a heading that are there."""
    files = code_files()
    assert any(f.name == "settings.py" for f in files)
    broken = {str(f.relative_to(ROOT)): found for f in files
              if f.name != "test_doc_links.py"
              and (found := broken_mentions(f.read_text(encoding="utf-8", errors="replace"),
                                            ROOT / "docs"))}
    assert broken == {}


def test_every_code_block_is_closed():
    """An odd number of ``` fences turns the rest of a page into one code block."""
    unclosed = [page.name for page in PAGES if page.exists()
                and sum(line.startswith("```") for line in
                        page.read_text(encoding="utf-8").splitlines()) % 2]
    assert unclosed == []


def test_the_readme_names_every_benchmark():
    """Each module of bench/ (what tests/test_bench_quick.py runs) has its line in README."""
    from tests.test_bench_quick import benchmarks

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert [name for name in benchmarks() if f"python -m bench.{name} " not in readme] == []


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
