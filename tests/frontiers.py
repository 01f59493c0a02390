"""Frontier backends as the unit tests build them: the crawl's ``FRONTIER_*`` defaults (from
crawler/settings.py, through ``frontier_options``) without the per-IP limit and robots.txt
first, which a test asks for when it tests them."""

from typing import Any

from crawler.frontier import Politeness, frontier_options
from crawler.options import settings_to_options


def options(**overrides: Any) -> dict[str, Any]:
    """A backend's keyword options: the defaults, no per-IP limit, no robots.txt first,
    then ``overrides``."""
    return frontier_options(None, **{"ip_limit": 0, "robots_first": False, **overrides})


def politeness(**fields: float) -> Politeness:
    """The default politeness policy with ``fields`` changed."""
    return Politeness.from_settings(None, **fields)


def scheduler_options(**overrides: Any) -> dict[str, Any]:
    """``FrontierScheduler``'s keyword options from the settings' defaults, then ``overrides``."""
    from crawler.scheduler import FrontierScheduler

    return settings_to_options(None, FrontierScheduler.SETTINGS, **overrides)
