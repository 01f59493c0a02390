"""Settings -> constructor options: the one helper every component's ``from_crawler`` /
``from_settings`` uses, crawler, frontier, dedup, pipelines, web UI and search backends alike.

A component lists the settings it reads in a table, ``NAME -> (option, kind)``, and its
``__init__`` takes plain arguments. A setting's default lives once, in ``crawler/settings.py``:
a name the given settings leave unset (a Scrapy crawler built without the project's
settings, a Django settings module, a mapping) gets that default here, so no component
repeats it as a fallback. Values convert as Scrapy's ``Settings`` does (``"false"`` and
``"0"`` are false, a JSON string is a dict, ``"a,b"`` a list), whatever the source.

It lives in ``crawler/`` beside ``config.py`` (the environment's one reader) because
``crawler/settings.py`` is the defaults' home and every package already imports from
``crawler``; the search backends use it without importing each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Names of ``crawler/settings.py`` that come from the environment (``crawler.config``)
#: when that module is imported: never defaults, a component reads them through
#: ``crawler.config.config_from_settings``.
FROM_ENVIRONMENT = frozenset({"DATA_DIR", "REDIS_URL", "ELASTICSEARCH_URL", "LOG_FILE"})

#: How a raw value of each kind is read (Scrapy's ``Settings`` getters).
_GETTERS: dict[Any, str] = {
    bool: "getbool",
    int: "getint",
    float: "getfloat",
    list: "getlist",
    dict: "getdict",
}

#: A table row: the constructor's keyword and the value's kind (``bool``, ``int``,
#: ``float``, ``str``, ``list``, ``dict``, or a callable that takes the raw value).
Option = tuple[str, Any]


def setting_default(name: str) -> Any:
    """The default of setting ``name`` in ``crawler/settings.py`` (None if it has none)."""
    if name in FROM_ENVIRONMENT:
        return None
    from crawler import settings as defaults  # on first use: it reads the environment

    return getattr(defaults, name, None)


_UNSET = object()


def _raw(settings: Any, name: str) -> Any:
    """The value ``settings`` gives ``name``, or ``_UNSET`` (an explicit None is a value)."""
    if settings is None:
        return _UNSET
    if isinstance(settings, Mapping) or hasattr(settings, "get"):
        return settings.get(name) if name in settings else _UNSET
    return getattr(settings, name, _UNSET)  # Django settings


def convert(value: Any, kind: Any) -> Any:
    """``value`` read as ``kind``, the way Scrapy's ``Settings`` reads it."""
    getter = _GETTERS.get(kind)
    if getter is not None:
        # imported here: an extraction worker reads settings through this module and
        # would import all of Scrapy with it (0.4 s of CPU)
        from scrapy.settings import BaseSettings

        return getattr(BaseSettings({"v": value}), getter)("v")
    if kind is str:
        return str(value)
    return kind(value)


def setting(settings: Any, name: str, kind: Any = None) -> Any:
    """Setting ``name`` from ``settings`` (Scrapy or Django settings, a mapping, or None),
    else its default in ``crawler/settings.py``; converted to ``kind`` unless None (None,
    set or default, stays None)."""
    value = _raw(settings, name)
    if value is _UNSET:
        value = setting_default(name)
    if value is None or kind is None:
        return value
    return convert(value, kind)


def settings_to_options(
    settings: Any, table: Mapping[str, Option], *, keep_none: bool = False, **overrides: Any
) -> dict[str, Any]:
    """Constructor options from ``table`` (``NAME -> (option, kind)``): each setting's value
    in ``settings``, else its default in ``crawler/settings.py``; a name that is None there
    is left out (the constructor's own default applies), or with ``keep_none`` passed as
    None (for a dataclass whose fields have no defaults of their own). ``overrides`` win."""
    options: dict[str, Any] = {}
    for name, (option, kind) in table.items():
        value = setting(settings, name, kind)
        if value is not None or keep_none:
            options[option] = value
    options.update(overrides)
    return options


def enabled(settings: Any, name: str) -> bool:
    """Whether the on/off setting ``name`` is on (its default when unset)."""
    return bool(setting(settings, name, bool))


__all__ = [
    "FROM_ENVIRONMENT",
    "Option",
    "convert",
    "enabled",
    "setting",
    "setting_default",
    "settings_to_options",
]
