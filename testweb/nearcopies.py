"""A deterministic labelled set of near-copies and template-sharing distinct pages.

Each article lives on a site (``newsN.test``) and may be copied to mirror hosts
(``mirrorM.newsN.test``). A copy is the same article with a different banner, ads
between paragraphs, a timestamp, the sidebar reordered and a few random word edits.
Distinct pages share their site's template (navigation, sidebar, footer); some are short,
so the shared template is a large part of their text, and some quote a paragraph of
another article. Pages with the same ``label`` are near-copies of each other; pages with
different labels are distinct. The test web serves these pages as mirror hosts.

``text`` is what the crawler's extractor (``crawler.extract``) reads as the main text;
``visible_text`` is all the visible text, boilerplate included (the hard case, for when
extraction lets the template through).
"""

from __future__ import annotations

import html
import itertools
import random
from dataclasses import dataclass
from itertools import accumulate

from crawler.extract import extract

_SYLLABLES = [
    c + v
    for c in ["", "b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z"]
    for v in ["a", "e", "i", "o", "u", "ai", "ou", "en", "ar", "is"]
]


@dataclass(frozen=True)
class LabelledPage:
    """One page of the set: ``text`` is its extracted main text, ``visible_text`` all of it."""

    url: str
    host: str
    label: str
    title: str
    html: str
    text: str
    visible_text: str
    copy: bool


@dataclass(frozen=True)
class _Site:
    host: str
    name: str
    nav: list[str]
    sidebar: list[str]
    footer: str


class _Writer:
    """Zipf-distributed pseudo-English over a fixed invented vocabulary."""

    def __init__(self, rng: random.Random, vocabulary: int = 20000):
        self.rng = rng
        seen: set[str] = set()
        self.words: list[str] = []
        while len(self.words) < vocabulary:
            word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.choice((1, 2, 2, 3, 3, 4))))
            if word and word not in seen:
                seen.add(word)
                self.words.append(word)
        self._cum = list(accumulate(1.0 / (rank + 1) ** 1.05 for rank in range(vocabulary)))

    def phrase(self, n: int) -> list[str]:
        return self.rng.choices(self.words, cum_weights=self._cum, k=n)

    def sentence(self) -> str:
        words = self.phrase(self.rng.randint(6, 22))
        return " ".join(words).capitalize() + "."

    def paragraph(self, n_words: int) -> str:
        sentences: list[str] = []
        count = 0
        while count < n_words:
            s = self.sentence()
            sentences.append(s)
            count += s.count(" ") + 1
        return " ".join(sentences)

    def title(self) -> str:
        return " ".join(self.phrase(self.rng.randint(3, 8))).title()


def main_text(page_html: str, url: str) -> str:
    """The main text the crawler extracts from a page."""
    return extract(page_html, url).text


def _edit(paragraphs: list[str], rng: random.Random, writer: _Writer, edits: int) -> list[str]:
    """Apply ``edits`` random word substitutions, insertions and deletions."""
    words = [p.split(" ") for p in paragraphs]
    for _ in range(edits):
        para = rng.randrange(len(words))
        if not words[para]:
            continue
        pos = rng.randrange(len(words[para]))
        op = rng.choice(("sub", "ins", "del"))
        if op == "sub":
            words[para][pos] = writer.phrase(1)[0]
        elif op == "ins":
            words[para].insert(pos, writer.phrase(1)[0])
        elif len(words[para]) > 1:
            del words[para][pos]
    return [" ".join(w) for w in words]


def _render(
    site: _Site,
    banner: str,
    stamp: str,
    title: str,
    paragraphs: list[str],
    ads: dict[int, str],
    sidebar: list[str],
) -> tuple[str, str]:
    """HTML and visible text of a page."""
    esc = html.escape
    body: list[str] = []
    text: list[str] = [banner, *site.nav]
    if stamp:
        text.append(stamp)
    text.append(title)
    for i, p in enumerate(paragraphs):
        body.append(f"<p>{esc(p)}</p>")
        text.append(p)
        if i in ads:
            body.append(f'<div class="ad">{esc(ads[i])}</div>')
            text.append(ads[i])
    text.extend(sidebar)
    text.append(site.footer)
    nav = "".join(f'<a href="/#{esc(n.lower().replace(" ", "-"))}">{esc(n)}</a>' for n in site.nav)
    side = "".join(f"<li>{esc(s)}</li>" for s in sidebar)
    time_html = f"<p><time>{esc(stamp)}</time></p>" if stamp else ""
    page = (
        f"<!doctype html><html><head><title>{esc(title)}</title></head><body>"
        f'<header><div class="banner">{esc(banner)}</div><nav>{nav}</nav></header>'
        f"<main><article><h1>{esc(title)}</h1>{time_html}{''.join(body)}</article></main>"
        f"<aside><ul>{side}</ul></aside><footer>{esc(site.footer)}</footer></body></html>"
    )
    return page, "\n".join(text)


