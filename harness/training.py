"""Training queries for fitting ranking weights, generated from a crawl: never the judged set.

The judged queries of ``tests/relevance/queries.json`` only *score* the ranking; a fitter
learns from *known-item* queries made automatically from the crawled pages, each with the
one page it was made from as its answer:

- ``title``: the page's title without the site's suffix ("… — Python 3.11 documentation"),
  reworded the way people shorten a title: stop words dropped, one content word left out,
  only the first few content words, or the words in another order;
- ``anchor``: the text of a link on *another* page pointing at the page (how other
  authors name it), generic link texts ("next", "here", "¶", a bare URL) left out;
- ``heading``: an ``<h2>``/``<h3>`` heading of the page read from the served file, with
  the title's first content word added when the heading alone is short (a heading such
  as "Installation" names a section of every site).

Generation is deterministic (seeded per page), capped per page and per source, and needs
no network or model. This module never reads the judged queries; a caller passes the
query strings to ``exclude`` so that no generated query repeats a judged one.

    items = known_items(pages, hosts=train_sites, exclude=judged_query_strings)
"""

from __future__ import annotations

import html
import random
import re
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from batch.learn import item_key as page_key  # one "same page" rule: the fitter's

__all__ = ["KnownItem", "by_site", "known_items", "normalize", "title_core", "title_variants"]

#: Words dropped when a title is shortened (people leave them out when they type).
STOP_WORDS = frozenset(
    "a an and are as at be by for from how in into is it of on or the this to using what "
    "when where which with your you".split()
)
#: Link texts that name no page: navigation, permalinks, bare file names.
GENERIC_ANCHORS = frozenset(
    "next previous prev up home index here this link permalink top contents back source "
    "[source] show source view source modules next page previous page search documentation "
    "docs more details read more see also table of contents go to top edit on github "
    "genindex module index general index python module index ¶ # » « click here".split(" ")
) | {"table of contents", "show source", "view source", "next page", "previous page",
     "read more", "see also", "go to top", "module index", "general index",
     "python module index", "click here", "edit on github"}
#: Separators between a page title and the site's name ("Title — Site", "Title | Site").
_SUFFIX = re.compile(r"\s+(?:—|–|-|\||::)\s+")
_WORD = re.compile(r"[\w][\w.+#:/-]*[\w+#]|[\w]", re.UNICODE)
_HEADING = re.compile(r"<h([23])\b[^>]*>(.*?)</h\1\s*>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]+>")
#: "8.14. JSON Types", "Chapter 3. ..." numbering and "git-clone(1)" man sections.
_SECTION_NUMBER = re.compile(r"^(?:chapter\s+|capítulo\s+|chapitre\s+)?\d+(?:\.\d+)*\.?\s+",
                             re.IGNORECASE)
_MAN_SECTION = re.compile(r"\(\d\w?\)$")


@dataclass(frozen=True)
class KnownItem:
    """A generated query, the page it was made from (``host/path``, no port; a directory
    means its ``index.html``) and how it was made (``title``, ``anchor`` or ``heading``)."""

    query: str
    target: str
    source: str

    @property
    def site(self) -> str:
        """The host of the target page."""
        return self.target.split("/", 1)[0]


def normalize(query: str) -> str:
    """A query as compared for duplicates: lower case, single spaces."""
    return " ".join(query.lower().split())


def title_core(title: str) -> str:
    """A page title without the site's name after the last separator, section numbers
    ("8.14. JSON Types") or a man page's section ("git-clone(1)"): "os.path — Common
    pathname manipulations — Python 3.11 documentation" gives "os.path Common pathname
    manipulations"."""
    title = html.unescape(title or "").strip()
    parts = _SUFFIX.split(title)
    if len(parts) > 1:
        title = " ".join(parts[:-1]) if len(parts[-1].split()) <= 6 else " ".join(parts)
    title = _SECTION_NUMBER.sub("", _MAN_SECTION.sub("", title.strip()))
    return re.sub(r"\s+", " ", title).strip(" :—–-|")


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def title_variants(core: str, rng: random.Random, limit: int = 2) -> list[str]:
    """Up to ``limit`` reworded forms of a title: its content words (lower case, stop words
    dropped), one content word left out, the first few content words, or the first word
    moved last; chosen at random (``rng``) among the distinct ones."""
    content = [w for w in _words(core) if w not in STOP_WORDS]
    if not content:
        return []
    candidates = [content]
    if len(content) >= 3:
        dropped = list(content)
        del dropped[rng.randrange(len(content))]
        candidates += [dropped, content[:3] if len(content) > 3 else content[:2]]
    if len(content) >= 2:
        candidates.append(content[1:] + content[:1])
    out = list(dict.fromkeys(" ".join(words) for words in candidates))
    rng.shuffle(out)
    return out[:limit]


