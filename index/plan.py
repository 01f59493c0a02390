"""The search plan: what a query asks of an engine, decided once for every engine.

A parsed :class:`~index.query.Query` plus the engine's :class:`Thresholds` becomes a
:class:`SearchPlan` once per search (:meth:`SearchPlan.of`); the engines
(:mod:`index.engines.embedded.search`, :mod:`index.engines.elasticsearch.search`) only execute it.
The plan holds:

1. **strict**: the pages holding every required word (``Query.matching``), or, for a long
   query, ``Query.min_words`` of them (``coordinated``);
2. **blend**: when fewer than ``blend_below`` pages hold every word of a short plain
   query (``Query.blendable``), the pages lacking a minor word compete, their text score
   times the share of the query they cover (:meth:`SearchPlan.blends`);
3. **relaxed**: when fewer than ``min_strict_hits`` pages hold every word of a plain
   query of several words, the pages holding any of them (:meth:`SearchPlan.relaxes`): the
   any-word reading plain BM25 would give, so the fallback never finds fewer pages; the
   pages holding every word and, when the query blends, those lacking one minor word
   (:attr:`SearchPlan.first`) rank before the others, on both engines (an engine that
   ranks the any-word reading in one pass says so, :data:`ANY_WORD`, and the plan
   orders them: :meth:`SearchPlan._tiered`);
4. **named home**: the home pages of the sites a navigational query names, and of those
   a short query names and describes with words their lead holds (``kitty terminal``:
   ``query.described_sites``, ``fields.home_lead``), retrieved without its words when the
   ``sitehome`` signal is weighted (``named_homes``); when such a home page leads the
   first results while another page of its site is titled by the describing words, the
   words name that page, a topic of the site, and the query runs again without the home
   page (:func:`topic`: ``gri contour plot``, "Gri: contour plots");
5. **collapse**: results collapse on :data:`COLLAPSE_FIELD` (near-copies, translations);
6. **literal**: when the operator reading of a query that looks pasted from a terminal
   or a program (``query.looks_pasted``: short options such as ``-r``, ``$``, a word
   touching a parenthesis, a file name followed by an option: ``gcc myprog.c -lmpfr``)
   finds fewer than ``literal_below`` pages, the literal reading
   of the same text, every token a word (:meth:`SearchPlan.execute`), when it finds
   more: ``tool -r file -Y filter`` is a command line, not ``tool file`` without ``y``
   (a short option right after the first word, ``cmp -l``, is read as a word already:
   ``index.query``). A query typed with operators (``"a phrase"``, ``-word``,
   ``a OR b``) keeps its meaning here, unless its exclusions leave nothing while pages
   hold every word of its literal reading (``gm compare -metric PSNR``: an option the
   lexer cannot tell from an exclusion, every page on the command saying ``metric``; a
   query of exclusions alone, ``-no-undefined``, a linker's option), or
   it excludes a word right after a command's name and more pages hold both words than
   the name alone, or the first of them is titled by the name (``mpicc -show``,
   ``couriertcpd -maxprocs``: the page on the command documents the option);
7. **words**: when the reading that answers still finds fewer than ``words_below`` pages
   (by default none; for a query naming an identifier, ``query.names_identifier``, fewer
   than ``identifier_words_below``, a page of results: ``std.healthy`` written whole on
   four pages, the reference page defining ``healthy`` under ``vmod_std``; for a plain
   query of ``fill_words`` or more words, fewer than ``plain_words_below``, a page:
   ``aptitude why libc6`` held whole by four pages, the reference page of ``aptitude
   why`` naming no ``libc6``),
   the words reading (``query.words_reading``: every run of letters and digits a plain
   word, as plain any-word BM25 reads the text, ``site:`` and ``lang:`` kept; any of them
   matching while fewer than ``words_below`` pages hold them all) fills the results after
   them, so no query finds fewer pages than plain any-word BM25 does:
   ``statsmodels.api.OLS`` written nowhere whole, ``"a phrase"`` no page holds,
   ``Rule('/<int:id>')``. A query typed with exclusions (``-word``) keeps its meaning
   here, even when it finds nothing;
8. **sections**: with semantic matching on (``SEARCH_SEMANTIC``; :attr:`SearchPlan.sections`,
   an :class:`~index.semantic.SectionMatch`), a page scores by its best section together
   with its page-level signals: the first ``SEARCH_SEMANTIC_DEPTH`` results of the reading
   that answers are read at once, each scored by its engine score relative to the first
   result's plus its best section's similarity to the query
   (:meth:`~index.semantic.SectionMatch.rerank`, :meth:`SearchPlan.execute`), and the page
   asked for is cut from that order. A page past that depth keeps the engine's order, and
   so does every result of a query the match does not apply to
   (:meth:`~index.semantic.SectionMatch.applies`: with ``SEARCH_SEMANTIC_QUERIES =
   "questions"``, a query that is not question-shaped).

The per-query context the signals read (:class:`~index.signals.RankContext`: the query's
language, the sites it names, the time it runs at) is computed here, once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from index.analysis import analyze, is_stopword
from index.fields import site_name, titled_by, url_depth
from index.hits import PENDING, Pending
from index.query import (
    Node,
    Query,
    Term,
    excludes,
    literal_reading,
    looks_pasted,
    names_identifier,
    option_after_command,
    words_reading,
)
from index.signals import RankContext

if TYPE_CHECKING:
    from index.base import Hit, Results
    from index.semantic import SectionMatch
    from index.signals import Ranker

__all__ = ["ANY_WORD", "COLLAPSE_FIELD", "SearchPlan", "Thresholds"]

#: The ranking field results collapse on (``fields.collapse_key``).
COLLAPSE_FIELD = "cluster"
#: ``Results.extra`` key of an engine that ranked the any-word reading in one pass, the
#: pages holding every word among the others (its value: how many pages hold every word):
#: the plan then ranks those of :attr:`SearchPlan.first` before the others.
ANY_WORD = "any_word"
#: The first results :func:`topic` reads, whatever page is asked for.
TOPIC_RESULTS = 10


@dataclass(frozen=True)
class Thresholds:
    """When the plan brings in more pages; each engine's settings give its values."""

    #: Fewer pages holding every word than this: the any-word reading.
    min_strict_hits: int = 1
    #: Fewest required words of a query whose pages lacking a minor word compete (0: never).
    blend_words: int = 3
    #: Pages lacking a minor word compete while fewer than this hold every word.
    blend_below: int = 300
    #: Fewer results than this for a query that looks pasted: its literal reading.
    literal_below: int = 3
    #: Fewer results than this of the reading that answers: its words reading follows
    #: (1: only a reading that finds nothing; pages holding every word stay the answer).
    words_below: int = 1
    #: The same for a query naming an identifier (``query.names_identifier``): a page of
    #: results, so the pages holding its parts apart follow those holding it whole.
    identifier_words_below: int = 10
    #: The same for a plain query of at least ``fill_words`` words (``Query.plain_words``)
    #: a page must hold every one of: a page of results, so the pages holding some of its
    #: words follow those holding them all (or all but a minor one), as plain any-word BM25
    #: finds them.
    plain_words_below: int = 10
    #: Fewest plain words of a query ``plain_words_below`` applies to (a two-word query's
    #: pages hold both words or are not results).
    fill_words: int = 3

    @classmethod
    def of(cls, engine: object) -> Thresholds:
        """The thresholds an engine's options hold now (they may be tuned live)."""
        return cls(**{name: getattr(engine, name) for name in cls.__dataclass_fields__
                      if hasattr(engine, name)})


