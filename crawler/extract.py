"""Response -> extracted page: title, main text, description, language, links, robots meta.

One lxml parse per page. Main text prefers ``<main>``/``<article>``; otherwise the body
minus navigation chrome and link-dense blocks. ``decode_html`` turns the body into text
(BOM, HTTP header, ``<meta>`` declaration, UTF-8, then charset-normalizer for undeclared
legacy charsets; a UTF-16/32 declaration the bytes contradict is ignored); the language is
the ``<html lang>`` when present, else the ``Content-Language`` header, else py3langid on a
bounded sample of the main text, which a language the URL names (``/fr/``, ``/pt-BR/``,
``index.html.de``) overrides when the text fits it too (``page_language``). Headings and
``<dt>`` terms are kept apart too: where a page names what it defines; and the main text is
split into sections in the same walk (``Section``: a heading and its text, a definition
term with an id, a man page's option), each with the anchor a result can link to.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from itertools import islice
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit, urlunsplit

import lxml.html
from lxml import etree
from w3lib.encoding import (
    html_body_declared_encoding,
    http_content_type_encoding,
    read_bom,
    resolve_encoding,
)

from crawler.items import Link, PageContent, Section
from crawler.urls import InvalidURL, canonicalize

if TYPE_CHECKING:
    from crawler.items import PageItem

DROP_TAGS = ("script", "style", "noscript", "template", "svg", "canvas", "iframe", "object")
CHROME_TAGS = ("nav", "header", "footer", "aside", "form", "menu")
CHROME_IN_MAIN_TAGS = ("nav", "aside", "form", "menu")  # a header in <main> holds its title
LINK_BLOCK_TAGS = frozenset(("div", "ul", "ol", "section", "table", "li"))
SPACED_INLINE_TAGS = frozenset(("a", "img", "button", "label", "input", "select", "option"))
CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffd]")
BLOCK_TAGS = frozenset(
    "p div section article main h1 h2 h3 h4 h5 h6 li ul ol table tr td th pre blockquote "
    "dd dt dl figcaption br hr address".split()
)
CHROME_HINT = re.compile(
    r"(^|[\s_-])(nav|navbar|menu|footer|header|sidebar|breadcrumb|cookie|banner|share|social|"
    r"related|comment|advert|ads?|promo|widget|subscribe|pager|pagination)([\s_-]|$)",
    re.I,
)
APP_ROOT_XPATH = (
    "//*[@id='root' or @id='app' or @id='__next' or @id='__nuxt' or @id='app-root' "
    "or @ng-app or @data-reactroot or @data-server-rendered] | //app-root"
)
CLIENT_RENDERED_MAX_TEXT = 200  # characters of main text below which an app shell is suspect
WS = re.compile(r"\s+")
_WORD_RE = re.compile(r"\w+")
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
MAX_LINKS = 1000
#: Elements whose ``src`` is an outlink, as Heritrix, Nutch and StormCrawler read them: a
#: frameset's frames are its pages (a javadoc or edoc site links nothing else from its root).
FRAME_TAGS = frozenset(("frame", "iframe"))
#: Extensions of what a frame shows that is no page (Doxygen puts each class graph, an SVG,
#: in an ``<iframe>``): a frame's ``src`` ending so is no outlink.
FRAME_MEDIA_EXTENSIONS = frozenset(
    "svg png gif jpg jpeg webp bmp ico pdf mp4 webm ogv ogg mp3 wav swf".split())
#: Elements whose ``href`` (``a``, ``area``) or ``src`` (``FRAME_TAGS``) is an outlink.
LINK_TAGS = ("a", "area", *sorted(FRAME_TAGS))
#: Link values that name no page to fetch (``about:blank`` is an empty frame's).
NOT_LINKS = ("#", "javascript:", "mailto:", "tel:", "data:", "about:")
LANG_SAMPLE_CHARS = 400  # per spot; py3langid costs ~0.2 ms per 400 characters
LANG_SAMPLE_SPOTS = 3
LANG_MIN_CHARS = 40
HEADING_TAGS = ("h1", "h2", "h3", "h4", "h5", "h6", "dt")
#: Most heading text kept per page (an API reference has a <dt> per function).
HEADINGS_CHARS = 20_000
#: Elements that may start a section (``_section_anchor`` decides).
SECTION_TAGS = frozenset(HEADING_TAGS)
#: Most sections kept per page (a language reference defines thousands of names on one
#: page; past this its last section runs to the end).
MAX_SECTIONS = 2_000
#: Longest section heading kept (characters; a function's whole signature is a heading).
HEADING_CHARS = 200
#: How many levels up a heading looks for the block it opens (DocBook nests the title of a
#: ``<div class="sect1" id>`` three divs deep).
OPENING_DEPTH = 5
#: The class of RDoc's (Darkfish) heading of a method or attribute, a ``<div>`` opening its
#: ``<div class="method-detail" id="method-i-name">``, and of the toggle it holds.
METHOD_HEADING_CLASS = "method-heading"
METHOD_TOGGLE_CLASS = "method-click-advice"
#: texi2html's anchor of a definition, just before the table heading it (no ``<h*>``, no
#: ``<dt>``): ``<a name="Definition_of_mutex-lock!"><table>...``; the name is URL-quoted.
DEFINITION_ANCHOR = "Definition_of_"
#: texinfo's anchor of an index entry (``<span id="index-fftw_005fplan_005fdft">``, each
#: other character as ``_`` and its code in 4 hex digits, a repeat ending ``-N``). It stands
#: on every page whose text an index entry points to, so alone it defines nothing.
INDEX_ANCHOR = "index-"
_INDEX_CODE = re.compile(r"_([0-9a-f]{4})")
_INDEX_REPEAT = re.compile(r"-\d+$")
#: A name a C-like declaration declares.
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
#: A line of a ``<pre>`` declaring a function: type words, then the name it declares (the
#: group) and its parenthesis; not a ``return`` or a ``call`` of it.
_DECLARATION = re.compile(
    r"(?m)^[ \t]*(?!(?:return|call)\b)(?:[A-Za-z_]\w*[ \t*]+)+([A-Za-z_]\w*)[ \t]*\(")
#: Permalink marks a heading's text ends with (Sphinx, PostgreSQL).
HEADERLINK_MARKS = " \u00b6#"
CHARSET_SAMPLE_BYTES = 32 * 1024
BINARY_SAMPLE_BYTES = 1024
_WIDE = frozenset(("utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"))
_TEXT_CONTROL = bytes(range(32)).translate(None, b"\t\n\r\x0c\x1b")
#: libxml2 drops a text node over 10,000,000 bytes unless told the input may be huge: a
#: page that is one 10 MiB line (cut at DOWNLOAD_MAXSIZE) kept no text at all. The body is
#: bounded by DOWNLOAD_MAXSIZE, so the parser's own limits are not what bounds memory.
HTML_PARSER = lxml.html.HTMLParser(huge_tree=True)
# lxml.html picks each element's class in Python (``HtmlElementClassLookup.lookup``, called
# for every element proxy: ~700 a page); the default lookup picks it in C. Every element is
# then an ``HtmlElement`` (no ``FormElement``, ``InputElement``...: the extraction uses none
# of their methods), the same page and items 15% faster (5.8 -> 4.9 ms a page).
HTML_PARSER.set_element_class_lookup(etree.ElementDefaultClassLookup(
    element=lxml.html.HtmlElement, comment=lxml.html.HtmlComment,
    pi=lxml.html.HtmlProcessingInstruction, entity=lxml.html.HtmlEntity))


def looks_binary(body: bytes) -> bool:
    """Whether a body served as HTML is really binary (NULs or many control bytes)."""
    head = body[:BINARY_SAMPLE_BYTES]
    if not head:
        return False
    if b"\x00" in head:
        return True
    controls = len(head) - len(head.translate(None, _TEXT_CONTROL))
    return controls > len(head) // 20


def decode_html(body: bytes, content_type: str = "") -> tuple[str, str]:
    """``(text, encoding)`` of an HTML body.

    Declared encodings win in the order browsers use (BOM, Content-Type header, ``<meta>``);
    an undeclared body is UTF-8 if it decodes as such, else what charset-normalizer guesses
    from a bounded sample, else windows-1252. Undecodable bytes become U+FFFD.
    """
    bom, bom_bytes = read_bom(body)
    if bom:
        body = body[len(bom_bytes):]
    encoding = bom or _plausible(http_content_type_encoding(content_type), body) \
        or _plausible(html_body_declared_encoding(body[:4096]), body)
    if encoding:
        encoding = resolve_encoding(encoding) or encoding
        try:
            return body.decode(encoding, errors="replace"), encoding
        except LookupError:
            pass
    try:
        return body.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    guessed = _guess_encoding(body[:CHARSET_SAMPLE_BYTES])
    return body.decode(guessed, errors="replace"), guessed


def _plausible(declared: str | None, body: bytes) -> str | None:
    """``declared``, unless the bytes contradict it: a UTF-16 or UTF-32 page without a BOM
    has a NUL in every ASCII character of its markup, so a body without any NUL in its
    first bytes is not one (its real charset is found as for an undeclared page)."""
    if declared and resolve_encoding(declared) in _WIDE \
            and b"\x00" not in body[:BINARY_SAMPLE_BYTES]:
        return None
    return declared


def _guess_encoding(sample: bytes) -> str:
    from charset_normalizer import from_bytes

    best = from_bytes(sample).best()
    return best.encoding if best is not None else "cp1252"


def load_language_model(cache_dir: str | None = None) -> None:
    """Load py3langid's model now: it loads on its first use otherwise, which takes 0.5-3 s
    (a compressed model) and, in a crawl, stops the reactor for as long. With
    ``cache_dir`` (``LANGUAGE_MODEL_CACHE``), from its decompressed copy there
    (``crawler.langmodel``): ~10 ms once the copy is made."""
    from crawler.langmodel import load

    load(cache_dir)


def detect_language(text: str) -> str:
    """ISO 639-1 code of ``text`` from bounded samples (py3langid), or "" if too short."""
    if len(text) < LANG_MIN_CHARS:
        return ""
    import py3langid

    # Several spots, not one: a single sample of a manual often lands on a code block,
    # which reads as English whatever the page's language.
    return py3langid.classify(_language_sample(text))[0]


@dataclass
class Extracted(PageContent):
    """What a page says about itself (``PageContent``), and what the crawl reads from it
    besides: ``client_rendered``, the page looks like an app shell (scripts, an app root
    element, almost no text) whose content needs JavaScript."""

    refresh_url: str = ""
    client_rendered: bool = False
    #: Words in elements hidden with CSS (``crawler.quality.judges.hidden_words``), counted
    #: on the parsed page before anything is pruned from it.
    hidden_words: int = 0
    #: Links left out because their URL cannot be crawled, by ``InvalidURL.reason``.
    invalid_links: dict[str, int] = field(default_factory=dict)


def _clean(s: str) -> str:
    """``s`` with each whitespace run one space, stripped (``str.split`` splits on what
    ``\\s`` matches, every Unicode space, at a fifth of the regex's cost)."""
    return " ".join(s.split())


def _robots_flags(value: str) -> tuple[bool, bool]:
    tokens = {t.strip().lower() for t in value.replace(";", ",").split(",")}
    none = "none" in tokens
    return none or "noindex" in tokens, none or "nofollow" in tokens


#: What stands for a section's start in the text while it is cleaned (a line of its own).
_SECTION_MARK = "\ue000"


def _text_of(node) -> tuple[str, list[Section]]:
    """Visible text of ``node`` with block elements separated by newlines, and where its
    sections begin in it (:func:`_section_anchor`: headings, definition terms with an id,
    options)."""
    parts: list[str] = []
    starts: list = []  # the elements that may start a section, in order
    mark = f"\n{_SECTION_MARK}\n"
    for event, el in etree.iterwalk(node, events=("start", "end")):
        if event == "start":
            if isinstance(el.tag, str):
                if el.tag in SECTION_TAGS and el is not node and len(starts) < MAX_SECTIONS:
                    starts.append(el)
                    parts.append(mark)
                if el.text:
                    parts.append(el.text)
        else:
            if isinstance(el.tag, str):
                if el.tag in BLOCK_TAGS:
                    parts.append("\n")
                elif el.tag in SPACED_INLINE_TAGS:
                    parts.append(" ")
            if el.tail and el is not node:
                parts.append(el.tail)
    text = CONTROL_CHARS.sub(" ", "".join(parts))
    lines = [line for line in (" ".join(raw.split()) for raw in text.split("\n")) if line]
    if not starts:
        return "\n".join(lines), []
    kept: list[str] = []
    offsets: list[int] = []
    offset = 0
    for line in lines:
        if line == _SECTION_MARK:
            offsets.append(offset)
        else:
            kept.append(line)
            offset += len(line) + 1
    return "\n".join(kept), _sections(starts, offsets, offset)


def _sections(starts: list, offsets: list[int], end: int) -> list[Section]:
    """The sections the elements ``starts`` begin at ``offsets`` of a text ``end`` long
    (a section with no text is left out). A heading without an anchor of its own takes
    that of the heading it is under (``""``, the page itself, when none has one), and so
    does an option."""
    sections: list[Section] = []
    under: list[tuple[int, str]] = []  # (level, anchor) of the headings a section is under
    for i, (el, start) in enumerate(zip(starts, offsets, strict=False)):
        anchor = _section_anchor(el)
        if el.tag != "dt":
            level = int(el.tag[1])
            while under and under[-1][0] >= level:
                under.pop()
            anchor = anchor or next((a for _, a in reversed(under) if a), "")
            under.append((level, anchor))
        elif anchor == "":
            anchor = under[-1][1] if under else ""
        following = offsets[i + 1] if i + 1 < len(offsets) else end
        if anchor is not None and following > start:
            heading = _clean(el.text_content()).rstrip(HEADERLINK_MARKS)[:HEADING_CHARS]
            sections.append(Section(start, anchor, heading))
    return sections


def _own_id(el) -> str:
    """The fragment ``el`` is reached by: its id, an empty ``<a name>``/``<span id>`` in
    it, or the ``#fragment`` of a permalink it holds (Sphinx's ``headerlink``)."""
    if el.get("id"):
        return el.get("id")
    for inner in el.iter("a", "span"):
        if inner is el:
            continue
        named = inner.get("id") or (inner.get("name") if inner.tag == "a" else None)
        if named:
            return named
        href = inner.get("href") or ""
        if href.startswith("#") and len(href) > 1 and "headerlink" in (inner.get("class") or ""):
            return href[1:]
    return ""


def _section_anchor(el) -> str | None:
    """The anchor of the section ``el`` starts, ``""`` for one without, or ``None`` when
    ``el`` starts none (a plain definition term). A heading takes its own id, else that
    of the block it opens (Sphinx's ``<section id>``, DocBook's ``<div class="sect1"
    id>`` around a title page), else an empty anchor just before it; a ``<dt>`` starts a
    section when it has an id, or names an option (``-r``, ``--cached``), whose anchor is
    that of the heading it is under (``""`` here, filled in by the caller)."""
    own = _own_id(el)
    if el.tag == "dt":
        if own:
            return own
        return "" if _clean(el.text_content()).startswith("-") else None
    if own:
        return own
    node = el
    for _ in range(OPENING_DEPTH):
        parent = node.getparent()
        if parent is None or parent[0] is not node:
            break
        if parent.get("id"):
            return parent.get("id")
        node = parent
    before = el.getprevious()
    if before is not None and before.tag in ("a", "span") and not _clean(before.text_content()):
        return before.get("id") or before.get("name") or ""
    return ""


def _is_chrome(el) -> bool:
    if el.tag in CHROME_TAGS:
        return True
    hint = f"{el.get('class', '')} {el.get('id', '')} {el.get('role', '')}"
    found = _CHROME_HINTS.get(hint)
    if found is None:
        if len(_CHROME_HINTS) >= CHROME_HINTS_CACHED:
            _CHROME_HINTS.clear()
        found = _CHROME_HINTS[hint] = bool(hint.strip()) and bool(CHROME_HINT.search(hint))
    return found


#: Class/id/role strings -> whether they name chrome: a site repeats a few hundred on
#: every page, and the regex was a tenth of the pruning's time.
_CHROME_HINTS: dict[str, bool] = {}
CHROME_HINTS_CACHED = 4096


def _link_text_share(el, link_lengths: dict | None = None) -> tuple[int, float]:
    """Length of ``el``'s text and the share of it inside links (``link_lengths``: the
    lengths of links measured before, by element, as every block around a link asks)."""
    text = _clean(el.text_content())
    if not text:
        return 0, 0.0
    if link_lengths is None:
        link_lengths = {}
    link_text = 0
    for a in el.iter("a"):
        length = link_lengths.get(a)
        if length is None:
            length = link_lengths[a] = len(_clean(a.text_content()))
        link_text += length
    return len(text), link_text / len(text)


def _protected(node) -> tuple[set, set]:
    """The first heading's ancestors and its siblings: the article around the title is
    kept even when it is mostly links (a home page's list of articles)."""
    h1 = next(node.iter("h1"), None)
    if h1 is None:
        return set(), set()
    parent = h1.getparent()
    return set(h1.iterancestors()), set(parent) if parent is not None else set()


def _prune_chrome(node) -> None:
    """Drop navigation chrome and link blocks from ``node`` (the body: no main element)."""
    ancestors, siblings = _protected(node)
    link_lengths: dict = {}
    for el in list(node.iter()):
        if not isinstance(el.tag, str) or el is node or el in ancestors \
                or el.getparent() is None:
            continue
        if _is_chrome(el) or (el.tag == "a" and _between_blocks(el)):
            el.drop_tree()
        elif el.tag in LINK_BLOCK_TAGS and el not in siblings and el.getparent() not in siblings:
            length, share = _link_text_share(el, link_lengths)
            if (el.tag == "li" and share > 0.99) or (length >= 40 and share > 0.6):
                el.drop_tree()


def _between_blocks(a) -> bool:
    """A bare link standing between paragraphs, not inside running text: navigation."""
    parent = a.getparent()
    if (a.get("name") or "").startswith(DEFINITION_ANCHOR):
        return False  # no link: where a definition is (_defined_by_anchor)
    if parent is None or parent.tag not in ("div", "section", "body") or (a.tail or "").strip():
        return False
    prev = a.getprevious()
    before = parent.text if prev is None else prev.tail
    if (before or "").strip():
        return False
    return any(child.tag in ("p", "h1", "h2", "h3") for child in parent)


def _main_node(root):
    for xpath in ("//main", "//article", "//*[@role='main']"):
        found = root.xpath(xpath)
        if found:
            node = max(found, key=lambda n: len(n.text_content()))
            ancestors, _ = _protected(node)
            for el in list(node.iter(*CHROME_IN_MAIN_TAGS)):
                if el not in ancestors and el.getparent() is not None:
                    el.drop_tree()
            return node
    # a frameset page has no body: its text is its <noframes> fallback's, not its title's
    body = root.find("body")
    if body is None:
        body = root.find("frameset")
    node = body if body is not None else root
    _prune_chrome(node)
    return node


#: Primary subtags a URL path may name a page's language by (``/fr/``, ``/pt-BR/``,
#: ``index.html.de``): languages documentation is translated into. ``id`` (Indonesian)
#: counts only with a region (``id-ID``): alone it is far more often a record's id.
URL_LANGUAGES = frozenset(
    "ar bg bn ca cs da de el en eo es et eu fa fi fr ga gl he hi hr hu hy id it ja ka kk ko "
    "lt lv mk ml mr ms nb nl nn no pl pt ro ru sk sl sq sr sv ta te th tr uk ur vi zh".split()
)
#: Languages written in a script other than Latin: a URL naming one is believed when that
#: script is at least ``NON_LATIN_SHARE`` of the text's letters.
NON_LATIN_LANGUAGES = frozenset(
    "ar be bg bn el fa he hi hy ja ka kk km ko mk ml mn mr ne ru sr ta te th uk ur zh".split()
)
NON_LATIN_SHARE = 0.1
#: A URL naming a Latin-script language is believed when the text scores at most this much
#: worse per character for it than for the language guessed (py3langid log-probabilities;
#: translated pages with English commands score about 0.0, English copies 0.1 to 1).
URL_LANGUAGE_MARGIN = 0.05
_URL_LANG_RE = re.compile(r"([a-z]{2})(?:[-_]([A-Za-z]{2}|[A-Za-z]{4}))?")
_FILE_SUFFIXES = frozenset({"html", "htm", "shtml", "xhtml", "php"})


def _url_language_part(url: str) -> tuple[str, str]:
    """The language a URL names and the URL without that part (``("", url)`` for none)."""
    parts = urlsplit(url)
    segments = parts.path.split("/")
    named = [i for i, s in enumerate(segments) if s]
    directories = named if parts.path.endswith("/") else named[:-1]
    for i in directories[:2]:
        m = _URL_LANG_RE.fullmatch(segments[i])
        if m and m.group(1) in URL_LANGUAGES and (m.group(2) or m.group(1) != "id"):
            path = "/".join(segments[:i] + segments[i + 1:])
            return m.group(1), urlunsplit(parts._replace(path=path))
    name = segments[named[-1]].split(".") if named else []
    if len(name) >= 3 and name[-2].lower() in _FILE_SUFFIXES:
        code = name[-1].lower().replace("_", "-").split("-")[0]
        if code in URL_LANGUAGES:
            path = "/".join(segments[:named[-1]] + [".".join(name[:-1])])
            return code, urlunsplit(parts._replace(path=path))
    return "", url


def url_language(url: str) -> str:
    """The language a URL's path names: its first or second segment as a language tag
    (``/fr/``, ``/docs/pt-BR/``) or a content-negotiation suffix (``index.html.fr``);
    ``""`` when it names none."""
    return _url_language_part(url)[0]


def url_without_language(url: str) -> str:
    """The URL without the language its path names: what translations of a page share
    (``/fr-FR/x.html`` and ``/en-US/x.html`` -> ``/x.html``); ``""`` when it names none."""
    code, rest = _url_language_part(url)
    return rest if code else ""


def _language_sample(text: str) -> str:
    size, spots = LANG_SAMPLE_CHARS, LANG_SAMPLE_SPOTS
    if len(text) <= size * spots:
        return text
    step = len(text) // (spots + 1)
    return " ".join(text[step * i - size // 2:][:size] for i in range(1, spots + 1))


def page_language(declared: str, content_language: str, url: str, text: str) -> str:
    """A page's language (primary subtag): ``<html lang>``, else a single-language
    ``Content-Language`` header, else the text's, where a language the URL names wins
    when the text fits it too (a translated page full of English commands), but not over
    a text plainly in another language (an English copy in a translation's tree)."""
    for tag in (declared, "" if "," in content_language else content_language):
        code = tag.strip().lower().replace("_", "-").split("-")[0][:8]
        if code:
            return code
    guessed = detect_language(text)
    hinted = url_language(url)
    if not hinted or not guessed or hinted == guessed:
        return guessed or hinted
    if hinted in NON_LATIN_LANGUAGES:
        letters = [c for c in text if c.isalpha()]
        foreign = sum(1 for c in letters if not unicodedata.name(c, "LATIN").startswith("LATIN"))
        return hinted if foreign >= NON_LATIN_SHARE * max(1, len(letters)) else guessed
    import py3langid

    sample = _language_sample(text)
    scores = dict(py3langid.rank(sample))
    gap = (scores.get(guessed, 0.0) - scores.get(hinted, float("-inf"))) / max(1, len(sample))
    return hinted if gap <= URL_LANGUAGE_MARGIN else guessed


def _holds(html: str | bytes, marker: str) -> bool:
    return (marker if isinstance(html, str) else marker.encode()) in html


def _headings(node, methods: bool = False, anchors: bool = False) -> str:
    """The text of ``node``'s headings and definition terms, one a line; not the terms
    that are a table of contents' entries (:func:`_lists_another_page`). With ``methods``,
    RDoc's method headings too (:func:`_method_heading`); with ``anchors``, after them,
    the names texinfo's anchors define (:func:`_defined_by_anchor`), up to
    ``HEADINGS_CHARS`` more (Gambit's manual defines 990 names on one page)."""
    tags = (*HEADING_TAGS, "div") if methods else HEADING_TAGS
    lines = (_method_heading(el) if el.tag == "div" else _clean(el.text_content())
             for el in node.iter(*tags) if el.tag != "dt" or not _lists_another_page(el))
    headings = "\n".join(line for line in lines if line)[:HEADINGS_CHARS]
    if not anchors:
        return headings
    defined = "\n".join(filter(None, map(_defined_by_anchor, node.iter("a", "span"))))
    return "\n".join(filter(None, (headings, defined[:HEADINGS_CHARS])))


def _defined_by_anchor(el) -> str:
    """The name an anchor defines, else ``""``: texi2html's ``<a
    name="Definition_of_mutex-lock!">`` before a definition's table (Gambit), or texinfo's
    index anchor of a name beside the ``<pre>`` declaring it (FFTW's ``<pre>int
    fftw_export_wisdom_to_filename(const char *filename);</pre>`` then ``<span
    id="index-fftw_005fexport_005fwisdom_005fto_005ffilename">``: an index anchor stands on
    every page mentioning the name, the declaration on the page defining it), or one
    beginning a list item that opens with the name (:func:`_leads_item_naming`)."""
    name = el.get("name") or el.get("id") or ""
    if name.startswith(DEFINITION_ANCHOR):
        return _clean(unquote(name[len(DEFINITION_ANCHOR):]))
    if not name.startswith(INDEX_ANCHOR) or len(el) or _clean(el.text or ""):
        return ""
    defined = _INDEX_REPEAT.sub("", _INDEX_CODE.sub(
        lambda m: chr(int(m.group(1), 16)), name[len(INDEX_ANCHOR):]))
    if not defined or not _IDENTIFIER.fullmatch(defined):
        return ""
    for block in (_beside(el, "getprevious"), _beside(el, "getnext")):
        if block is not None and any(defined in _DECLARATION.findall(pre.text_content())
                                     for pre in block.iter("pre")):
            return defined
    return defined if _leads_item_naming(el, defined) else ""


def _leads_item_naming(el, name: str) -> bool:
    """Whether the index anchor ``el`` begins a list item that opens with ``name`` as
    code: texinfo's ``@item @code{FFTW_MEASURE}`` of an ``@itemize`` with its ``@vindex``,
    ``<li><span id="index-FFTW_005fMEASURE-2"></span><code>FFTW_MEASURE</code> tells FFTW
    to...``, the item describing the name (Planner Flags); an anchor among a paragraph's
    words, where a page mentions the name, begins no item."""
    item = el.getparent()
    if item is None or item.tag != "li" or _clean(item.text or ""):
        return False
    after = _beside(el, "getnext")
    if after is None or after.tag != "code" or _clean(after.text_content()) != name:
        return False
    run = [*el.itersiblings(preceding=True)]  # the anchors before it in the item
    node = el
    while node is not after:
        run.append(node)
        node = node.getnext()
    return all(_is_empty_anchor(node) and not _clean(node.tail or "") for node in run)


def _is_empty_anchor(node) -> bool:
    """Whether ``node`` is an anchor without content (index anchors stand in runs)."""
    return node.tag in ("a", "span") and not len(node) and not _clean(node.text or "")


def _beside(el, step: str):
    """The first element before (``step`` "getprevious") or after ``el`` that is not an
    empty anchor (index anchors stand in runs), or None."""
    node = getattr(el, step)()
    while node is not None and _is_empty_anchor(node):
        node = getattr(node, step)()
    return node


def _method_heading(div) -> str:
    """The method's name and arguments when ``div`` is RDoc's heading of a method, else
    ``""``. RDoc (Darkfish) heads no method with ``<h1>``-``<h6>``: it writes ``<div
    class="method-detail" id="method-c-register"><div class="method-heading"><span
    class="method-name">register</span>``. Among the headings, the class page defines
    the methods it documents (the ``defines`` signal: ``Extensions.register``); the
    toggle's "click to toggle source" is left out."""
    if METHOD_HEADING_CLASS not in (div.get("class") or "").split():
        return ""
    return _clean(" ".join(span.text_content() for span in div.iter("span")
                           if METHOD_TOGGLE_CLASS not in (span.get("class") or "").split()))


def _lists_another_page(dt) -> bool:
    """Whether a definition term is an entry of a table of contents: it begins with its
    first link, and that link leads to another page (DocBook's contents: ``<dt><a
    href="fcpatternreference.html">FcPatternReference</a> -- Increment pattern reference
    count</dt>``). What it names is defined on that page, not on this one; a term
    defined here holds no link or begins otherwise (Sphinx's ``[source]`` link ends a
    signature)."""
    link = next((a for a in dt.iter("a") if a.get("href")), None)
    if link is None or link.get("href", "").startswith("#"):
        return False
    text = _clean(link.text_content())
    return bool(text) and _clean(dt.text_content()).startswith(text)


def _names_media(url: str) -> bool:
    """Whether the path of ``url`` ends in a ``FRAME_MEDIA_EXTENSIONS`` extension."""
    name = urlsplit(url).path.rpartition("/")[2]
    return "." in name and name.rpartition(".")[2].lower() in FRAME_MEDIA_EXTENSIONS


def _read_noframes(root) -> None:
    """Parse the markup of each ``<noframes>`` fallback into elements in place: libxml2
    keeps it as raw text, so the links of a frameset's fallback (its non-frame version) were
    lost and its tags read as words. It is what a client without frames shows, a crawler's
    view of the page."""
    todo = list(root.iter("noframes"))
    while todo:
        el = todo.pop()
        raw = el.text
        if len(el) or not raw or "<" not in raw:
            continue
        try:
            doc = lxml.html.document_fromstring(raw, parser=HTML_PARSER)
        except etree.ParserError:  # no element, no text: comments alone
            el.text = None
            continue
        except ValueError:
            continue
        body = doc.find("body")
        content = body if body is not None else doc
        el.text = content.text
        el.extend(list(content))
        todo.extend(inner for inner in el.iter("noframes") if inner is not el)


def extract(html: str | bytes, url: str, x_robots_tag: str = "",
            content_language: str = "") -> Extracted:
    """Extract a page. Never raises on bad HTML: returns what could be read.
    ``content_language``: the response's ``Content-Language`` header."""
    out = Extracted()
    if x_robots_tag:
        out.noindex, out.nofollow = _robots_flags(x_robots_tag)
    if not html or not (html.strip() if isinstance(html, str) else html.strip()):
        return out
    if isinstance(html, str):
        # lxml refuses a str that still carries an XML encoding declaration (XHTML pages).
        html = _XML_DECLARATION.sub("", html, count=1)
    try:
        root = lxml.html.document_fromstring(html, parser=HTML_PARSER)
    except (etree.ParserError, ValueError):
        return out
    _read_noframes(root)
    from crawler.quality.judges import hidden_words_in, might_hide

    if might_hide(html):
        out.hidden_words = hidden_words_in(root)

    base = url
    for el in root.iter("base", "title", "meta", "link", "html"):
        tag = el.tag
        if tag == "base" and el.get("href"):
            try:
                base = canonicalize(el.get("href"), base=url)
            except InvalidURL:
                pass
        elif tag == "title" and not out.title:
            out.title = _clean(el.text_content())
        elif tag == "html":
            declared = el.get("lang") or el.get("{http://www.w3.org/XML/1998/namespace}lang")
            out.lang = (declared or "").split("-")[0].lower()[:8]
        elif tag == "meta":
            name = (el.get("name") or el.get("property") or "").lower()
            content = el.get("content") or ""
            if name in ("description", "og:description") and not out.description:
                out.description = _clean(content)[:500]
            elif name in ("robots", "googlebot"):
                ni, nf = _robots_flags(content)
                out.noindex |= ni
                out.nofollow |= nf
            elif (el.get("http-equiv") or "").lower() == "refresh":
                m = re.search(r"url\s*=\s*['\"]?([^'\";]+)", content, re.I)
                if m:
                    try:
                        out.refresh_url = canonicalize(m.group(1), base=url)
                    except InvalidURL:
                        pass
        elif tag == "link" and "canonical" in (el.get("rel") or "").lower().split():
            href = el.get("href")
            if href and not out.canonical:
                try:
                    out.canonical = canonicalize(href, base=base)
                except InvalidURL:
                    pass

    seen: set[str] = set()
    for a in root.iter(*LINK_TAGS):
        framed = a.tag in FRAME_TAGS
        href = a.get("src" if framed else "href")
        if not href or href.startswith(NOT_LINKS):
            continue
        try:
            target = canonicalize(href, base=base)
        except InvalidURL as exc:
            out.invalid_links[exc.reason] = out.invalid_links.get(exc.reason, 0) + 1
            continue
        if target in seen or (framed and _names_media(target)):
            continue
        seen.add(target)
        if framed:
            out.links.append(Link(target, _clean(a.get("title") or a.get("name") or "")[:200]))
        else:
            rel = (a.get("rel") or "").lower().split()
            # an anchor without child nodes (most) has its text alone: text_content() is
            # an XPath string() of it, ~5 times the CPU
            anchor = (_clean(a.text_content() if len(a) else a.text or "")[:200]
                      or _clean(a.get("title") or a.get("alt") or ""))
            out.links.append(Link(target, anchor, "nofollow" in rel or "ugc" in rel))
        if len(out.links) >= MAX_LINKS:
            break

    scripts = sum(1 for _ in root.iter("script"))
    for el in root.iter(*DROP_TAGS):
        if el.getparent() is not None:
            el.drop_tree()
    main = _main_node(root)
    out.text, out.sections = _text_of(main)
    out.headings = _headings(main, methods=_holds(html, METHOD_HEADING_CLASS),
                             anchors=_holds(html, DEFINITION_ANCHOR) or _holds(html, INDEX_ANCHOR))
    out.client_rendered = (
        scripts > 0
        and len(out.text) < CLIENT_RENDERED_MAX_TEXT
        and bool(root.xpath(APP_ROOT_XPATH))
    )
    if not out.title:
        h1 = root.find(".//h1")
        if h1 is not None:
            out.title = _clean(h1.text_content())
    out.title = out.title[:300]
    out.lang = page_language(out.lang, content_language, url, out.text)
    return out


#: The media types the crawl reads as HTML; a response without a Content-Type is read too.
HTML_TYPES = ("text/html", "application/xhtml+xml")


class NotAPage(ValueError):
    """A response the crawl makes no page of; ``reason`` is ``non_html`` or ``binary``."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def media_type(content_type: str) -> str:
    """The media type of a Content-Type value, lower-case, without parameters."""
    return content_type.split(";")[0].strip().lower()


def item_from_response(
    url: str,
    status: int,
    body: bytes,
    fetched_at: float,
    *,
    content_type: str = "",
    x_robots: str = "",
    language: str = "",
    truncated: bool = False,
    **fields,
) -> tuple[Extracted, PageItem]:
    """The extracted page and the ``PageItem`` of a fetched response: what the spider
    yields and the rebuild from WARC replays, so both make the same item of the same bytes.

    ``content_type``, ``x_robots`` and ``language`` are the response's Content-Type,
    X-Robots-Tag and Content-Language headers; ``truncated`` whether the body was cut at the
    size limit; ``fields`` more ``PageItem`` fields (``depth``, ``warc_file``...). Raises
    ``NotAPage`` for a body that is no HTML page (another media type, binary bytes).
    ``max_words`` (in ``fields``) goes to ``page_item``.
    """
    ctype = media_type(content_type)
    if ctype and ctype not in HTML_TYPES:
        raise NotAPage("non_html")
    if looks_binary(body):
        raise NotAPage("binary")
    html, _encoding = decode_html(body, content_type)
    page = extract(html, url, x_robots, language)
    item = page_item(page, url, status, fetched_at, content_type=ctype, truncated=truncated,
                     hidden_words=page.hidden_words, **fields)
    return page, item


def cut_words(text: str, max_words: int) -> str:
    """``text`` up to the end of its ``max_words``-th word (``\\w+``), whole when it has
    no more; the words are counted only in a text long enough to have more."""
    if not max_words or len(text) < 2 * max_words:  # n words take 2n - 1 characters
        return text
    last = next(islice(_WORD_RE.finditer(text), max_words - 1, None), None)
    return text if last is None else text[:last.end()]


def page_item(page: Extracted, fetched_url: str, status: int, fetched_at: float, *,
              max_words: int | None = None, **fields) -> PageItem:
    """The ``PageItem`` of an extracted page. Its document URL is the fetched URL
    canonicalized, or the page's ``rel=canonical`` when that names the same host. Its text
    is the page's first ``max_words`` words (default ``PAGE_MAX_WORDS``): what every
    pipeline reads and the index keeps, so no page costs them more than that many words."""
    from crawler.items import PageItem
    from crawler.options import setting
    from crawler.urls import host_of

    url = canonicalize(fetched_url)
    if page.canonical and host_of(page.canonical) == host_of(url):
        url = page.canonical
    if max_words is None:
        max_words = setting(None, "PAGE_MAX_WORDS", int)
    content = {f.name: getattr(page, f.name) for f in dataclass_fields(PageContent)}
    content["text"] = cut_words(page.text, max_words)
    if len(content["text"]) < len(page.text):
        content["sections"] = [section for section in page.sections
                               if section.start < len(content["text"])]
    return PageItem(url=url, fetched_url=fetched_url, host=host_of(url), status=status,
                    fetched_at=fetched_at, **content, **fields)
