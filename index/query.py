"""The query language shared by every backend, parsed once into a small AST.

Syntax (web-search style)::

    python tutorial          both words (implicit AND)
    "exact phrase"           the words adjacent and in order
    -word  -"a phrase"       exclude documents matching it (a short option right after
                             a command-like first word is a word: ``cmp -l``)
    site:example.test        the host or any of its subdomains; -site:host excludes it
    lang:de                  pages in that language (its primary subtag); -lang:de excludes
    a OR b   a | b           either; binds tighter than AND: ``x a OR b`` = x AND (a OR b)
    (a b) OR c               groups, may be negated: -(a OR b)

Leaves are analyzed with :mod:`index.analysis`, so a backend compiles terms it can look up
directly. A word that analyzes to several terms (``os.path``, ``e-mail``) becomes a phrase.
Free stopwords (``the``, ``of``) are dropped when the query has other content; inside
phrases they are kept. An exclusion inside an ``OR`` is moved up to the enclosing AND
(``a OR -b`` = ``a -b``), so every ``Or`` child is something to match.

Garbage never raises: unbalanced quotes close at the end, stray parentheses, parentheses
nested deeper than ``MAX_DEPTH`` and lone operators are ignored. Only queries too long or
with too many terms to run cheaply raise :class:`QueryError`, with a message saying what
to shorten.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from itertools import accumulate
from operator import and_

from index.analysis import (
    WORD_RE,
    analyze,
    analyze_query_term,
    compound_terms,
    identifier_form,
    is_optional_word,
    is_stopword,
    language_of,
    normalize,
    normalize_host,
    query_language,
)

__all__ = [
    "MAX_BLEND_WORDS",
    "MAX_MISSING_SHARE",
    "MIN_WORDS_SHARE",
    "NEAR_GAP",
    "NEAR_WINDOW",
    "AtLeast",
    "MAX_DEPTH",
    "MAX_NEAR_GROUPS",
    "MAX_QUERY_CHARS",
    "QUESTION_COVERAGE",
    "QUESTION_WORDS",
    "SENTENCE_WORDS",
    "MAX_TERMS",
    "And",
    "Node",
    "Not",
    "Lang",
    "Or",
    "Phrase",
    "Query",
    "QueryError",
    "QueryTooComplex",
    "QueryTooLong",
    "Site",
    "Term",
    "CHANGE_WORDS",
    "VERSION_NUMBER",
    "asks_for_changes",
    "call_arguments",
    "defined_words",
    "described_sites",
    "excludes",
    "hash_member_dotted",
    "is_sentence",
    "literal_reading",
    "looks_pasted",
    "names_identifier",
    "option_after_command",
    "parse",
    "qualified_parts",
    "relaxations",
    "site_defined",
    "whole_or_parts",
    "words_reading",
]

#: The longest query text (characters): the one limit of the engines, the web UI and the
#: API.
MAX_QUERY_CHARS = 500
MAX_TERMS = 64
MAX_DEPTH = 8
#: Longest plain query whose pages lacking one word are ranked too (one clause per word).
MAX_BLEND_WORDS = 6
#: Share of the required words (rounded up) a page of a query of more than
#: ``MAX_BLEND_WORDS`` of them must hold: the others may be missing (coordination ranks the
#: pages holding more first), so one word the answer phrases otherwise does not drop it.
MIN_WORDS_SHARE = 0.75
#: The largest share of a query's IDF the words a competing page lacks may carry.
MAX_MISSING_SHARE = 0.5
#: Fewest required words of a question-shaped query (``Query.question``: a plain query
#: with a word that frames a question, ``how``, ``my``, ``should``, beside its topic).
QUESTION_WORDS = 3
#: Fewest required words of a query written as a sentence without a word framing it as a
#: question (``is_sentence``: ``list the callers of each function rather than the
#: functions it calls``), read as a question is; a keyword query is shorter.
SENTENCE_WORDS = 6
#: What a sentence typed in a user's words never holds and an error message, a
#: configuration line or a path does (``WARNING: Number of errors: 0``, ``a=1, b``).
_NOT_SENTENCE = re.compile(r"[:;,=\"<>{}\[\]|/\\]")
#: The share of the ``allwords`` bonus (``Candidate.coverage``) a page holding some but not
#: all of a question's required words keeps (``Query.partial_coverage``): a question is
#: worded as its asker speaks, not as its answer is written, so a page lacking one of its
#: words competes (plain BM25's any-word reading), and a page holding them all still
#: leads an equal text score.
QUESTION_COVERAGE = 0.5
#: Most words of a query that names one thing a page defines (``defined_words``).
MAX_DEFINED_WORDS = 3
#: The navigational words (``NAVIGATIONAL_WORDS``) a manual's entry page heads beside its
#: site's name, so a page whose headings hold both defines the query (``fftw manual``: the
#: page headed "FFTW User Manual", not the FAQ that merely names FFTW in its headings).
DEFINED_KINDS = frozenset({"manual"})
#: Words allowed between each pair of a query's words for the page to hold them "near"
#: (the proximity signal): a phrase slop of ``NEAR_GAP`` per gap.
NEAR_GAP = 2
#: Adjacent query terms the proximity signal asks to find together (``near_groups``): pairs,
#: its value the share of pairs a page holds near each other (held out on nine sites, graded
#: pairs beat runs of three found anywhere: CHANGELOG.md, 2026-12-01).
NEAR_WINDOW = 2
#: Most runs the proximity signal looks for (``near_groups``): a question's last ones, where
#: its topic follows the words that frame it; each run is one sloppy phrase an engine reads
#: over the whole index.
MAX_NEAR_GROUPS = 3
#: Words that, next to a site's name, still ask for the site itself (``django docs``,
#: ``libsoup api reference``: a C library's reference is its manual's home page), the
#: umbrella a project's name is written after among them (``gnu mailutils manual``,
#: ``apache tomcat docs``: the GNU and Apache projects' manuals are titled so).
NAVIGATIONAL_WORDS = frozenset(
    "doc docs documentation manual reference home homepage site website official page web "
    "javadoc gnu apache".split()
)
#: The words of ``NAVIGATIONAL_WORDS`` that, ending a query, ask for the site a word of the
#: name before them is called by (``knot dns docs``); not ``page`` or ``web``, which end a
#: topic as often (``flask custom 404 page``), nor the umbrellas written first.
NAMING_WORDS = NAVIGATIONAL_WORDS - {"page", "web", "gnu", "apache"}
#: Words that name a kind of documentation right before a word of ``NAMING_WORDS`` (``api
#: reference``, ``api docs``): navigational there, and a topic elsewhere (``flask api``).
DOCUMENTATION_KINDS = frozenset({"api"})
#: Words that name a manual's reader right before a word of ``GUIDE_WORDS`` (``cunit user
#: guide``, ``chez scheme user's guide``, ``systemtap beginners guide``): navigational
#: there; a project's guide for its users is its site's home. A possessive typed apart
#: (``user`` ``s``) is one word. Before ``manual`` they stay words (``network ups tools
#: user manual``: the user manual is one of the site's manuals).
READER_WORDS = frozenset({"user", "users", "user's", "beginner", "beginners", "beginner's"})
#: Words that ask for the site only after a word of ``READER_WORDS`` (``scons user
#: guide``); elsewhere they end a topic (``porting guide``, ``sqlobject developer guide``:
#: a page of its own).
GUIDE_WORDS = frozenset({"guide"})
#: Most adjacent words joined into one site name (``debian handbook`` -> ``debianhandbook``).
SITE_NAME_WORDS = 3
#: Most words describing a site after or before its name, and one more word in all
#: (``described_sites``: ``h2o http2 server``, ``yard ruby documentation tool``).
DESCRIBING_WORDS = 3
#: Fewest words of a product's name before a word like ``docs`` whose initials name its
#: site too: a project called by its initials is searched by its name written out
#: (``request tracker documentation`` -> ``rt``, ``network ups tools manual`` -> ``nut``).
ACRONYM_WORDS = 2
#: A C library's name is its project's with ``lib`` before it or after it as a word of its
#: own (``libflac``, ``alsa-lib``), so a site is searched by either; a remainder shorter than
#: this is no project's name (``libc``, ``zlib``), nor is the rest of an English word.
LIBRARY_PREFIX, LIBRARY_NAME_CHARS = "lib", 3
_LIB_WORDS = frozenset({"library", "libraries", "liberty", "libre"})
_WORDS = re.compile(r"[^\W_]+")
#: A project's name written with the language it is for: the name, a dot, the language's
#: file suffix (``coverage.py``, ``node.js``).
_NAME_WITH_LANGUAGE = re.compile(r"([^\W_][\w-]*)\.(?:py|js)")
#: What a text pasted from a terminal or a program has and a typed query rarely does: a
#: short option (``-r``, ``-c``; also last in a quoted value: ``--cpp='cc -E'``), a
#: ``$``, a word touching a parenthesis (``f(x)``), a file name followed by an option
#: (``gcc myprog.c -lmpfr``), an option given a value
#: that is no word (``-path /afs/x``, ``-newkey rsa:2048``) or a value and then another
#: option (``fs setacl -dir . -acl pat``).
#: A word led by a sign (``!adm``, ``~``, ``:set``, ``%option``, ``#,``, ``<VirtualHost>``).
_SIGNED = re.compile(r"[^\w\s'\"(){}\[\]-]")
_PASTED = re.compile(r"(?:^|\s)-[^\W_]{1,2}(?=[\s'\"]|$)|\$|\w\(|\)\w|\w\.[a-z]{1,4}\s(?:.*\s)?-\w"
                     r"|(?:^|\s)-[^\W\d_][\w-]*\s+(?:[^\s\w\"-]|\w+[^\s\w\"]"
                     r"|[^\s-]\S*\s+-[^\W\d_])")


class QueryError(ValueError):
    """A query that cannot be run as written; the message says what to change."""


class QueryTooLong(QueryError):
    """The query text exceeds ``MAX_QUERY_CHARS``."""


class QueryTooComplex(QueryError):
    """The query has more than ``MAX_TERMS`` terms."""


@dataclass(frozen=True)
class Term:
    """One analyzed term; ``word`` is what the user typed."""

    word: str
    term: str
    #: The word's whole identifier form when it is a punctuated name or an operator
    #: (``.gitignore``, ``->>``; ``analysis.identifier_form``), looked up in ``idents``.
    whole: str = ""

    def __str__(self) -> str:
        return self.whole or self.term


@dataclass(frozen=True)
class Phrase:
    """Two or more analyzed terms that must occur adjacent and in order."""

    text: str
    terms: tuple[str, ...]
    #: As for ``Term.whole``: a query word that is a dotted or snake name (``os.path``).
    whole: str = ""

    def __str__(self) -> str:
        return self.whole or '"' + " ".join(self.terms) + '"'


@dataclass(frozen=True)
class Site:
    """Documents whose host is ``host`` or a subdomain of it."""

    host: str

    def __str__(self) -> str:
        return f"site:{self.host}"


@dataclass(frozen=True)
class Lang:
    """Documents in the language ``code`` (a primary subtag, as ``DOC_FIELDS["lang"]``)."""

    code: str

    def __str__(self) -> str:
        return f"lang:{self.code}"


@dataclass(frozen=True)
class Not:
    """Excludes documents matching ``child``; only ever a child of ``And`` or the root."""

    child: Node

    def __str__(self) -> str:
        return f"-{_wrap(self.child)}"


@dataclass(frozen=True)
class And:
    """All positive children match and no ``Not`` child does; at least two children."""

    children: tuple[Node, ...]

    def __str__(self) -> str:
        return " ".join(
            _wrap(c) if isinstance(c, And) else str(c) for c in self.children
        )


@dataclass(frozen=True)
class Or:
    """At least one child matches; at least two children, none of them ``Not``."""

    children: tuple[Node, ...]

    def __str__(self) -> str:
        return " OR ".join(_wrap(c) for c in self.children)


@dataclass(frozen=True)
class AtLeast:
    """At least ``count`` of the children match (``1 <= count < len(children)``); never
    parsed from text: the coordination a long plain query derives (``Query.coordinated``)."""

    count: int
    children: tuple[Node, ...]

    def __str__(self) -> str:
        return f"{self.count} of ({' '.join(_wrap(c) for c in self.children)})"


Node = Term | Phrase | Site | Lang | Not | And | Or | AtLeast


def _wrap(node: Node) -> str:
    return f"({node})" if isinstance(node, And | Or) else str(node)


@dataclass(frozen=True)
class Query:
    """A parsed query: the text as typed and its AST (``None`` when nothing is searchable).

    Everything a backend or the web UI derives from a query comes from here, computed once
    per query: the plain words and what they allow (compounds, the any-word fallback, pages
    lacking a minor word), the sites the query names or mentions, its language, the terms
    snippets mark, the words "did you mean" checks, and looser versions of the query.
    """

    raw: str
    root: Node | None
    tokens: tuple[_Token, ...] = field(default=(), compare=False, repr=False)

    @property
    def matches_nothing(self) -> bool:
        """True when no document can match: empty, or only exclusions."""
        if self.root is None or isinstance(self.root, Not):
            return True
        if isinstance(self.root, And):
            return all(isinstance(c, Not) for c in self.root.children)
        return False

    def terms(self) -> list[str]:
        """The positive terms (from words and phrases), unique and in query order."""
        seen: dict[str, None] = {}
        for node in self.leaves(positive_only=True):
            if isinstance(node, Term):
                seen.setdefault(node.term)
            elif isinstance(node, Phrase):
                for t in node.terms:
                    seen.setdefault(t)
        return list(seen)

    def words(self) -> list[str]:
        """The terms of positive single words (not phrases), unique and in query order."""
        return list(self._highlighted[0])

    def phrases(self) -> list[tuple[str, ...]]:
        """The term sequences of positive phrases, for highlighting whole phrases."""
        return list(self._highlighted[1])

    @cached_property
    def _highlighted(self) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
        leaves = [n for n in self.leaves(positive_only=True) if isinstance(n, Term | Phrase)]
        return (tuple(dict.fromkeys(n.term for n in leaves if isinstance(n, Term))),
                tuple(n.terms for n in leaves if isinstance(n, Phrase)))

    def leaves(self, positive_only: bool = False) -> Iterator[Term | Phrase | Site | Lang]:
        """Every leaf, depth first; with ``positive_only`` the excluded ones are skipped."""
        if self.root is not None:
            yield from _leaves(self.root, positive_only)

    # --- what the query asks for, derived once --------------------------------------

    @cached_property
    def plain_words(self) -> tuple[Term | Phrase, ...]:
        """The words of a plain word query (words and phrases, no operators), else ``()``."""
        root = self.root
        children = (root,) if isinstance(root, Term | Phrase) else getattr(root, "children", ())
        if not isinstance(root, Term | Phrase | And) or not all(
            isinstance(c, Term | Phrase) for c in children
        ):
            return ()
        return tuple(children)

    @cached_property
    def optional_words(self) -> tuple[Term, ...]:
        """Words of a plain query that frame a question (``how``, ``should``, ``them``:
        ``analysis.OPTIONAL_WORDS``), a site's name's ``docs`` (``navigational_words``) or
        the user's values (``call_arguments``): they score where they occur but need not
        match. ``()`` when nothing else would be left, or for other queries."""
        navigational = set(self.navigational_words)
        arguments = set(self.call_arguments)
        optional = tuple(w for w in self.plain_words if w in arguments or (
            isinstance(w, Term) and (is_optional_word(w.term) or w in navigational)))
        return optional if len(optional) < len(self.plain_words) else ()

    @cached_property
    def call_arguments(self) -> tuple[Term | Phrase, ...]:
        """The user's own values among the plain words (:func:`call_arguments`)."""
        return call_arguments(self)

    @cached_property
    def navigational_words(self) -> tuple[Term, ...]:
        """The words like ``docs`` of a plain query that names a site (``navigational``)."""
        return navigational(self.plain_words)

    @cached_property
    def required_words(self) -> tuple[Term | Phrase, ...]:
        """The words of a plain query that decide which pages match (all but the optional
        ones), in query order; ``()`` for other queries."""
        optional = set(self.optional_words)
        return tuple(w for w in self.plain_words if w not in optional)

    @cached_property
    def matching(self) -> Node | None:
        """What a page must hold to match the query as asked: the root, or for a plain
        query with optional words or a qualified name, its required words (``whole_or_parts``)."""
        words = self.required_words
        if not self.optional_words and not any(map(qualified_parts, words)):
            return self.root
        return _conjunction([whole_or_parts(w) for w in words])

    @cached_property
    def question(self) -> bool:
        """Whether the query is shaped as a question: a plain query with words that frame
        a question (``optional_words``: ``how do I``, ``my``, ``should``) beside at least
        ``QUESTION_WORDS`` required words, or a sentence without them (``is_sentence``).
        Worded as its asker speaks (``throw away`` for ``purge``), any of its words matches
        (``min_words``), in the page's text (``FieldWeights.question``), with
        ``partial_coverage`` of the ``allwords`` bonus for a page lacking some."""
        arguments = set(self.call_arguments)
        framed = any(w not in arguments for w in self.optional_words)
        return (framed and len(self.required_words) >= QUESTION_WORDS) or is_sentence(self)

    @cached_property
    def min_words(self) -> int:
        """How many required words a page must hold: all of them, or of more than
        ``MAX_BLEND_WORDS`` the ``MIN_WORDS_SHARE`` (rounded up), or of a question any
        one (``question``: pages holding more of them score more, as in plain BM25)."""
        n = len(self.required_words)
        if self.question:
            return 1
        if n <= MAX_BLEND_WORDS:
            return n
        return max(MAX_BLEND_WORDS, math.ceil(n * MIN_WORDS_SHARE))

    @property
    def partial_coverage(self) -> float:
        """The coverage (``AllWords``) of a page holding ``min_words`` but not every
        required word: ``QUESTION_COVERAGE`` for a question, else 0."""
        return QUESTION_COVERAGE if self.question else 0.0

    @cached_property
    def coordinated(self) -> AtLeast | None:
        """The pages that compete while lacking some required words (``min_words`` of
        them), for a long plain query; ``None`` when every word must match."""
        words = self.required_words
        if self.min_words >= len(words):
            return None
        return AtLeast(self.min_words, words)

    def lacking(self, idf: Sequence[float], max_share: float = MAX_MISSING_SHARE
                ) -> list[tuple[tuple[int, ...], float]]:
        """Which required word a page may lack and still compete, given each word's IDF:
        one whose share of the query's IDF is at most ``max_share``; as ``(word indexes,
        share)``. A page lacking it scores its text score times ``1 - share`` (Lucene's
        coordination factor). One word, never two: each pair an engine would search is one
        more intersection of the other words (a six-word query: 21 clauses, not 6)."""
        total = sum(idf) or 1.0
        if len(idf) < 2:
            return []
        return [((i,), share) for i, value in enumerate(idf)
                if (share := value / total) <= max_share]

    @cached_property
    def near_terms(self) -> tuple[str, ...]:
        """The terms of the required words in query order, for the proximity signal (pages
        holding them within ``near_slop`` of each other); ``()`` for fewer than two words
        or a query that is not plain."""
        words = self.required_words
        if len(words) < 2:
            return ()
        return tuple(t for w in words for t in ((w.term,) if isinstance(w, Term) else w.terms))

    @cached_property
    def near_groups(self) -> tuple[tuple[str, ...], ...]:
        """The runs of ``near_terms`` the proximity signal looks for, each near each other
        in a page: every ``NEAR_WINDOW`` adjacent ones, the last ``MAX_NEAR_GROUPS`` (a
        question's topic is a few adjacent words after those framing it: "click *command
        line* program"); the signal's value is the share of runs a page holds, so the answer
        need not hold every word in one window; ``()`` as ``near_terms``."""
        terms = self.near_terms
        if len(terms) <= NEAR_WINDOW:
            return (terms,) if terms else ()
        runs = (terms[i:i + NEAR_WINDOW] for i in range(len(terms) - NEAR_WINDOW + 1))
        return tuple(runs)[-MAX_NEAR_GROUPS:]

    @property
    def near_slop(self) -> int:
        """The phrase slop the proximity signal allows in each of ``near_groups``:
        ``NEAR_GAP`` per gap."""
        return NEAR_GAP * max(0, min(len(self.near_terms), NEAR_WINDOW) - 1)

    @cached_property
    def label_words(self) -> tuple[Term | Phrase, ...]:
        """The words and phrases every one of which a page's label (title, anchors, URL)
        must hold for the label signal: the required words of a plain query, or the
        positive words of a query that is an AND (a ``site:`` or an exclusion beside them
        does not count); else ``()``."""
        if self.required_words:
            return self.required_words
        root = self.root
        if isinstance(root, Term | Phrase):
            return (root,)
        if isinstance(root, And):
            return tuple(c for c in root.children if isinstance(c, Term | Phrase))
        return ()

    @cached_property
    def defined_words(self) -> tuple[Term | Phrase, ...]:
        """The label words of a query short enough to name one thing (at most
        ``MAX_DEFINED_WORDS``): a page whose headings or definition terms hold them all
        defines it; ``()`` for longer queries. A qualified name is two: its member and the
        name qualifying it (``qualified_parts``: ``Util``'s page defining ``del_ws_spc``),
        and a manual asked for by its site's name is defined with it (``DEFINED_KINDS``)."""
        return defined_words(self, self.label_words)

    @cached_property
    def compounds(self) -> tuple[str, ...]:
        """Compound terms of the required words of a plain query of single words
        (``ignore files git`` -> ``gitignore``, see ``compound_terms``); ``()`` otherwise."""
        words = self.required_words
        if not words or not all(isinstance(w, Term) for w in words):
            return ()
        return tuple(compound_terms([w.word for w in words]))

    @property
    def relaxable(self) -> bool:
        """Whether the any-word fallback applies: a plain query of two or more required
        words."""
        return len(self.required_words) > 1

    def blendable(self, min_words: int) -> bool:
        """Whether pages lacking one minor word compete: a plain query of ``min_words`` to
        ``MAX_BLEND_WORDS`` required words (``min_words`` 0 turns it off), not a question
        (pages lacking any of its words compete: ``coordinated``)."""
        return (bool(min_words) and min_words <= len(self.required_words) <= MAX_BLEND_WORDS
                and not self.question)

    @cached_property
    def typed_words(self) -> tuple[str, ...]:
        """The words the user typed in positive words and phrases, lower case, split at
        punctuation, stopwords kept; operators (``-x``, ``site:``, ``OR``) left out."""
        words: list[str] = []
        for token in self.tokens:
            if token.negated or token.kind not in (_WORD, _PHRASE):
                continue
            for word in token.value.lower().split():
                if word != "or":
                    words.extend(_WORDS.findall(word))
        return tuple(words)

    @cached_property
    def named_sites(self) -> frozenset[str]:
        """The site names a navigational query names (:func:`sites_named_by`)."""
        return sites_named_by(self)

    @cached_property
    def mentioned_sites(self) -> frozenset[str]:
        """The site names a query may mention: its words, alone or up to
        ``SITE_NAME_WORDS`` adjacent words joined (``requests session`` -> ``requests``)."""
        words = self.typed_words
        return frozenset(
            "".join(words[i:j])
            for i in range(len(words))
            for j in range(i + 1, min(len(words), i + SITE_NAME_WORDS) + 1)
        )

    def language(self, default: str = "en") -> str:
        """The language the query is written in (``default`` when the text cannot tell),
        guessed once per text."""
        return _language(self.raw, default)

    @cached_property
    def suggest_words(self) -> tuple[str, ...]:
        """Normalized words of the positive single words, unique, in query order: what "did
        you mean" may correct (phrases are left as typed)."""
        words = (normalize(leaf.word) for leaf in self.leaves(positive_only=True)
                 if isinstance(leaf, Term))
        return tuple(dict.fromkeys(words))

    def with_words_replaced(self, fixes: Mapping[str, str]) -> str | None:
        """The query text with each word whose normalized form is in ``fixes`` replaced
        (a "did you mean" suggestion), or ``None`` when nothing changes."""
        if not fixes:
            return None
        text = WORD_RE.sub(lambda m: fixes.get(normalize(m.group()), m.group()), self.raw)
        return text if text != self.raw else None

    def __str__(self) -> str:
        return "" if self.root is None else str(self.root)


