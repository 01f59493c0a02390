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


def scheduler(frontier, rules=None, traps=None, robots=None, *, value_order=None,
              repush_urls: int = 0, tiers: int = 4, **overrides: Any):
    """A ``FrontierScheduler`` over ``frontier`` without a crawler: admission by host
    ``rules`` and trap guards ``traps`` (none and the defaults unless given), ordering by
    ``value_order`` (breadth-first unless given), the settings' defaults, ``overrides``."""
    from crawler.admission import Admission
    from crawler.hostrules import HostRules
    from crawler.ordering import Ordering
    from crawler.quality.traps import TrapGuard
    from crawler.scheduler import FrontierScheduler

    admission = Admission(rules if rules is not None else HostRules.static([]),
                          traps if traps is not None else TrapGuard.from_settings(None))
    return FrontierScheduler(frontier, admission, Ordering(tiers, value_order, repush_urls),
                             robots, **{**scheduler_options(), **overrides})