@dataclass(frozen=True)
class SearchPlan:
    """A query's search, decided once: which readings run and when (see the module)."""

    query: Query
    context: RankContext
    thresholds: Thresholds
    #: Retrieve the home pages of the sites the query names or describes (the signal is
    #: weighted).
    named_homes: bool
    collapse: str = COLLAPSE_FIELD
    #: Semantic matching of pages by their best section (``None``: off).
    sections: SectionMatch | None = field(default=None)
    #: Hits made only when shown (:meth:`take`): a reading whose results past the page are
    #: dropped (the words reading, asked for the results it follows as well).
    lazy: bool = False

    @classmethod
    def of(cls, query: Query, thresholds: Thresholds, ranker: Ranker,
           language: str = "en", sections: SectionMatch | None = None) -> SearchPlan:
        """The plan of ``query`` for an engine with these thresholds, ranker and semantic
        matching (``None`` when the match does not apply to the query)."""
        context = RankContext.of(query, language)
        if sections is not None and not sections.applies(query):
            sections = None
        return cls(query, context, thresholds,
                   named_homes=context.asks_for_homes and bool(ranker.weight("sitehome")),
                   sections=sections)

    @property
    def strict(self) -> Node | None:
        """The pages holding every required word (``Query.matching``)."""
        return self.query.matching

    @property
    def coordinated(self) -> Node | None:
        """A long query's pages holding most of its words (``Query.coordinated``)."""
        return self.query.coordinated

    def blends(self, strict_hits: int) -> bool:
        """Whether pages lacking a minor word compete, ``strict_hits`` pages holding every
        word."""
        t = self.thresholds
        return self.query.blendable(t.blend_words) and strict_hits < t.blend_below

    def relaxes(self, strict_hits: int) -> bool:
        """Whether the any-word reading runs, ``strict_hits`` pages holding every word."""
        return strict_hits < self.thresholds.min_strict_hits and self.query.relaxable

    @cached_property
    def literal(self) -> SearchPlan | None:
        """The plan of the query's literal reading (every token a word), or ``None`` when
        that is the reading already."""
        literal = literal_reading(self.query)
        if literal is None:
            return None
        return SearchPlan(literal, RankContext(literal, *_rest(self.context)),
                          self.thresholds, self.named_homes, self.collapse, self.sections)

    @cached_property
    def words(self) -> SearchPlan | None:
        """The plan of the query's words reading (``query.words_reading``), any of them
        matching while fewer than ``words_below`` pages hold them all; ``None`` when it
        cannot find more (one word, as asked) or the query excludes words as typed."""
        if excludes(self.query) and not looks_pasted(self.query):
            return None
        words = words_reading(self.query)
        if words is None or (words.root == self.query.root and not words.relaxable):
            return None
        t = self.thresholds
        return SearchPlan(words, RankContext(words, *_rest(self.context)),
                          replace(t, min_strict_hits=max(t.min_strict_hits, self.words_below)),
                          self.named_homes, self.collapse, self.sections, lazy=True)

    @cached_property
    def first(self) -> SearchPlan | None:
        """The plan of the pages that rank before the any-word ones when the any-word
        reading runs (:meth:`relaxes`): the pages holding every word and, when the query
        blends, those lacking one minor word (the any-word reading off); ``None`` when it
        never runs."""
        t = self.thresholds
        if not self.query.relaxable or t.min_strict_hits <= 0:
            return None
        return replace(self, thresholds=replace(t, min_strict_hits=0), lazy=True)

    @property
    def words_below(self) -> int:
        """Fewer results than this of the reading that answers call for the words reading:
        ``identifier_words_below`` for a query naming an identifier, ``plain_words_below``
        for a plain query of ``fill_words`` or more words, else ``words_below``."""
        t = self.thresholds
        if names_identifier(self.query):
            return t.identifier_words_below
        if self._fills:
            return t.plain_words_below
        return t.words_below

    @property
    def _fills(self) -> bool:
        """Whether ``plain_words_below`` applies: a plain query of ``fill_words`` or more
        words, not all stopwords, every required one of which a page must hold (a question
        or a long query matches pages lacking some already: ``Query.coordinated``)."""
        query = self.query
        words = query.plain_words
        return (len(words) >= self.thresholds.fill_words and query.coordinated is None
                and not all(isinstance(w, Term) and is_stopword(w.term) for w in words))

    def falls_back(self, total: int) -> bool:
        """Whether ``total`` results of the operator reading call for the literal one:
        fewer than ``literal_below`` of a query that looks pasted, none of a query whose
        typed exclusions leave nothing (exclusions alone too: ``-no-undefined``, a linker's
        option), or any number of a query excluding a word right after a command's name
        (``query.option_after_command``: ``mpicc -show``, its option when the literal
        reading finds more pages or its first page is titled by the name,
        :meth:`_names_its_page`); :meth:`_answers_literally` then decides."""
        pasted = looks_pasted(self.query)
        # the literal reading is parsed only for a query it may answer
        if not (pasted or excludes(self.query)) or self.literal is None:
            return False
        if pasted:
            return total < self.thresholds.literal_below
        return total == 0 or option_after_command(self.query)

    def _answers_literally(self, run: Callable[[SearchPlan, int, int], Results]) -> bool:
        """Whether the literal reading answers a query :meth:`falls_back` for: it looks
        pasted, or its literal reading finds pages without its any-word fallback (pages
        holding every word). An exclusion that leaves no page among those holding the
        other words is a command line's option no rule reads as one (``gm compare -metric
        PSNR``: every page on ``gm compare`` and ``PSNR`` says ``metric``); one that leaves
        none because no page holds the other words (``xyzzy -python``) is not, and the
        query finds nothing, as typed."""
        if looks_pasted(self.query):
            return True
        t = self.thresholds
        every_word = replace(self.literal, thresholds=replace(t, min_strict_hits=0,
                                                               blend_words=0), lazy=True)
        return run(every_word, 1, 1).total > 0

    def _names_its_page(self, run: Callable[[SearchPlan, int, int], Results],
                        first_page: Results | None) -> bool:
        """Whether the literal reading's first page, of a query excluding a word right
        after a command's name (``option_after_command``), is titled by that name: the
        page on ``couriertcpd`` documenting its ``-maxprocs``, an option however many
        other pages on the command lack the word (``python -snake``: the page on snakes
        is no page on ``python``, and the word stays excluded). ``first_page``: the
        literal reading's first page of results when the caller has it (searched again
        otherwise)."""
        if not option_after_command(self.query):
            return False
        name = analyze(self.query.tokens[0].value)
        if not name:
            return False
        if first_page is None:
            first_page = self.literal._tiered(run, 1, 1)[0]
        top = _ranked(first_page)[:1]
        if not top:
            return False
        hit = top[0].make() if isinstance(top[0], Pending) else top[0]
        return name[0] in analyze(hit.title)

    @property
    def reads_vectors(self) -> bool:
        """Whether the plan re-orders the engine's results by their stored section vectors
        (the engine hands them over with :meth:`take`)."""
        return self.sections is not None

    def take(self, results: Results, hit_id: str, vectors: str | bytes,
             make: Callable[[], Hit], score: float = 0.0) -> None:
        """Add the engine's next ranked result (its ``score``) to ``results``: its hit made
        now, or, when the plan re-orders results by their sections or is :attr:`lazy`, as
        a :class:`~index.hits.Pending` one whose hit is made only if it is shown."""
        if self.reads_vectors or self.lazy:
            results.extra.setdefault(PENDING, []).append(Pending(hit_id, vectors, make,
                                                                 score))
        else:
            results.hits.append(make())

    def take_stored(self, results: Results,
                    read: Callable[[], tuple[str, str, Callable[[], Hit]]],
                    score: float = 0.0, vectors: str | bytes | None = None,
                    id: str | None = None) -> None:
        """:meth:`take` for an engine that reads a result's id, vectors and hit maker with
        one read of its stored fields (``read()``): made now when the hit is, else read
        only when the plan asks the pending result for its id or hit (for its vectors
        too, unless the engine knows them without the read: ``vectors``; for its id,
        unless the engine knows it: ``id``)."""
        if self.reads_vectors or self.lazy:
            results.extra.setdefault(PENDING, []).append(Pending.stored(read, score,
                                                                        vectors, id))
        else:
            results.hits.append(read()[2]())

    def execute(self, run: Callable[[SearchPlan, int, int], Results], page: int = 1,
                size: int = 10) -> Results:
        """Page ``page`` of ``size`` results, run with an engine's ``run(plan, page, size)``
        (one reading's results): the operator reading, then the literal one when it finds
        too few and the words find more; then, with semantic matching, the first results
        re-ranked with their best sections' similarity, the hits of the page asked for
        made from that order. Partial when any search it ran was (:func:`_recorded`). A
        query naming a topic of a site it describes runs again as such (:func:`topic`)."""
        results = _executed(self, run, page, size)
        again = topic(self, run, results, page, size)
        return results if again is None else _executed(again, run, page, size)

    def _read(self, run: Callable[[SearchPlan, int, int], Results], page: int,
              size: int) -> Results:
        """The operator reading's results, or the literal reading's when they are more;
        the words reading's after them when they are still too few."""
        plan, (results, strict) = self, self._tiered(run, page, size)
        if self.falls_back(results.total) and self._answers_literally(run):
            literal, literal_strict = self.literal._tiered(run, page, size)
            if literal.total > results.total or self._names_its_page(
                    run, literal if page == 1 and size else None):
                literal.extra["reading"] = "literal"
                literal.query = self.query.raw
                plan, results, strict = self.literal, literal, literal_strict
        if results.total >= self.words_below or self.words is None:
            return results
        if (strict is not None and strict < plan.thresholds.min_strict_hits
                and self.words.query.root == plan.query.root):
            return results  # the any-word reading answered: the words reading is the same
        return self._filled(run, plan, results, page, size)

    def _tiered(self, run: Callable[[SearchPlan, int, int], Results], page: int,
                size: int) -> tuple[Results, int | None]:
        """Page ``page`` of the plan's reading, the pages of :attr:`first` before the other
        pages of the any-word reading when an engine ranked them in one pass
        (:data:`ANY_WORD`); as the engine ranked them when it did not, or when no page
        would rank first (none holds every word and the query does not blend). With the
        number of pages holding every word the engine reported (``None``: none)."""
        results = run(self, page, size)
        strict = results.extra.pop(ANY_WORD, None)
        if strict is None or self.first is None or not (strict or self.blends(strict)):
            return results, strict
        first = run(self.first, 1, page * size)
        if not first.total:
            return results, strict
        ranked = _ranked(first)
        rest = results
        if len(ranked) < page * size:  # the page needs the other pages too
            seen = {entry.id for entry in ranked}
            rest = run(replace(self, lazy=True), 1, page * size + len(seen))
            rest.extra.pop(ANY_WORD, None)
            ranked += [entry for entry in _ranked(rest) if entry.id not in seen]
        shown = ranked[(page - 1) * size:page * size]
        if self.lazy or self.reads_vectors:
            rest.hits = []
            rest.extra[PENDING] = shown
        else:
            rest.hits = [e.make() if isinstance(e, Pending) else e for e in shown]
            rest.extra.pop(PENDING, None)
        rest.total = max(rest.total, len(ranked))
        rest.page, rest.size = page, size
        return rest, strict

    def _filled(self, run: Callable[[SearchPlan, int, int], Results], plan: SearchPlan,
                results: Results, page: int, size: int) -> Results:
        """``results`` (``plan``'s, fewer than :attr:`words_below`) first, then the words
        reading's other results, page ``page`` of them; ``results`` when the words find
        no more."""
        few = results if page == 1 else run(plan, 1, max(size, results.total))
        first = _ranked(few)
        seen = {entry.id for entry in first}
        words = self.words
        if words.query.root == plan.query.root:  # its first pages are ``results`` already
            words = run(words, 1, page * size + len(seen))
            words.extra.pop(ANY_WORD, None)
        else:
            words, _ = words._tiered(run, 1, page * size + len(seen))
        if words.total <= results.total:
            return results
        ranked, total = _joined(first, seen, _ranked(words), page * size, words.total)
        shown = ranked[(page - 1) * size:page * size]
        if not self.reads_vectors:  # the words reading's hits are made as they are shown
            shown = [e.make() if isinstance(e, Pending) else e for e in shown]
        words.hits = [e for e in shown if not isinstance(e, Pending)]
        if any(isinstance(e, Pending) for e in shown):
            words.extra[PENDING] = [e for e in shown if isinstance(e, Pending)]
        else:
            words.extra.pop(PENDING, None)
        words.total = total
        words.page, words.size = page, size
        words.extra["reading"] = "words"
        words.query = self.query.raw
        return words


