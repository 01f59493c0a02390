"""Relevance on real documentation sites: the project's ranking against plain BM25, same run.

Serves the Debian documentation sites of ``testweb --real-docs``, crawls them with the
project's ``web`` spider (robots obeyed, dedup pipeline on, pages to a JSON-lines feed),
indexes the crawled pages with the project's index writer plus anchor text and PageRank from
the crawl's links, and runs the judged queries of ``tests/relevance/queries.json`` through
the embedded backend's ``search()`` (and Elasticsearch's with ``--elasticsearch``). The
baseline is plain BM25, SQLite FTS5 over the title and body text of the same pages, in the
same run: no anchors or URL, no dedup, no link signals, any word matching.

Sealed sites: ``--sealed`` scores the sealed sites not scored yet
(``harness.relevance.SEALED_SITES``, the union of ``UNSCORED_SETS``) and nothing else, with
the shipped weights, and prints figures by set, by site and by class only; ``--sealed --set
NAME`` scores one set alone (say the newest), from a crawl of its own sites. A set scored
once is named in ``SCORED_SETS`` and is an open set since, like any other.
Every other run leaves the sealed sites out (their crawl, training queries and judged queries), and
``--sites`` naming one is refused, as is ``--sealed`` with ``--show-misses``,
``--ablation``, ``--sites``, ``--quick`` or ``--fit learned``.

The figures are held out by site: the judged sites are split into ``--folds`` folds, and
each fold is scored with the weights a fitter returns for the other folds' sites and their
generated training queries (``harness.training``). Until a fitter exists the fallback is
the hand weights of ``index/weights.json``; they were tuned on the original eight sites'
queries, so only the other sites are held out (``heldout_sites``, ``heldout_figures``),
and ``heldout`` is true only when every site is. Per-site and per-class figures, each with
the baseline's MRR@10, go to stderr (one line each, ours against plain BM25) and the JSON.

The crawl is cached under ``--cache`` (default ``.cache/relevance`` in the repository, or
``.cache/relevance-quick``, ``.cache/relevance-sealed``), so iterating on ranking does not
re-crawl; ``--recrawl`` refreshes it. ``--quick`` crawls only the CI subset
(``QUICK_SITES``). ``--ablation`` adds one row per signal (body, +title, +anchors, +url,
+collapse, +pagerank, +any-word, +site home, +label match) on stderr and under
``"ablation"`` in the JSON.

``--semantic`` turns semantic matching on for every backend of the run (``SEARCH_SEMANTIC``,
:mod:`index.semantic`; ``--no-semantic`` off; default the setting's), with the encoder
``--semantic-model`` names (``SEARCH_SEMANTIC_MODEL``: ``transformer`` or ``static``) and
``--semantic-sections`` windows a page (``SEARCH_SEMANTIC_SECTIONS``), re-ranking
``--semantic-queries`` (``SEARCH_SEMANTIC_QUERIES``: ``all``, or ``questions`` only). As in
production, indexing embeds nothing (``index_s``); with semantic matching on, the embedding
batch (``batch.embed``) then gives every page its vectors (``embed_s``, ``es_embed_s``).

    python -m bench.relevance [--quick | --sealed [--set NAME]] [--ablation] [--elasticsearch]
                              [--cache DIR] [--recrawl] [--folds K] [--show-misses]
                              [--[no-]semantic] [--semantic-model NAME]
                              [--semantic-sections N] [--semantic-queries SCOPE]
                              [--check-answers]

``--check-answers`` scores nothing: it checks that every judged page of the run's queries
(best and acceptable) is a file the test web serves, crawls (or reuses the cached crawl),
and reports the judged pages the crawl did not reach; it exits 1 when a page is not served
or a query has no relevant page in the crawl. It builds no index and runs no search, so it
may be run on the sealed sites (``--sealed --check-answers``) at any time.

``--elasticsearch`` scores the Elasticsearch backend too (``es_*``), and beside it the same
index with a tier 1 published from it (``ES_TIERED``: ``es_tiered_*`` and
``es_tiered_fallthrough_rate``, the share of queries tier 1 could not answer).

Last stdout line: one JSON object with sealed, s_at_1, s_at_3, s_at_10, mrr_at_10,
baseline_mrr_at_10 (and baseline_s_at_*), heldout, heldout_sites, heldout_figures,
per_site and per_class (each with baseline_mrr_at_10), zero_result_queries,
zero_result_baseline_top_10, folds, queries, sites, pages_crawled, training_queries,
semantic, semantic_model, semantic_sections, semantic_queries, index_s, embed_s, query_ms_p50 and
query_ms_p95 (one more pass of the judged queries through the embedded backend;
es_query_ms_* through Elasticsearch) (and es_* with --elasticsearch). With --sealed, also
sealed_sets (and es_sealed_sets): per sealed set, its s_at_*, mrr_at_10, baseline_*,
per_site, per_class, zero_result_queries, zero_result_baseline_top_10, queries and sites.
With --check-answers instead: check_answers, sealed, queries, sites, pages_crawled,
not_served, not_crawled and unanswerable.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from crawler.options import setting_default
from harness import log
from harness.relevance import (
    DEFAULT_CACHE,
    DEFAULT_FOLDS,
    QUICK_SITES,
    UNSCORED_SETS,
    Fitter,
    HeldOut,
    Judgement,
    NearCopies,
    PlainBM25,
    Scores,
    SealedSitesError,
    backend_search,
    build_index,
    crawl,
    default_cache,
    documents,
    embed_all,
    evaluate,
    evaluate_heldout,
    fold_weights_search,
    hand_weights,
    load_queries,
    miss_lines,
    open_sites,
    read_pages,
    refuse_sealed,
    report,
    sealed_set_report,
    sealed_sites,
    split_summary,
    uncrawled_answers,
    unserved_answers,
    versus_lines,
)
from harness.services import configured_or_private_elasticsearch
from harness.training import KnownItem, known_items
from index.engines.embedded.backend import EmbeddedBackend
from index.fields import DEFAULT_FIELD_WEIGHTS, FieldWeights
from index.semantic import QUERY_SCOPES
from testweb.docsites import DOC_SITES, available_doc_sites

# --- the run -----------------------------------------------------------------------------


_OFF = {"pagerank": 0.0, "sitehome": 0.0, "label": 0.0, "site": 0.0, "lang": 0.0,
        "allwords": 0.0}
_BODY = FieldWeights(title=0, anchors=0, url=0)
_TITLE = FieldWeights(anchors=0, url=0)
_ANCHORS = FieldWeights(url=0)
_ALL = DEFAULT_FIELD_WEIGHTS
_NO_COMPOUNDS = FieldWeights(title=0, anchors=0, url=0, body=0)
_STRICT = {"min_strict_hits": 0, "blend_words": 0, "compound_fields": _NO_COMPOUNDS}
_FALLBACK = {**_STRICT, "min_strict_hits": 1}


def _on(*names: str) -> dict:
    """Rank weights with ``names`` at their defaults and the other signals off."""
    return {k: v for k, v in _OFF.items() if k not in names}


#: One row per signal added: (name, field weights, rank weights, dedup, backend options).
ABLATION = (
    ("body", _BODY, _OFF, False, _STRICT),
    ("+title", _TITLE, _OFF, False, _STRICT),
    ("+anchors", _ANCHORS, _OFF, False, _STRICT),
    ("+url", _ALL, _OFF, False, _STRICT),
    ("+collapse", _ALL, _OFF, True, _STRICT),
    ("+pagerank", _ALL, _on("pagerank"), True, _STRICT),
    ("+any-word", _ALL, _on("pagerank"), True, _FALLBACK),
    ("+site home", _ALL, _on("pagerank", "sitehome"), True, _FALLBACK),
    ("+label match", _ALL, _on("pagerank", "sitehome", "label"), True, _FALLBACK),
    ("+language", _ALL, _on("pagerank", "sitehome", "label", "lang"), True, _FALLBACK),
    ("+site mention", _ALL, _on("pagerank", "sitehome", "label", "lang", "site"), True,
     _FALLBACK),
    ("+compounds", _ALL, _on("pagerank", "sitehome", "label", "lang", "site"), True,
     {"blend_words": 0}),
    ("+all but one word", _ALL, {}, True, {}),
)


def ablation(cache: Path, pages: Sequence[dict], judged: Sequence[Judgement],
             project_index: Path) -> list[dict]:
    """One row per signal added, each scored on the judged set."""
    raw_index = cache / "index-nodedup"
    build_index(raw_index, documents(pages, cache / "links.sqlite", dedup=False))
    copies = NearCopies(pages)
    rows = []
    for name, fields, weights, dedup, options in ABLATION:
        backend = EmbeddedBackend(project_index if dedup else raw_index, field_weights=fields,
                                  rank_weights=weights, **options)
        scores = evaluate(backend_search(backend), judged, copies)
        row = {"signals": name, **scores.summary(), **split_summary(scores)}
        log(f"ablation {name:17} {row}")
        rows.append(row)
    return rows


def learned_fitter(engine_backend_with: Callable[[dict], object], hand: dict,
                   out_dir: Path) -> Fitter:
    """The fitter of ``--fit learned`` for one engine: ``batch.learn.FoldFitter`` on a
    backend of that engine built by ``engine_backend_with(weights)`` with every signal
    awake, starting from the hand weights; it fits on each fold's training queries only."""
    from batch.learn import FoldFitter, awake

    def progress(done: int, total: int) -> None:
        if done == total or done % 500 == 0:
            log(f"fit: features of {done}/{total} training queries")

    return FoldFitter(engine_backend_with(awake(hand)), out_dir, start=hand,
                      progress=progress)


