"""Ranked search over the embedded backend's tantivy index.

Two phases: tantivy returns the top candidates by BM25 over title, anchors, URL and body
(per-field weights, best field plus a tie-break share of the others, compiled by
:class:`~index.engines.embedded.query.TantivyCompiler`), then the backend's
:class:`~index.signals.Ranker` re-scores them with its signals from tantivy's fast columns
and results collapse on ``fields.collapse_key`` (near-copies and translations). Pages
lacking a minor word of a longer query compete when few pages have them all (a long query
needs only most of its words); pages with any word follow when none has them all.

A question the plan re-ranks by its sections' similarity (``SearchPlan.reads_vectors``)
may ask tantivy for less: with ``EMBEDDED_QUESTION_ONE_SEARCH`` its pages holding any of
its words come from one search (the coordinated one, which holds the pages holding every
word with the same scores), not a strict search and a coordinated one, each page ranked
as matching it as asked; with ``EMBEDDED_QUESTION_PROXIMITY`` off no proximity run is read
over the index for it (three phrases of common words, a third of its engine's time), its
best section's similarity to the question saying where its words meet. Both are off by
default; their cost and relevance are in docs/index-performance.md.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

import tantivy

from index.base import FACET_SIZE, Hit, Results
from index.engines.embedded.query import HeldTerms, TantivyCompiler
from index.engines.embedded.schema import address_key, fast_name, stored_hit
from index.engines.embedded.vectors import VECTORS_AT
from index.fields import FACET_FIELDS, home_lead, keyword_key
from index.hits import VECTORS_FIELD, collapse, group_languages, make_hit
from index.plan import SearchPlan
from index.query import Query
from index.signals import Candidate, SiteHome

if TYPE_CHECKING:
    from index.engines.embedded.options import EmbeddedOptions
    from index.engines.embedded.vectors import VectorFile
    from index.signals import Ranker

__all__ = ["SearchMemo", "TantivySearch"]


#: How far apart (relative) two searches may score the same page: tantivy sums a page's
#: field scores in 32-bit floats, in the order of each search's clauses.
_SCORE_TOLERANCE = 1e-5


#: The signals that read each mark of ``TantivySearch._marks``: the mark is searched for
#: when one of them is weighted.
_MARKS_READ_BY = {"label": ("label",), "near": ("near",),
                  "defines": ("defines", "defines_name")}


def _shares(sets: list[set[tuple]]) -> dict[tuple, float]:
    """Each key's share of ``sets`` holding it (keys in none are left out)."""
    if len(sets) == 1:
        return dict.fromkeys(sets[0], 1.0)
    counts = Counter(key for s in sets for key in s)
    return {key: n / len(sets) for key, n in counts.items()}


class _Found(NamedTuple):
    """A search's best pages (``(score, address)``) and, when asked, how many match."""

    hits: list
    count: int | None


class SearchMemo:
    """What the searches of one query's plan share (its readings: the operator, literal
    and words readings, :meth:`SearchPlan.execute`): one searcher, so every reading sees
    the same index, and each search's best pages by its compiled query, so a search a
    later reading asks again is not run again: a check (the words reading of ``pen
    dashed=linetype(new real[] {8,8});`` has the operator reading's proximity runs), and,
    when the words reading's words are the query's, its strict and blend searches. A
    reading that may be followed by another asks ``ahead`` more pages than its own depth,
    so a later reading's deeper ask is a prefix of them (tantivy orders pages by score,
    then address: the best ``n`` of a search are the first ``n`` of any deeper one)."""

    __slots__ = ("ids", "searcher", "searches")

    def __init__(self) -> None:
        self.searcher: tantivy.Searcher | None = None
        #: The id of each result whose stored fields a reading read, by its address key:
        #: a later reading's result the first one showed is known without a read.
        self.ids: dict[tuple, str] = {}
        #: A compiled query (``repr``) -> (the limit it was searched with, its best pages,
        #: how many match: ``None`` when not counted).
        self.searches: dict[str, tuple[int, list, int | None]] = {}

    def search(self, searcher: tantivy.Searcher, query: tantivy.Query, limit: int,
               count: bool = False, ahead: int = 0) -> _Found:
        """The best ``limit`` pages of ``query`` (``ahead`` more searched and kept for a
        later reading) and, with ``count``, how many match: searched once a plan."""
        key = repr(query)
        asked = self.searches.get(key)
        if (asked is None or (asked[0] < limit and len(asked[1]) >= asked[0])
                or (count and asked[2] is None)):
            found = searcher.search(query, limit=limit + ahead, count=count)
            asked = (limit + ahead, found.hits, found.count if count else None)
            self.searches[key] = asked
        return _Found(asked[1][:limit], asked[2])