def _executed(plan: SearchPlan, run: Callable[[SearchPlan, int, int], Results], page: int,
              size: int) -> Results:
    """:meth:`SearchPlan.execute` of ``plan`` as it reads the query."""
    run, cut_short = _recorded(run)
    match = plan.sections
    if match is None or page * size > match.depth or not plan.query.words():
        results = plan._read(run, page, size)
        results.hits += [p.make() for p in results.extra.pop(PENDING, ())]
        results.partial = any(cut_short)
        return results
    ahead = match.encode_ahead(plan.query.raw)  # while the engine searches
    results = plan._read(run, 1, match.depth)
    pending = results.extra.pop(PENDING, [])
    offset = (page - 1) * size
    results.hits = [p.make() for p in
                    match.rerank(pending, results.query, ahead)[offset:offset + size]]
    results.page, results.size = page, size
    if results.total >= size:  # the engine offered one for fewer than ``depth``
        results.suggestion = None
    results.partial = any(cut_short)
    return results


def topic(plan: SearchPlan, run: Callable[[SearchPlan, int, int], Results],
          results: Results, page: int, size: int) -> SearchPlan | None:
    """The plan of ``plan``'s query asking for no home page of a site it describes
    (``query.described_sites``) when its first results (:data:`TOPIC_RESULTS`; ``results``
    when they are page 1 of as many, else searched) lead with that home page, whose title
    lacks the describing words, and hold a page of that site titled by them
    (``fields.titled_by``): ``gri contour plot`` asks for the page titled "Gri: contour
    plots", not for Gri's home page, whose first words say Gri draws contour plots, and
    ``luasql license`` for "LuaSQL License"; ``kitty terminal`` for kitty's home page still
    (no page is titled "terminal"), as ``slurm workload manager`` does, the words of
    Slurm's home page title. ``None`` when the query asks for the home page."""
    described = dict(plan.context.described)

    def home_described(hit: Hit) -> bool:
        return not url_depth(hit.url) and _site(hit) in described

    if not described or not size or page == 1 and not (
            results.hits and home_described(results.hits[0])):
        return None  # a first page searched again only when it may lead with such a home
    hits = (results.hits if page == 1 and size >= TOPIC_RESULTS
            else _executed(plan, run, 1, TOPIC_RESULTS).hits)[:TOPIC_RESULTS]
    if not hits or not home_described(hits[0]):
        return None
    site = _site(hits[0])
    terms = described[site]
    if site in plan.context.named or set(terms) <= set(analyze(hits[0].title)):
        return None
    if not any(url_depth(hit.url) and _site(hit) == site and titled_by(hit.title, terms, site)
               for hit in hits[1:]):
        return None
    context = replace(plan.context, described=tuple(
        (name, words) for name, words in plan.context.described if name != site))
    return replace(plan, context=context,
                   named_homes=plan.named_homes and context.asks_for_homes)


