"""python manage.py search "query" [--json] [--page N] [--size N] [--explain]"""

import json
from dataclasses import asdict

from django.core.management.base import BaseCommand, CommandError

from webui.search.backend import QueryError, run_search


class Command(BaseCommand):
    help = "Search the index from the command line; --json prints url, title, score, snippet."

    def add_arguments(self, parser):
        parser.add_argument(
            "query", help='Query in the search language: words, "phrase", -word, site:host, OR'
        )
        parser.add_argument("--json", action="store_true", help="Print results as one JSON object")
        parser.add_argument("--page", type=int, default=1, help="Result page, from 1")
        parser.add_argument("--size", type=int, default=10,
                            help="Results per page (1 to SEARCH_MAX_SIZE)")
        parser.add_argument("--explain", action="store_true",
                            help="Show each ranking signal's value and contribution per hit")

    def handle(self, *args, **opts):
        try:
            results = run_search(opts["query"], page=opts["page"], size=opts["size"],
                                 explain=opts["explain"])
        except QueryError as exc:
            raise CommandError(str(exc)) from None
        if opts["json"]:
            payload = {
                "query": results.query,
                "total": results.total,
                "took_ms": round(results.took_ms, 2),
                "results": [
                    {
                        k: v
                        for k, v in asdict(h).items()
                        if k in ("url", "title", "score", "snippet", "similar", "languages")
                        or (k == "explain" and v is not None)
                    }
                    for h in results.hits
                ],
            }
            self.stdout.write(json.dumps(payload, ensure_ascii=False))
            return
        self.stdout.write(f"{results.total} results ({results.took_ms:.1f} ms)")
        for n, hit in enumerate(results.hits, start=(results.page - 1) * results.size + 1):
            self.stdout.write(
                f"{n:>3}. {hit.title or hit.url}\n     {hit.url}  score={hit.score:.3f}"
            )
            for name, part in (hit.explain or {}).items():
                self.stdout.write(f"       {name:<10} {part['value']:>9.4f} x {part['weight']:<6g}"
                                  f" = {part['contribution']:.4f}")
