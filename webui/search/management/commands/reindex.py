"""python manage.py reindex --from-warc DIR [--method minhash|simhash] [--no-links]
[--no-anchors]"""

from django.core.management.base import BaseCommand, CommandError

from crawler.config import get_config


class Command(BaseCommand):
    help = (
        "Rebuild the search index from WARC files alone: extract, dedup, link graph, index. "
        "Documents are added or replaced by id; stop the crawler first (one index writer)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--from-warc",
            required=True,
            metavar="DIR",
            help="Directory of .warc.gz files (searched recursively), e.g. DATA_DIR/warc",
        )
        parser.add_argument(
            "--method",
            choices=("minhash", "simhash"),
            default="minhash",
            help="Near-duplicate method for the replayed dedup (default: minhash)",
        )
        parser.add_argument(
            "--no-links",
            action="store_true",
            help="Keep the replayed link graph in a temporary store instead of the configured one",
        )

        parser.add_argument(
            "--no-anchors",
            action="store_true",
            help="Index no anchor text (to compare with a crawl whose index writer adds none)",
        )

    def handle(self, *args, **opts):
        from dedup.core import Deduplicator
        from index import get_backend
        from index.rebuild import rebuild_index
        from pipelines.linkgraph import LinkStore

        config = get_config()
        links = None if opts["no_links"] else LinkStore.open(config)
        backend = get_backend(config)
        try:
            report = rebuild_index(
                opts["from_warc"],
                backend,
                link_store=links,
                dedup=Deduplicator.create(opts["method"]),
                progress=lambda message: self.stderr.write(message),
                anchors=not opts["no_anchors"],
            )
        except FileNotFoundError as exc:
            raise CommandError(str(exc)) from None
        finally:
            backend.close()
            if links is not None:
                links.close()
        self.stdout.write(
            f"{report.documents} documents indexed from {report.pages} pages "
            f"({report.responses} responses in {report.files} WARC files); "
            f"{len(report.aliases)} exact duplicates recorded as aliases, "
            f"{report.noindex} noindex pages skipped, in {report.seconds:.1f} s"
        )
