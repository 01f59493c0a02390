"""Item pipelines that store a page: WARC, link graph, index writer (the quality and dedup
pipelines that judge a page first are in ``crawler.quality``)."""

from __future__ import annotations

from typing import Any

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred


async def awaited(d: Deferred) -> Any:
    """``d``'s result, as the coroutine a pipeline method returns when Scrapy must wait
    (a Deferred returned is deprecated since Scrapy 2.14); awaited through
    :func:`scrapy.utils.defer.maybe_deferred_to_future`, so it works on any reactor. The
    work ``d`` stands for is under way already: a caller that never awaits the coroutine
    (a test, a script) loses only the wait."""
    return await maybe_deferred_to_future(d)
