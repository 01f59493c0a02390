"""Search backends (embedded, Elasticsearch), shared text analysis, query language."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from crawler.config import Config
    from index.base import SearchBackend


def get_backend(config: Config | None = None, *, cache: bool = True,
                **options) -> SearchBackend:
    """The configured backend: Elasticsearch when ``ELASTICSEARCH_URL`` is set, else embedded.

    ``settings=`` (Scrapy/Django settings or a mapping) tunes it through its ``ES_*`` or
    ``EMBEDDED_*`` settings; other keyword options go to its constructor. With ``cache``
    and a positive ``SEARCH_CACHE_TTL`` it comes behind the result cache
    (:class:`index.cache.CachedBackend`: Redis when ``REDIS_URL`` is set), which also
    makes its publications (reindex, ``update_rank``, ``delete_by_host``) empty the cache.
    """
    from crawler.config import get_config
    from crawler.options import setting

    config = config or get_config()
    backend: SearchBackend
    if config.elasticsearch_url:
        from index.engines.elasticsearch.backend import ElasticsearchBackend

        backend = ElasticsearchBackend.from_config(config, **options)
    else:
        from index.engines.embedded.backend import EmbeddedBackend

        backend = EmbeddedBackend.from_config(config, **options)
    ttl = setting(options.get("settings"), "SEARCH_CACHE_TTL", float) if cache else 0.0
    if not ttl or ttl <= 0:
        return backend
    from index.cache import CachedBackend, result_cache

    size = setting(options.get("settings"), "SEARCH_CACHE_SIZE", int)
    return CachedBackend(backend, result_cache(config.redis_url, ttl, size))