def _site(hit: Hit) -> str:
    """The name of a result's site (``fields.site_name``)."""
    return site_name(hit.host or urlsplit(hit.url).netloc)


def _recorded(run: Callable[[SearchPlan, int, int], Results]) -> tuple[
        Callable[[SearchPlan, int, int], Results], list[bool]]:
    """``run``, and whether each search it has run was cut short (``Results.partial``): a
    plan's results are partial when any of its searches was, for a reading chosen over
    another by a count that a time budget cut short is no complete answer either."""
    cut_short: list[bool] = []

    def recorded(plan: SearchPlan, page: int, size: int) -> Results:
        results = run(plan, page, size)
        cut_short.append(results.partial)
        return results

    return recorded, cut_short


def _ranked(results: Results) -> list:
    """A reading's ranked results: its hits, or, re-ordered by sections later, its
    pending ones."""
    return [*results.hits, *results.extra.get(PENDING, ())]


def _joined(first: list, seen: set[str], then: list, need: int,
            total: int) -> tuple[list, int]:
    """``first`` (the ids ``seen``), then the entries of ``then`` not among them, as far
    as ``need`` entries; with how many entries the whole join holds, or ``total`` when
    that is more. A pending entry's id is read only when it is reached (its stored
    fields: ``Pending.stored``), and the others' only when the count needs them."""
    ranked = list(first)
    rest = iter(then)
    for entry in rest:
        if entry.id not in seen:
            ranked.append(entry)
            if len(ranked) >= need:
                break
    left = list(rest)
    if len(ranked) + len(left) > total:
        total = max(total, len(ranked) + sum(entry.id not in seen for entry in left))
    return ranked, total


def _rest(context: RankContext) -> tuple:
    """A context's fields after its query (a literal reading keeps its language and time)."""
    return (context.language, context.now, context.named, context.mentioned,
            context.named_keys, context.mentioned_keys, context.language_key,
            context.described)
