"""The crawl's own Scrapy signals, beside Scrapy's (``scrapy.signals``).

Each is a plain ``object()`` sent with ``crawler.signals.send_catch_log(signal, **kwargs)``;
the keyword arguments a handler receives are listed with each one.
"""

#: Cut a host's page budget cluster-wide (e.g. the dedup pipeline on a trap host):
#: ``host`` is the frontier's host key, ``netloc_of(url)``; ``budget`` the pages it may have.
#: ``FrontierScheduler.cut_host_budget`` handles it.
host_budget_cut = object()

#: The links of a page the spider wants followed: ``response``, ``urls=[...]``, ``depth``,
#: ``template`` (a Request). ``FrontierScheduler`` queues them in one batch, each URL as a
#: copy of ``template`` (callback, errback, meta) with its ``depth`` and the Referer that
#: Scrapy's referrer policy gives, and returns True; with another scheduler nobody returns
#: True and the spider yields Requests instead. A page has dozens of links: a Request object,
#: the spider middleware chain and the engine's scheduling each, per link, were the largest
#: part of the crawl's CPU time per page (docs/frontier.md).
links_extracted = object()

#: Remove documents from the index: ``ids=[...]``, ``reason="deleted" | "moved"`` (sent by
#: ``crawler.freshness.FreshnessMiddleware``, handled by ``pipelines.index.IndexPipeline``).
documents_removed = object()