def elasticsearch_scores(pages: Sequence[dict], judged: Sequence[Judgement], cache: Path,
                         copies: NearCopies, fit: Fitter, training: Sequence[KnownItem],
                         folds: int, learned: bool = False, show_misses: bool = False,
                         **options) -> tuple[HeldOut, Scores, dict, dict, list[str]]:
    """The same documents in Elasticsearch (``ELASTICSEARCH_URL``, else a private node
    started through scripts/services.sh), the same queries through its ``search()``, held
    out by site with the same folds and fitter as the embedded backend; then the same index
    with a tier 1 (``ES_TIERED``) published from it, with the packaged weights, and the
    tiered backend's fall-through figures, the untiered backend's query latency and, with
    ``show_misses``, its miss lines (``harness.relevance.miss_lines``)."""
    with configured_or_private_elasticsearch() as url:
        return _elasticsearch_scores(url, pages, judged, cache, copies, fit, training, folds,
                                     learned, show_misses, **options)


def _elasticsearch_scores(url: str, pages: Sequence[dict], judged: Sequence[Judgement],
                          cache: Path, copies: NearCopies, fit: Fitter,
                          training: Sequence[KnownItem], folds: int, learned: bool,
                          show_misses: bool,
                          **options) -> tuple[HeldOut, Scores, dict, dict, list[str]]:
    import uuid

    from index.engines.elasticsearch.backend import ElasticsearchBackend

    prefix = f"relevance-{uuid.uuid4().hex[:8]}"
    backend = ElasticsearchBackend(url, index_prefix=prefix, spool_dir=cache / "es-spool",
                                   tiered=False, **options)
    tiered = ElasticsearchBackend(url, index_prefix=prefix, spool_dir=cache / "es-spool",
                                  tiered=True, **options)
    opened = [backend, tiered]

    def open_backend(weights_file: Path | None) -> ElasticsearchBackend:
        if weights_file is None:
            return backend
        fold_backend = ElasticsearchBackend(url, index_prefix=prefix,
                                            weights_file=str(weights_file), **options)
        opened.append(fold_backend)
        return fold_backend

    try:
        backend.ensure_index()
        backend.index(documents(pages, cache / "links.sqlite"))
        backend.refresh()
        log(f"Elasticsearch holds {backend.stats().get('docs')} documents")
        embed_s = embed_all(backend)
        if learned:
            def with_weights(weights: dict) -> ElasticsearchBackend:
                made = ElasticsearchBackend(url, index_prefix=prefix, rank_weights=weights)
                opened.append(made)
                return made

            fit = learned_fitter(with_weights, dict(backend.ranker.weights),
                                 cache / "fitted-es")
        held_out = evaluate_heldout(fold_weights_search(open_backend), judged, copies,
                                    fit=fit, training=training, k=folds)
        misses = (miss_lines(judged, held_out.scores, backend_search(backend))
                  if show_misses else [])
        latency = {**query_latency(backend, judged), "embed_s": embed_s}
        tiered.publish_tiers()
        log(f"tier 1 holds {tiered.client.count(index=tiered.tier1.alias)['count']} documents")
        with_tiers = evaluate(backend_search(tiered), judged, copies)
        return held_out, with_tiers, tiered.tier1.stats(), latency, misses
    finally:
        backend.client.indices.delete(index=f"{prefix}-*", ignore_unavailable=True)
        for each in opened:
            each.close()