def generate(
    articles: int = 600,
    short_pages: int = 200,
    max_copies: int = 3,
    sites: int = 8,
    seed: int = 5,
) -> list[LabelledPage]:
    """The labelled set, shuffled deterministically: same arguments, same pages, same order.

    ``articles`` long articles (300-1,200 words) get 0..``max_copies`` near-copies each;
    ``short_pages`` distinct short pages (60-150 words) share their site's template.
    """
    rng = random.Random(seed)
    writer = _Writer(rng)
    site_list = [
        _Site(
            host=f"news{i}.test",
            name=writer.title(),
            nav=[writer.title() for _ in range(8)],
            sidebar=[" ".join(writer.phrase(rng.randint(4, 9))) for _ in range(10)],
            footer=" ".join(writer.phrase(25)),
        )
        for i in range(sites)
    ]
    pages: list[LabelledPage] = []
    paragraphs_by_article: list[list[str]] = []
    serial = itertools.count()

    def page(site, host, label, title, paragraphs, copy, banner, stamp, ads, sidebar):
        n = next(serial)
        page_html, text = _render(site, banner, stamp, title, paragraphs, ads, sidebar)
        url = f"http://{host}/a/{n}.html"
        return LabelledPage(
            url, host, label, title, page_html, main_text(page_html, url), text, copy
        )

    def stamp() -> str:
        return (
            f"Updated 2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} "
            f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} UTC"
        )

    for a in range(articles):
        site = rng.choice(site_list)
        n_words = rng.randint(300, 1200)
        paragraphs = [writer.paragraph(rng.randint(40, 120)) for _ in range(max(1, n_words // 80))]
        if paragraphs_by_article and rng.random() < 0.2:
            # a distinct article quoting a paragraph of an earlier one
            quoted = rng.choice(rng.choice(paragraphs_by_article))
            paragraphs.insert(rng.randrange(len(paragraphs) + 1), quoted)
        paragraphs_by_article.append(paragraphs)
        title = writer.title()
        label = f"article-{a}"
        pages.append(
            page(
                site,
                site.host,
                label,
                title,
                paragraphs,
                False,
                site.name,
                stamp(),
                {},
                site.sidebar,
            )
        )
        for m in range(rng.randint(0, max_copies)):
            host = f"mirror{m + 1}.{site.host}"
            ads = {
                rng.randrange(len(paragraphs)): " ".join(writer.phrase(rng.randint(8, 25)))
                for _ in range(rng.randint(0, 3))
            }
            sidebar = site.sidebar[:]
            rng.shuffle(sidebar)
            n_edits = rng.randint(0, max(1, n_words // 150))
            edited = _edit(paragraphs, rng, writer, n_edits)
            banner = f"{writer.title()} mirror of {site.name}"
            copy = page(site, host, label, title, edited, True, banner, stamp(), ads, sidebar)
            pages.append(copy)
    for s in range(short_pages):
        site = rng.choice(site_list)
        paragraphs = [writer.paragraph(rng.randint(60, 150))]
        pages.append(
            page(
                site,
                site.host,
                f"short-{s}",
                writer.title(),
                paragraphs,
                False,
                site.name,
                stamp(),
                {},
                site.sidebar,
            )
        )
    rng.shuffle(pages)
    return pages


def calendar_trap(host: str, pages: int, seed: int = 7) -> list[LabelledPage]:
    """A trap host: ``pages`` calendar pages with the same text apart from their date."""
    rng = random.Random(seed)
    writer = _Writer(rng, vocabulary=2000)
    site = _Site(
        host,
        writer.title(),
        [writer.title() for _ in range(6)],
        [" ".join(writer.phrase(6)) for _ in range(8)],
        " ".join(writer.phrase(20)),
    )
    events = [writer.paragraph(60) for _ in range(3)]
    out = []
    for day in range(pages):
        date = f"Events on day {day} of the calendar"
        page_html, text = _render(site, site.name, date, "Calendar", events, {}, site.sidebar)
        url = f"http://{host}/cal/{day}"
        out.append(
            LabelledPage(
                url,
                host,
                "calendar",
                "Calendar",
                page_html,
                main_text(page_html, url),
                text,
                day > 0,
            )
        )
    return out


def by_host(pages: list[LabelledPage]) -> dict[str, dict[str, str]]:
    """``{host: {path: html}}`` for serving the pages from the test web."""
    served: dict[str, dict[str, str]] = {}
    for p in pages:
        path = p.url.split(p.host, 1)[1]
        served.setdefault(p.host, {})[path] = p.html
    return served
