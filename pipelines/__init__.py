"""Item pipelines: dedup, WARC, link graph, index writer."""