def query_latency(backend, judged: Sequence[Judgement]) -> dict[str, float]:
    """Milliseconds per judged query through ``backend.search()`` (one pass after the
    scoring ones, so caches are as warm as they get): p50 and p95."""
    took = []
    for j in judged:
        started = time.perf_counter()
        backend.search(j.query, size=10)
        took.append((time.perf_counter() - started) * 1000)
    took.sort()
    return {"query_ms_p50": round(took[len(took) // 2], 1),
            "query_ms_p95": round(took[min(len(took) - 1, int(len(took) * 0.95))], 1)}


def training_queries(pages: Sequence[dict], judged: Sequence[Judgement]) -> list[KnownItem]:
    """The known-item training queries of the crawl (``harness.training``): headings read
    from the served files, no judged query repeated."""
    roots = {site.host: site.root for site in DOC_SITES}
    return known_items(pages, roots=roots, exclude=[j.query for j in judged])


def choose_sites(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """The sites a run crawls and scores: the sealed ones with ``--sealed`` (figures only),
    else the installed open sites, the CI subset (``--quick``) or ``--sites``."""
    installed = [s.host for s in available_doc_sites()]
    if args.sealed_set and not args.sealed:
        parser.error("--set names a sealed set to score alone: it goes with --sealed")
    if args.sealed:
        clash = [name for name, on in (("--quick", args.quick), ("--sites", bool(args.sites)),
                                       ("--ablation", args.ablation),
                                       ("--show-misses", args.show_misses),
                                       ("--fit learned", args.fit == "learned"),
                                       ("--max-pages", bool(args.max_pages))) if on]
        if clash:
            parser.error("--sealed scores the sealed sites whole with the shipped weights, "
                         f"by site and by class only; not with {', '.join(clash)}")
        sealed = sealed_sites(args.sealed_set)
        if not sealed:
            parser.error("every sealed set has been scored once (harness.relevance."
                         "SCORED_SETS: open sites since); a sealed figure needs a new set")
        missing = sorted(sealed - set(installed))
        if missing:
            parser.error(f"sealed sites not installed: {', '.join(missing)}; run "
                         "scripts/install-services.sh (it installs scripts/apt-packages.txt)")
        return sorted(sealed)
    sites = open_sites(installed)
    if args.quick:
        sites = [h for h in QUICK_SITES if h in sites]
    if args.sites:
        chosen = [h.strip() for h in args.sites.split(",") if h.strip()]
        try:
            refuse_sealed(chosen, "--sites")
        except SealedSitesError as error:
            parser.error(str(error))
        unknown = sorted(set(chosen) - set(sites))
        if unknown:
            parser.error(f"not installed documentation sites: {', '.join(unknown)}")
        if args.cache is None:
            parser.error("--sites needs --cache (the default caches hold other site sets)")
        sites = chosen
    return sites


def log_versus(prefix: str, result: dict) -> None:
    """Per site and per class, ours against plain BM25 of the same run, on stderr."""
    log(f"{prefix}overall {result['queries']} queries  MRR@10 ours {result['mrr_at_10']:.3f} "
        f"BM25 {result['baseline_mrr_at_10']:.3f}  s@3 ours {result['s_at_3']:.3f} "
        f"BM25 {result['baseline_s_at_3']:.3f}  no result {result['zero_result_queries']} "
        f"(BM25 has the answer in its top 10 for {result['zero_result_baseline_top_10']})")
    for line in versus_lines("site", result["per_site"]) + versus_lines("class",
                                                                        result["per_class"]):
        log(prefix + line)


def check_answers(judged: Sequence[Judgement], sites: Sequence[str], cache: Path,
                  max_pages: int, recrawl: bool, sealed: bool) -> int:
    """``--check-answers``: every judged page served, then the crawl's reach; no index, no
    search, no ranking. Prints pages only, never a query; returns the exit status."""
    result = {"check_answers": True, "sealed": sealed, "queries": len(judged),
              "sites": list(sites), "not_served": unserved_answers(judged)}
    if result["not_served"]:
        log(f"judged pages the test web does not serve: {', '.join(result['not_served'])}")
        print(json.dumps(result))
        return 1
    pages = read_pages(crawl(cache, sites, max_pages, recrawl))
    missed = uncrawled_answers(judged, pages)
    result.update(pages_crawled=len(pages), not_crawled=missed["pages"],
                  unanswerable=missed["unanswerable"])
    log(f"{len(judged)} queries: every judged page is served; {len(missed['pages'])} judged "
        f"pages not crawled, {missed['unanswerable']} queries with no relevant page crawled")
    for page in missed["pages"]:
        log(f"not crawled: {page}")
    print(json.dumps(result))
    return 1 if missed["unanswerable"] else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"crawl only {', '.join(QUICK_SITES)} (the CI subset)")
    parser.add_argument("--sealed", action="store_true",
                        help="score only the sealed sites not scored yet (every set of "
                             "harness.relevance.UNSCORED_SETS: "
                             + ("; ".join(f"{name}: {', '.join(sorted(sites))}"
                                          for name, sites in UNSCORED_SETS.items()) or "none")
                             + "), with the shipped weights, figures by set, by site and "
                             "by class only; run once, at the end of a piece of ranking work "
                             "(the sets scored once, SCORED_SETS, are open sites since)")
    parser.add_argument("--set", dest="sealed_set", choices=sorted(UNSCORED_SETS),
                        default=None,
                        help="with --sealed: score only this sealed set (a set not scored "
                             "before, alone), from a crawl of its sites in its own cache")
    parser.add_argument("--sites", default="",
                        help="crawl and score only these comma-separated hosts (a subset of "
                             "the installed open documentation sites; with --cache, not the "
                             "default cache of the whole corpus)")
    parser.add_argument("--cache", type=Path, default=None,
                        help=f"crawl cache directory (default {DEFAULT_CACHE}[-quick|-sealed"
                             "[-NAME]], one per set of sites)")
    parser.add_argument("--recrawl", action="store_true", help="ignore a cached crawl")
    parser.add_argument("--ablation", action="store_true", help="score one row per signal")
    parser.add_argument("--elasticsearch", action="store_true",
                        help="also score the Elasticsearch backend (es_* keys)")
    parser.add_argument("--max-pages", type=int, default=0, help="stop the crawl after N pages")
    parser.add_argument("--folds", type=int, default=DEFAULT_FOLDS,
                        help="folds over the judged sites (default %(default)s)")
    parser.add_argument("--fit", choices=("hand", "learned"), default="hand",
                        help="the weights each fold scores with: the hand weights of "
                             "index/weights.json (tuned on the original 8 sites' judged "
                             "queries, so those are not held out), or weights fitted per fold "
                             "on the other folds' training queries (batch.learn; every "
                             "site held out)")
    parser.add_argument("--semantic", action=argparse.BooleanOptionalAction,
                        default=bool(setting_default("SEARCH_SEMANTIC")),
                        help="semantic matching on both engines (SEARCH_SEMANTIC; default "
                             "%(default)s): sections embedded by the batch after indexing "
                             "(batch/embed.py, timed apart as embed_s), first results fused "
                             "with their best section's similarity")
    parser.add_argument("--semantic-model", choices=("transformer", "static"),
                        default=setting_default("SEARCH_SEMANTIC_MODEL"),
                        help="the encoder of semantic matching (SEARCH_SEMANTIC_MODEL; default "
                             "%(default)s): the transformer, or the static token vectors "
                             "distilled from it")
    parser.add_argument("--semantic-sections", type=int,
                        default=setting_default("SEARCH_SEMANTIC_SECTIONS"),
                        help="windows embedded a page (SEARCH_SEMANTIC_SECTIONS; default "
                             "%(default)s)")
    parser.add_argument("--semantic-queries", choices=QUERY_SCOPES,
                        default=setting_default("SEARCH_SEMANTIC_QUERIES"),
                        help="the queries semantic matching re-ranks (SEARCH_SEMANTIC_QUERIES; "
                             "default %(default)s): all, or question-shaped ones only")
    parser.add_argument("--check-answers", action="store_true",
                        help="score nothing: check that every judged page of the run is "
                             "served and reached by the crawl (allowed with --sealed)")
    parser.add_argument("--show-misses", action="store_true",
                        help="print each query whose best page is not first, with its top "
                             "results, and each query with no result, of the embedded "
                             "engine and, with --elasticsearch, of Elasticsearch (lines "
                             "starting 'elasticsearch'); never a sealed site")
    args = parser.parse_args(argv)

    sites = choose_sites(parser, args)
    cache = args.cache or default_cache(quick=args.quick, sealed=args.sealed,
                                        sealed_set=args.sealed_set)
    judged = load_queries(hosts=sites, part="sealed" if args.sealed else "open")
    if args.check_answers:
        return check_answers(judged, sites, cache, args.max_pages, args.recrawl, args.sealed)
    feed = crawl(cache, sites, args.max_pages, args.recrawl)
    pages = read_pages(feed)
    log(f"{len(pages)} pages, {len(judged)} judged queries"
        + (" (sealed sites: figures by site and by class only)" if args.sealed else ""))
    fit: Fitter = hand_weights
    started = time.monotonic()
    # The shipped weights fit nothing, so a sealed run makes no training queries at all.
    training = [] if args.sealed else training_queries(pages, judged)
    log(f"{len(training)} training queries generated in {time.monotonic() - started:.0f} s")

    started = time.monotonic()
    project_index = cache / "index"
    options = {"semantic": args.semantic, "semantic_model": args.semantic_model,
               "semantic_sections": args.semantic_sections,
               "semantic_queries": args.semantic_queries}
    backend = build_index(project_index, documents(pages, cache / "links.sqlite"), **options)
    index_s = time.monotonic() - started
    log(f"indexed {backend.stats()['docs']} documents in {index_s:.0f} s")
    embed_s = embed_all(backend)
    backend.close()  # the batch's writer: the folds open the index to read

    def open_embedded(weights_file: Path | None) -> EmbeddedBackend:
        if weights_file is None:
            return backend
        return EmbeddedBackend(project_index, weights_file=str(weights_file), **options)

    if args.fit == "learned":
        fit = learned_fitter(lambda weights: EmbeddedBackend(project_index,
                                                             rank_weights=weights),
                             dict(backend.ranker.weights), cache / "fitted-embedded")
    copies = NearCopies(pages)
    project = evaluate_heldout(fold_weights_search(open_embedded), judged, copies, fit=fit,
                               training=training, k=args.folds)
    baseline = evaluate(PlainBM25(pages).search, judged, copies)
    if args.show_misses:
        for line in miss_lines(judged, project.scores, backend_search(backend)):
            log(line)
    result = {**report(project, baseline, judged, sealed=args.sealed),
              "fitter": project.folds[0]["weights"] if project.folds else "",
              "training_queries": len(training),
              "pages_crawled": len(pages),
              "semantic": args.semantic,
              "semantic_model": args.semantic_model if args.semantic else "",
              "semantic_sections": args.semantic_sections if args.semantic else 0,
              "semantic_queries": args.semantic_queries if args.semantic else "",
              "index_s": round(index_s, 1),
              "embed_s": embed_s,
              **query_latency(backend, judged),
              "sites": sites}
    log(f"held out by site ({len(project.heldout_sites)} sites never seen by the weights): "
        f"{', '.join(sorted(project.heldout_sites)) or 'none'}")
    log_versus("", result)
    if args.sealed:
        result["sealed_sets"] = sealed_set_report(project, baseline, judged)
        for name, figures in result["sealed_sets"].items():
            log_versus(f"sealed set {name}: ", figures)
    if args.elasticsearch:
        es_run, tiered_scores, tiers, latency, misses = elasticsearch_scores(
            pages, judged, cache, copies, fit, training, args.folds,
            learned=args.fit == "learned", show_misses=args.show_misses, **options)
        for line in misses:
            log(f"elasticsearch {line}")
        es = report(es_run, baseline, judged, sealed=args.sealed)
        result.update({f"es_{k}": v for k, v in latency.items()})
        log_versus("elasticsearch ", es)
        if args.sealed:
            result["es_sealed_sets"] = sealed_set_report(es_run, baseline, judged)
            for name, figures in result["es_sealed_sets"].items():
                log_versus(f"elasticsearch sealed set {name}: ", figures)
        for key in ("s_at_1", "s_at_3", "s_at_10", "mrr_at_10", "heldout", "heldout_figures",
                    "per_site", "per_class", "zero_result_queries",
                    "zero_result_baseline_top_10"):
            result[f"es_{key}"] = es[key]
        tiered = {**tiered_scores.summary(), **split_summary(tiered_scores)}
        log(f"elasticsearch, tiered {tiered} {tiers}")
        result.update({f"es_tiered_{name}": value for name, value in tiered.items()})
        result["es_tiered_fallthrough_rate"] = tiers["tier/fallthrough_rate"]
    if args.ablation:
        result["ablation"] = ablation(cache, pages, judged, project_index)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
