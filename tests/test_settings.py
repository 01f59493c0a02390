"""Every setting's default lives once, in crawler/settings.py: no component repeats it as a
fallback or a constructor default, and the Django settings take what they share from there."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from crawler import settings as crawl_settings
from crawler.options import FROM_ENVIRONMENT, setting, setting_default, settings_to_options

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("crawler", "pipelines", "spiders", "index", "batch", "operations", "webui")
GETTERS = {"get", "getint", "getfloat", "getbool", "getlist", "getdict"}


def assigned_names(path: Path) -> dict[str, ast.expr]:
    """Upper-case names a module assigns at top level -> the assigned expression."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id.isupper():
                    names[target.id] = node.value
    return names


SETTING_NAMES = set(assigned_names(ROOT / "crawler" / "settings.py"))


def test_no_component_repeats_a_default_as_a_fallback():
    """``settings.getint("NAME", 5)`` and the like, for a NAME crawler/settings.py defines."""
    offenders = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr in GETTERS and node.args):
                    continue
                name = node.args[0]
                if not (isinstance(name, ast.Constant) and name.value in SETTING_NAMES):
                    continue
                if len(node.args) > 1 or any(k.arg == "default" for k in node.keywords):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} {name.value}")
    assert offenders == []


def _components():
    from batch.rank_settings import _SETTINGS as RANK
    from batch.rank_settings import RankSettings
    from crawler.fetch import FetchLimitsMiddleware
    from crawler.freshness import FreshnessMiddleware, RecrawlFeeder
    from crawler.frontier import SETTINGS as FRONTIER
    from crawler.frontier import FrontierOptions, Politeness
    from crawler.hostrules import HostRules
    from crawler.memory import MemoryMonitor
    from crawler.quality.dedup.core import Deduplicator
    from crawler.quality.dedup.pipeline import DedupPipeline
    from crawler.quality.traps import TrapGuard
    from crawler.recrawl import RecrawlPolicy
    from crawler.robots import RobotsPolicy
    from crawler.scheduler import FrontierScheduler
    from crawler.statsexport import StatsExport
    from index.engines.elasticsearch.options import ElasticsearchOptions
    from index.engines.embedded.options import EmbeddedOptions
    from pipelines.index import IndexPipeline
    from pipelines.warc import RotatingWarcWriter, WarcPipeline

    return [
        (FrontierOptions, FRONTIER),  # what every frontier backend takes
        (Politeness, Politeness.SETTINGS),
        (FrontierScheduler, FrontierScheduler.SETTINGS),
        (TrapGuard, TrapGuard.SETTINGS),
        (RobotsPolicy, RobotsPolicy.SETTINGS),
        (HostRules, {"HOST_RULES_TTL": ("ttl", float)}),
        (RecrawlPolicy, RecrawlPolicy.SETTINGS),
        (RecrawlFeeder, RecrawlFeeder.SETTINGS),
        (FreshnessMiddleware, {"FRONTIER_TIERS": ("max_tier", int)}),  # tiers - 1
        (Deduplicator.create, Deduplicator.SETTINGS),
        (DedupPipeline, DedupPipeline.SETTINGS),
        (RotatingWarcWriter, RotatingWarcWriter.SETTINGS),
        (WarcPipeline, {"WARC_DISK_RETRY_S": ("retry_s", float)}),
        (IndexPipeline, IndexPipeline.SETTINGS),
        (FetchLimitsMiddleware, {"RETRY_BACKOFF_BASE": ("backoff_base", float),
                                 "RETRY_BACKOFF_MAX": ("backoff_max", float)}),
        (MemoryMonitor, {"MEMORY_TRIM": ("trim", bool), "MEMORY_MALLOC_ARENAS": ("arenas", int),
                         "MEMORY_MMAP_THRESHOLD": ("mmap_threshold", int)}),
        (StatsExport, {"STATS_EXPORT_TOP_HOSTS": ("top_hosts", int)}),
        (RankSettings, RANK),
        (EmbeddedOptions, EmbeddedOptions.SETTINGS),
        (ElasticsearchOptions, ElasticsearchOptions.SETTINGS),
    ]


@pytest.mark.parametrize("component, table", _components(),
                         ids=lambda v: getattr(v, "__qualname__", ""))
def test_constructors_take_setting_backed_options_without_their_defaults(component, table):
    """A constructor option read from a setting has no default, or an "off" value that is
    not the setting's default (the frontier's per-IP limit and robots.txt-first)."""
    parameters = inspect.signature(component).parameters
    repeated = []
    for name, (option, _kind) in table.items():
        assert option in parameters, f"{component.__qualname__} has no option {option}"
        default = parameters[option].default
        if default is not inspect.Parameter.empty and default == setting_default(name):
            repeated.append(f"{option}={default!r} ({name})")
    assert repeated == []


