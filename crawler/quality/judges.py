"""Is a fetched page worth having? Template traps, soft 404s and spam, page by page and host
by host.

Each judge is a plain object fed one page at a time (``crawler.quality.pipeline.QualityPipeline``
wires them into a crawl) and keeps bounded state in this process:

- ``TemplateTraps``: pages that differ only in dates, numbers or a few words (calendars,
  faceted navigation, endless pagination, session variants in the path) add almost no new
  content to their *URL pattern* (``crawler.quality.traps.url_pattern``: digits folded, query
  parameter names kept). Novelty = the share of a page's word 3-shingles, digits folded,
  that the pattern has not shown before; texts of any length count (a text shorter than a
  shingle is one shingle). A trap is an unbounded family of such pages: a pattern with
  ``min_pages`` pages of which ``trap_share`` added less than ``min_novelty`` and
  ``growth_share`` *grew its family* (the page was not linked by a page of its pattern
  before, or links a page of it that none did: a calendar's pages each link a day not
  linked before). A finite family whose pages all link each other (a member index, a page
  per initial, each with the same tab bar of initials) stops growing after its first page,
  and is no trap however alike its pages read.
- ``is_soft_404``: a 200 answer whose title or first line is a "not found" template.
- ``SpamJudge``: content and link features per page (keyword stuffing, title-term stuffing of
  thin pages, text hidden with CSS, thin pages linking mostly off-host, a host's link
  clique), a spam score per page and per host, and a host verdict with its evidence. A
  verdict cuts a whole host, so it needs evidence in proportion: ``sample_pages`` content
  pages (navigation pages, ``is_navigation``, are no evidence either way), rules that agree
  (a rule reading only a page's shape needs a second), and a stated confidence that the
  share of the host's pages tripping them reaches ``spam_share``. Every rule is named, so
  the admin sees why.
"""

from __future__ import annotations

import heapq
import math
import re
import sys
from collections import Counter, OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from itertools import islice
from typing import ClassVar, NamedTuple

import numpy as np
import xxhash

from crawler.bounded import RecentKeys
from crawler.options import Option
from crawler.quality.dedup.text import word_hash, word_hashes
from crawler.quality.dedup.text import words as lower_words
from crawler.quality.traps import url_pattern

#: The User-Agent of a cloaking probe: a page fetched again as a browser asks for it.
BROWSER_AGENT = ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
                 "Chrome/126.0 Safari/537.36")

#: Signal the spider sends with a probe's text: ``send_catch_log(browser_probe_fetched,
#: url=<the page's URL>, text=<main text served to a browser>)``.
browser_probe_fetched = object()

_WORD = re.compile(r"\w+")
_FOLDED_WORD = re.compile(r"[\w#]+")
#: An odd 64-bit constant (the golden ratio's) that mixes a shingle's word hashes in order.
_SHINGLE_MIX = np.uint64(0x9E3779B97F4A7C15)
_DIGITS = re.compile(r"\d+")
#: Where a URL's pattern stops being its literal text: a digit of its path, or its query.
_PATTERN_VARIES = re.compile(r"[\d?]")
_NOT_FOUND = re.compile(
    r"\b(404|not found|page (?:does not|doesn't|no longer) exists?|could not be found|"
    r"cannot be found|no longer available|nothing (?:was )?found)\b", re.I)
_HIDDEN_STYLE = re.compile(
    r"display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?:px|em|pt)?\s*(?:;|$)|"
    r"(?:left|top|text-indent)\s*:\s*-\d{3,}px", re.I)
_HIDDEN_ATTR_RE = (r"style\s*=\s*[\"'][^\"']*(?:display\s*:\s*none|visibility\s*:\s*"
                   r"hidden|font-size\s*:\s*0|-\d{3,}px)")
