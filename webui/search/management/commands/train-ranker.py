"""python manage.py train-ranker [--output PATH] [--training FILE] [--per-site N] [--depth N]
[--folds K] [--passes N] [--dry-run] [--force] [--json]"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from batch.learn import (
    FeatureSet,
    TrainingQuery,
    awake,
    beats,
    collect,
    document_known_items,
    engine_of,
    fit,
    mrr,
    reciprocal_ranks,
    write_weights,
)
from crawler.config import get_config
from crawler.options import setting
from index import get_backend
from index.signals import FITTED_WEIGHTS_NAME, WEIGHTS_FILE


class Command(BaseCommand):
    help = (
        "Fit the ranking weights of the configured engine on known-item training queries "
        "made from the current index (never the judged queries), check them held out by "
        "site (k folds: fitted on the other sites' queries), and, if they beat the hand "
        f"weights there, write them to DATA_DIR/{FITTED_WEIGHTS_NAME} (or SEARCH_WEIGHTS_FILE), "
        "which the engines load in place of the hand weights of index/weights.json. "
        "Restart the search processes to serve the new weights."
    )

    def add_arguments(self, parser):
        parser.add_argument("--output", type=Path, metavar="PATH",
                            help=f"Where to write the weights (default: SEARCH_WEIGHTS_FILE "
                                 f"if set, else DATA_DIR/{FITTED_WEIGHTS_NAME})")
        parser.add_argument("--training", type=Path, metavar="FILE",
                            help="Training queries as JSON lines {query, url, site} "
                                 "(default: made from the index's pages)")
        parser.add_argument("--per-site", type=int, default=200, metavar="N",
                            help="Pages per site the training queries are made from "
                                 "(default 200; two queries per page)")
        parser.add_argument("--depth", type=int, default=50, metavar="N",
                            help="Candidates per query to re-rank (1-100, default 50)")
        parser.add_argument("--folds", type=int, default=4, metavar="K",
                            help="Folds over sites for the held-out check (default 4; "
                                 "0 = none)")
        parser.add_argument("--passes", type=int, default=4, metavar="N",
                            help="Coordinate-ascent rounds (default 4)")
        parser.add_argument("--dry-run", action="store_true",
                            help="Fit and report, but write nothing")
        parser.add_argument("--force", action="store_true",
                            help="Write the fitted weights even when they do not beat the "
                                 "hand weights on the held-out sites (by more than two "
                                 "standard errors of the per-query difference)")
        parser.add_argument("--json", action="store_true",
                            help="Print the report as one JSON object")

    def handle(self, *args, **opts):
        if not 1 <= opts["depth"] <= 100:
            raise CommandError("--depth runs from 1 to 100.")
        config = get_config()
        output = opts["output"] or Path(setting(settings, "SEARCH_WEIGHTS_FILE", str)
                                        or config.data_dir / FITTED_WEIGHTS_NAME)
        if output.resolve() == WEIGHTS_FILE.resolve():
            raise CommandError(f"{output} holds the hand weights (the fallback); write the "
                               "fitted weights elsewhere with --output.")
        # The fit starts from the hand weights (with the settings' overrides); features are
        # explained with them, signals weighted 0 woken so that their values are computed.
        hand_backend = get_backend(config, cache=False, settings=settings,
                                   weights_file=str(WEIGHTS_FILE))
        hand = dict(hand_backend.ranker.weights)
        hand_backend.close()
        backend = get_backend(config, cache=False, settings=settings,
                              weights_file=str(WEIGHTS_FILE), rank_weights=awake(hand))
        try:
            engine = engine_of(backend)
            queries = self.training_queries(backend, opts)
            if not queries:
                raise CommandError("No training queries: the index has no pages with a "
                                   "title or text (crawl first), or --training is empty.")
            self.stderr.write(f"{len(queries)} training queries on "
                              f"{len({q.site for q in queries})} sites; collecting features "
                              f"from the {engine} engine")
            started = time.monotonic()
            features = collect(backend, queries, opts["depth"], self.progress(len(queries)),
                               start=hand)
            collected = time.monotonic() - started
        finally:
            backend.close()
        report = self.fit_and_check(features, opts)
        held = report.get("heldout")
        better = held is None or held["beats_hand"]
        report.update(engine=engine, training_queries=len(queries),
                      sites=features.sites, found=features.found,
                      collect_seconds=round(collected, 1), output=str(output),
                      beats_hand=better,
                      written=not opts["dry_run"] and (better or opts["force"]))
        if report["written"]:
            write_weights(output, engine, report["weights"], {
                "fitted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "training_queries": len(queries), "found": features.found,
                "sites": features.sites, "mrr_at_10_hand": report["mrr_at_10_hand"],
                "mrr_at_10_fitted": report["mrr_at_10_fitted"],
                "heldout": report.get("heldout"),
            })
        if opts["json"]:
            self.stdout.write(json.dumps(report))
        else:
            self.summary(report)

    def training_queries(self, backend, opts) -> list[TrainingQuery]:
        """The training queries: from ``--training``, else made from the index's pages."""
        path = opts["training"]
        if path is not None:
            try:
                rows = [json.loads(line) for line in path.read_text(encoding="utf-8")
                        .splitlines() if line.strip()]
                return [TrainingQuery(r["query"], r["url"], r["site"]) for r in rows]
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise CommandError(f"Cannot read training queries from {path}: {exc}; "
                                   "expected JSON lines with query, url and site.") from None
        inner = getattr(backend, "backend", backend)
        if not hasattr(inner, "iter_documents"):
            raise CommandError("This engine cannot list its documents; pass --training.")
        self.stderr.write("making training queries from the index's pages")
        return document_known_items(inner.iter_documents(), per_site=opts["per_site"])

    def progress(self, total: int):
        step = max(1, total // 10)

        def report(done: int, _total: int) -> None:
            if done % step == 0 or done == total:
                self.stderr.write(f"  {done}/{total} queries")

        return report

    def fit_and_check(self, features: FeatureSet, opts) -> dict:
        """The fit on every training query, and, with two sites or more, the held-out
        check: each fold's sites scored with weights fitted on the other sites only."""
        hand = dict(features.weights)
        report: dict = {}
        sites = features.sites
        folds = min(opts["folds"], len(sites))
        if folds >= 2:
            by_hand, by_fit = [], []
            for k in range(folds):
                test = sites[k::folds]
                train = [s for s in sites if s not in test]
                weights = fit(features.only(train), passes=opts["passes"]).weights
                scored = features.only(test)
                by_hand.append(reciprocal_ranks(scored, hand))
                by_fit.append(reciprocal_ranks(scored, weights))
                self.stderr.write(f"  fold {k + 1}/{folds}: held out {', '.join(test)}")
            hand_rr, fit_rr = np.concatenate(by_hand), np.concatenate(by_fit)
            report["heldout"] = {"folds": folds, "queries": len(hand_rr),
                                 "mrr_at_10_hand": round(float(hand_rr.mean()), 4),
                                 "mrr_at_10_fitted": round(float(fit_rr.mean()), 4),
                                 "beats_hand": beats(fit_rr, hand_rr)}
        result = fit(features, passes=opts["passes"])
        report.update(weights=result.weights, hand_weights=hand,
                      mrr_at_10_hand=round(mrr(features, hand), 4),
                      mrr_at_10_fitted=round(mrr(features, result.weights), 4),
                      fit_seconds=round(result.seconds, 1))
        return report

    def summary(self, report: dict) -> None:
        w = self.stdout.write
        w(f"train-ranker: {report['engine']} engine, {report['training_queries']} training "
          f"queries on {len(report['sites'])} sites ({report['found']} with their page in "
          f"the top candidates)")
        w(f"  features in {report['collect_seconds']} s, fit in {report['fit_seconds']} s")
        w(f"  MRR@10 on the training queries: hand {report['mrr_at_10_hand']:.4f} -> "
          f"fitted {report['mrr_at_10_fitted']:.4f}")
        held = report.get("heldout")
        if held:
            w(f"  held out by site ({held['folds']} folds, {held['queries']} queries): hand "
              f"{held['mrr_at_10_hand']:.4f} -> fitted {held['mrr_at_10_fitted']:.4f}")
        w(f"  {'signal':<10} {'hand':>9} {'fitted':>9}")
        for name, value in report["weights"].items():
            w(f"  {name:<10} {report['hand_weights'].get(name, 0.0):>9.4g} {value:>9.4g}")
        if report["written"]:
            w(f"written to {report['output']}; the engines load it on start "
              "(restart the search processes); delete it to go back to the hand weights")
        elif not report["beats_hand"]:
            w("nothing written: the fit does not beat the hand weights on the held-out "
              "sites by more than two standard errors (--force writes it anyway)")
        else:
            w("dry run: nothing written")