def _anchor_ok(text: str, own_title: str) -> bool:
    text = normalize(text)
    if len(text) < 3 or len(text) > 80 or text in GENERIC_ANCHORS:
        return False
    if text.startswith(("http://", "https://", "www.")) or text.endswith((".html", "/")):
        return False
    if not any(ch.isalpha() for ch in text):
        return False
    return text != own_title


def _headings(path: Path, limit_bytes: int = 2_000_000) -> list[str]:
    try:
        with path.open("rb") as f:
            raw = f.read(limit_bytes).decode("utf-8", "replace")
    except OSError:
        return []
    out = []
    for _, inner in _HEADING.findall(raw):
        text = html.unescape(_TAG.sub(" ", inner)).replace("¶", " ")
        text = " ".join(text.split())
        if 3 <= len(text) <= 80:
            out.append(text)
    return out


def known_items(
    pages: Iterable[Mapping],
    hosts: Iterable[str] | None = None,
    exclude: Iterable[str] = (),
    *,
    roots: Mapping[str, Path] | None = None,
    per_title: int = 2,
    per_anchor: int = 2,
    per_heading: int = 1,
) -> list[KnownItem]:
    """Known-item queries for the indexed pages of a crawl (feed records with ``url``,
    ``host``, ``title``, ``links``; noindex pages and exact duplicates are no targets).

    ``hosts``: only targets on these hosts (the training sites of a fold). ``exclude``:
    query strings never to generate (the judged queries). ``roots``: host -> directory the
    host serves (``testweb.docsites``) to read headings from; without it no heading queries.
    A query that would name two different targets is kept for neither.
    """
    pages = list(pages)
    wanted = set(hosts) if hosts is not None else None
    banned = {normalize(q) for q in exclude}
    targets: dict[str, Mapping] = {}
    for page in pages:
        if page.get("noindex") or page.get("dup_of"):
            continue
        key = page_key(page["url"])
        if wanted is None or key.split("/", 1)[0] in wanted:
            targets.setdefault(key, page)
    anchors: dict[str, list[str]] = {}
    for page in pages:
        source = page_key(page["url"])
        for link in page.get("links") or ():
            target = page_key(link["url"])
            if target != source and target in targets and link.get("text"):
                anchors.setdefault(target, []).append(" ".join(link["text"].split()))
    items: list[KnownItem] = []
    for key, page in targets.items():
        rng = random.Random(zlib.crc32(key.encode()))
        core = title_core(page.get("title") or "")
        own = normalize(core)
        for query in title_variants(core, rng, per_title):
            items.append(KnownItem(query, key, "title"))
        texts = sorted({normalize(t) for t in anchors.get(key, ()) if _anchor_ok(t, own)})
        rng.shuffle(texts)
        items.extend(KnownItem(t, key, "anchor") for t in texts[:per_anchor])
        if roots and per_heading:
            items.extend(_heading_items(key, page["url"], core, roots, rng, per_heading))
    # A query naming two targets is no known item; a judged query is never a training one.
    seen: dict[str, set[str]] = {}
    for item in items:
        seen.setdefault(normalize(item.query), set()).add(item.target)
    out, emitted = [], set()
    for item in items:
        norm = normalize(item.query)
        if norm in banned or len(seen[norm]) > 1 or norm in emitted:
            continue
        emitted.add(norm)
        out.append(KnownItem(norm, item.target, item.source))
    return out


def _heading_items(key: str, url: str, core: str, roots: Mapping[str, Path],
                   rng: random.Random, limit: int) -> Iterator[KnownItem]:
    host, _, path = key.partition("/")
    root = roots.get(host)
    if root is None:
        return
    file = root.joinpath(*[unquote(p) for p in path.split("/") if p not in ("", ".", "..")])
    headings = _headings(file)
    rng.shuffle(headings)
    lead = next((w for w in _words(core) if w not in STOP_WORDS), "")
    for heading in headings[:limit]:
        words = [w for w in _words(heading) if w not in STOP_WORDS]
        if not words:
            continue
        if len(words) < 3 and lead and lead not in words:
            words = [lead, *words]
        yield KnownItem(" ".join(words), key, "heading")


def by_site(items: Sequence[KnownItem]) -> dict[str, list[KnownItem]]:
    """The items grouped by their target's host."""
    out: dict[str, list[KnownItem]] = {}
    for item in items:
        out.setdefault(item.site, []).append(item)
    return out