_HIDDEN_ATTR = re.compile(_HIDDEN_ATTR_RE.encode(), re.I)
# The same search, its first word spelled out in the letters re.I lets match it (the long s
# too): a search that starts from the letter s, not tried at every character of the page,
# 0.38 -> 0.21 ms a page.
_HIDDEN_ATTR_TEXT = re.compile(f"[sS\u017f][tT][yY][lL][eE](?i:{_HIDDEN_ATTR_RE[5:]})")
#: Words too common to say what a page is about (title-term density ignores them).
STOPWORDS = frozenset(
    "the of and to a in is it you that he was for on are with as i his they be at one have "
    "this from or had by not but what some we can out other were all there when up use your "
    "how said an each she which do their time if will way about many then them would like so "
    "these her long make thing see him two has look more day could go come did my no most who "
    "over know than call first may down been now find any new get just".split())


def folded_tokens(text: str, words: list[str] | None = None) -> list[str]:
    r"""Lower-cased words with every digit run folded to ``#`` (``words``: the ``\w+``
    words of the lower-cased text, when already split: the same tokens, without reading
    the text again)."""
    # each regex runs once over the whole text, not once a word: digits are word characters,
    # so a run folded in the text stays inside its word; a "#" of the text still separates
    if words is not None:
        return _DIGITS.sub("#", " ".join(words)).split(" ") if words else []
    return _FOLDED_WORD.findall(_DIGITS.sub("#", text.lower().replace("#", " ")))


class _FoldedHashes(dict):
    """Word -> the ``word_hash`` of its ``folded_tokens`` form, filled on first use and
    started over at ``max_size`` words (the size of ``word_hashes``' own cache): a page's
    split words are hashed folded without joining, folding and splitting them again."""

    max_size = 16_384

    def __missing__(self, word: str) -> int:
        if len(self) >= self.max_size:
            self.clear()
        value = self[word] = word_hash(_DIGITS.sub("#", word))
        return value


_folded_hashes = _FoldedHashes()


def template_shingles(text: str, size: int = 3, words: list[str] | None = None) -> np.ndarray:
    r"""The 64-bit hashes of the word ``size``-shingles of ``text``'s ``folded_tokens`` (one
    for a shorter text), as a ``uint64`` array: each word hashed once (xxh3, the same in
    every process, so an extraction worker computes them for the crawl process), a
    shingle's hash mixed from its words' in numpy (a hash per joined shingle cost 3 us a
    word). ``words``: the ``\w+`` words of the lower-cased text, when already split."""
    if words is not None and len(words) >= size:
        # a \w+ word holds no space: folded one by one, the words fold as the joined text
        words = np.fromiter(map(_folded_hashes.__getitem__, words), np.uint64, len(words))
    else:
        tokens = folded_tokens(text, words)
        if len(tokens) < size:
            if not tokens:
                return np.empty(0, dtype=np.uint64)
            return np.array([xxhash.xxh3_64_intdigest(" ".join(tokens).encode("utf-8"))],
                            dtype=np.uint64)
        words = word_hashes(tokens)
    n = len(words) - size + 1
    mixed = words[:n].copy()
    for k in range(1, size):
        mixed *= _SHINGLE_MIX  # wraps around modulo 2**64
        mixed ^= words[k:k + n]
    return mixed


@dataclass
class _Pattern:
    pages: int = 0
    stale: int = 0
    grew: int = 0
    shingles: set[int] = field(default_factory=set)


@dataclass(frozen=True)
class Novelty:
    """How much a page added to its URL pattern, and whether it grew the pattern's family
    (``grew``); ``trapped`` is set on the page that makes its pattern a trap (once per
    pattern)."""

    pattern: str
    novelty: float
    stale: bool
    trapped: bool = False
    grew: bool = False


def _url_key(url: str) -> int:
    return xxhash.xxh64_intdigest(url.encode("utf-8", "surrogatepass"))


def pattern_prefix(url: str) -> str:
    """The start of ``url`` that every URL of its pattern (``url_pattern``) shares with it
    when written with the same scheme: up to the first digit of its path, or its query."""
    path_at = url.find("/", url.find("//") + 2 if "//" in url else 0)
    if path_at < 0:
        return url
    varies = _PATTERN_VARIES.search(url, path_at)
    return url[:varies.start()] if varies else url


