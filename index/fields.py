"""What every engine stores for a document, computed once in Python at index time.

A backend never derives these itself: :func:`document_fields` turns a
:class:`~index.base.Document` into the analyzed text fields (space-joined terms from
:mod:`index.analysis`) and the ranking fields the signals of :mod:`index.signals` read
(``DOC_FIELDS``: the site's name, the URL's depth, the language, the collapse key, the
static rank, the fetch time). Each engine then stores them in its own types from the one
declaration here: a keyword is a ``keyword`` in Elasticsearch and a 64-bit key
(:func:`keyword_key`) in a tantivy fast field, so both engines compare the same values.

The shared vocabulary of the search plane lives here too: the text fields and their BM25
weights (:class:`FieldWeights`), what a site is called (:func:`site_name`) and how deep a
URL is (:func:`url_depth`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import xxhash

from crawler.extract import url_language, url_without_language
from index.analysis import (
    analyze,
    analyze_blocks,
    analyze_joined,
    host_suffixes,
    identifier_terms,
    is_stopword,
    language_of,
    normalize,
    normalize_host,
)
from index.query import VERSION_NUMBER, qualified_parts, site_defined
from index.sections import encode as encode_sections

if TYPE_CHECKING:
    from index.base import Document
    from index.query import Phrase, Query, Term

__all__ = [
    "DEFAULT_COMPOUND_FIELDS",
    "DEFAULT_FIELD_WEIGHTS",
    "DEFINE_FIELDS",
    "DOC_FIELDS",
    "EMPTY_FIELD",
    "LABEL_FIELDS",
    "LEAD_FIELD",
    "LEAD_WORDS",
    "NEAR_FIELDS",
    "FACET_FIELDS",
    "IDF_FIELD",
    "JOINED_FIELDS",
    "OPTIONAL_FIELDS",
    "QUALIFIER_FIELDS",
    "IDENTS",
    "IDENT_PARTS_WEIGHT",
    "TEXT_FIELDS",
    "DocField",
    "FieldWeights",
    "completion_key",
    "completion_prefix",
    "collapse_key",
    "completion_text",
    "defining_fields",
    "defining_readings",
    "document_fields",
    "is_changelog",
    "is_directory_listing",
    "home_lead",
    "titled_by",
    "keyword_key",
    "page_depth",
    "site_name",
    "url_depth",
]

#: The analyzed text fields every engine searches, in this order. ``idents`` holds the
#: identifier forms of the title and body that their terms lack (``analysis.identifier_terms``:
#: whole dotted, snake and leading-dot names, operators, the words of CamelCase names).
#: ``headings`` the page's headings and definition terms (``<dt>``), for the signal of the
#: page that defines what the query names (not scored as text by default).
TEXT_FIELDS = ("title", "body", "anchors", "url", "idents", "headings")
IDENTS = "idents"
#: The one term a text field holds where the page gives it none (no title, no anchor text,
#: no identifier ...): a control character, like ``analysis.BLOCK_BREAK`` never a term of a
#: text or a query, so it matches nothing. BM25 reads a field's statistics (its number of
#: documents, for IDF and the average length) over the documents holding a term in it in
#: Elasticsearch, over every document in tantivy; with every field of every page holding a
#: term, both count the same documents and the same lengths, and score alike.
EMPTY_FIELD = "\x02"
#: How much a query word scores where only ``idents`` holds it (a word of a CamelCase name:
#: ``allow`` in ``AllowOverride``): it matches there, but the page's own text decides the
#: score; an identifier's whole form scores by ``FieldWeights.idents``.
IDENT_PARTS_WEIGHT = 0.0


@dataclass(frozen=True)
class FieldWeights:
    """BM25 weight of each text field, and the share of the non-best fields' scores.

    The title and URL weigh twice and once the body, anchor text once: a query word in
    what a page is called or linked as counts more than one in its text, but not so much
    that a page named by one word of a keyword query (``plugin`` in ``plugin hooks``)
    passes the page whose text holds them all; anchor text repeats the navigation links
    of every neighbouring page (texinfo's Next/Previous/Up, Sphinx's previous/next), so it
    counts no more than the body (``docs/relevance-figures.md``, "Field weights")."""

    title: float = 2.0
    anchors: float = 1.0
    url: float = 1.0
    body: float = 1.0
    idents: float = 1.0
    headings: float = 0.0
    tie_breaker: float = 0.3

    def items(self) -> list[tuple[str, float]]:
        """``(field, weight)`` of the fields that count (weight above 0)."""
        return [(f, getattr(self, f)) for f in TEXT_FIELDS if getattr(self, f) > 0]

    def question(self) -> FieldWeights:
        """The weights a question-shaped query scores with (``Query.question``): its words
        in the page's own text, the title weighing no more than the body and the two
        summed (a tie breaker of 1), as plain BM25 weighs them; not in anchor text or URL,
        which name what a page is rather than say what it answers (a page called ``keys``
        is not the answer to a question that says ``key``)."""
        return replace(self, title=min(self.title, self.body), anchors=0.0, url=0.0,
                       tie_breaker=1.0)

    def for_query(self, query: Query) -> FieldWeights:
        """The weights ``query`` scores with, on every engine: a question-shaped query
        (``Query.question``) scores with :meth:`question`, any other with these."""
        return self.question() if query.question else self

    def only(self, fields: tuple[str, ...]) -> FieldWeights:
        """These weights with every text field but ``fields`` at 0."""
        return replace(self, **{f: 0.0 for f in TEXT_FIELDS if f not in fields})

    @classmethod
    def of(cls, value: FieldWeights | dict | str | None) -> FieldWeights:
        """Weights from a setting (a mapping or its JSON text) or as given; ``None`` is the
        default."""
        if value is None:
            return cls()
        if isinstance(value, FieldWeights):
            return value
        if isinstance(value, str):
            value = json.loads(value)
        return cls(**dict(value))


DEFAULT_FIELD_WEIGHTS = FieldWeights()
#: What a page is called and linked as: its title, anchor text and URL (the label signal).
LABEL_FIELDS = FieldWeights(title=1.0, anchors=1.0, url=1.0, body=0.0, idents=0.0,
                            tie_breaker=0.0)
#: Where a page names what it defines: its headings and definition terms.
DEFINE_FIELDS = FieldWeights(title=0.0, anchors=0.0, url=0.0, body=0.0, idents=0.0,
                             headings=1.0, tie_breaker=0.0)
#: Where a page names what qualifies a name it defines: its title, headings and URL (the
#: module or class a reference's page is titled by, the package or project it belongs to;
#: Javadoc titles a class's page by the class alone and spells its package in the path).
QUALIFIER_FIELDS = FieldWeights(title=1.0, anchors=0.0, url=1.0, body=0.0, idents=0.0,
                                headings=1.0, tie_breaker=0.0)
#: Where an optional word (``query.scored_optional_words``: not a question's framing ``how``)
#: scores, with the body's weight: the page's text, not what the page is called (its
#: title, anchor text or URL), which such a word says nothing about.
OPTIONAL_FIELDS = ("body",)
#: Where the proximity signal looks for the query's words near each other.
NEAR_FIELDS = ("title", "body")
#: Where a page lacking a word of the query scores the compounds that word forms with its
#: other words (``query.joined_compounds``): running text writes some words as one
#: (``fulltext`` for ``full text``), which a page holding the words apart does not need.
JOINED_FIELDS = FieldWeights(title=0.0, anchors=0.0, url=0.0, body=1.0, idents=0.0,
                             tie_breaker=0.0)
#: The field whose document frequencies give a query word's IDF (pages lacking a word).
IDF_FIELD = "body"
#: Where a compound of the query's words scores (names are written as one word in titles,
#: URLs and link text, rarely in running text), and how much.
DEFAULT_COMPOUND_FIELDS = FieldWeights(title=3.0, anchors=2.0, url=1.5, body=0.0,
                                       idents=0.0, tie_breaker=0.3)

#: Words of a home page's text, after its title, that say what its site is
#: (:func:`home_lead`): its first sentence or two, before the contents it lists.
LEAD_WORDS = 30
#: Characters of a page's text read for its ``LEAD_WORDS`` words.
LEAD_CHARS = 2_000
#: The field that holds a home page's lead terms (:func:`home_lead`; other pages: none),
#: searched only for the home pages a query describes, never scored as text.
LEAD_FIELD = "lead"

_INDEX_FILES = frozenset({"index.html", "index.htm", "index.php", "default.aspx"})
_GENERIC_LABELS = frozenset({"www", "m", "web", "docs", "doc", "home"})
_WORDS = re.compile(r"[^\W_]+")
#: A change log's title or title part (``is_changelog``).
_TITLE_PARTS = re.compile(r"\s+[\u2014\u2013|/-]\s+|:\s+")
_SECTION_NUMBER = re.compile(r"^(?:[A-Z\d]{1,2}\.)(?:\d+\.)*\s+")
_CHANGELOG_TITLE = re.compile(
    r"^(?:changes|(?:[\w.+-]+\s+){0,3}(?:change\s?logs?|news|release\s+notes?|releases"
    r"|release\s+history|change\s+history|version\s+history)"
    r"|(?:(?:major|api|recent)\s+)?changes\s+(?:in|from|since|to)\s.*"
    r"|(?:change|release|version)\s+history\s.*|what'?s\s+new\b.*|release\s+notes?\s.*)$",
    re.IGNORECASE)
_CHANGELOG_FILE = re.compile(
    r"^(?:change_?log|changes|news|release[-_]?notes?|relnotes?|whats[-_]?new|history_of_changes)"
    r"(?:[-_]v?[\d.]+)?$")
_LISTING_TITLE = re.compile(r"\s*(?:index of|directory listing for) /", re.IGNORECASE)
#: The title of an index of names (a part of it, ``_TITLE_PARTS``; a trailing
#: parenthesis left out): "Index", "General Index", "Python Module Index", "Library Index
#: (FFTW 3.3.10)", "Index of values", "Index of Scanner Options"; not "Index of /".
_NAME_INDEX_TITLE = re.compile(
    r"(?:(?:general|alphabetical|full|library|concept|program|command|option|variable"
    r"|function|type|class|module|python module|symbol|keyword|method|value)s?\s+)?"
    r"index(?:\s+of\s+[a-z][a-z ]*)?", re.IGNORECASE)
_TRAILING_PARENTHESIS = re.compile(r"\s*\([^()]*\)\s*$")


def collapse_key(doc: Document) -> str:
    """What results collapse on: for a page whose URL names its language, the URL without
    it (its translations and the copies of it in other languages' trees share that), else
    its near-copy cluster (``cluster_id``, or its own id)."""
    translated = url_without_language(doc.url)
    if translated:
        return "t:" + xxhash.xxh64_hexdigest(translated.encode())
    return doc.cluster_id or doc.id


def is_language_copy(doc: Document) -> bool:
    """Whether the page sits in another language's tree than its own (the English page
    copied into ``/fr-FR/`` of an untranslated chapter): a copy, not the original."""
    named = url_language(doc.url)
    return bool(named) and bool(doc.lang) and named != language_of(doc.lang)


def is_changelog(doc: Document) -> bool:
    """Whether the page is a change log, release notes, news or a "what's new" page: its
    title (or a part of it between `` — ``, `` - ``, ``: ``, `` | ``) is one
    (``_CHANGELOG_TITLE``: "LAME Changelog", "Release Notes", "Changes in Varnish 7.1",
    "What's new / Upgrading", a bare version "9.4.0"), its URL's last segment or folder is
    (``changelog.html``, ``news.html``, ``releasenotes/``, ``whats-new/``). Such a page
    mentions every option and function a release touched, many times: the ``changelog``
    signal ranks it below the pages documenting them unless the query asks what
    changed."""
    title = doc.title.replace("\u2019", "'")
    for part in _TITLE_PARTS.split(title):
        part = part.strip()
        if VERSION_NUMBER.fullmatch(part) or _CHANGELOG_TITLE.match(_SECTION_NUMBER.sub("", part)):
            return True
    segments = [p for p in urlsplit(doc.url).path.lower().split("/") if p]
    if segments:
        segments[-1] = segments[-1].rsplit(".", 1)[0]
    return any(_CHANGELOG_FILE.match(s) for s in segments)


def url_depth(url: str) -> int:
    """Path segments of a URL, an index file not counted: 0 for a site's home page."""
    parts = urlsplit(url)
    segments = [p for p in parts.path.split("/") if p]
    if segments and segments[-1].lower() in _INDEX_FILES:
        segments.pop()
    return len(segments) + (1 if parts.query else 0)


