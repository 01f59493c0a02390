"""Search backends (embedded, Elasticsearch), shared text analysis, query language."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from crawler.config import Config
    from index.base import SearchBackend


def get_backend(config: Config | None = None, **options) -> SearchBackend:
    """The configured backend: Elasticsearch when ``ELASTICSEARCH_URL`` is set, else embedded.

    ``settings=`` (Scrapy/Django settings or a mapping) tunes it through its ``ES_*`` or
    ``EMBEDDED_*`` settings; other keyword options go to its constructor.
    """
    from crawler.config import get_config

    config = config or get_config()
    if config.elasticsearch_url:
        from index.elasticsearch import ElasticsearchBackend

        return ElasticsearchBackend.from_config(config, **options)
    from index.embedded import EmbeddedBackend

    return EmbeddedBackend.from_config(config, **options)
