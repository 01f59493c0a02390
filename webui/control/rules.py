"""The crawl's control store in Django: host rules and seeds from the admin's models, and the
control database made ready before a crawl (``crawler.hostrules.ControlStore``).

The crawler runs an asyncio event loop in its main thread, where Django refuses ORM calls;
queries therefore run in a worker thread.
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor

from crawler.hostrules import ControlNotReady, ControlStore, HostRule

logger = logging.getLogger(__name__)
_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="django-orm")


class ControlDatabaseNotReady(ControlNotReady):
    """The control database (host rules, seeds) needs ``manage.py migrate`` first."""


def _ensure_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webui.settings")
    import django
    from django.apps import apps

    if not apps.ready:
        from django.conf import settings

        # This process (a crawl) reads and writes the control models and serves no pages:
        # the admin's app stays installed (its models and migrations), but not its
        # autodiscover, which imports every app's admin.py with the admin's forms and
        # webui.control.actions (0.2 s of CPU at a crawl's start).
        settings.INSTALLED_APPS = [
            "django.contrib.admin.apps.SimpleAdminConfig" if app == "django.contrib.admin"
            else app
            for app in settings.INSTALLED_APPS
        ]
        django.setup()


def _query_rules() -> list[HostRule]:
    from django.db import connection

    from webui.control.models import HostRule as HostRuleModel

    try:
        return [
            HostRule(r.pattern, r.action, r.crawl_delay, r.page_budget, r.render_js, r.quality,
                     r.never_judge)
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


def _prepare_database() -> None:
    from django.core.management import call_command
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor
    from django.db.utils import OperationalError

    try:
        executor = MigrationExecutor(connection)
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
        if not plan:
            return
        if connection.vendor == "sqlite":
            call_command("migrate", interactive=False, verbosity=0)
            logger.info("created the control database %s (%d migrations)",
                        connection.settings_dict["NAME"], len(plan))
            return
    except OperationalError as exc:  # unreachable: the rules' TTL cache rides it out
        logger.warning("control database unreachable at start (%s); crawling on", exc)
        return
    finally:
        connection.close()
    raise ControlDatabaseNotReady(
        f"The control database ({connection.vendor}, {connection.settings_dict['NAME']}) has "
        f"{len(plan)} unapplied migrations: run `python manage.py migrate` with the same "
        "DATABASE_URL, then start the crawl again."
    )


def prepare_control_database() -> None:
    """Create or update the embedded SQLite control database (``manage.py migrate``);
    raise ``ControlDatabaseNotReady`` when another database (PostgreSQL) is not migrated,
    since migrating a shared database is its operator's decision."""
    _ensure_django()
    _pool.submit(_prepare_database).result(timeout=300)


class DjangoControlStore(ControlStore):
    """Host rules and seeds from the admin (``HostRule``, ``Seed``); ``CONTROL_STORE``."""

    def prepare(self) -> None:
        prepare_control_database()

    def host_rules(self) -> list[HostRule]:
        return load_host_rules()

    def seed_urls(self) -> list[str]:
        return load_seed_urls()