def is_directory_listing(title: str) -> bool:
    """Whether a page's title is a web server's generated directory listing's ("Index of
    /", "Directory listing for /"): a list of files, never a site's home page."""
    return bool(_LISTING_TITLE.match(title))


def is_name_index(title: str) -> bool:
    """Whether a page's title is an index of names' (``_NAME_INDEX_TITLE``: Sphinx's
    "Index — Mako 1.2.4 Documentation", texinfo's "Concept Index", ocamldoc's "Index of
    values"): each entry a name and a link to the page defining it, with that page's first
    words at most. It points to the answer of a question rather than answering it."""
    title = _TRAILING_PARENTHESIS.sub("", title)
    return any(_NAME_INDEX_TITLE.fullmatch(part.strip()) for part in _TITLE_PARTS.split(title))


def titled_by(title: str, terms: Iterable[str], name: str = "") -> bool:
    """Whether a page's title, or a part of it (between " — ", " - ", ": ", " | ", a
    trailing parenthesis left out), is the words whose analyzed terms are ``terms``, beside
    the site's ``name`` at most, stopwords left out: "Gri: contour plots" for ``contour``,
    ``plot``; "LuaSQL License" for ``licens`` of ``luasql``; not "kitty terminal kitten 1"
    for ``termin``."""
    wanted = frozenset(terms)
    if not wanted:
        return False
    named = frozenset(analyze(name))
    title = _TRAILING_PARENTHESIS.sub("", title)
    return any(frozenset(t for t in analyze(part) if not is_stopword(t)) - named == wanted
               for part in (title, *_TITLE_PARTS.split(title)))