def relaxations(query: Query) -> list[tuple[str, str]]:
    """Looser versions of ``query``, as ``(what changed, query text)``: without quotes, on
    every site, without exclusions, or any of its words (the web UI offers them when a
    query finds nothing)."""
    out: list[tuple[str, str]] = []
    tokens = query.tokens

    def offer(label: str, edits: dict[int, str]) -> None:
        text = query.raw
        for i in sorted(edits, reverse=True):
            token = tokens[i]
            text = text[: token.start] + edits[i] + text[token.end :]
        text = " ".join(text.split())
        if text and text != query.raw and all(text != q for _, q in out):
            out.append((label, text))

    phrases = {i: ("-" if t.negated else "") + " " + t.value + " "
               for i, t in enumerate(tokens) if t.kind == _PHRASE}
    if phrases:
        offer("Without quotes", phrases)
    sites = {i: " " for i, t in enumerate(tokens) if t.kind == _SITE}
    if sites:
        offer("On every site", sites)
    langs = {i: " " for i, t in enumerate(tokens) if t.kind == _LANG}
    if langs:
        offer("In every language", langs)
    if any(t.negated and t.kind not in (_SITE, _LANG) for t in tokens):
        offer("Without exclusions", {i: " " for i, t in enumerate(tokens) if t.negated})
    words = [t.value for t in tokens]
    if (len(tokens) > 2 and not out
            and all(t.kind == _WORD and not t.negated and t.value.isalnum()
                    for t in tokens)):
        out.append(("Any of the words", " OR ".join(words)))
    return out


