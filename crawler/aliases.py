"""scrapy-redis's setting names, honoured as aliases of the frontier's own.

A scrapy-redis project switches to the frontier by changing ``SCHEDULER`` alone:

- ``SCHEDULER_FLUSH_ON_START`` = ``FRONTIER_RESET``: start from an empty frontier;
- ``SCHEDULER_PERSIST`` = ``FRONTIER_PERSIST``: keep the frontier when the spider closes;
- ``REDIS_START_URLS_KEY`` = ``FRONTIER_SEEDS_KEY``: the Redis list seeds are popped from
  (``%(name)s`` becomes the spider's name).

Unset, each takes our default. Note the one default that differs: scrapy-redis clears
its queue at close unless ``SCHEDULER_PERSIST`` is set, the frontier keeps its state
(``FRONTIER_PERSIST = True``) so that a crawl resumes; ``SCHEDULER_PERSIST = False`` gives
scrapy-redis's behaviour. When both names are set, the one set with the higher Scrapy
settings priority wins (``-s`` on the command line beats the settings module), and the
alias on a tie, since our name's value in crawler/settings.py is only its default.
"""

from __future__ import annotations

import logging
from typing import Any

from crawler.options import setting

logger = logging.getLogger(__name__)

#: our setting -> the scrapy-redis setting that means the same
ALIASES = {
    "FRONTIER_RESET": "SCHEDULER_FLUSH_ON_START",
    "FRONTIER_PERSIST": "SCHEDULER_PERSIST",
    "FRONTIER_SEEDS_KEY": "REDIS_START_URLS_KEY",
}


def effective_name(settings, name: str) -> str:
    """``name`` or its alias, whichever of the two the settings say (see the module doc)."""
    alias = ALIASES.get(name)
    if alias is None:
        return name
    alias_priority = settings.getpriority(alias)
    if alias_priority is None:
        return name
    ours = settings.getpriority(name)
    return alias if ours is None or alias_priority >= ours else name


def get(settings, name: str, kind: Any = None) -> Any:
    """The value of ``name`` (its default in crawler/settings.py when unset), taken from its
    alias when that wins; converted to ``kind`` unless None."""
    source = effective_name(settings, name)
    if source != name:
        logger.debug("%s taken from its scrapy-redis alias %s", name, source)
        value = setting(settings, source, kind)
        if value is not None:
            return value
    return setting(settings, name, kind)


def getbool(settings, name: str) -> bool:
    """``get`` as a boolean, the way Scrapy's ``Settings.getbool`` reads one."""
    return bool(get(settings, name, bool))
