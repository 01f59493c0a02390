"""python manage.py reindex [--from-warc DIR [--method ...] [--no-links] [--no-anchors]]
                           [--prefix NAME]

Without --from-warc: build a new versioned Elasticsearch index from the stored documents
and swap the alias to it. With --from-warc: rebuild the configured index from WARC files.
"""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from crawler.config import get_config


class Command(BaseCommand):
    help = (
        "Rebuild the search index. With --from-warc DIR: from the WARC files alone (extract, "
        "dedup, link graph, index; stop the crawler first: one index writer). Without it: "
        "build a new versioned Elasticsearch index from the stored documents (current "
        "mapping, analysis and shard settings) and swap the alias to it atomically."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--from-warc",
            metavar="DIR",
            help="Directory of .warc.gz files (searched recursively), e.g. DATA_DIR/warc",
        )
        parser.add_argument(
            "--method",
            choices=("minhash", "simhash"),
            default="minhash",
            help="With --from-warc: near-duplicate method for the replayed dedup",
        )
        parser.add_argument(
            "--no-links",
            action="store_true",
            help="With --from-warc: keep the replayed link graph in a temporary store",
        )
        parser.add_argument(
            "--no-anchors",
            action="store_true",
            help="With --from-warc: index no anchor text",
        )
        parser.add_argument(
            "--prefix", help="Elasticsearch alias to rebuild (default: the ES_INDEX_PREFIX setting)"
        )

    def handle(self, *args, **opts):
        if opts["from_warc"]:
            self.from_warc(opts)
        else:
            self.swap_alias(opts)

    def from_warc(self, opts):
        from batch.rebuild import rebuild_index
        from crawler.quality.dedup.core import Deduplicator
        from index import get_backend
        from pipelines.linkgraph import LinkStore

        config = get_config()
        links = None if opts["no_links"] else LinkStore.open(config)
        backend = get_backend(config)
        try:
            report = rebuild_index(
                opts["from_warc"],
                backend,
                link_store=links,
                dedup=Deduplicator.from_settings(settings, method=opts["method"]),
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

    def swap_alias(self, opts):
        config = get_config()
        if not config.elasticsearch_url:
            raise CommandError(
                "Without --from-warc, reindex rebuilds the Elasticsearch index: set "
                "ELASTICSEARCH_URL (scripts/services.sh start es prints it), or rebuild the "
                "embedded index with --from-warc DATA_DIR/warc."
            )
        from index.engines.elasticsearch.backend import ElasticsearchBackend

        options = {"index_prefix": opts["prefix"]} if opts["prefix"] else {}
        backend = ElasticsearchBackend.from_config(config, settings=settings, **options)
        try:
            old = backend.current_index()
            if old is None:
                raise CommandError(f"There is no index behind the alias {backend.alias!r} yet.")

            def progress(n: int) -> None:
                self.stderr.write(f"reindex: {n} documents copied")

            new = backend.reindex(progress=progress)
            docs = backend.stats()["docs"]
        finally:
            backend.close()
        self.stdout.write(f"{backend.alias}: {old} -> {new} ({docs} documents)")