@pytest.mark.parametrize("component, table", _components(),
                         ids=lambda v: getattr(v, "__qualname__", ""))
def test_every_setting_a_component_reads_has_its_default_here(component, table):
    assert sorted(set(table) - SETTING_NAMES - FROM_ENVIRONMENT) == []


def test_the_engines_options_are_the_settings_defaults():
    from index.engines.elasticsearch.options import ElasticsearchOptions
    from index.engines.embedded.options import EmbeddedOptions

    for options in (EmbeddedOptions.from_settings(), ElasticsearchOptions.from_settings()):
        for name, (option, _kind) in options.SETTINGS.items():
            default = getattr(crawl_settings, name)
            value = getattr(options, option)
            assert value == default or value == type(value).of(default), name
    tuned = EmbeddedOptions.from_settings({"EMBEDDED_BLEND_BELOW": "7"}, max_window=9)
    assert (tuned.blend_below, tuned.max_window) == (7, 9)


def test_django_settings_take_what_they_share_from_the_crawler():
    from django.conf import settings as django_settings

    django = assigned_names(ROOT / "webui" / "settings.py")
    shared = SETTING_NAMES & set(django)
    assert {"FRONTIER_BLOOM_CAPACITY", "FRONTIER_BLOOM_FPR", "ES_INDEX_PREFIX", "ES_SHARDS",
            "ES_REPLICAS"} <= shared
    copied = [
        name for name in sorted(shared)
        if not (isinstance(django[name], ast.Attribute) and django[name].attr == name
                and isinstance(django[name].value, ast.Name)
                and django[name].value.id == "crawl_settings")
    ]
    assert copied == []
    for name in shared:
        assert getattr(django_settings, name) == getattr(crawl_settings, name)


def test_unset_settings_get_the_crawlers_defaults():
    table = {"FRONTIER_LEASE_S": ("lease_s", float), "DEDUP_ENABLED": ("on", bool),
             "NOT_A_SETTING": ("nothing", int)}
    assert settings_to_options({}, table) == {"lease_s": crawl_settings.FRONTIER_LEASE_S,
                                              "on": True}
    # values convert as Scrapy's Settings does, from any source
    assert settings_to_options({"FRONTIER_LEASE_S": "5", "DEDUP_ENABLED": "false"}, table) == {
        "lease_s": 5.0, "on": False}
    # keep_none: a dataclass of options gets every field, a setting that is None included
    assert settings_to_options({}, table, keep_none=True) == {
        "lease_s": crawl_settings.FRONTIER_LEASE_S, "on": True, "nothing": None}

    class DjangoLike:
        FRONTIER_LEASE_S = 7

    assert setting(DjangoLike(), "FRONTIER_LEASE_S", float) == 7.0
    assert setting(DjangoLike(), "FRONTIER_TIERS", int) == crawl_settings.FRONTIER_TIERS
    # an explicit None is a value (WARC_DIR = None: derive it), not "unset"
    assert setting({"FRONTIER_TIERS": None}, "FRONTIER_TIERS", int) is None
    # what crawler/settings.py takes from the environment is never a default
    assert all(setting_default(name) is None for name in FROM_ENVIRONMENT)


def test_a_bare_crawler_builds_components_with_the_defaults(tmp_path):
    """A crawler without the project's settings (``get_crawler``) gets crawler/settings.py's
    defaults, not a second copy of them."""
    from scrapy.utils.test import get_crawler

    from crawler.scheduler import FrontierScheduler
    from spiders.web import WebSpider

    crawler = get_crawler(WebSpider, {"CONTROL_STORE": "", "DATA_DIR": str(tmp_path)})
    scheduler = FrontierScheduler.from_crawler(crawler)
    frontier = scheduler.frontier
    try:
        assert frontier.lease_s == crawl_settings.FRONTIER_LEASE_S
        assert frontier.tiers == scheduler.ordering.tiers == crawl_settings.FRONTIER_TIERS
        assert frontier.max_attempts == crawl_settings.FRONTIER_MAX_ATTEMPTS
        assert frontier.ip_limit == crawl_settings.FRONTIER_IP_CONCURRENCY
        assert frontier.politeness.default_delay == crawl_settings.FRONTIER_DELAY
        assert scheduler.release_interval == crawl_settings.FRONTIER_RELEASE_INTERVAL
        assert scheduler.admission.host_budget == crawl_settings.FRONTIER_HOST_PAGE_BUDGET
    finally:
        frontier.close()