def page_depth(doc: Document) -> int:
    """How deep a page lies below its site's home (``url_depth``: 0 for the home page); a
    directory listing one level more, so a site served as a listing of its manuals has no
    home page the ``sitehome`` signal would rank above the manuals' own entry pages."""
    return url_depth(doc.url) + is_directory_listing(doc.title)


def home_lead(title: str, text: str) -> frozenset[str]:
    """The analyzed terms of what a home page says its site is: its title and the first
    ``LEAD_WORDS`` words of its text (kitty's home page, titled ``kitty``: "The fast,
    feature-rich, GPU based terminal emulator"). A query naming a site and describing it
    with these words asks for the home page (``query.described_sites``, ``SiteHome``)."""
    lead = " ".join(text[:LEAD_CHARS].split()[:LEAD_WORDS])
    return frozenset(analyze(title)) | frozenset(analyze(lead))


def site_name(host: str) -> str:
    """The name a site is searched by: the label before the top-level domain, letters and
    digits only (``docs.python.org`` -> ``python``, ``debian-handbook.info`` ->
    ``debianhandbook``)."""
    labels = [label for label in host.lower().split(":")[0].strip(".").split(".") if label]
    if len(labels) > 1:
        labels = labels[:-1]
    named = [label for label in labels if label not in _GENERIC_LABELS] or labels
    return "".join(_WORDS.findall(named[-1])) if named else ""


