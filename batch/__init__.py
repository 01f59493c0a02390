"""Batch jobs over what the crawl stored: PageRank from the link graph (``batch``, the Celery
``tasks``) and the search index rebuilt from WARC files (``rebuild``)."""
