"""What both search engines are tuned by alike: the shared ``SEARCH_*`` settings, declared
once for the engines' options (``index/engines/*/options.py``), and the one way settings
become options.

Every setting's default is in ``crawler/settings.py``; ``from_settings`` reads the given
settings (Scrapy or Django settings, a mapping, or None for the defaults) and keyword
overrides win. A backend holds one instance and hands it to the helpers that need it, so a
value changed on it is used by the next search.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Self

from crawler.options import Option, settings_to_options
from index.fields import DEFAULT_COMPOUND_FIELDS, FieldWeights

__all__ = ["SearchOptions"]


@dataclass(kw_only=True)
class SearchOptions:
    """The options every engine has; an engine's options extend them and their
    ``SETTINGS`` (setting -> field; the defaults are in crawler/settings.py)."""

    language: str
    weights_file: str
    semantic: bool
    semantic_sections: int
    semantic_depth: int
    semantic_model: str
    semantic_queries: str
    #: Where a compound of the query's words scores, and how much.
    compound_fields: FieldWeights = DEFAULT_COMPOUND_FIELDS

    SETTINGS: ClassVar[dict[str, Option]] = {
        "SEARCH_LANGUAGE": ("language", str),
        "SEARCH_WEIGHTS_FILE": ("weights_file", str),
        "SEARCH_SEMANTIC": ("semantic", bool),
        "SEARCH_SEMANTIC_SECTIONS": ("semantic_sections", int),
        "SEARCH_SEMANTIC_DEPTH": ("semantic_depth", int),
        "SEARCH_SEMANTIC_MODEL": ("semantic_model", str),
        "SEARCH_SEMANTIC_QUERIES": ("semantic_queries", str),
    }

    @classmethod
    def from_settings(cls, settings: Any = None, **overrides: Any) -> Self:
        """The options of ``settings`` (unset names: their defaults), ``overrides`` on top."""
        return cls(**settings_to_options(settings, cls.SETTINGS, keep_none=True, **overrides))
