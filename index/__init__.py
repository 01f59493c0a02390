"""Search backends (embedded, Elasticsearch), shared text analysis, query language."""