def keyword_key(value: str) -> int:
    """The 64-bit key of a keyword value (0 for ``""``), for engines that store numbers."""
    return xxhash.xxh64_intdigest(value.encode()) if value else 0


KEYWORD, INTEGER, FLOAT, DOUBLE = "keyword", "integer", "float", "double"


@dataclass(frozen=True)
class DocField:
    """A ranking field: its name, its kind (keyword, integer, float, double) and how a document
    gives its value. Engines map the kind to their own types."""

    name: str
    kind: str
    compute: Callable[[Document], Any]

    def value(self, doc: Document) -> Any:
        """This field's value for ``doc``."""
        return self.compute(doc)


#: Every ranking field, once. Signals name the ones they read (``Signal.fields``).
DOC_FIELDS: dict[str, DocField] = {
    f.name: f
    for f in (
        DocField("pagerank", FLOAT, lambda d: float(d.pagerank)),
        DocField("fetched_at", DOUBLE, lambda d: float(d.fetched_at)),
        DocField("cluster", KEYWORD, lambda d: collapse_key(d)),
        DocField("url_depth", INTEGER, page_depth),
        DocField("site_name", KEYWORD, lambda d: site_name(d.host)),
        DocField("lang", KEYWORD, lambda d: language_of(d.lang)),
        DocField("shown", INTEGER, lambda d: int(bool(d.shown))),
        DocField("spam", FLOAT, lambda d: min(1.0, max(0.0, float(d.spam_score)))),
        DocField("lang_copy", INTEGER, lambda d: int(is_language_copy(d))),
        DocField("changelog", INTEGER, lambda d: int(is_changelog(d))),
    )
}


#: Facet name -> the stored keyword counted per value over a query's matches.
FACET_FIELDS = {"site": "host", "lang": "lang"}
#: Longest title kept for completion (characters, before normalization).
COMPLETION_CHARS = 100
_SEPARATOR = "\t"


def completion_key(title: str) -> str:
    """The keyword a title is completed by: its normalized text, a tab, then the title as
    written (``""`` for no title). A prefix of the normalized text matches it, so one
    term-dictionary walk finds completions in both engines."""
    shown = " ".join(title.split())[:COMPLETION_CHARS]
    if not shown:
        return ""
    return f"{' '.join(normalize(shown).split())}{_SEPARATOR}{shown}"


