"""Response -> extracted page: title, main text, description, language, links, robots meta.

One lxml parse per page. Main text prefers ``<main>``/``<article>``; otherwise the body
minus navigation chrome and link-dense blocks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import lxml.html
from lxml import etree

from crawler.items import Link
from crawler.urls import InvalidURL, canonicalize

DROP_TAGS = ("script", "style", "noscript", "template", "svg", "canvas", "iframe", "object")
CHROME_TAGS = ("nav", "header", "footer", "aside", "form", "menu")
SPACED_INLINE_TAGS = frozenset(("a", "img", "button", "label", "input", "select", "option"))
CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffd]")
BLOCK_TAGS = frozenset(
    "p div section article main h1 h2 h3 h4 h5 h6 li ul ol table tr td th pre blockquote "
    "dd dt dl figcaption br hr address".split()
)
CHROME_HINT = re.compile(
    r"(^|[\s_-])(nav|navbar|menu|footer|header|sidebar|breadcrumb|cookie|banner|share|social|"
    r"related|comment|advert|ads?|promo|widget|subscribe)([\s_-]|$)",
    re.I,
)
WS = re.compile(r"\s+")
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
MAX_LINKS = 1000


@dataclass
class Extracted:
    """What a page says about itself."""

    title: str = ""
    text: str = ""
    description: str = ""
    lang: str = ""
    canonical: str = ""
    links: list[Link] = field(default_factory=list)
    noindex: bool = False
    nofollow: bool = False
    refresh_url: str = ""


def _clean(s: str) -> str:
    return WS.sub(" ", s).strip()


def _robots_flags(value: str) -> tuple[bool, bool]:
    tokens = {t.strip().lower() for t in value.replace(";", ",").split(",")}
    none = "none" in tokens
    return none or "noindex" in tokens, none or "nofollow" in tokens


def _text_of(node) -> str:
    """Visible text of ``node`` with block elements separated by newlines."""
    parts: list[str] = []
    for event, el in etree.iterwalk(node, events=("start", "end")):
        if event == "start":
            if el.text and isinstance(el.tag, str):
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
    lines = (_clean(line) for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


def _is_chrome(el) -> bool:
    if el.tag in CHROME_TAGS:
        return True
    hint = f"{el.get('class', '')} {el.get('id', '')} {el.get('role', '')}"
    return bool(hint.strip()) and bool(CHROME_HINT.search(hint))


def _link_dense(el) -> bool:
    text = _clean(el.text_content())
    if len(text) < 40:
        return False
    link_text = sum(len(_clean(a.text_content())) for a in el.iter("a"))
    return link_text / len(text) > 0.6


def _main_node(root):
    for xpath in ("//main", "//article", "//*[@role='main']"):
        found = root.xpath(xpath)
        if found:
            return max(found, key=lambda n: len(n.text_content()))
    body = root.find("body")
    node = body if body is not None else root
    for el in list(node.iter()):
        if not isinstance(el.tag, str) or el is node:
            continue
        parent = el.getparent()
        if parent is None:
            continue
        if _is_chrome(el) or (
            el.tag in ("div", "ul", "ol", "section", "table") and _link_dense(el)
        ):
            el.drop_tree()
    return node


def extract(html: str | bytes, url: str, x_robots_tag: str = "") -> Extracted:
    """Extract a page. Never raises on bad HTML: returns what could be read."""
    out = Extracted()
    if x_robots_tag:
        out.noindex, out.nofollow = _robots_flags(x_robots_tag)
    if not html or not (html.strip() if isinstance(html, str) else html.strip()):
        return out
    if isinstance(html, str):
        # lxml refuses a str that still carries an XML encoding declaration (XHTML pages).
        html = _XML_DECLARATION.sub("", html, count=1)
    try:
        root = lxml.html.document_fromstring(html)
    except (etree.ParserError, ValueError):
        return out

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
            out.lang = (el.get("lang") or "").split("-")[0].lower()[:8]
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
    for a in root.iter("a", "area"):
        href = a.get("href")
        if not href or href.startswith(("#", "javascript:", "mailto:", "tel:", "data:")):
            continue
        try:
            target = canonicalize(href, base=base)
        except InvalidURL:
            continue
        if target in seen:
            continue
        seen.add(target)
        rel = (a.get("rel") or "").lower().split()
        anchor = _clean(a.text_content())[:200] or _clean(a.get("title") or a.get("alt") or "")
        out.links.append(Link(target, anchor, "nofollow" in rel or "ugc" in rel))
        if len(out.links) >= MAX_LINKS:
            break

    for el in root.iter(*DROP_TAGS):
        if el.getparent() is not None:
            el.drop_tree()
    out.text = _text_of(_main_node(root))
    if not out.title:
        h1 = root.find(".//h1")
        if h1 is not None:
            out.title = _clean(h1.text_content())
    out.title = out.title[:300]
    return out