def _searched(searcher: tantivy.Searcher, query: tantivy.Query, limit: int,
              ahead: int = 0) -> _Found:
    """The best ``limit`` pages of ``query``, kept for no other reading."""
    return _Found(searcher.search(query, limit=limit, count=False).hits, None)


def _read_hit(searcher: tantivy.Searcher, address: tantivy.DocAddress,
              make: Callable[..., Hit], ids: dict[tuple, str] | None = None
              ) -> tuple[str, str, Callable[[], Hit]]:
    """The id, section vectors and hit maker (``make`` given the stored fields) of the
    result at ``address``: one read of its stored hit fields (its id kept in ``ids``)."""
    shown, snippet = stored_hit(searcher, address)
    if ids is not None:
        ids[address_key(address)] = shown["id"]
    return (shown["id"], shown.get(VECTORS_FIELD, ""),
            partial(make, shown, text=snippet, sections=shown.get("sections", "")))


def _made(read: Callable[[], tuple[str, str, Callable[[], Hit]]]) -> Hit:
    """The hit of :func:`_read_hit`'s result ``read``."""
    return read()[2]()


class TantivySearch:
    """The search path of the embedded engine: executes a :class:`SearchPlan` on the index
    ``index()`` opens, with the engine's options (read at each search, so they can be
    tuned live) and ranker; ``vectors()`` is the index's file of section vectors (``None``:
    its stored fields hold them)."""

    def __init__(self, options: EmbeddedOptions, ranker: Ranker,
                 index: Callable[[], tantivy.Index],
                 suggest: Callable[[Query], str | None],
                 vectors: Callable[[], VectorFile | None] = lambda: None):
        self.options = options
        self.ranker = ranker
        self.index = index
        self.suggest = suggest
        self.vectors = vectors
        #: The terms the index was seen to hold, for every search's compiler.
        self.held = HeldTerms()

    def compiler(self, searcher: tantivy.Searcher | None = None,
                 parsed: Query | None = None) -> TantivyCompiler:
        """A query compiler for the index's schema with the engine's field weights (for
        ``parsed``, those it scores with: ``FieldWeights.for_query``); given the search's
        ``searcher``, one that leaves out the fields where a word is in no page (the terms
        earlier searches found held not read again)."""
        o = self.options
        weights = o.field_weights if parsed is None else o.field_weights.for_query(parsed)
        return TantivyCompiler(self.index().schema, weights, o.compound_fields, searcher,
                               self.held)

    def search(self, plan: SearchPlan, page: int, size: int, explain: bool, facets: bool,
               started: float, memo: SearchMemo | None = None) -> Results:
        """One page of ranked hits for a search plan (see ``EmbeddedBackend.search``);
        ``took_ms`` counts from ``started`` (a ``perf_counter`` reading); ``memo``: what
        the searches of one plan share (a search of its own when ``None``)."""
        o, ranker = self.options, self.ranker
        parsed, context = plan.query, plan.context
        results = Results(query=parsed.raw, hits=[], total=0, page=page, size=size)
        if parsed.matches_nothing:
            results.took_ms = (time.perf_counter() - started) * 1000
            return results
        if memo is None:
            memo = SearchMemo()
        if memo.searcher is None:
            memo.searcher = self.index().searcher()
        searcher = memo.searcher
        compiler = self.compiler(searcher, parsed)
        offset = (page - 1) * size
        depth = min(offset + size + o.rerank_depth, o.max_window)
        # a question re-ranked by its sections (see the module)
        reranked = plan.reads_vectors and parsed.question
        one_pass = reranked and o.question_one_search
        matching = ((one_pass and compiler.coordinated(parsed, strict=False))
                    or compiler.compile(plan.strict))
        # (all its pages when the words reading may follow: fewer than ``words_below``)
        found = memo.search(searcher, compiler.scored(matching, parsed), depth, count=True)
        results.total = found.count
        # A reading the words reading may follow (fewer pages hold every word than it
        # asks for) keeps its blend and check searches for it, a page deeper: the words
        # reading asks as deep as it plus the results it follows.
        kept = memo if plan.lazy or found.count < plan.words_below else None
        ahead = size if kept is not None and not plan.lazy else 0
        marks = self._marks(searcher, compiler, parsed, depth,
                            near=not reranked or o.question_proximity, memo=kept,
                            ahead=ahead)
        homes, described = self._named_homes(searcher, compiler, plan, found.hits, kept)
        hits = found.hits + homes
        marks["home"] = described
        # Pages lacking a minor word of a longer query compete with those having them all,
        # when few pages have them all (each with the share of the query it covers);
        # those of a long query lacking a few, and of a question lacking any, always.
        # Not counted in full (a count visits every match): the total grows by the pages
        # ranked.
        more = [] if one_pass else self._blended(searcher, compiler, plan, found,
                                                 min(depth, offset + size + o.blend_depth),
                                                 kept, ahead)
        results.total += len(more)
        # One read of the ranking columns for both.
        candidates = self._candidates(searcher, hits + [(score, a) for score, a, _ in more],
                                      marks)
        for candidate, (_, _, share) in zip(candidates[len(hits):], more, strict=True):
            candidate.coverage = 1.0 - share
        ranked = ranker.rank(candidates, context)
        if not one_pass and plan.relaxes(found.count):
            relaxed = compiler.relaxed(parsed)
            # Pages with every word stay first; pages with some of them follow.
            more = searcher.search(compiler.scored(relaxed, parsed), limit=depth,
                                   count=True)
            results.total = more.count
            matching = relaxed
            known = {address_key(a) for _, a in hits}
            extra = self._candidates(
                searcher, [h for h in more.hits if address_key(h[1]) not in known], marks
            )
            for candidate in extra:
                candidate.coverage = 0.0
            ranked += ranker.rank(extra, context)
        def group(candidate: Candidate) -> Any:
            return candidate.get(plan.collapse)

        languages = group_languages(ranked, group, lambda c: c.get("lang"))
        in_language = context.language_key
        # of a page's translations, the one in the query's language, when language counts
        prefer = (lambda c: c.get("lang") == in_language) if ranker.weight("lang") else None
        shown = collapse(ranked, group, lambda c: c.get("shown", 1) != 0, prefer)[
            offset : offset + size
        ]
        records, unrecorded = self._records(searcher, plan,
                                            [candidate.ref for candidate, _ in shown])
        for (candidate, similar), record in zip(shown, records, strict=True):
            why = ranker.explain(candidate, context) if explain else None
            others = languages[group(candidate)] - {candidate.get("lang")}
            read = partial(_read_hit, searcher, candidate.ref, partial(
                make_hit, score=candidate.score, similar=similar, query=parsed,
                snippet_chars=o.snippet_chars, explain=why, languages=len(others)),
                memo.ids)
            if record is None:  # its id known when an earlier reading read it
                plan.take_stored(results, read, candidate.score, unrecorded,
                                 memo.ids.get(address_key(candidate.ref)))
            else:  # the stored fields are read only if the hit is shown
                plan.take(results, *record, partial(_made, read), candidate.score)
        if page == 1 and results.total < size:
            results.suggestion = self.suggest(parsed)
        if facets:
            results.facets = self._facets(searcher, matching)
        results.took_ms = (time.perf_counter() - started) * 1000
        return results

    def _blended(self, searcher: tantivy.Searcher, compiler: TantivyCompiler,
                 plan: SearchPlan, found: _Found, limit: int,
                 memo: SearchMemo | None = None, ahead: int = 0) -> list:
        """``(score, address, share)`` of the best ``limit`` pages that compete while
        lacking words (``found``: the strict search's), each with the share of the query it
        lacks: those lacking a minor word, one search per word so each page's share is
        known (the best of their union are those of one search for all of them), when the
        plan blends; else a long query's pages holding most of its words, a question's
        any of them (``Query.coordinated``); each blend search once a plan (``memo``,
        ``ahead``: :class:`SearchMemo`)."""
        parsed = plan.query
        search = _searched if memo is None else memo.search
        blended = compiler.all_but_one(parsed, searcher) if plan.blends(found.count) else []
        if blended:
            return sorted(((score, address, share) for query, share in blended
                           for score, address in search(
                               searcher, compiler.scored(query, parsed), limit,
                               ahead=ahead).hits),
                          key=lambda hit: -hit[0])[:limit]
        share = 1.0 - parsed.partial_coverage
        return [(score, address, share)
                for score, address in self._coordinated(searcher, compiler, parsed, found,
                                                        limit)]

    @staticmethod
    def _coordinated(searcher: tantivy.Searcher, compiler: TantivyCompiler, parsed: Query,
                     found: _Found, limit: int) -> list:
        """``(score, address)`` of the best ``limit`` pages holding ``parsed.min_words``
        of its words but not all (none when every word must match).

        Searched with the strict pages and those ``found`` holds left out here rather than
        excluded in tantivy (which seeks the strict query again at every match: 2.9 ->
        1.9 ms for a question with more strict pages than ``found`` holds). A page that
        holds every word scores the same in both searches, so when ``found`` holds only
        the best of them, a page scoring above its last is not one of the others; when
        fewer than ``limit`` such pages come back, the excluding search runs."""
        query = compiler.coordinated(parsed, strict=False)
        if query is None:
            return []
        strict = {address_key(address) for _, address in found.hits}
        floor = None
        if found.count > len(found.hits):
            last = found.hits[-1][0]
            floor = last + max(abs(last), 1.0) * _SCORE_TOLERANCE
        hits = searcher.search(compiler.scored(query, parsed), limit=limit + len(strict),
                               count=False).hits
        kept = [(score, address) for score, address in hits
                if address_key(address) not in strict and (floor is None or score > floor)]
        if floor is None or len(kept) >= limit:
            return kept[:limit]
        return searcher.search(compiler.scored(compiler.coordinated(parsed), parsed),
                               limit=limit, count=False).hits

    def _named_homes(self, searcher: tantivy.Searcher, compiler: TantivyCompiler,
                     plan: SearchPlan, hits: list, memo: SearchMemo | None = None,
                     limit: int = 5) -> tuple[list, dict[tuple, float]]:
        """(0.0, address) of home pages of sites the query names, or describes with words
        their lead holds (``SiteHome.describes``, read from the page's stored title and
        text), that ``hits`` lack, so a navigational query finds the home page even when
        its text does not match; with the address keys of the described ones (the
        ``home`` mark, ``Candidate.home``); searched once a plan (``memo``)."""
        if not plan.named_homes:
            return [], {}
        context = plan.context
        described = {keyword_key(name) for name, _ in context.described} - context.named_keys
        search = _searched if memo is None else memo.search
        found = [address for _, address in search(
            searcher, compiler.named_homes(context.named_keys | described),
            limit * (1 + len(described))).hits]
        homes, marked = [], {}
        sites = searcher.fast_field_values(fast_name("site_name"), found) if found else []
        for address, site in zip(found, sites, strict=True):
            if site in described:
                shown, snippet = stored_hit(searcher, address)
                if not SiteHome.describes(context, site,
                                          home_lead(shown.get("title") or "", snippet.text)):
                    continue
                marked[address_key(address)] = 1.0
            homes.append(address)
        known = {address_key(a) for _, a in hits}
        return [(0.0, a) for a in homes if address_key(a) not in known], marked

    def _marks(self, searcher: tantivy.Searcher, compiler: TantivyCompiler,
               parsed: Query, limit: int, near: bool = True, memo: SearchMemo | None = None,
               ahead: int = 0) -> dict[str, dict[tuple, float]]:
        """The best pages (up to ``limit`` each) whose title, anchor text or URL hold every
        label word of the query (``label``), of those holding its required words near each
        other, one search per proximity run (``near``; none when ``near`` is false), and of
        those whose headings hold its defined words (``defines``), for the signals that
        weigh them: each page's address key with the share of the check's searches that
        found it. Each check searched once a plan (``memo``, ``ahead``: :class:`SearchMemo`)."""
        search = _searched if memo is None else memo.search
        queries = {"label": [compiler.label(parsed)],
                   "near": compiler.near_groups(parsed) if near else [],
                   "defines": [compiler.defines(parsed)]}
        return {
            name: _shares([{address_key(a) for _, a in search(
                searcher, query, limit, ahead=ahead).hits} for query in group
                if query is not None])
            if any(map(self.ranker.weight, _MARKS_READ_BY[name])) else {}
            for name, group in queries.items()
        }

    def _candidates(self, searcher: tantivy.Searcher, hits: list,
                    marks: dict[str, dict[tuple, float]]) -> list[Candidate]:
        """Candidates for ``(score, address)`` hits with the ranking fields the signals
        read (and the collapse key and language) from tantivy's fast fields, and the marks
        of ``_marks``."""
        addresses = [address for _, address in hits]
        if not addresses:
            return []
        names = tuple(dict.fromkeys((*self.ranker.fields, "cluster", "shown", "lang")))
        columns = [searcher.fast_field_values(fast_name(n), addresses) for n in names]
        label, near, defines = (marks[m] for m in ("label", "near", "defines"))
        home = marks.get("home") or {}
        candidates = []
        append = candidates.append
        # A row of the columns a hit (each column holds a value an address); the
        # candidate's fields by position: ref, text_score, fields, labelled, near, defines.
        for (score, address), values in zip(hits, zip(*columns, strict=True), strict=True):
            key = address_key(address)
            append(Candidate(address, score, dict(zip(names, values, strict=True)),
                             label.get(key, 0.0) == 1, near.get(key, 0.0),
                             defines.get(key, 0.0) == 1, home=key in home))
        return candidates

    def _records(self, searcher: tantivy.Searcher, plan: SearchPlan, addresses: list
                 ) -> tuple[list[tuple[str, bytes] | None], str | None]:
        """The id and section vectors of each result at ``addresses`` from the index's file
        of them, for a plan that re-ranks by them (one read of the ``vectors_at`` column);
        ``None`` for a result without (its stored fields are read for its id and hit).
        With the vectors of a result without a record: ``""`` when the file was read (an
        index with the file stores no vectors in its stored fields, so a page without a
        record has none, and the re-ranking reads nothing more of it), ``None`` when it
        was not (the stored fields hold them)."""
        vectors = self.vectors() if plan.reads_vectors else None
        if vectors is None or not addresses:
            return [None] * len(addresses), None
        return ([vectors.read(at) for at in searcher.fast_field_values(VECTORS_AT, addresses)],
                "")

    @staticmethod
    def _facets(searcher: tantivy.Searcher, query: tantivy.Query) -> dict:
        """Matches per host and per language: tantivy terms aggregations over the fast
        columns, visiting every match once (as the total count does)."""
        aggs = {name: {"terms": {"field": field, "size": FACET_SIZE}}
                for name, field in FACET_FIELDS.items()}
        found = searcher.aggregate(query, aggs)
        return {name: sorted(((b["key"], b["doc_count"]) for b in found[name]["buckets"]
                              if b["key"]), key=lambda kv: (-kv[1], kv[0]))
                for name in FACET_FIELDS}
