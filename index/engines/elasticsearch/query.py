"""Query compilation for Elasticsearch: the shared query AST to the query DSL, and the
ranking the signals of :mod:`index.signals` ask for, without scripts.

- :class:`QueryCompiler` turns AST nodes into ``multi_match`` / ``bool`` / ``term`` queries
  over the analyzed fields (space-joined terms, ``whitespace`` analyzer).
- :class:`RankingQuery` builds the search body for a parsed query: which pages match (every
  word; the any-word fallback; pages lacking one minor word, their text score times the
  share of the query's IDF they cover), compounds of the query's words as ``should``
  clauses, the home page of a named site matching without the words, then each weighted
  signal compiled by its own ``es_functions`` into the formula of :mod:`index.formula`, the
  one the embedded engine ranks with: the text score over the best one of the pass (``top``,
  which the search reads first), plus the weighted boost and added signals, times the
  demotions.
  :meth:`RankingQuery.text_query` is the same query without the signals: the first phase,
  whose top matches the ranked query rescores (:mod:`index.engines.elasticsearch.paging`),
  the named sites' home pages always among them (:data:`HOME_FIRST`).

What the query holds (plain words, compounds, sites named, label words, language) comes
from the parsed :class:`~index.query.Query`, as for the embedded engine
(:mod:`index.engines.embedded.query`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from index.fields import (
    DEFAULT_COMPOUND_FIELDS,
    DEFAULT_FIELD_WEIGHTS,
    DEFINE_FIELDS,
    IDENT_PARTS_WEIGHT,
    IDENTS,
    JOINED_FIELDS,
    LABEL_FIELDS,
    NEAR_FIELDS,
    OPTIONAL_FIELDS,
    FieldWeights,
    defining_readings,
)
from index.query import (
    And,
    AtLeast,
    Lang,
    Node,
    Not,
    Or,
    Phrase,
    Query,
    Site,
    Term,
    joined_compounds,
    scored_optional_words,
)
from index.signals import EsParts, RankContext, Ranker, SiteHome, StaticRank

__all__ = ["HOME_FIRST", "QueryCompiler", "RankingQuery", "blend_terms", "word_idf"]

#: What a named site's home page adds to its first-phase score: more than any text score,
#: so it is in the window the signals rescore however many pages match the words better
#: (``SiteHome``: the engines retrieve those home pages whatever their text); the rescore
#: alone orders the window, so this never reaches a result's score.
HOME_FIRST = 1e6
#: The function every page matches, adding nothing: a ``function_score`` of ``sum`` mode
#: adds 1 to a page none of its functions match.
_NOTHING_ADDED = {"filter": {"match_all": {}}, "weight": 0.0}


class QueryCompiler:
    """Compiles the shared query AST to the Elasticsearch query DSL."""

    def __init__(
        self,
        field_weights: FieldWeights = DEFAULT_FIELD_WEIGHTS,
        compound_fields: FieldWeights = DEFAULT_COMPOUND_FIELDS,
    ):
        self.field_weights = field_weights
        self.fields = [f"{name}^{IDENT_PARTS_WEIGHT if name == IDENTS else weight:g}"
                       for name, weight in field_weights.items()]
        self.compound_fields = compound_fields

    def label(self, node: Term | Phrase) -> dict:
        """Pages whose title, anchor text or URL hold a word or phrase (a filter)."""
        if isinstance(node, Term):
            return _label_match(node.term, "best_fields")
        return _label_match(" ".join(node.terms), "phrase")

    def optional(self, node: Term | Phrase) -> dict | None:
        """An optional word or phrase (a call's argument: ``net.eth0``) scored where it
        says something (``OPTIONAL_FIELDS``); ``None`` when those fields weigh nothing."""
        fields = [f"{f}^{w:g}" for f, w in self.field_weights.only(OPTIONAL_FIELDS).items()]
        if not fields:
            return None
        if isinstance(node, Term):
            return self._multi_match(node.term, "best_fields", fields)
        return self._multi_match(" ".join(node.terms), "phrase", fields)

    def compound(self, term: str, fields: FieldWeights | None = None) -> dict:
        """A compound term of the query's words in the compound fields (or ``fields``),
        scored."""
        fields = fields or self.compound_fields
        return {
            "multi_match": {
                "query": term,
                "type": "best_fields",
                "fields": [f"{f}^{w:g}" for f, w in fields.items()],
                "tie_breaker": fields.tie_breaker,
                "analyzer": "whitespace",
            }
        }

    def defines(self, node: Term | Phrase, fields: FieldWeights = DEFINE_FIELDS) -> dict:
        """Pages whose headings or definition terms (or the other ``fields``) hold a word or
        phrase (a filter)."""
        kind = "best_fields" if isinstance(node, Term) else "phrase"
        text = node.term if isinstance(node, Term) else " ".join(node.terms)
        return {"multi_match": {"query": text, "type": kind,
                                "fields": [f for f, _ in fields.items()],
                                "analyzer": "whitespace"}}

    def defining(self, parsed: Query) -> dict | None:
        """Pages whose headings hold every defined word of the query (a name qualifying a
        member: their title or headings), or of a site the query names, the other words
        (``fields.defining_readings``), a filter; ``None`` when the query defines nothing."""
        readings = [{"bool": {"filter": [self.defines(w, fields) for w, fields in words]
                              + ([{"term": {"site_name": site}}] if site else [])}}
                    for site, words in defining_readings(parsed)]
        if len(readings) < 2:
            return readings[0] if readings else None
        return {"bool": {"should": readings, "minimum_should_match": 1}}

    def near(self, parsed: Query) -> tuple[dict, ...]:
        """One filter per run of ``parsed.near_groups``: the pages holding that run's words
        within ``parsed.near_slop`` in their title or body (the proximity signal's value is
        the share of runs a page holds); ``()`` for fewer than two words."""
        return tuple(
            {"bool": {"should": [
                {"match_phrase": {name: {"query": " ".join(terms), "slop": parsed.near_slop,
                                         "analyzer": "whitespace"}}}
                for name in NEAR_FIELDS
            ], "minimum_should_match": 1}}
            for terms in parsed.near_groups
        )

    def compile(self, node: Node) -> dict:
        """The DSL query matching exactly the documents ``node`` matches."""
        if isinstance(node, Term | Phrase) and node.whole and self.field_weights.idents > 0:
            return self._identifier(node)
        if isinstance(node, Term):
            return self._multi_match(node.term, "best_fields")
        if isinstance(node, Phrase):
            return self._multi_match(" ".join(node.terms), "phrase")
        if isinstance(node, Site):
            return {"term": {"site": node.host}}
        if isinstance(node, Lang):
            return {"term": {"lang": node.code}}
        if isinstance(node, Or):
            return {
                "bool": {
                    "should": [self.compile(c) for c in node.children],
                    "minimum_should_match": 1,
                }
            }
        if isinstance(node, AtLeast):
            return {
                "bool": {
                    "should": [self.compile(c) for c in node.children],
                    "minimum_should_match": node.count,
                }
            }
        if isinstance(node, Not):
            return {"bool": {"must_not": [self.compile(node.child)]}}
        if isinstance(node, And):
            must = [self.compile(c) for c in node.children if not isinstance(c, Not)]
            must_not = [self.compile(c.child) for c in node.children if isinstance(c, Not)]
            clause: dict = {"must": must}
            if must_not:
                clause["must_not"] = must_not
            return {"bool": clause}
        raise TypeError(f"Not a query node: {node!r}")

    def _identifier(self, node: Term | Phrase) -> dict:
        """An identifier word: its terms in the text fields or its whole form in
        ``idents``, the best field's score plus a share of the others'."""
        if isinstance(node, Term):
            text, kind = node.term, "best_fields"
        else:
            text, kind = " ".join(node.terms), "phrase"
        fields = [f for f in self.fields if not f.startswith(f"{IDENTS}^")]
        return {"dis_max": {
            "queries": [
                self._multi_match(text, kind, fields),
                {"term": {IDENTS: {"value": node.whole,
                                   "boost": self.field_weights.idents}}},
            ],
            "tie_breaker": self.field_weights.tie_breaker,
        }}

    def _multi_match(self, text: str, kind: str, fields: list[str] | None = None) -> dict:
        return {
            "multi_match": {
                "query": text,
                "type": kind,
                "fields": fields or self.fields,
                "tie_breaker": self.field_weights.tie_breaker,
                "analyzer": "whitespace",
            }
        }


def _label_match(text: str, kind: str) -> dict:
    return {
        "multi_match": {
            "query": text,
            "type": kind,
            "fields": [name for name, _ in LABEL_FIELDS.items()],
            "analyzer": "whitespace",
        }
    }


class RankingQuery:
    """The ranked search body of a parsed query, from the compiler and a ranker."""

    def __init__(self, compiler: QueryCompiler, ranker: Ranker):
        self.compiler = compiler
        #: A compiler for each set of field weights a query scores with, made once.
        self._compilers = {compiler.field_weights: compiler}
        self.ranker = ranker

    def compiler_for(self, parsed: Query) -> QueryCompiler:
        """The compiler of ``parsed``: the field weights it scores with
        (``FieldWeights.for_query``: their question form for a question-shaped query)."""
        weights = self.compiler.field_weights.for_query(parsed)
        if (compiler := self._compilers.get(weights)) is None:
            compiler = self._compilers[weights] = QueryCompiler(
                weights, self.compiler.compound_fields)
        return compiler

    def query(self, context: RankContext, relaxed: bool = False,
              idf: list[float] | None = None, rank_feature: bool = False,
              top: float = 1.0) -> dict:
        """The query (without paging) for a non-empty parsed query: ``relaxed`` for the
        any-word fallback, ``idf`` (one per plain word) to also rank pages lacking one minor
        word, ``rank_feature`` when the index scores static rank with a rank_feature,
        ``top`` the best text score of the pages it ranks (:meth:`text_query`'s, the
        ``bm25`` signal's scale: a page's text score over it)."""
        parsed = context.query
        compiler = self.compiler_for(parsed)
        matching, others_compete, lacking = self._matching(parsed, relaxed, idf)
        parts = EsParts(
            strict=compiler.compile(parsed.matching),
            others_compete=others_compete,
            lacking=lacking,
            label_filters=tuple(compiler.label(w) for w in parsed.label_words),
            near_filters=compiler.near(parsed),
            define_filters=tuple(filter(None, [compiler.defining(parsed)])),
            partial_coverage=self.partial_coverage(parsed, relaxed),
        )
        return self._weighted(self._retrieval(matching, context), context, parts,
                              rank_feature, top)

    def text_query(self, context: RankContext, relaxed: bool = False,
                   idf: list[float] | None = None, first_phase: bool = False) -> dict:
        """The text part of ``query``: the pages it ranks, scored by BM25 (with compounds
        and the coordination factor) before any signal; as the ``first_phase`` of a
        rescored window, the named sites' home pages first (:data:`HOME_FIRST`)."""
        matching, _, _ = self._matching(context.query, relaxed, idf)
        return self._retrieval(matching, context,
                               home_boost=HOME_FIRST if first_phase else 1.0)

    def _weighted(self, text: dict, context: RankContext, parts: EsParts,
                  rank_feature: bool, top: float) -> dict:
        """The formula of :mod:`index.formula`, as the embedded engine ranks with it: the
        text score over ``top`` times the text weight, plus the ``boost`` and ``add``
        signals, times the ``demote`` factors. A ``function_score`` adds its functions to
        the text score (``sum``; one function matching every page with weight 0, so a page
        no other function matches keeps its text score: with none matching,
        ``function_score`` would add 1)."""
        staged = self.ranker.staged
        scale = staged.text_weight / top if top > 0 else staged.text_weight
        if scale != 1.0:
            text = {"bool": {"must": [text], "boost": scale}}
        added: list[dict] = []
        should: list[dict] = []
        for signal, weight in (*staged.boost, *staged.add):
            if rank_feature and isinstance(signal, StaticRank):
                should.append({"rank_feature": {"field": "pagerank_rf", "linear": {},
                                                "boost": weight}})
            else:
                added.extend(signal.es_functions(context, weight, parts))
        query = text
        if added:
            query = {"function_score": {"query": text,
                                        "functions": [_NOTHING_ADDED, *added],
                                        "score_mode": "sum", "boost_mode": "sum"}}
        if should:
            query = {"bool": {"must": [query], "should": should}}
        demote = [f for signal, weight in staged.demote
                  for f in signal.es_functions(context, weight, parts)]
        if demote:  # a page no demote function matches keeps its score (factor 1)
            query = {"function_score": {"query": query, "functions": demote,
                                        "score_mode": "multiply", "boost_mode": "multiply"}}
        return query

    @staticmethod
    def partial_coverage(parsed: Query, relaxed: bool) -> float:
        """The coverage of a page holding some but not all required words: the query's
        ``partial_coverage`` when such pages match by coordination, 0 in the any-word
        fallback (``relaxed``)."""
        if relaxed and parsed.relaxable or parsed.coordinated is None:
            return 0.0
        return parsed.partial_coverage

    def _matching(self, parsed: Query, relaxed: bool, idf: list[float] | None
                  ) -> tuple[dict, bool, tuple[tuple[dict, float], ...]]:
        """The query for the pages to rank, whether pages lacking a word are among them,
        and the pages lacking one minor word with its share of the query's IDF.

        Strict: every required word. ``relaxed``: any word. A long query: ``min_words`` of
        them (``Query.coordinated``). With ``idf``: also the pages lacking a minor word
        (``Query.lacking``), their text score times the share of the query's IDF they
        cover.
        """
        compiler = self.compiler_for(parsed)
        strict = compiler.compile(parsed.matching)
        words = parsed.required_words
        if relaxed and parsed.relaxable:
            return {"bool": {"should": [compiler.compile(w) for w in words],
                             "minimum_should_match": 1}}, True, ()
        if parsed.coordinated is not None:
            return compiler.compile(parsed.coordinated), True, ()
        if not idf:
            return strict, False, ()
        lacking = self.lacking(parsed, idf)
        if not lacking:
            return strict, False, ()
        # boost: Lucene's coordination factor, the text score times the share covered
        alternatives = [strict] + [{"bool": {**clause["bool"], "boost": 1 - share}}
                                   for clause, share in lacking]
        return {"bool": {"should": alternatives, "minimum_should_match": 1}}, True, lacking

    def lacking(self, parsed: Query, idf: list[float]) -> tuple[tuple[dict, float], ...]:
        """The pages lacking one minor word (``Query.lacking``), each a filter with that
        word's share of the query's IDF; they exclude each other and the pages holding
        every word."""
        compiler = self.compiler_for(parsed)
        compiled = [compiler.compile(w) for w in parsed.required_words]
        out = []
        for missing, share in parsed.lacking(idf):
            clause = {"must": [c for j, c in enumerate(compiled) if j not in missing],
                      "must_not": [compiled[j] for j in missing]}
            # scored where the text writes the missing word joined to another
            joined = [compiler.compound(c, JOINED_FIELDS)
                      for j in missing for c in joined_compounds(parsed, j)]
            if joined:
                clause["should"] = joined
            out.append(({"bool": clause}, share))
        return tuple(out)

    def _retrieval(self, query: dict, context: RankContext, home_boost: float = 1.0) -> dict:
        """``query`` plus optional words and compounds scoring up (same pages) and the home
        pages of the sites the query names matching without its words, scoring
        ``home_boost`` more (:data:`HOME_FIRST` in the first phase)."""
        parsed = context.query
        compiler = self.compiler_for(parsed)
        should = [q for q in map(compiler.optional, scored_optional_words(parsed))
                  if q is not None]
        if compiler.compound_fields.items():
            should += [compiler.compound(c) for c in parsed.compounds]
        if should:
            query = {"bool": {"must": [query], "should": should}}
        home = SiteHome.es_filter(context) if self.ranker.weight("sitehome") else None
        if home is not None:
            query = {"bool": {"should": [query, {"constant_score": {"filter": home,
                                                                    "boost": home_boost}}],
                              "minimum_should_match": 1}}
        return query


def blend_terms(parsed: Query) -> list[str]:
    """The analyzed terms of a ``blendable`` query's required words (a phrase: each of its
    terms), whose document frequencies :func:`word_idf` needs."""
    return sorted({t for w in parsed.required_words
                   for t in ([w.term] if isinstance(w, Term) else w.terms)})


def word_idf(parsed: Query, df: Mapping[str, int], docs: int) -> list[float]:
    """BM25's IDF of each required word in the body field (a phrase: its rarest term), from
    the terms' document frequencies ``df`` among ``docs`` pages
    (:meth:`index.engines.elasticsearch.requests.SearchRequests.term_stats`)."""

    def idf(term: str) -> float:
        count = df.get(term, 0)
        return math.log(1.0 + (docs - count + 0.5) / (count + 0.5))

    return [idf(w.term) if isinstance(w, Term) else max(idf(t) for t in w.terms)
            for w in parsed.required_words]
