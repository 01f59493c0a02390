"""Query compilation for the embedded (tantivy) engine: the shared query AST to tantivy
queries, plus the retrieval the ranking calls for (compounds, label matches, the home pages
of named sites, pages lacking a minor word, the any-word fallback).

Every decision about *which* words, compounds or sites a query holds comes from the parsed
:class:`~index.query.Query`; this module only says how tantivy expresses it, as
:mod:`index.engines.elasticsearch.query` does for Elasticsearch.
"""

from __future__ import annotations

import math

import tantivy

from index.fields import (
    DEFAULT_COMPOUND_FIELDS,
    IDENT_PARTS_WEIGHT,
    IDENTS,
    IDF_FIELD,
    JOINED_FIELDS,
    LABEL_FIELDS,
    NEAR_FIELDS,
    OPTIONAL_FIELDS,
    FieldWeights,
    defining_readings,
    keyword_key,
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

__all__ = ["HeldTerms", "TantivyCompiler"]

Occur = tantivy.Occur


class HeldTerms:
    """The ``(field, term)`` pairs some page of an index was seen to hold, remembered
    across searches: a word's fields are decided without reading its document frequency
    again (a read costs ~28 us when the term is there, ~4 us when it is not, and a
    question reads ~56). Only terms seen held are remembered, so a search compiles the
    same fields as with fresh reads (a pair whose pages are all gone since is a term
    query that matches nothing: the same matches and scores); at ``limit`` pairs the
    memory starts again."""

    def __init__(self, limit: int = 200_000):
        self.limit = limit
        self._held: set[tuple[str, str]] = set()

    def __contains__(self, key: tuple[str, str]) -> bool:
        return key in self._held

    def add(self, key: tuple[str, str]) -> None:
        """Remember that some page holds ``key``."""
        if len(self._held) >= self.limit:
            self._held.clear()
        self._held.add(key)


class TantivyCompiler:
    """Compiles parsed queries for one tantivy schema with the given field weights.

    A compiler is made per search: it keeps each word it compiled (a query's words recur
    in its ranking's retrievals). Given the search's ``searcher``, it leaves a word out of
    the fields where no page holds it (their document frequency is 0, read once a
    search): the same matches and scores (a field without the word adds nothing to its
    disjunction-max), no term looked up again in every segment by each search that holds
    the word, and a word left in one field is a term query, which tantivy seeks through
    its skip lists, rather than a union of fields, which it refills in windows of 4,096
    documents at each seek. A check that cannot match is not run. ``held``: the terms the
    index was seen to hold in earlier searches (:class:`HeldTerms`), not read again.
    """

    def __init__(
        self,
        schema: tantivy.Schema,
        field_weights: FieldWeights,
        compound_fields: FieldWeights = DEFAULT_COMPOUND_FIELDS,
        searcher: tantivy.Searcher | None = None,
        held: HeldTerms | None = None,
    ):
        self.schema = schema
        self.field_weights = field_weights
        self.optional_weights = field_weights.only(OPTIONAL_FIELDS)
        self.compound_fields = compound_fields
        self.searcher = searcher
        self.held = HeldTerms() if held is None else held
        self._words: dict[tuple[Term | Phrase, FieldWeights, bool], tantivy.Query] = {}
        self._doc_freqs: dict[tuple[str, str], int] = {}
        self._nothing: set[tuple[Term | Phrase, FieldWeights, bool]] = set()
        self._weight_items: dict[FieldWeights, list[tuple[str, float]]] = {}

    def compile(self, node: Node) -> tantivy.Query:
        """The tantivy query matching exactly the documents ``node`` matches."""
        if isinstance(node, Term | Phrase):
            return self.word(node, self.field_weights)
        if isinstance(node, Site):
            return tantivy.Query.term_query(self.schema, "site", node.host)
        if isinstance(node, Lang):
            return tantivy.Query.term_query(self.schema, "lang", node.code)
        if isinstance(node, Or):
            return tantivy.Query.boolean_query(
                [(Occur.Should, self.compile(c)) for c in node.children]
            )
        if isinstance(node, Not):
            return tantivy.Query.boolean_query(
                [(Occur.Must, tantivy.Query.all_query()),
                 (Occur.MustNot, self.compile(node.child))]
            )
        if isinstance(node, AtLeast):
            return tantivy.Query.boolean_query(
                [(Occur.Should, self.compile(c)) for c in node.children], node.count)
        if isinstance(node, And):
            return tantivy.Query.boolean_query([
                (Occur.MustNot, self.compile(c.child)) if isinstance(c, Not)
                else (Occur.Must, self.compile(c))
                for c in node.children
            ])
        raise TypeError(f"Not a query node: {node!r}")

    def word(self, node: Term | Phrase, weights: FieldWeights,
             scoring: bool = False) -> tantivy.Query:
        """A word or phrase in any text field: the best field's score plus a share of the
        others' (``weights.tie_breaker``); an identifier's whole form in ``idents``.
        ``scoring``: for a clause that only scores (``Occur.Should`` beside a required
        query), without the fields where it scores nothing (the words of CamelCase names
        in ``idents``): the same scores, and one field fewer for tantivy to seek."""
        key = (node, weights, scoring)
        compiled = self._words.get(key)
        if compiled is None:
            compiled = self._words[key] = self._word(node, weights, scoring)
        return compiled

    def _word(self, node: Term | Phrase, weights: FieldWeights,
              scoring: bool) -> tantivy.Query:
        per_field = self._scored_fields(node, weights, scoring)
        if not per_field:
            self._nothing.add((node, weights, scoring))
            return tantivy.Query.empty_query()
        if len(per_field) == 1:
            return per_field[0]
        return tantivy.Query.disjunction_max_query(per_field, weights.tie_breaker)

    def _scored_fields(self, node: Term | Phrase, weights: FieldWeights | None = None,
                       scoring: bool = False) -> list[tantivy.Query]:
        """The word or phrase in each field some page holds it in, boosted by the field's
        weight (``weights``: the compiler's field weights); ``scoring`` as for ``word``."""
        weights = weights or self.field_weights
        per_field = []
        for name, weight in self._items(weights):
            if name == IDENTS and not node.whole:
                weight = IDENT_PARTS_WEIGHT
            if (scoring and not weight) or not self._held(name, node):
                continue
            per_field.append(tantivy.Query.boost_query(self._field(node, name), weight))
        return per_field

    def _items(self, weights: FieldWeights) -> list[tuple[str, float]]:
        """``weights.items()``, made once a search for each set of weights."""
        items = self._weight_items.get(weights)
        if items is None:
            items = self._weight_items[weights] = weights.items()
        return items

    def _held(self, name: str, node: Term | Phrase) -> bool:
        """Whether some page may hold the word or phrase in field ``name``: each of its
        terms there (without a searcher: always)."""
        if name == IDENTS and node.whole:
            return self._holds(name, (node.whole,))
        return self._holds(name, (node.term,) if isinstance(node, Term) else node.terms)

    def _holds(self, name: str, terms: tuple[str, ...]) -> bool:
        """Whether each of ``terms`` is in field ``name`` of some page (without a searcher:
        assumed)."""
        return self.searcher is None or all(self._has(name, t) for t in terms)

    def _has(self, name: str, term: str) -> bool:
        """Whether some page holds ``term`` in field ``name``: known held, or its document
        frequency read (once a search) and remembered when it is not 0."""
        key = (name, term)
        if key in self.held:
            return True
        if self.doc_freq(name, term):
            self.held.add(key)
            return True
        return False

    def doc_freq(self, name: str, term: str) -> int:
        """The pages holding ``term`` in field ``name``, read once a search."""
        key = (name, term)
        found = self._doc_freqs.get(key)
        if found is None:
            found = self._doc_freqs[key] = self.searcher.doc_freq(name, term)
        return found

    def matches_nothing(self, nodes: list[Term | Phrase], weights: FieldWeights) -> bool:
        """Whether one of these words, compiled with ``weights``, is in no field of any
        page (a query requiring it finds nothing: no need to run it)."""
        for w in nodes:
            self.word(w, weights)
        return any((w, weights, False) in self._nothing for w in nodes)

    def _fields(self, node: Term | Phrase, weights: FieldWeights) -> list[tantivy.Query]:
        """The word or phrase in each field that ``weights`` count, unscored."""
        return [self._field(node, name) for name, _ in self._items(weights)]

    def _field(self, node: Term | Phrase, name: str) -> tantivy.Query:
        """The word or phrase in field ``name``, unscored (in ``idents``, an identifier's
        whole form)."""
        if name == IDENTS and node.whole:
            return tantivy.Query.term_query(self.schema, name, node.whole)
        if isinstance(node, Term):
            return tantivy.Query.term_query(self.schema, name, node.term)
        return tantivy.Query.phrase_query(self.schema, name, list(node.terms))

    def absent(self, node: Term | Phrase) -> list[tuple[tantivy.Occur, tantivy.Query]]:
        """Clauses excluding the pages that hold the word or phrase in any field ``word``
        searches: one per field, which tantivy skips through faster than the scored union
        of ``word`` (the same pages)."""
        return [(Occur.MustNot, q) for q in self._fields(node, self.field_weights)]

    def scored(self, query: tantivy.Query, parsed: Query) -> tantivy.Query:
        """``query`` scored up where a page holds the query's optional words (in
        ``OPTIONAL_FIELDS``), or a title, anchor text or URL a compound of its words; it
        matches the same pages."""
        scoring = [(w, self.optional_weights) for w in scored_optional_words(parsed)
                   if self._items(self.optional_weights)]
        if self._items(self.compound_fields):
            scoring += [(Term(c, c), self.compound_fields) for c in parsed.compounds]
        clauses = [(Occur.Should, self.word(w, weights, scoring=True))
                   for w, weights in scoring]
        clauses = [clause for clause, key in zip(clauses, scoring, strict=True)
                   if (*key, True) not in self._nothing]
        if not clauses:
            return query
        return tantivy.Query.boolean_query([(Occur.Must, query), *clauses])

    def near_groups(self, parsed: Query) -> list[tantivy.Query]:
        """One query per run of ``parsed.near_groups``: the pages holding that run's words
        within ``parsed.near_slop`` in their title or body (the proximity signal's value is
        the share of runs a page holds)."""
        out = []
        for terms in parsed.near_groups:
            phrases = [tantivy.Query.phrase_query(self.schema, name, list(terms),
                                                  parsed.near_slop)
                       for name in NEAR_FIELDS if self._holds(name, tuple(terms))]
            out.append(phrases[0] if len(phrases) == 1 else tantivy.Query.boolean_query(
                [(Occur.Should, q) for q in phrases]))
        return out

    def label(self, parsed: Query) -> tantivy.Query | None:
        """Pages whose title, anchor text or URL hold every label word of the query."""
        if not parsed.label_words or self.matches_nothing(parsed.label_words, LABEL_FIELDS):
            return None
        return tantivy.Query.boolean_query(
            [(Occur.Must, self.word(w, LABEL_FIELDS)) for w in parsed.label_words]
        )

    def defines(self, parsed: Query) -> tantivy.Query | None:
        """Pages whose headings (a qualifier: title, URL) hold the query's defined words,
        or a site's pages the other words (``fields.defining_readings``)."""
        readings = [_defining(self, site, words) for site, words in defining_readings(parsed)]
        return _any([q for q in readings if q is not None])

    def named_homes(self, keys: frozenset[int]) -> tantivy.Query:
        """The home pages of the sites with these name keys, all scored alike (index
        order). A term query a key: tantivy-py answers a term set on a numeric field by
        reading its whole column (0.25 ms a search at 100,000 pages, against 0.01)."""
        sites = [tantivy.Query.term_query(self.schema, "site_key", key) for key in sorted(keys)]
        if not sites:
            return tantivy.Query.empty_query()
        site = sites[0] if len(sites) == 1 else tantivy.Query.boolean_query(
            [(Occur.Should, q) for q in sites])
        return tantivy.Query.const_score_query(tantivy.Query.boolean_query([
            (Occur.Must, site),
            (Occur.Must, tantivy.Query.term_query(self.schema, "url_depth", 0)),
        ]), 0.0)

    def relaxed(self, parsed: Query) -> tantivy.Query | None:
        """Any-word matching for a plain query of several words (the fallback when no page
        has them all); ``None`` when the query has operators."""
        if not parsed.relaxable:
            return None
        return tantivy.Query.boolean_query(
            [(Occur.Should, self.compile(w)) for w in parsed.required_words]
        )

    def coordinated(self, parsed: Query, strict: bool = True) -> tantivy.Query | None:
        """The pages of a long query lacking some of its required words but holding
        ``parsed.min_words`` of them (``parsed.coordinated``); ``None`` when every word
        must match. ``strict=False``: the pages holding every word too (for a caller that
        knows each of them and leaves them out itself, which costs less than excluding
        them here: the strict query sought again at each match)."""
        if parsed.coordinated is None:
            return None
        if not strict:
            return self.any_word(parsed.coordinated)
        return tantivy.Query.boolean_query([
            (Occur.Must, self.any_word(parsed.coordinated)),
            (Occur.MustNot, self.compile(parsed.matching)),
        ])

    def any_word(self, node: AtLeast) -> tantivy.Query:
        """``node`` compiled; when any one of its words matches and each scores the sum
        of its fields (a tie breaker of 1: a question's weights, ``FieldWeights.question``),
        as one union of the words' fields rather than a union of each word's union: the
        same pages and scores, without a union to refill inside the other (a question's
        coordinated search 3.7 -> 2.8 ms over the slowest 50 of ``bench.query``'s real
        queries)."""
        weights = self.field_weights
        if node.count != 1 or weights.tie_breaker != 1.0 or not all(
                isinstance(c, Term | Phrase) for c in node.children):
            return self.compile(node)
        fields = [field for word in node.children for field in self._scored_fields(word)]
        if not fields:
            return tantivy.Query.empty_query()
        return tantivy.Query.boolean_query([(Occur.Should, q) for q in fields])

    def all_but_one(self, parsed: Query, searcher: tantivy.Searcher
                    ) -> list[tuple[tantivy.Query, float]]:
        """The pages lacking one minor word (``Query.lacking``), one query per word with
        that word's share of the query's IDF; each scores the text score times the share
        of the query its pages cover (Lucene's coordination factor). The plan decides when
        (``SearchPlan.blends``)."""
        words = parsed.required_words
        idf = [self.idf(searcher, w) for w in words]
        compiled = [self.compile(w) for w in words]
        out = []
        for missing, share in parsed.lacking(idf):
            # Each clause lacks exactly its word, so a page matches at most one of them.
            clauses = [(Occur.Must, w) for j, w in enumerate(compiled) if j not in missing]
            for j in missing:
                clauses += self.absent(words[j])
                clauses += self.joined(parsed, j)
            out.append((tantivy.Query.boost_query(tantivy.Query.boolean_query(clauses),
                                                  1.0 - share), share))
        return out

    def joined(self, parsed: Query, index: int) -> list[tuple[tantivy.Occur, tantivy.Query]]:
        """Clauses scoring a page lacking required word ``index`` up where its text writes
        that word joined to another of the query (``query.joined_compounds``,
        ``JOINED_FIELDS``); none for a compound no page holds there."""
        nodes = [Term(c, c) for c in joined_compounds(parsed, index)]
        compiled = [(node, self.word(node, JOINED_FIELDS, scoring=True)) for node in nodes]
        return [(Occur.Should, q) for node, q in compiled
                if (node, JOINED_FIELDS, True) not in self._nothing]

    def idf(self, searcher: tantivy.Searcher, node: Term | Phrase) -> float:
        """BM25's IDF of a query word in the body field (a phrase: its rarest term)."""
        n = searcher.num_docs
        terms = [node.term] if isinstance(node, Term) else list(node.terms)
        if searcher is self.searcher:  # read once a search
            df = min(self.doc_freq(IDF_FIELD, t) for t in terms)
        else:
            df = min(searcher.doc_freq(IDF_FIELD, t) for t in terms)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def _defining(compiler: TantivyCompiler, site: str,
              words: list[tuple[Term | Phrase, FieldWeights]]) -> tantivy.Query | None:
    """The pages holding each of ``words`` in its fields, of the site called ``site`` when
    given (``fields.defining_readings``); ``None`` when one of them is in no page."""
    if any(compiler.matches_nothing([w], fields) for w, fields in words):
        return None
    clauses = [(Occur.Must, compiler.word(w, fields)) for w, fields in words]
    if site:
        clauses.append((Occur.Must, tantivy.Query.term_query(compiler.schema, "site_key",
                                                             keyword_key(site))))
    return tantivy.Query.boolean_query(clauses)


def _any(queries: list[tantivy.Query]) -> tantivy.Query | None:
    """The pages any of ``queries`` matches (``None`` for none)."""
    if len(queries) < 2:
        return queries[0] if queries else None
    return tantivy.Query.boolean_query([(Occur.Should, q) for q in queries])
