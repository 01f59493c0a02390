"""Fitted ranking weights against the hand weights, held out by site, same run.

Serves and crawls the real documentation sites as ``bench/relevance.py`` does (the crawl is
cached under ``--cache``), indexes them, makes known-item training queries from the crawled
pages (``batch.learn.document_known_items``; never the judged queries), and collects each
training query's candidates and signal values from the engine's explain output once. Then,
k-fold over sites: weights are fitted (``batch.learn.fit``) on the training queries of
the other sites only, and the judged queries of ``tests/relevance/queries.json`` whose best
page is on the held-out sites are run through the engine's ``search()`` with the fitted
weights and with the hand weights of ``index/weights.json``. Each judged query is scored
once, in the fold that holds its site out. Plain BM25 (SQLite FTS5 over title and body
text) over the same pages runs beside them. The sealed sites
(``harness.relevance.SEALED_SITES``) are left out of the crawl, the fit and the scores.

    python -m bench.ranker [--cache DIR] [--folds K] [--elasticsearch] [--quick] [--max-pages N]

Last stdout line: one JSON object; ``s_at_1``, ``s_at_3``, ``s_at_10``, ``mrr_at_10`` are
the fitted weights' figures (``heldout``: true), ``hand_*`` the hand weights' on the same
queries, ``baseline_mrr_at_10`` plain BM25's, ``per_site`` all three per site; with
``--elasticsearch`` the same under ``es_``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from batch.learn import (
    FeatureSet,
    TrainingQuery,
    awake,
    collect,
    document_known_items,
    fit,
)
from harness import log
from harness.relevance import (
    DEFAULT_CACHE,
    QUICK_SITES,
    Judgement,
    NearCopies,
    PlainBM25,
    Scores,
    backend_search,
    build_index,
    crawl,
    documents,
    evaluate,
    load_queries,
    open_sites,
    read_pages,
    site_folds,
)
from harness.services import configured_or_private_elasticsearch
from index.engines.embedded.backend import EmbeddedBackend
from testweb.docsites import available_doc_sites


def heldout(features: FeatureSet, judged: Sequence[Judgement], folds: list[list[str]],
            searcher: Callable[[dict | None], Callable[[str], list[str]]],
            copies: NearCopies, passes: int) -> tuple[Scores, Scores, list[dict]]:
    """(fitted, hand) scores of the judged queries, each in the fold holding its site out;
    ``searcher(weights)`` gives query -> URLs with those rank weights (None: hand)."""
    fitted_scores, hand_scores, rows = Scores(), Scores(), []
    hand_search = searcher(None)
    for test in folds:
        train = [s for f in folds if f is not test for s in f]
        result = fit(features.only(train), passes=passes)
        scored = [j for j in judged if j.site in test]
        fitted = evaluate(searcher(result.weights), scored, copies)
        hand = evaluate(hand_search, scored, copies)
        fitted_scores.ranks.update(fitted.ranks)
        hand_scores.ranks.update(hand.ranks)
        row = {"held_out": test, "train_queries": result.queries,
               "train_mrr_at_10": [round(result.start_mrr, 4), round(result.mrr, 4)],
               "judged": len(scored), "hand_mrr_at_10": round(hand.mrr(), 4),
               "mrr_at_10": round(fitted.mrr(), 4), "weights": result.weights}
        log(f"fold {test}: {row}")
        rows.append(row)
    return fitted_scores, hand_scores, rows


def per_site(judged: Sequence[Judgement], **scores: Scores) -> dict[str, dict]:
    """MRR@10 of each named score set per site."""
    out: dict[str, dict] = {}
    for site in sorted({j.site for j in judged}):
        queries = {j.query for j in judged if j.site == site}
        out[site] = {"queries": len(queries)}
        for name, s in scores.items():
            out[site][name] = round(Scores({q: r for q, r in s.ranks.items()
                                            if q in queries}).mrr(), 4)
    return out


def summary(prefix: str, fitted: Scores, hand: Scores) -> dict:
    return {**{f"{prefix}{k}": v for k, v in fitted.summary().items()},
            **{f"{prefix}hand_{k}": v for k, v in hand.summary().items()}}


def elasticsearch_run(pages, judged, cache, copies, training, folds, args) -> dict:
    """The same on Elasticsearch (``ELASTICSEARCH_URL``, else a private node)."""
    with configured_or_private_elasticsearch() as url:
        return _elasticsearch_run(url, pages, judged, cache, copies, training, folds, args)


def _elasticsearch_run(url, pages, judged, cache, copies, training, folds, args) -> dict:
    import uuid

    from index.engines.elasticsearch.backend import ElasticsearchBackend

    prefix = f"ranker-{uuid.uuid4().hex[:8]}"
    made = []

    def backend(weights=None):
        b = ElasticsearchBackend(url, index_prefix=prefix, spool_dir=cache / "es-spool",
                                 rank_weights=weights)
        made.append(b)
        return b

    try:
        es = backend()
        es.ensure_index()
        es.index(documents(pages, cache / "links.sqlite"))
        es.refresh()
        log(f"Elasticsearch holds {es.stats().get('docs')} documents; collecting features")
        started = time.monotonic()
        hand = es.ranker.weights
        features = collect(backend(awake(hand)), training, args.depth,
                           _progress("es features"), start=hand)
        log(f"es features in {time.monotonic() - started:.0f} s, {features.found} found")
        fitted, hand, rows = heldout(features, judged, folds,
                                     lambda w: backend_search(backend(w) if w else es),
                                     copies, args.passes)
        return {**summary("es_", fitted, hand), "es_folds": rows,
                "es_per_site": per_site(judged, mrr_at_10=fitted, hand_mrr_at_10=hand),
                "es_training_found": features.found}
    finally:
        made[0].client.indices.delete(index=f"{prefix}-*", ignore_unavailable=True)
        for b in made:
            b.close()


def _progress(label: str):
    def report(done: int, total: int) -> None:
        if done % 200 == 0 or done == total:
            log(f"{label}: {done}/{total}")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"crawl only {', '.join(QUICK_SITES)} (the CI subset)")
    parser.add_argument("--cache", type=Path, default=None,
                        help=f"crawl cache directory (default {DEFAULT_CACHE}[-quick])")
    parser.add_argument("--max-pages", type=int, default=0, help="stop the crawl after N pages")
    parser.add_argument("--reuse-index", action="store_true",
                        help="use the embedded index already in the cache")
    parser.add_argument("--folds", type=int, default=4, help="folds over sites (default 4)")
    parser.add_argument("--per-site", type=int, default=200,
                        help="pages per site training queries are made from (default 200)")
    parser.add_argument("--training", type=Path, default=None,
                        help="training queries as JSON lines {query, url, site} (default: "
                             "made from the crawled pages)")
    parser.add_argument("--depth", type=int, default=50, help="candidates per query (50)")
    parser.add_argument("--passes", type=int, default=4, help="coordinate-ascent rounds")
    parser.add_argument("--elasticsearch", action="store_true",
                        help="also fit and score the Elasticsearch backend (es_* keys)")
    args = parser.parse_args(argv)

    sites = open_sites(s.host for s in available_doc_sites())
    if args.quick:
        sites = [h for h in QUICK_SITES if h in sites]
    cache = args.cache or Path(f"{DEFAULT_CACHE}{'-quick' if args.quick else ''}")
    pages = read_pages(crawl(cache, sites, args.max_pages))
    sites = sorted({p["host"].split(":")[0] for p in pages} & set(sites))
    judged = load_queries(hosts=sites)
    copies = NearCopies(pages)
    index_path = cache / "index"
    if args.reuse_index and (index_path / "meta.json").exists():
        backend = EmbeddedBackend(index_path)
    else:
        backend = build_index(index_path, documents(pages, cache / "links.sqlite"))
    log(f"{len(pages)} pages, {backend.stats()['docs']} documents, {len(judged)} judged "
        f"queries on {len(sites)} sites")
    if args.training:
        training = [TrainingQuery(r["query"], r["url"], r["site"]) for r in
                    map(json.loads, args.training.read_text(encoding="utf-8").splitlines())]
    else:
        training = [
            TrainingQuery(q.query, q.url, q.site.split(":")[0])
            for q in document_known_items(backend.iter_documents(), per_site=args.per_site)
        ]
    judged_text = {" ".join(j.query.lower().split()) for j in judged}
    training = [q for q in training if q.query not in judged_text]
    log(f"{len(training)} training queries")
    folds = site_folds(sites, args.folds)
    started = time.monotonic()
    hand = backend.ranker.weights
    features = collect(EmbeddedBackend(index_path, rank_weights=awake(hand)), training,
                       args.depth, _progress("features"), start=hand)
    log(f"features in {time.monotonic() - started:.0f} s, {features.found} found")
    fitted, hand, rows = heldout(
        features, judged, folds,
        lambda w: backend_search(EmbeddedBackend(index_path, rank_weights=w) if w else backend),
        copies, args.passes)
    baseline = evaluate(PlainBM25(pages).search, judged, copies)
    result = {**summary("", fitted, hand), "heldout": True,
              "baseline_mrr_at_10": round(baseline.mrr(), 4),
              "baseline_s_at_3": round(baseline.success(3), 4),
              "per_site": per_site(judged, mrr_at_10=fitted, hand_mrr_at_10=hand,
                                   baseline_mrr_at_10=baseline),
              "folds": rows, "training_queries": len(training),
              "training_found": features.found, "queries": len(judged), "sites": sites,
              "pages_crawled": len(pages)}
    if args.elasticsearch:
        result.update(elasticsearch_run(pages, judged, cache, copies, training, folds, args))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
