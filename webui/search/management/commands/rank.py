"""python manage.py rank [--seed URL ...] [--link-store DOTTED] [--publish-only] [--json]"""

import json

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from batch.rank import RankSettings, open_backend, open_store, publish, run_rank


class Command(BaseCommand):
    help = (
        "Rank the page and host link graphs (PageRank) in this process and write the "
        "static ranks to the search index, as one committed version."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--seed",
            action="append",
            default=[],
            metavar="URL",
            help="Personalize on this seed URL (repeatable; default: RANK_SEEDS, or uniform)",
        )
        parser.add_argument(
            "--link-store",
            metavar="DOTTED",
            help="Callable(config) returning the link store (default: RANK_LINK_STORE)",
        )
        parser.add_argument("--batch-size", type=int, help="Scores per write batch")
        parser.add_argument(
            "--publish-only",
            action="store_true",
            help="Only finish writing the committed version to the index (after a failure)",
        )
        parser.add_argument("--json", action="store_true", help="Print the run report as JSON")

    def handle(self, *args, **opts):
        overrides = {}
        if opts["seed"]:
            overrides["seeds"] = tuple(opts["seed"])
        if opts["link_store"]:
            overrides["link_store"] = opts["link_store"]
        if opts["batch_size"]:
            overrides["batch_size"] = opts["batch_size"]
        rank_settings = RankSettings.from_settings(settings, **overrides)
        if opts["publish_only"]:
            self.publish_committed(rank_settings)
            return
        try:
            report = run_rank(rank_settings)
        except (ImportError, RuntimeError) as exc:
            raise CommandError(
                f"{exc}\nIf the ranks were committed, finish with: manage.py rank --publish-only"
            ) from None
        if opts["json"]:
            self.stdout.write(json.dumps(report.to_dict()))
            return
        state = "committed" if report.committed else "superseded by a newer run"
        self.stdout.write(
            f"version {report.version} {state}: {report.pages} pages ({report.page_edges} links),"
            f" {report.hosts} hosts ({report.host_edges} links); {report.published} documents"
            f" updated in the index"
        )

    def publish_committed(self, rank_settings: RankSettings) -> None:
        store = open_store()
        version = store.current()
        if version is None:
            raise CommandError("No ranking run is committed yet; run manage.py rank first.")
        backend = open_backend(rank_settings)
        try:
            changed = publish(store, backend, version, rank_settings)
        except RuntimeError as exc:
            raise CommandError(str(exc)) from None
        finally:
            backend.close()
            store.close()
        self.stdout.write(f"version {version}: {changed} documents updated in the index")