def named_sites(words: tuple[str, ...], naming: bool) -> frozenset[str]:
    """The site names typed ``words`` name (``Query.named_sites``); ``naming``: the query's
    words like ``docs`` follow a name of several words (``Query.navigational_words``)."""
    n = len(words)
    marked = navigational_marks(words)
    # before[i]: words[:i] are all navigational; after[j]: words[j:] are.
    before = list(accumulate(marked, and_, initial=True))
    after = list(accumulate(reversed(marked), and_, initial=True))[::-1]
    named = {
        "".join(words[i:j])
        for i in range(n) if before[i]
        for j in range(i + 1, min(n, i + SITE_NAME_WORDS) + 1) if after[j]
    }
    if naming and words and words[-1] in NAMING_WORDS:
        name = [w for w, nav in zip(words, marked, strict=True) if not nav]
        named.update(name)
        if len(name) >= ACRONYM_WORDS:
            named.add("".join(w[0] for w in name))
    return frozenset(named)


def described_sites(query: Query) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The sites a short plain query names and describes (``RankContext.described``),
    each as its name and the analyzed terms of the words describing it: the query's words
    (words like ``docs`` left out), at most ``DESCRIBING_WORDS`` + 1, are a run of up to
    ``SITE_NAME_WORDS`` words that joined make a name, first or last, and the others
    (``kitty terminal``: ``kitty`` described by ``termin``; ``peewee orm``). It asks for
    that site's home page when its title or first words hold them (``fields.home_lead``:
    kitty's home page says "GPU based terminal emulator"); a topic of the site's (``kitty
    graphics protocol``) is a page of its own. A query naming the site alone
    (``Query.named_sites``), a question or anything but plain words of letters and digits
    describes none."""
    tokens = query.tokens
    if query.question or not all(t.kind == _WORD and not t.negated and t.value.isalnum()
                                for t in tokens):
        return ()
    words = [t.value.lower() for t in tokens]
    words = [w for w, nav in zip(words, navigational_marks(words), strict=True)
             if not nav]
    if len(words) > DESCRIBING_WORDS + 1:
        return ()
    out: dict[str, tuple[str, ...]] = {}
    for size in range(1, min(SITE_NAME_WORDS, len(words) - 1) + 1):
        for name, rest in ((words[:size], words[size:]), (words[-size:], words[:-size])):
            terms = tuple(t for w in rest for t in analyze(w) if not is_stopword(t))
            if 0 < len(rest) <= DESCRIBING_WORDS and terms:
                out.setdefault("".join(name), terms)
    return tuple(out.items())


def project_words(tokens: Iterable[_Token]) -> tuple[str, ...]:
    """``Query.typed_words`` of ``tokens`` with a project's name written with the language
    it is for read as the name alone: ``coverage.py``, ``node.js`` are the projects, and
    the sites, ``coverage`` and ``node``, as people name them; ``()`` when no word is
    written so."""
    words: list[str] = []
    found = False
    for token in tokens:
        if token.negated or token.kind not in (_WORD, _PHRASE):
            continue
        for word in token.value.lower().split():
            if word != "or":
                project = _NAME_WITH_LANGUAGE.fullmatch(word)
                found = found or project is not None
                words.extend(_WORDS.findall(project.group(1) if project else word))
    return tuple(words) if found else ()


def library_words(words: tuple[str, ...]) -> tuple[str, ...]:
    """Lower-case ``words`` with a C library's name read as its project's: ``libflac`` as
    ``flac``, the ``lib`` of ``alsa-lib`` (typed as the words ``alsa lib``) left out, as a
    library's project and its site are called (``LIBRARY_PREFIX``); ``()`` when no word is
    written so, or when only ``lib`` would be left."""
    prefix = LIBRARY_PREFIX
    read = tuple(w[len(prefix):] if w.startswith(prefix)
                 and len(w) >= len(prefix) + LIBRARY_NAME_CHARS and w not in _LIB_WORDS else w
                 for w in words if w != prefix)
    return read if read != words else ()


def sites_named_by(query: Query) -> frozenset[str]:
    """The site names a navigational query names: the query is a run of up to
    ``SITE_NAME_WORDS`` words that joined make the name, plus only words like ``docs``
    or ``home`` (``django docs`` -> ``django``, ``debian handbook`` ->
    ``debianhandbook``). A product's name of several words followed by a word like
    ``docs`` (``NAMING_WORDS``) names the site called by any one of them too (``knot
    dns docs`` -> ``knot``, ``varnish cache documentation`` -> ``varnish``, ``pyca
    cryptography documentation`` -> ``cryptography``) and, of ``ACRONYM_WORDS`` or more
    words, the one called by their initials (``request tracker docs`` -> ``rt``), and
    a project's name written with its language the site called by the name
    (``coverage.py`` -> ``coverage``, :func:`project_words`), and a C library's name
    the site called by its project's (``libflac api documentation`` -> ``flac``,
    ``alsa-lib api documentation`` -> ``alsa``, :func:`library_words`), and a name
    written with the version the user wants the site called by the name (``mod_perl
    2.0 documentation`` -> ``modperl``, :func:`versionless_words`). Other queries
    name no site."""
    naming = bool(query.navigational_words)
    return (named_sites(query.typed_words, naming)
            | named_sites(project_words(query.tokens), naming)
            | named_sites(library_words(query.typed_words), naming)
            | named_sites(versionless_words(query.typed_words), naming))


def defined_words(query: Query, words: tuple[Term | Phrase, ...]) -> tuple[Term | Phrase, ...]:
    """``Query.defined_words`` of these label words of ``query``."""
    if len(words) > MAX_DEFINED_WORDS:
        return ()
    kinds = tuple(w for w in query.navigational_words if w.word.lower() in DEFINED_KINDS)
    words += kinds if len(words) + len(kinds) <= MAX_DEFINED_WORDS else ()
    return tuple(part for w in words for part in (qualified_parts(w) or (w,)))


def site_defined(query: Query) -> tuple[tuple[str, tuple[Term | Phrase, ...]], ...]:
    """What a query naming a site beside what it asks for names there: each of its label
    words that may be a site's name (a single word, ``Query.mentioned_sites``) with the
    defined words of the others (:func:`defined_words`, at most ``MAX_DEFINED_WORDS``). A
    page of that site whose headings hold them defines it, its site's name being in its
    host rather than its headings (``jansson custom memory allocator``: Jansson's page
    headed "Custom Memory Allocation"; ``vala struct declaration``); a word alone is never
    defined by its site."""
    words = query.label_words
    if not 2 <= len(words) <= MAX_DEFINED_WORDS + 1:
        return ()
    named = []
    for i, w in enumerate(words):
        name = w.word.lower() if isinstance(w, Term) else ""
        if name in query.mentioned_sites and (
                rest := defined_words(query, words[:i] + words[i + 1:])):
            named.append((name, rest))
    return tuple(named)


def versionless_words(words: tuple[str, ...]) -> tuple[str, ...]:
    """Lower-case typed ``words`` without the version number written between a project's
    name and the words like ``docs`` ending them (``NAMING_WORDS``: ``mod_perl 2.0
    documentation`` as ``mod perl documentation``, ``python 3 docs`` as ``python docs``):
    a site is called by its project's name, not its version; ``()`` when no words are
    written so. The name with the number stays a name too (``scheme 48 reference manual``:
    ``scheme48``)."""
    marks = navigational_marks(words)
    last = max((i for i, nav in enumerate(marks) if not nav), default=-1)
    if (last < 1 or not words[last].isdigit()
            or not NAMING_WORDS.intersection(words[last + 1:])):
        return ()
    first = last
    while first > 0 and words[first - 1].isdigit():
        first -= 1
    if first == 0:
        return ()
    return words[:first] + words[last + 1:]


def call_arguments(query: Query) -> tuple[Term | Phrase, ...]:
    """The words of a plain query written as a call's arguments or given to a command
    line's option as a number, the user's own values (``gen, TRUE`` of
    ``json_generator_set_pretty (gen, TRUE)``, ``cr`` of ``cairo_set_source_rgb(cr, 0,
    0, 0)``, ``72`` of ``columns -W 72``): the page documenting the call or the option
    names none of them, so they are optional words (``Query.optional_words``), scoring
    where a page holds them (an example, a parameter's name) without being asked for."""
    typed = {t.value for t in query.tokens if t.argument}
    return tuple(w for w in query.plain_words
                 if (w.word if isinstance(w, Term) else w.text) in typed)


def scored_optional_words(query: Query) -> tuple[Term | Phrase, ...]:
    """The optional words that score where a page holds them (``OPTIONAL_FIELDS``): all of
    them, but of a question (``Query.question``) only its values and a site's ``docs``
    (``call_arguments``, ``navigational_words``), not the words framing it (``how do I``,
    ``my``). Those say a question is asked, not what about: a FAQ writes them in every
    entry, so scored they put it above the page answering (``how do I forward a port
    from my pc``). Plain BM25 scores them nothing, a word on most pages weighing nothing."""
    if not query.question:
        return query.optional_words
    kept = set(query.call_arguments) | set(query.navigational_words)
    return tuple(w for w in query.optional_words if w in kept)


#: The words of a query asking what changed: a changelog, release notes, news, what is
#: new in a version (``asks_for_changes``).
CHANGE_WORDS = frozenset({"changelog", "changelogs", "change", "changes", "changed", "news",
                          "release", "releases", "released", "history", "new", "whatsnew",
                          "version", "versions", "upgrade", "upgrading", "relnotes"})
#: A version number (``3.100``, ``v2.1.0``): a query holding one asks what changed, a
#: title that is one is a release's notes (``fields.is_changelog``).
VERSION_NUMBER = re.compile(r"\bv?\d+(?:\.\d+)+\b")


def asks_for_changes(query: Query) -> bool:
    """Whether ``query`` asks what changed (``lame changelog``, ``what's new in 3.100``,
    ``release notes 2.1``): one of its words is a ``CHANGE_WORDS`` word or a version
    number. Such a query ranks the release-note pages (``fields.is_changelog``) as any
    other; any other query ranks them below the pages documenting what they mention."""
    raw = query.raw.lower()
    return bool(CHANGE_WORDS.intersection(_WORDS.findall(raw))) or bool(VERSION_NUMBER.search(raw))


def joined_compounds(query: Query, index: int) -> tuple[str, ...]:
    """The compounds (``Query.compounds``) required word ``index`` forms with another word
    of the query: what a page lacking that word may write in its place, joined to its
    neighbour (``fulltext`` for the ``full`` of ``mailbox full text search index``). A
    page holding every word does not score them: in its text a compound is as often a
    class named by the words (``ConnectionPool``, ``JsonRequest``) as the words."""
    if not query.compounds:
        return ()
    own = set(query.compounds)
    words = [w.word for w in query.required_words]
    return tuple(dict.fromkeys(
        c for i, other in enumerate(words) if i != index
        for c in compound_terms([words[index], other]) if c in own))


def navigational_marks(words: Sequence[str]) -> list[bool]:
    """For each of lower-case ``words``, whether it is navigational: one of
    ``NAVIGATIONAL_WORDS``, or of ``DOCUMENTATION_KINDS`` before one of ``NAMING_WORDS``
    (the ``api`` of ``libsoup api reference``), or a guide's reader and the guide after
    it (``READER_WORDS``, ``GUIDE_WORDS``: the ``user guide`` of ``cunit user guide``, the
    ``user s guide`` of ``chez scheme user s guide`` as typed words)."""
    n = len(words)
    marks = [w in NAVIGATIONAL_WORDS or (w in DOCUMENTATION_KINDS and i + 1 < n
                                         and words[i + 1] in NAMING_WORDS)
             for i, w in enumerate(words)]
    for i, w in enumerate(words):
        if w not in READER_WORDS:
            continue
        end = i + 2 if i + 2 < n and words[i + 1] == "s" else i + 1
        if end < n and words[end] in GUIDE_WORDS:
            for k in range(i, end + 1):
                marks[k] = True
    return marks


def navigational(words: tuple) -> tuple[Term, ...]:
    """The words like ``docs`` or ``home`` (``NAVIGATIONAL_WORDS``) of plain query words
    whose other words are one run of up to ``SITE_NAME_WORDS`` (a site's name, as
    ``Query.named_sites`` reads it): they ask for the site, not a topic its pages share
    (every page of a documentation site is titled "... documentation"); ``()`` otherwise."""
    if not words or not all(isinstance(w, Term) for w in words):
        return ()
    marked = navigational_marks([w.word.lower() for w in words])
    others = [i for i, nav in enumerate(marked) if not nav]
    if not others or len(others) == len(words) or len(others) > SITE_NAME_WORDS:
        return ()
    if others[-1] - others[0] + 1 != len(others):
        return ()
    return tuple(w for w, nav in zip(words, marked, strict=True) if nav)


def _leaves(node: Node, positive_only: bool) -> Iterator[Term | Phrase | Site | Lang]:
    if isinstance(node, Not):
        if not positive_only:
            yield from _leaves(node.child, positive_only)
    elif isinstance(node, And | Or):
        for child in node.children:
            yield from _leaves(child, positive_only)
    else:
        yield node


# --- lexing -------------------------------------------------------------------------------

_WORD, _PHRASE, _SITE, _LANG, _OR, _OPEN, _CLOSE = (
    "word", "phrase", "site", "lang", "or", "(", ")")
_LANG_CODE = re.compile(r"[a-z]{2,8}")


@dataclass(frozen=True)
class _Token:
    kind: str
    value: str = ""
    negated: bool = False
    start: int = 0
    end: int = 0
    #: A word or phrase written as a call's argument, or a number given to a command
    #: line's option: the user's own value (``Query.call_arguments``).
    argument: bool = False


#: A long command-line option, with its value when pasted with one (``--amend``,
#: ``--encryption=repokey``, ``--keep-daily=7``): a word, not an exclusion.
_LONG_OPTION = re.compile(r"--[A-Za-z][\w-]+(?:=\S+)?")
#: A one-dash option written as no word is (``-show_streams``, ``-sDEVICE=pdfwrite``,
#: ``-dNOPAUSE``, ``-Xmx512m``, ``-O2``, ``-r300``): an underscore or ``=`` in it, a capital
#: after a small letter, a letter after a digit, or one letter and digits); or a negative
#: constant in capitals, as C returns an error (``-EPIPE``, ``-EINVAL``): a word, not an
#: exclusion, as nobody writes one to leave a word out.
_DASH_OPTION = re.compile(
    r"-(?=\S*(?:[_=]|[a-z][A-Z]|\d[A-Za-z])|[A-Za-z]\d+$|[A-Z]{3}[A-Z\d]*$)"
    r"[A-Za-z][\w.+:-]*(?:=\S+)?")
#: An option written as a minus and a colon (Gambit's runtime options, ``-:d0``,
#: ``-:m8,h512``): no word begins with a colon, so the minus leaves no word out.
_COLON_OPTION = re.compile(r"-:[\w.,:=+-]+")
#: A short command-line option (``-l``, ``-p1``), as ``_PASTED`` finds one.
_SHORT_OPTION = re.compile(r"-[^\W_]{1,2}")
#: A command-line option given a number (``-c 1000``, ``-crf 23``, ``-t 00:10``,
#: ``-duration 10``): a letter or digit, then any word characters or dashes; the value
#: the next token.
_VALUED_OPTION = re.compile(r"-[^\W_][\w-]*")
_NUMBER = re.compile(r"\d[\d.,:]*")
#: A field's name and its colon, as a control file or a header writes it
#: (``Standards-Version:``, ``Content-Length:``).
_FIELD_NAME = re.compile(r"[A-Za-z][\w-]*:")
#: A file name a command line is given (``example.i``, ``myprog.c``, ``in.jpg``).
_FILE_NAME = re.compile(r"[\w-]+\.[A-Za-z][A-Za-z\d]{0,3}")
#: A name written capitalised (``Mmap``, ``Path``), as a module or a class is named; a
#: file's extension is written in small letters or in capitals (``example.i``, ``Build.PL``).
_CAPITALISED = re.compile(r"[A-Z][a-z][a-z\d]*")
#: A function's name and the parenthesis of its call, an argument written after it
#: (``cairo_set_source_rgb(cr,``, ``f(x``): the name is one word and the argument another.
#: A name ends in a letter, a digit or ``_``: Go's type assertion ``x.(T)`` is no call of
#: ``x.``, its ``T`` no value of the user's but a word of the expression (one phrase).
_CALL = re.compile(r"([A-Za-z_](?:[\w.:]*\w)?)\((?=\w)(?![\w.]*=)")
#: A method called on a variable, as Perl and PHP write it (``$r->headers_out``): the
#: variable and the method's name are two words, the name matching whole.
_ARROW_CALL = re.compile(r"(\$\w+)->([A-Za-z_]\w*)")
#: A capital after a small letter: a CamelCase name (``FcFontMatch``, ``optionProcess``).
_CAMEL = re.compile(r"[a-z][A-Z]")
#: A first word that may name a command (``cmp``, ``diff3``, ``pg_dump``, ``ssh-keygen``; an
#: interactive shell's magic or an editor's command led by its sign: ``%store``, ``:set``;
#: a command given by its path, or by a script's first line: ``./configure``,
#: ``#!/command/execlineb``).
_COMMAND = re.compile(r"(?:#!)?(?:[\w.~+-]*/)*[%:]{0,2}[a-z][a-z0-9_.+-]*")


def _operator_at(text: str, i: int) -> str:
    """The operator (``->>``, ``-=``) or command-line option (``--amend``) that starts at
    ``text[i]`` and runs to whitespace, or ``""``: a minus that begins one is part of it,
    not an exclusion."""
    end = i
    while end < len(text) and not (text[end].isspace() or text[end] in '")'):
        end += 1
    word = text[i:end]
    if (_LONG_OPTION.fullmatch(word) or _DASH_OPTION.fullmatch(word)
            or _COLON_OPTION.fullmatch(word)):
        return word
    return word if len(word) > 1 and identifier_form(word) == word else ""


def _command_option(text: str, i: int, tokens: list[_Token]) -> str:
    """The short option (``-l``, ``-crf``) that starts at ``text[i]`` when the query reads
    as a command line: its first word names a command, and the option follows it or
    its options (``cmp -l``, ``diff -r --brief``), or comes after another option of the
    line (``celery -A proj worker -l INFO``, ``tshark -r file.pcap -Y http``), or is
    given a number or a file name (``editcap file -c 1000``, ``libx264 -crf 23``, ``gm
    benchmark -duration 10``, ``swig -python example.i``), or is given a word and then
    another option or follows options (``mencoder -ovc copy -oac copy -audiofile``); else
    ``""``. A command line's option, not the exclusion of a word: nobody leaves out ``l``
    and then writes ``INFO``, ``duration`` and then ``10``, or ``python`` and then
    ``example.i``. A
    plain-letter option with none of these stays an exclusion (``tool file -c``, ``flask
    tutorial -video``). A query beginning with a short option given a value is the option
    (``-m j``, ``-vf scale=1280:-1``): nobody begins by leaving out a word of two letters."""
    if not tokens:
        word, *value = text[i:].split(None, 2)
        return word if (_SHORT_OPTION.fullmatch(word) and not text[:i].strip()
                        and value and not value[0].startswith("-")) else ""
    if tokens[0].kind != _WORD or tokens[0].negated:
        return ""
    if not _COMMAND.fullmatch(tokens[0].value):
        return ""
    end = i
    while end < len(text) and not text[end].isspace():
        end += 1
    word = text[i:end]
    if _SHORT_OPTION.fullmatch(word) and (len(tokens) == 1 or any(
            t.kind == _WORD and not t.negated and t.value.startswith("-")
            for t in tokens[1:])):
        return word
    value = text[end:].split(None, 2)
    if _VALUED_OPTION.fullmatch(word) and (
            (value and (_NUMBER.fullmatch(value[0]) or _FILE_NAME.fullmatch(value[0])))
            or (len(value) > 1 and _VALUED_OPTION.match(value[1])
                and not value[0].startswith("-"))
            or any(t.kind == _WORD and not t.negated and _VALUED_OPTION.fullmatch(t.value)
                   for t in tokens[1:])):
        return word
    return ""


def _words(word: str, start: int) -> list[_Token]:
    """The word tokens of ``word`` (at ``start`` in the text): itself, or a function's name
    glued to its first argument, as a call is written (``cairo_set_source_rgb(cr,``), the
    name and the argument (``_CALL``)."""
    call = _CALL.match(word)
    if call is None:
        return [_Token(_WORD, word, False, start, start + len(word))]
    name = call.group(1)
    return [_Token(_WORD, name, False, start, start + len(name)),
            _Token(_WORD, word[call.end():], False, start + call.end(), start + len(word),
                   argument=True)]


def _lex(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i, n = 0, len(text)
    depth = ignored = (
        0  # parentheses beyond MAX_DEPTH are dropped, keeping recursion bounded
    )
    while i < n:
        ch = text[i]
        if ch.isspace() or ch < " ":
            i += 1
            continue
        begin = i
        negated = False
        if ch == "-" and (operator := _operator_at(text, i)
                          or _command_option(text, i, tokens)):
            tokens.append(_Token(_WORD, operator, False, i, i + len(operator)))
            i += len(operator)
            continue
        while ch == "-" and i + 1 < n:
            negated, i = True, i + 1
            ch = text[i]
        if ch == "-" or ch.isspace():
            i += 1
            continue
        if ch == '"':
            end = text.find('"', i + 1)
            end = n if end < 0 else end
            tokens.append(_Token(_PHRASE, text[i + 1 : end], negated, begin, min(n, end + 1)))
            i = end + 1
        elif ch == "(":
            if depth < MAX_DEPTH:
                depth += 1
                tokens.append(_Token(_OPEN, "", negated, begin, i + 1))
            else:
                ignored += 1
            i += 1
        elif ch == ")":
            if ignored:
                ignored -= 1
            else:
                depth = max(depth - 1, 0)
                tokens.append(_Token(_CLOSE, "", False, i, i + 1))
            i += 1
        else:
            start = i
            while i < n and not (text[i].isspace() or text[i] in '")' or text[i] < " "):
                i += 1
            word = text[start:i]
            if word in ("OR", "|") and not negated:
                tokens.append(_Token(_OR, "", False, begin, i))
            elif word[:5].lower() == "site:":
                host = normalize_host(word[5:])
                if host:
                    tokens.append(_Token(_SITE, host, negated, begin, i))
            elif word[:5].lower() == "lang:":
                code = language_of(word[5:])
                if _LANG_CODE.fullmatch(code):
                    tokens.append(_Token(_LANG, code, negated, begin, i))
            elif not negated and _CALL.match(word):
                tokens.extend(_words(word, begin))
            elif not negated and (arrow := _ARROW_CALL.fullmatch(word)):
                tokens.extend(_Token(_WORD, arrow.group(g), False, begin + arrow.start(g),
                                     begin + arrow.end(g)) for g in (1, 2))
            else:
                tokens.append(_Token(_WORD, word, negated, begin, i))
    return _mark_arguments(_command_by_name(tokens))


def _command_by_name(tokens: list[_Token]) -> list[_Token]:
    """``tokens`` with a first word giving a command by its path read as the command's
    name, its last segment: a script's first line (``#!/command/execlineb``, ``#!/bin/sh``)
    or a path given an option (``/usr/sbin/postconf -n``, ``./configure --help``). A page
    documents ``execlineb`` by its name, not by the directory it is installed in; a path
    given no option, or followed by an exclusion, stays the phrase of its parts
    (``/etc/apt/sources.list``, ``docs/intro -draft``)."""
    if not tokens or tokens[0].kind != _WORD or tokens[0].negated:
        return tokens
    first = tokens[0]
    if "/" not in first.value or not _COMMAND.fullmatch(first.value):
        return tokens
    if not (first.value.startswith("#!") or (
            len(tokens) > 1 and tokens[1].kind == _WORD and not tokens[1].negated
            and tokens[1].value.startswith("-"))):
        return tokens
    name = first.value.rsplit("/", 1)[1]
    if not name:
        return tokens
    return [replace(first, value=name, start=first.end - len(name)), *tokens[1:]]


def _names_code(word: str) -> bool:
    """Whether ``word`` is written as a name in code: a dotted or snake name
    (``json_generator_set_pretty``, ``net.listen``) or a CamelCase one (``FcFontMatch``)."""
    return bool(identifier_form(word)) or bool(_CAMEL.search(word))


def _names_setting(word: str) -> bool:
    """Whether ``word`` names a setting a configuration line gives a value to: a name in
    code (``_names_code``: ``background_opacity``, ``PassivePorts``), not an operator
    (``==``), or a field's name and its colon (``Standards-Version:``, ``Port:``)."""
    return (_names_code(word) and any(c.isalpha() for c in word)) or bool(
        _FIELD_NAME.fullmatch(word))


def _mark_arguments(tokens: list[_Token]) -> list[_Token]:
    """``tokens`` with the words and phrases written as a call's arguments marked
    (``_Token.argument``): those after a name glued to its parenthesis
    (``cairo_set_source_rgb(cr,``, ``_CALL``), or inside the parentheses written after a
    name in code (``json_generator_set_pretty (gen, TRUE)``), up to the closing one; and
    the number given to a command line's option or to a setting (``72`` of ``columns -W
    72``, ``0.8`` of ``background_opacity 0.8``)."""
    out: list[_Token] = []
    depth = 0  # parentheses open inside the call's
    inside = False
    for i, token in enumerate(tokens):
        if inside:
            if token.kind == _OPEN or token.argument:  # a call inside: ``sizeof(buf)``
                depth += 1
            elif token.kind == _CLOSE:
                depth -= 1
                inside = depth >= 0
            elif token.kind in (_WORD, _PHRASE) and not token.negated:
                token = replace(token, argument=True)
        elif token.argument:
            inside, depth = True, 0
        elif (token.kind == _WORD and not token.negated and i and _NUMBER.fullmatch(token.value)
              and out[-1].kind == _WORD and not out[-1].negated
              and (_VALUED_OPTION.fullmatch(out[-1].value) or _names_setting(out[-1].value)
                   or (out[-1].argument and _NUMBER.fullmatch(out[-1].value)))):
            # an option's number (``-c 1000``) or a setting's (``background_opacity 0.8``,
            # ``PassivePorts 49152 65534``)
            token = replace(token, argument=True)
        elif (token.kind == _OPEN and not token.negated and i and out[-1].kind == _WORD
              and not out[-1].negated and _names_code(out[-1].value)):
            inside, depth = True, 0
        out.append(token)
    return out


# --- parsing ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Free:
    """A free stopword term, kept only while we do not know if the query has other content."""

    term: Term


class _Parser:
    def __init__(self, tokens: list[_Token]):
        self.tokens = tokens
        self.pos = 0
        self.leaves = 0

    def peek(self) -> _Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def sequence(self, depth: int) -> list:
        """Clauses up to the matching ``)`` (or the end); each an implicit AND operand."""
        clauses: list = []
        while (token := self.peek()) is not None:
            if token.kind == _CLOSE:
                self.pos += 1
                if depth > 0:
                    break
                continue
            if token.kind == _OR:
                self.pos += 1
                continue
            operands = [self.unary(depth)]
            while (nxt := self.peek()) is not None and nxt.kind == _OR:
                self.pos += 1
                following = self.peek()
                if following is None or following.kind in (_OR, _CLOSE):
                    continue
                operands.append(self.unary(depth))
            clauses.extend(_disjunction(operands))
        return clauses

    def unary(self, depth: int):
        token = self.tokens[self.pos]
        self.pos += 1
        if token.kind == _OPEN:
            node = _conjunction(self.sequence(depth + 1))
        else:
            node = self.leaf(token)
        if token.negated and node is not None:
            return Not(node)
        return node

    def leaf(self, token: _Token):
        if token.kind == _SITE:
            self.count(1)
            return Site(token.value)
        if token.kind == _LANG:
            self.count(1)
            return Lang(token.value)
        if token.kind == _PHRASE:
            terms = analyze(token.value)
            self.count(len(terms))
            if len(terms) > 1:
                return Phrase(token.value, tuple(terms))
            return Term(token.value, terms[0]) if terms else None
        node = _word_node(hash_member_dotted(token.value))
        self.count(len(node.terms) if isinstance(node, Phrase) else int(node is not None))
        return _Free(node) if isinstance(node, Term) and is_stopword(node.term) else node

    def count(self, n: int) -> None:
        self.leaves += n
        if self.leaves > MAX_TERMS:
            raise QueryTooComplex(
                f"The query has more than {MAX_TERMS} terms; remove some."
            )


def _disjunction(operands: list) -> list:
    """AND operands for ``a OR b OR ...``: the Or plus any exclusions moved out of it."""
    positives, hoisted = [], []
    for node in operands:
        if node is None:
            continue
        if isinstance(node, Not):
            hoisted.append(node)
        elif isinstance(node, And) and all(isinstance(c, Not) for c in node.children):
            hoisted.extend(node.children)
        else:
            positives.append(node)
    if len(positives) > 1:
        return [_FreeOr(tuple(positives))] + hoisted
    return positives + hoisted


@dataclass(frozen=True)
class _FreeOr:
    """An Or still holding ``_Free`` stopword terms, resolved once the whole query is known."""

    children: tuple


def _conjunction(clauses: list):
    """One node for implicitly ANDed clauses: ``None``, the single clause, or ``And``."""
    flat: list = []
    for clause in clauses:
        if clause is None:
            continue
        if isinstance(clause, And):
            flat.extend(clause.children)
        else:
            flat.append(clause)
    if not flat:
        return None
    return flat[0] if len(flat) == 1 else And(tuple(flat))


def _has_content(node) -> bool:
    """Whether a positive, non-stopword leaf exists (stopwords may then be dropped)."""
    if isinstance(node, _Free | Not) or node is None:
        return False
    if isinstance(node, And | Or | _FreeOr):
        return any(_has_content(c) for c in node.children)
    return True


def _resolve(node, drop_stopwords: bool):
    """Replace ``_Free``/``_FreeOr`` placeholders, dropping stopwords if asked."""
    if isinstance(node, _Free):
        return None if drop_stopwords else node.term
    if isinstance(node, Not):
        # Excluding a stopword would exclude nearly every document.
        child = _resolve(node.child, drop_stopwords=True)
        return None if child is None else Not(child)
    if isinstance(node, _FreeOr | Or):
        children = [
            c for c in (_resolve(c, drop_stopwords) for c in node.children) if c
        ]
        flat: list = []
        for c in children:
            flat.extend(c.children if isinstance(c, Or) else (c,))
        if not flat:
            return None
        return flat[0] if len(flat) == 1 else Or(tuple(flat))
    if isinstance(node, And):
        children = [
            c for c in (_resolve(c, drop_stopwords) for c in node.children) if c
        ]
        return _conjunction(children)
    return node


_language = lru_cache(maxsize=4096)(query_language)


def looks_pasted(query: Query) -> bool:
    """Whether the query's text looks pasted from a terminal or a program (short options
    such as ``-r``, ``$``, a word touching a parenthesis, a file name followed by an option
    such as ``gcc myprog.c -lmpfr``): its operators may be words."""
    return bool(_PASTED.search(query.raw))


def is_sentence(query: Query) -> bool:
    """Whether a plain query is a sentence in a user's words with no word framing it as a
    question (``add a request id to every log line of a web request``): at least
    ``SENTENCE_WORDS`` required words, an English function word (a stopword, dropped
    beside them; ``à`` is not ``a``) among them, none of the punctuation of a message or
    a configuration line (``_NOT_SENTENCE``), not an identifier (``names_identifier``)
    nor a pasted text (``looks_pasted``). It is read as a question (``Query.question``): a
    keyword query is shorter and holds no function words (``restrict default kod limited
    nomodify nopeer noquery``, a configuration line, stays one)."""
    words = query.required_words
    if (len(words) < SENTENCE_WORDS or query.optional_words or _NOT_SENTENCE.search(query.raw)
            or any(isinstance(w, Term) and is_stopword(w.term) for w in words)
            or names_identifier(query) or looks_pasted(query)):
        return False
    return any(t.kind == _WORD and t.value.isascii() and (terms := analyze(t.value))
               and all(map(is_stopword, terms)) for t in query.tokens)


#: A member written after its class with ``#`` (``hash_member_dotted``).
_HASH_MEMBER = re.compile(r"((?:[A-Za-z_]\w*(?:\.|::))*([A-Za-z_]\w*))#([A-Za-z_]\w*)")


def hash_member_dotted(word: str) -> str:
    """A query word naming a member after its class with ``#``, as Ruby's and Javadoc's
    references write an instance method (``AbstractBlock#find_by``,
    ``OptionParser#accepts``), written as the dotted name the parser reads it as
    (``AbstractBlock.find_by``): a qualified name (``qualified_parts``) and an identifier,
    not a phrase of its parts. Any other word as it is, a file's name before ``#`` among
    them (``install.html#setup``: a page and its anchor)."""
    found = _HASH_MEMBER.fullmatch(word)
    if found is None or (_FILE_NAME.fullmatch(found.group(1))
                         and not _CAPITALISED.fullmatch(found.group(2).rpartition(".")[2])):
        return word
    return f"{found.group(1)}.{found.group(3)}"


#: A qualified name as typed: its qualifier (a module, class or namespace) and its member,
#: the last two names joined by ``.`` or ``::`` (``Util.del_ws_spc``, ``MPEG::File::strip``).
_QUALIFIED = re.compile(r"(?:[A-Za-z_]\w*(?:\.|::))*([A-Za-z_]\w*)(?:\.|::)([A-Za-z_]\w*)")


def qualified_parts(word: Term | Phrase) -> tuple[Term | Phrase, Term | Phrase] | None:
    """The name qualifying a qualified name and its member, each a word as the parser
    reads it (``MPEG::File::strip`` -> ``File``, ``strip``): a reference names a member in
    a heading of the page of what qualifies it, rarely with its qualifier (a doxygen class
    page's ``strip()``, a lens page's ``del_ws_spc`` under ``Util``); ``None`` for any
    other word, a file name among them (``_FILE_NAME``: ``example.i``, ``sources.list``:
    a file's page need not name its extension apart), unless what would be its extension
    is a capitalised name (``_CAPITALISED``: ``GNATCOLL.Mmap``, ``click.Path``)."""
    if not word.whole:
        return None
    text = word.word if isinstance(word, Term) else word.text
    found = _QUALIFIED.fullmatch(text)
    if found is None or (_FILE_NAME.fullmatch(text)
                         and not _CAPITALISED.fullmatch(found.group(2))):
        return None
    parts = tuple(_word_node(name) for name in found.groups())
    return parts if all(parts) else None


def whole_or_parts(word: Term | Phrase) -> Node:
    """A word, or a qualified name written whole or as its member beside the name
    qualifying it (``qualified_parts``): ``Util.del_ws_spc`` on the page of ``Util``
    defining ``del_ws_spc``, where plain any-word BM25 finds it too."""
    parts = qualified_parts(word)
    return Or((word, And(parts))) if parts else word


def _word_node(text: str) -> Term | Phrase | None:
    """A word as the parser reads it: its terms (several: a phrase) and identifier form."""
    terms = analyze_query_term(text)
    whole = identifier_form(text)
    if len(terms) > 1:
        return Phrase(text, tuple(terms), whole)
    if not terms:
        return Term(text, whole, whole) if whole else None
    return Term(text, terms[0], whole)


def names_identifier(query: Query) -> bool:
    """Whether a plain query typed without quotes names an identifier: a word that is a
    punctuated name or that analyzes to several terms (``std.healthy``, ``LIBVIRT_DEBUG=1``,
    ``.htaccess``), or a word led by a sign, as a configuration line or an editor command
    is written (``DefaultRoot ~ !adm``, ``:set hlsearch``, ``%option reentrant``). Plain
    any-word BM25 reads its parts as words, and finds the pages holding them apart (a
    reference page defining ``healthy`` under ``vmod_std``, ``DefaultRoot`` with another
    group)."""
    if any(t.kind == _PHRASE for t in query.tokens):
        return False
    if not query.plain_words:
        return False
    return (any(isinstance(w, Phrase) or w.whole for w in query.plain_words)
            or any(t.kind == _WORD and _SIGNED.match(t.value) for t in query.tokens))


def excludes(query: Query) -> bool:
    """Whether the query excludes something as typed (``-word``, ``-"a phrase"``,
    ``-(a OR b)``; ``-site:`` and ``-lang:`` are filters)."""
    return any(t.negated and t.kind not in (_SITE, _LANG) for t in query.tokens)


def option_after_command(query: Query) -> bool:
    """Whether the query's second token is an exclusion written right after a first word
    that may name a command (``mpicc -show``, ``couriertcpd -maxprocs``): that command's
    option or the exclusion of a word, which only the pages tell apart
    (``SearchPlan.falls_back``: more pages hold both words than the first without the
    second, as no user leaves out the word most pages on the command hold, or the first
    page holding both is titled by the command's name)."""
    tokens = query.tokens
    return (len(tokens) > 1 and tokens[0].kind == _WORD and not tokens[0].negated
            and bool(_COMMAND.fullmatch(tokens[0].value))
            and tokens[1].kind == _WORD and tokens[1].negated
            and query.raw[tokens[1].start:tokens[1].start + 2] != "--")


def literal_reading(query: Query) -> Query | None:
    """The literal reading of a query's text: every whitespace-separated token a word,
    none an operator (``-r`` the word ``r``; ``(``, ``"``, ``OR`` as typed), but for the
    ``site:`` and ``lang:`` filters; ``None`` when it reads the same as ``query``."""
    tokens = [
        token
        for m in re.finditer(r"\S+", query.raw)
        for token in (_lex(m.group()) if m.group().lstrip("-")[:5].lower() in ("site:", "lang:")
                      else _words(m.group(), m.start()))
    ]
    parser = _Parser(tokens)
    try:
        tree = _conjunction(parser.sequence(depth=0))
    except QueryTooComplex:
        return None
    literal = Query(query.raw, _resolve(tree, drop_stopwords=_has_content(tree)),
                    tuple(tokens))
    if literal.root is None or literal.root == query.root:
        return None
    return literal


def words_reading(query: Query) -> Query | None:
    """The words reading of a query's text, what plain any-word BM25 reads: every run of
    letters and digits a plain word (``statsmodels.api.OLS`` -> ``statsmodels api OLS``,
    ``Rule('/<int:id>')`` -> ``Rule int id``, ``-rf`` -> ``rf``, a quoted phrase its
    words), but for the ``site:`` and ``lang:`` filters and ``OR``, an operator either
    way; ``None`` when it has no word."""
    words: list[str] = []
    filters: list[str] = []
    for m in re.finditer(r"\S+", query.raw):
        token = m.group()
        if token.lstrip("-")[:5].lower() in ("site:", "lang:"):
            filters.append(token)
        else:
            words.extend(w for w in _WORDS.findall(token) if w != "OR")
    if not words:
        return None
    try:
        reading = parse(" ".join(words + filters))
    except QueryError:
        return None
    return None if reading.root is None else reading


def parse(text: str) -> Query:
    """Parse ``text`` into a :class:`Query`; raises :class:`QueryError` only on size limits."""
    if len(text) > MAX_QUERY_CHARS:
        raise QueryTooLong(
            f"The query is {len(text)} characters long; keep it under {MAX_QUERY_CHARS}."
        )
    tokens = _lex(text)
    parser = _Parser(tokens)
    tree = _conjunction(parser.sequence(depth=0))
    return Query(text, _resolve(tree, drop_stopwords=_has_content(tree)), tuple(tokens))