def completion_prefix(text: str) -> str:
    """What a completion key must start with to complete ``text`` as typed."""
    return " ".join(normalize(text).split()) + (" " if text[-1:].isspace() else "")


def completion_text(key: str) -> str:
    """The title a completion key shows."""
    return key.partition(_SEPARATOR)[2]


@dataclass(frozen=True)
class DocumentFields:
    """A document as the engines store it: analyzed text, site suffixes, ranking fields,
    the keywords facets count and completion walks (``host``, ``lang``, ``title_key``),
    and the sections its hits link to and offer as jumps (stored with the snippet text,
    not indexed: ``index.sections.encode``)."""

    text: dict[str, str]
    site: list[str]
    ranking: dict[str, Any]
    keywords: dict[str, str]
    sections: str = ""
    #: A home page's lead terms, space-joined (:func:`home_lead`); ``""`` for other pages.
    lead: str = ""


def document_fields(doc: Document, body_terms: str | None = None) -> DocumentFields:
    """The fields of ``doc`` every engine stores; sets ``doc.host`` from the URL if empty.
    ``body_terms``: ``analyze_blocks`` of its body (its description when the body is
    empty) where the caller has it already. The body, the anchor texts and the headings,
    whose lines are blocks (cells, items, paragraphs; one link's text; one heading), keep
    a gap of positions between two (``analysis.BLOCK_GAP``), so no phrase spans two."""
    if not doc.host:
        doc.host = normalize_host(doc.url)
    body = doc.body or doc.description
    text = {
        "title": analyze_joined(doc.title),
        "body": analyze_blocks(body) if body_terms is None else body_terms,
        "anchors": analyze_blocks(doc.anchors),
        "url": analyze_joined(doc.url.split("://", 1)[-1]),
        "idents": " ".join(identifier_terms(f"{doc.title}\n{body}")),
        "headings": " ".join(filter(None, (analyze_blocks(doc.headings),
                                           *identifier_terms(doc.headings)))),
    }
    return DocumentFields(
        text={name: terms or EMPTY_FIELD for name, terms in text.items()},
        site=host_suffixes(doc.host),
        ranking=(ranking := {name: f.value(doc) for name, f in DOC_FIELDS.items()}),
        keywords={"host": doc.host, "lang": ranking["lang"],
                  "title_key": completion_key(doc.title)},
        sections=encode_sections(doc.sections),
        lead=" ".join(sorted(home_lead(doc.title, body or ""))) if ranking["url_depth"] == 0
        else "",
    )


def label_terms(doc: Document) -> set[str]:
    """The analyzed terms of what a page is called and linked as (title, anchors, URL)."""
    return set(analyze(" ".join((doc.title, doc.anchors, doc.url.split("://", 1)[-1]))))


def defining_fields(query: Query) -> list[tuple[Term | Phrase, FieldWeights]]:
    """Each defined word of ``query`` (``Query.defined_words``) with where a page that
    defines what the query names holds it: its headings (``DEFINE_FIELDS``), and for a
    name qualifying a member (``query.qualified_parts``) its title and URL too
    (``QUALIFIER_FIELDS``): a manual's page on ``GNATCOLL.Mmap`` is headed ``Mmap`` and
    titled ``Mmap ... GNATColl documentation``; Javadoc's page on
    ``joptsimple.OptionException`` is headed ``Class OptionException`` at
    ``joptsimple/OptionException.html``."""
    return _defining(query, query.defined_words)


def _defining(query: Query, words: tuple[Term | Phrase, ...]
              ) -> list[tuple[Term | Phrase, FieldWeights]]:
    """``defining_fields`` of these defined words of ``query``."""
    if not words:
        return []
    qualifiers = {parts[0] for w in query.label_words
                  if (parts := qualified_parts(w)) is not None}
    return [(w, QUALIFIER_FIELDS if w in qualifiers else DEFINE_FIELDS) for w in words]


def defining_readings(query: Query) -> list[tuple[str, list[tuple[Term | Phrase, FieldWeights]]]]:
    """Each way a page defines what ``query`` names, as ``(site, defining_fields)``: its
    headings hold every defined word (``site`` ``""``), or it is a page of the site
    (``site_name``) a word of the query names and its headings hold the others
    (``query.site_defined``: ``jansson custom memory allocator``). Both engines' ``defines``
    match a page by any one of them."""
    readings = [("", fields)] if (fields := defining_fields(query)) else []
    return readings + [(site, _defining(query, words)) for site, words in site_defined(query)]