class TemplateTraps:
    """Per URL pattern: the share of each page's content that is new, and whether the
    pattern's family still grows (see the module)."""

    #: Setting -> option; the defaults are in crawler/settings.py.
    SETTINGS: ClassVar[dict[str, Option]] = {
        "QUALITY_TEMPLATE_MIN_NOVELTY": ("min_novelty", float),
        "QUALITY_TEMPLATE_MIN_PAGES": ("min_pages", int),
        "QUALITY_TEMPLATE_TRAP_SHARE": ("trap_share", float),
        "QUALITY_TEMPLATE_GROWTH_SHARE": ("growth_share", float),
        "QUALITY_TEMPLATE_MAX_PATTERNS": ("max_patterns", int),
        "QUALITY_TEMPLATE_MAX_SHINGLES": ("max_shingles", int),
        "QUALITY_TEMPLATE_SHINGLE_BUDGET": ("shingle_budget", int),
        "QUALITY_TEMPLATE_MAX_URLS": ("max_urls", int),
    }

    def __init__(self, *, min_novelty: float, min_pages: int, trap_share: float,
                 growth_share: float, max_patterns: int, max_shingles: int,
                 shingle_budget: int, max_urls: int):
        self.min_novelty = min_novelty
        self.min_pages = min_pages
        self.trap_share = trap_share
        self.growth_share = growth_share
        self.max_patterns = max_patterns
        self.max_shingles = max_shingles
        self.shingle_budget = shingle_budget
        self.max_urls = max_urls
        self._patterns: OrderedDict[str, _Pattern] = OrderedDict()
        self._shingles_held = 0
        # the URLs counted lately (xxh64): at least max_urls // 2, in fixed memory
        self._urls = RecentKeys(max(1, max_urls // 2))
        # the URLs known to their pattern's family: fetched, or linked from a page of it
        self._members = RecentKeys(max(1, max_urls // 2))
        self.trapped: set[str] = set()

    def _forget_oldest(self) -> None:
        _, forgotten = self._patterns.popitem(last=False)
        self._shingles_held -= len(forgotten.shingles)

    def observe(self, url: str, text: str, shingles: np.ndarray | None = None,
                links: Iterable[str] | None = None) -> Novelty | None:
        """Record one fetched page; None when this URL was already counted (a recrawl).
        ``shingles``: ``template_shingles(text)`` when already computed (by an extraction
        worker); ``links``: the page's outlinks (canonical URLs; without them a page grows
        its family only by not being known to it)."""
        key = _url_key(url)
        if not self._urls.add(key):
            return None  # counted lately: a recrawl
        pattern = url_pattern(url)
        state = self._patterns.get(pattern)
        if state is None:
            state = self._patterns[pattern] = _Pattern()
            if len(self._patterns) > self.max_patterns:
                self._forget_oldest()
        else:
            self._patterns.move_to_end(pattern)
        if shingles is None:
            shingles = template_shingles(text)
        shingles = set(shingles.tolist())
        new = shingles - state.shingles
        novelty = len(new) / len(shingles) if shingles else 0.0
        room = self.max_shingles - len(state.shingles)
        if room > 0 and new:
            added = len(state.shingles)
            state.shingles |= new if len(new) <= room else set(islice(new, room))
            self._shingles_held += len(state.shingles) - added
            while self._shingles_held > self.shingle_budget and len(self._patterns) > 1:
                self._forget_oldest()
        state.pages += 1
        # the first page of a pattern is its template: new by definition, never stale, and
        # the family it links is where the family starts
        stale = state.pages > 1 and novelty < self.min_novelty
        grew = self._grows(url, key, pattern, links) and state.pages > 1
        state.stale += stale
        state.grew += grew
        trapped = (pattern not in self.trapped and state.pages >= self.min_pages
                   and state.stale >= self.trap_share * state.pages
                   and state.grew >= self.growth_share * state.pages)
        if trapped:
            self.trapped.add(pattern)
        return Novelty(pattern, novelty, stale, trapped, grew)

    def _grows(self, url: str, key: int, pattern: str, links: Iterable[str] | None) -> bool:
        """Whether the page at ``url`` (``_url_key``: ``key``) grows its pattern's family:
        no page of the pattern linked it before, or it links a page of the pattern that none
        did. Its links of the pattern are known to the family from now on."""
        members = self._members
        grew = members.add(key)
        if links:
            prefix = pattern_prefix(url)
            for link in links:
                if not link.startswith(prefix):
                    continue
                link_key = _url_key(link)
                # a member already adds nothing whatever its pattern: most links of a page
                # are its siblings' too, and their pattern was most of the check's time
                if link_key not in members and url_pattern(link) == pattern:
                    grew |= members.add(link_key)
        return grew


def is_soft_404(title: str, text: str, max_tokens: int = 60) -> bool:
    """A 200 page that is a "not found" template: short, with "not found" (or the like)
    in its title or its first line."""
    if next(islice(_WORD.finditer(text), max_tokens, None), None) is not None:
        return False  # a word past the first max_tokens: not short
    first = text.strip().split("\n", 1)[0][:200]
    return bool(_NOT_FOUND.search(title or "") or _NOT_FOUND.search(first))


def text_overlap(a: str, b: str) -> float:
    """Jaccard similarity of the word sets of two texts (1 for two empty texts)."""
    wa, wb = set(_WORD.findall(a.lower())), set(_WORD.findall(b.lower()))
    if not wa and not wb:
        return 1.0
    return len(wa & wb) / len(wa | wb)


def hidden_words(body: bytes) -> int:
    """How many words of an HTML page sit in elements hidden with CSS (display:none,
    visibility:hidden, font-size:0, positioned far off screen); cheap for pages without."""
    if not might_hide(body):
        return 0
    import lxml.html

    try:
        root = lxml.html.fromstring(body)
    except (ValueError, lxml.etree.ParserError):
        return 0
    return hidden_words_in(root)


def might_hide(markup: str | bytes) -> bool:
    """Whether an HTML page has a style attribute that may hide text (cheap: no parse)."""
    if not markup:
        return False
    pattern = _HIDDEN_ATTR if isinstance(markup, bytes) else _HIDDEN_ATTR_TEXT
    return pattern.search(markup) is not None


def hidden_words_in(root) -> int:
    """``hidden_words`` of a page already parsed (lxml.html), before anything is dropped."""
    hidden = 0
    for el in root.xpath("descendant-or-self::*[@style]"):
        if _HIDDEN_STYLE.search(el.get("style")):
            hidden += len(_WORD.findall(el.text_content()))
    return hidden


@dataclass(frozen=True)
class PageSignals:
    """Content and link features of one page, and the spam rules it trips."""

    tokens: int
    top_share: float
    title_density: float
    hidden_share: float
    links: int
    offhost_share: float
    offhost_hosts: tuple[str, ...]
    rules: tuple[str, ...]
    #: A navigation page (``is_navigation``): no evidence about the host either way.
    navigation: bool = False

    @property
    def score(self) -> float:
        """0 (clean) .. 1 (trips every content rule): the page's spam score."""
        return min(1.0, len(self.rules) / 2)


class TextStats(NamedTuple):
    """What the spam rules read of a page's words: how many, the share of the three most
    frequent, and the share of its content words (stopwords left out) that are its title's
    terms."""

    words: int
    top_share: float
    title_density: float


def text_stats(title: str, text: str, words: list[str] | None = None) -> TextStats:
    r"""The ``TextStats`` of a page's ``title`` and ``text`` (``words``: its lower-cased
    ``\w+`` words, when already split)."""
    if words is None:
        words = lower_words(text)
    n = len(words)
    counts = Counter(words)
    # the three largest counts, whichever words hold them (most_common sorts the pairs)
    top_share = sum(heapq.nlargest(3, counts.values())) / n if n else 0.0
    terms = {w for w in lower_words(title)
             if w not in STOPWORDS and len(w) > 2 and not w.isdigit()}
    content = n - sum(counts[w] for w in STOPWORDS.intersection(counts))
    title_density = sum(counts[w] for w in terms) / content if content and terms else 0.0
    return TextStats(n, top_share, title_density)


#: rule name -> what the admin reads
RULES = {
    "keyword_stuffing": "a few words make up most of the text",
    "title_stuffing": "thin pages repeating their title's words",
    "hidden_text": "much of the text is hidden with CSS",
    "link_farm": "thin pages whose links go mostly to other hosts",
    "link_clique": "links mostly within a clique of hosts that link back",
    "doorway": "thin pages that all point to the same off-host page",
    "cloaking": "serves crawlers other content than browsers",
}


#: Rules that read deliberate manipulation: one of them, on enough pages, is a verdict. The
#: other rules read a page's shape (thin, link-heavy), which a real site's navigation and
#: short pages also have: a verdict on them needs a second rule to agree.
MANIPULATION_RULES = frozenset({"keyword_stuffing", "hidden_text", "cloaking"})
#: A navigation page has at most this many words of its own per link within its site.
NAV_WORDS_PER_LINK = 4
#: Under this confidence a verdict taken is contradicted by the host's later pages: lifted.
LIFT_CONFIDENCE = 0.5


def site_of(host: str) -> str:
    """The site a host belongs to: its last two labels (``de.example.org`` ->
    ``example.org``), so that a language selector linking to sibling hosts stays within it."""
    return ".".join(host.rsplit(".", 2)[-2:])


def is_navigation(tokens: int, links: int, onsite_links: int) -> bool:
    """A page that is there to lead elsewhere on its own site: no text of its own (a meta
    refresh, a frameset), or an index of links (a language selector, a table of contents,
    a site map) with at most ``NAV_WORDS_PER_LINK`` words per link within its site, most of
    its links staying there. Thin and link-heavy like a doorway, but no doorway."""
    if tokens == 0:
        return True
    return (onsite_links >= 2 and onsite_links >= 0.5 * links
            and tokens <= NAV_WORDS_PER_LINK * onsite_links)


def share_confidence(flagged: int, pages: int, share: float) -> float:
    """How sure one can be that at least ``share`` of a host's pages trip a rule when
    ``flagged`` of a sample of ``pages`` do: the posterior probability of a share >= ``share``
    from a uniform prior (Beta(flagged + 1, pages - flagged + 1)), which for whole numbers
    is P(Binomial(pages + 1, share) <= flagged)."""
    if pages <= 0:
        return 0.0
    n = pages + 1
    return min(1.0, sum(math.comb(n, k) * share ** k * (1 - share) ** (n - k)
                        for k in range(min(flagged, n) + 1)))


#: Entries of each of a host's link tallies kept when the budget shrinks them.
LINK_TALLY_KEEP = 8
#: Hosts the budget looks at, at most, per page observed.
BUDGET_STEPS = 8


class SpamJudge:
    """Spam features per page, aggregated per host into a verdict with its evidence.

    Navigation pages (``is_navigation``) are counted apart and are no evidence. A host is
    judged once it has ``sample_pages`` content pages; it is spam when (1) the rules agree:
    a manipulation rule (``MANIPULATION_RULES``) or two rules of any kind each hold on a
    sample that gives ``confidence`` that ``spam_share`` of the host's pages trip them
    (``share_confidence``; host-level rules such as a link clique or cloaking hold on every
    page they cover), and (2) the pages tripping any rule give that confidence too. The
    verdict is revised with every page.
    """

    #: Setting -> option; the defaults are in crawler/settings.py.
    SETTINGS: ClassVar[dict[str, Option]] = {
        "QUALITY_SPAM_SAMPLE_PAGES": ("sample_pages", int),
        "QUALITY_SPAM_SHARE": ("spam_share", float),
        "QUALITY_VERDICT_CONFIDENCE": ("confidence", float),
        "QUALITY_MAX_HOSTS": ("max_hosts", int),
        "QUALITY_MAX_LINK_TALLY": ("max_link_tally", int),
        "QUALITY_LINK_TALLY_BUDGET": ("link_tally_budget", int),
    }

    def __init__(self, *, sample_pages: int, spam_share: float, stuffing_share: float = 0.45,
                 title_density: float = 0.3, hidden_share: float = 0.3, thin_tokens: int = 80,
                 offhost_share: float = 0.6, min_links: int = 10, max_hosts: int,
                 max_link_tally: int, link_tally_budget: int = 0, confidence: float = 0.95):
        self.sample_pages = sample_pages
        self.spam_share = spam_share
        self.confidence = confidence
        self.stuffing_share = stuffing_share
        self.title_density = title_density
        self.hidden_share = hidden_share
        self.thin_tokens = thin_tokens
        self.offhost_share = offhost_share
        self.min_links = min_links
        self.max_hosts = max_hosts
        self.max_link_tally = max_link_tally
        self.link_tally_budget = link_tally_budget
        # least recently observed first
        self._hosts: OrderedDict[str, _HostTally] = OrderedDict()
        self._entries = 0  # linked hosts and link targets counted, over every host

    def page_signals(self, host: str, title: str, text: str, links: list[str],
                     hidden: int = 0, stats: TextStats | None = None) -> PageSignals:
        """The features and tripped rules of one page (``links``: its outlinks' hosts;
        ``hidden``: its words hidden with CSS, ``hidden_words``; ``stats``:
        ``text_stats(title, text)`` when already computed, by an extraction worker)."""
        n, top_share, title_density = stats or text_stats(title, text)
        hidden_share = hidden / max(n, hidden, 1)
        off = [h for h in links if h != host]
        off_share = len(off) / len(links) if links else 0.0
        site = site_of(host)
        onsite = sum(1 for h in links if h == host or site_of(h) == site)
        navigation = is_navigation(n, len(links), onsite)
        thin = n < self.thin_tokens
        rules = []
        if n >= 30 and top_share >= self.stuffing_share:
            rules.append("keyword_stuffing")
        if thin and n >= 20 and title_density >= self.title_density:
            rules.append("title_stuffing")
        if hidden_share >= self.hidden_share:
            rules.append("hidden_text")
        if thin and len(links) >= self.min_links and off_share >= self.offhost_share:
            rules.append("link_farm")
        if navigation:  # its shape is its job; only text hidden from people counts
            rules = [r for r in rules if r == "hidden_text"]
        return PageSignals(n, top_share, title_density, hidden_share, len(links), off_share,
                           tuple(sorted(set(off))), tuple(rules), navigation)

    def observe(self, host: str, signals: PageSignals, offhost_targets: list[str]) -> None:
        """Count one page of ``host`` (``offhost_targets``: its off-host link URLs)."""
        tally = self._tally(host)
        self._hosts.move_to_end(host)
        if signals.navigation and not signals.rules:
            tally.navigation += 1
            return
        tally.pages += 1
        tally.flagged += bool(signals.rules)
        tally.rules.update(signals.rules)
        thin = signals.tokens < self.thin_tokens
        tally.thin += thin
        before = tally.entries
        tally.out_hosts.update(sys.intern(h) for h in signals.offhost_hosts)
        tally.out_total += len(signals.offhost_hosts)
        if thin:  # a doorway is thin pages sending to one target: the targets of thin pages
            tally.targets.update({xxhash.xxh64_intdigest(url.encode("utf-8", "surrogatepass"))
                                  for url in offhost_targets})
        _prune(tally.out_hosts, self.max_link_tally)
        _prune(tally.targets, self.max_link_tally)
        self._entries += tally.entries - before
        self._keep_budget(host)

    def _keep_budget(self, current: str) -> None:
        """Past ``link_tally_budget`` entries over every host, shrink the link tallies of
        the hosts observed least lately to their ``LINK_TALLY_KEEP`` most counted entries
        of each (what the rules read: a doorway's target, a clique's hosts; ``out_total``
        stays exact), each then sent to the back of the line; a few hosts a page, so the
        cost stays constant. No host is forgotten for it (``max_hosts`` does that): past
        ``link_tally_budget / (2 * LINK_TALLY_KEEP)`` hosts, that floor is the bound."""
        for _ in range(BUDGET_STEPS):
            if not self.link_tally_budget or self._entries <= self.link_tally_budget:
                return
            host, tally = next(iter(self._hosts.items()))
            if host == current:
                return
            before = tally.entries
            _shrink(tally.out_hosts, LINK_TALLY_KEEP)
            _shrink(tally.targets, LINK_TALLY_KEEP)
            self._entries -= before - tally.entries
            self._hosts.move_to_end(host)

    def pages(self, host: str) -> int:
        """How many content pages of ``host`` were observed (navigation pages left out)."""
        tally = self._hosts.get(host)
        return 0 if tally is None else tally.pages

    def note_cloaking(self, host: str) -> None:
        """Record that ``host`` answered a browser with other content than the crawler."""
        self._tally(host).cloaking = True

    def _tally(self, host: str) -> _HostTally:
        tally = self._hosts.get(host)
        if tally is None:
            tally = self._hosts[host] = _HostTally()
            if len(self._hosts) > self.max_hosts:
                _, forgotten = self._hosts.popitem(last=False)
                self._entries -= forgotten.entries
        return tally

    def verdict(self, host: str) -> HostVerdict | None:
        """The host's verdict once it has ``sample_pages`` content pages (else None)."""
        tally = self._hosts.get(host)
        if tally is None or tally.pages < self.sample_pages:
            return None
        pages = tally.pages
        reasons: dict[str, int] = dict(tally.rules)
        thin_enough = tally.thin >= self.spam_share * pages
        clique = self._clique(host, tally)
        if clique and thin_enough:
            reasons["link_clique"] = tally.thin
        common = tally.targets.most_common(1)  # (xxh64 of the URL, thin pages)
        if common and thin_enough and common[0][1] >= 0.8 * tally.thin:
            reasons["doorway"] = common[0][1]
        if tally.cloaking:
            reasons["cloaking"] = pages
        held = {rule: round(share_confidence(n, pages, self.spam_share), 4)
                for rule, n in reasons.items()}
        agreeing = sorted(rule for rule, c in held.items() if c >= self.confidence)
        flagged = max([tally.flagged, *(reasons[k] for k in ("link_clique", "doorway",
                                                             "cloaking") if k in reasons)])
        flagged = min(flagged, pages)
        confidence = share_confidence(flagged, pages, self.spam_share)
        verdict = HostVerdict(host, False, round(flagged / pages, 3), pages, reasons,
                              tuple(clique), confidence=round(confidence, 4),
                              navigation=tally.navigation, agreeing=tuple(agreeing),
                              rule_confidence=held)
        if verdict.agreed and confidence >= self.confidence:
            return replace(verdict, spam=True)
        return verdict

    def _clique(self, host: str, tally: _HostTally) -> list[str]:
        """Hosts ``host`` links to most that link back to it, when they take most of its
        off-host links."""
        out = tally.out_total
        if not out:
            return []
        back = [h for h in tally.out_hosts
                if (other := self._hosts.get(h)) is not None and host in other.out_hosts]
        if len(back) >= 2 and sum(tally.out_hosts[h] for h in back) >= 0.8 * out:
            return sorted(back)
        return []


def _prune(counts: Counter, cap: int) -> None:
    """Keep a host's link tally bounded: past ``cap`` entries, those counted no more than
    the ``cap // 2 + 1``-th most counted are forgotten (the others keep their exact counts;
    when the top half all tie, its first-counted entries stay). The rules read the most
    counted entries (a doorway's one target, a clique's hosts), which a host's pages keep
    linking to, so they survive; what goes is the long tail of links seen once or twice,
    which otherwise grows with every page. A target needs two pages between prunes to stay:
    with ``cap`` well above a page's off-host links, it has them."""
    if not cap or len(counts) <= cap:
        return
    ranked = counts.most_common()
    cut = ranked[cap // 2][1]
    kept = [(key, n) for key, n in ranked if n > cut] or ranked[:max(cap // 2, 1)]
    counts.clear()
    counts.update(dict(kept))


def _shrink(counts: Counter, keep: int) -> None:
    """Keep the entries counted more than the ``keep + 1``-th most counted (at most
    ``keep``; when they all tie, the first ``keep`` counted)."""
    if len(counts) <= keep:
        return
    ranked = counts.most_common()
    cut = ranked[keep][1]
    kept = [(key, n) for key, n in ranked if n > cut] or ranked[:keep]
    counts.clear()
    counts.update(dict(kept))


@dataclass
class _HostTally:
    """One host's counts; ``out_hosts`` by host name (interned), ``targets`` by the xxh64
    of the URL; ``out_total`` every off-host link counted (pruning leaves it)."""

    pages: int = 0  # content pages: navigation pages are counted apart
    navigation: int = 0
    flagged: int = 0
    thin: int = 0
    cloaking: bool = False
    out_total: int = 0
    rules: Counter = field(default_factory=Counter)
    out_hosts: Counter = field(default_factory=Counter)
    targets: Counter = field(default_factory=Counter)

    @property
    def entries(self) -> int:
        return len(self.out_hosts) + len(self.targets)


@dataclass(frozen=True)
class HostVerdict:
    """A host's spam verdict and its evidence: ``score`` is the share of its content pages
    (``pages``; ``navigation`` pages more were left out) that trip a rule (or a host
    rule's), ``confidence`` how sure the judge is that ``spam_share`` of its pages do
    (``share_confidence``), ``reasons`` rule -> pages, ``rule_confidence`` the same for
    each rule alone, ``agreeing`` the rules that hold on their own, ``clique`` the hosts of
    its link clique."""

    host: str
    spam: bool
    score: float
    pages: int
    reasons: dict[str, int]
    clique: tuple[str, ...] = ()
    confidence: float = 0.0
    navigation: int = 0
    agreeing: tuple[str, ...] = ()
    rule_confidence: dict[str, float] = field(default_factory=dict)

    @property
    def agreed(self) -> bool:
        """A manipulation rule, or two rules of any kind, hold on their own."""
        return len(self.agreeing) >= 2 or bool(MANIPULATION_RULES.intersection(self.agreeing))

    def holds_at(self, confidence: float) -> bool:
        """Whether the verdict would still be spam at this (lower) confidence: the bar a
        verdict taken must fall under to be lifted, so that it does not flap."""
        rules = [r for r, c in self.rule_confidence.items() if c >= confidence]
        return self.confidence >= confidence and (
            len(rules) >= 2 or bool(MANIPULATION_RULES.intersection(rules)))

    def explain(self) -> list[str]:
        """One line per reason, for the admin."""
        return [f"{RULES.get(rule, rule)} ({rule}: {n} of {self.pages} pages)"
                for rule, n in sorted(self.reasons.items(), key=lambda kv: -kv[1])]

    def evidence(self) -> dict:
        """What the verdict rests on, for the verdict store."""
        return {"pages": self.pages, "navigation_pages": self.navigation,
                "flagged_share": self.score, "confidence": self.confidence,
                "rules": dict(self.reasons), "rule_confidence": dict(self.rule_confidence),
                "agreeing": list(self.agreeing), "clique": list(self.clique)}
