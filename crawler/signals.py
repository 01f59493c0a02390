"""The crawl's own Scrapy signals, beside Scrapy's (``scrapy.signals``).

Each is a plain ``object()`` sent with ``crawler.signals.send_catch_log(signal, **kwargs)``;
the keyword arguments a handler receives are listed with each one. What the pipelines tell
the frontier (budget cuts, condemned hosts, trap patterns, soft 404s, host scores) is no
signal: it goes through one typed interface, ``crawler.feedback.Feedback``.
"""

#: The links of a page the spider wants followed: ``response``, ``urls=[...]``, ``depth``,
#: ``template`` (a Request), ``outlinks`` (the page's links in all) and ``seen=[...]`` (its
#: followed links the spider handed over lately: in-links for the value order, which may
#: move a still-queued URL up). ``FrontierScheduler`` queues ``urls`` in one batch, each URL as a
#: copy of ``template`` (callback, errback, meta) with its ``depth`` and the Referer that
#: Scrapy's referrer policy gives, and returns True; with another scheduler nobody returns
#: True and the spider yields Requests instead. ``WebSpider`` calls the handler directly
#: when the scheduler set it as the spider's ``links_sink`` (FrontierScheduler does, when it
#: opens): a signal's dispatch costs more than the call, every page. A page has dozens of
#: links: a Request object, the spider middleware chain and the engine's scheduling each,
#: per link, were the largest part of the crawl's CPU time per page (docs/crawl-speed.md).
links_extracted = object()

#: Remove documents from the index: ``ids=[...]``, ``reason="deleted" | "moved"`` (sent by
#: ``crawler.freshness.FreshnessMiddleware``, handled by ``pipelines.index.IndexPipeline``).
documents_removed = object()

#: A whole host is not worth fetching any more (a mirror, a spam host): ``host`` (the host
#: name), ``netloc`` (``netloc_of(url)``, the frontier's key), ``reason`` (``"mirror"``,
#: ``"spam"``). Sent by ``crawler.feedback.CrawlFeedback.condemn_host`` once the frontier
#: has cut the host (its budget to nothing, queued URLs dropped as they are leased,
#: ``frontier/dropped/<reason>``); the index pipeline removes its pages and the quality
#: pipeline marks its later pages ``skip_index``.
host_condemned = object()

#: A condemned host is acquitted: later pages contradicted the verdict, or it was given in a
#: dry run: ``host``, ``netloc``, ``reason`` (what it was condemned as). Sent by
#: ``crawler.feedback.CrawlFeedback.acquit_host`` once the frontier took the host off its
#: condemned hosts and lifted its budget cut; the quality pipeline indexes its pages again.
#: URLs dropped while it was condemned stay dropped (they are seen).
host_acquitted = object()

#: The page shown for a duplicate cluster changed (``crawler.quality.dedup.election``):
#: ``cluster_id``, ``shown`` (the doc id now shown) and ``hidden`` (doc ids shown before, no
#: longer), sent by ``crawler.quality.dedup.pipeline.DedupPipeline``;
#: ``pipelines.index.IndexPipeline`` hands the change to the index (``SearchBackend.set_shown``).
cluster_elected = object()
