"""python manage.py reindex [--prefix NAME]: rebuild the Elasticsearch index, swap the alias."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from crawler.config import get_config


class Command(BaseCommand):
    help = (
        "Build a new versioned Elasticsearch index from the stored documents (with the current "
        "mapping, analysis and shard settings) and swap the alias to it atomically."
    )

    def add_arguments(self, parser):
        parser.add_argument("--prefix", help="Index alias (default: the ES_INDEX_PREFIX setting)")

    def handle(self, *args, **opts):
        config = get_config()
        if not config.elasticsearch_url:
            raise CommandError(
                "reindex rebuilds the Elasticsearch index: set ELASTICSEARCH_URL "
                "(scripts/services.sh start es prints it)."
            )
        from index.elasticsearch import ElasticsearchBackend

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
