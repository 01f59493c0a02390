"""Batch jobs over what the crawl stored: PageRank over the link graph (``rank``, run
in-process or as the Celery ``tasks``; ``pagerank`` with SciPy, ``spark`` with Apache
Spark), the ranking weights fitted on known-item queries (``learn``), and the search index
rebuilt from WARC files (``rebuild``). Query-time ranking is ``index.signals``."""
