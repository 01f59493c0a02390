"""Read host rules and seeds for the crawler process.

The crawler runs an asyncio event loop in its main thread, where Django refuses ORM calls;
queries therefore run in a worker thread.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

from crawler.hostrules import HostRule

_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="django-orm")


def _ensure_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webui.settings")
    import django
    from django.apps import apps

    if not apps.ready:
        django.setup()


def _query_rules() -> list[HostRule]:
    from django.db import connection

    from webui.control.models import HostRule as HostRuleModel

    try:
        return [
            HostRule(r.pattern, r.action, r.crawl_delay, r.page_budget, r.render_js, r.quality)
            for r in HostRuleModel.objects.all()
        ]
    finally:
        connection.close()


def _query_seeds() -> list[str]:
    from django.db import connection

    from webui.control.models import Seed

    try:
        return list(Seed.objects.filter(active=True).values_list("url", flat=True))
    finally:
        connection.close()


def load_host_rules() -> list[HostRule]:
    """All host rules; raises when the database is unreachable (HostRules keeps old values)."""
    _ensure_django()
    return _pool.submit(_query_rules).result(timeout=30)


def load_seed_urls() -> list[str]:
    """Active seed URLs from the admin."""
    _ensure_django()
    return _pool.submit(_query_seeds).result(timeout=30)
