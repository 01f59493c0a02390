"""Settings -> constructor options for the search backends (one mechanism for both)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from index.fields import FieldWeights

__all__ = ["settings_to_options"]

#: Option types that are not a plain ``type(value)`` conversion.
_CONVERTERS: dict[Any, Callable[[Any], Any]] = {FieldWeights: FieldWeights.of}


def settings_to_options(settings: Any, table: Mapping[str, tuple[str, Any]]) -> dict:
    """Constructor options from the settings in ``table`` that are set (``name -> (option,
    type)``); ``settings`` is a Scrapy/Django settings object or a mapping."""
    if isinstance(settings, Mapping) or hasattr(settings, "get"):
        get = settings.get
    else:

        def get(name):
            return getattr(settings, name, None)

    options: dict[str, Any] = {}
    for name, (option, kind) in table.items():
        value = get(name)
        if value is None:
            continue
        options[option] = _CONVERTERS.get(kind, kind)(value)
    return options
