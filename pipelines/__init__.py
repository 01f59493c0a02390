"""Item pipelines that store a page: WARC, link graph, index writer (the quality and dedup
pipelines that judge a page first are in ``crawler.quality``)."""
