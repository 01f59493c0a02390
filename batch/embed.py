"""The embedding batch: section vectors for the pages indexed without them.

The crawl indexes a page without embedding it (the model's ~0.15 s of CPU a page stays off
the crawl's path); this batch asks the engine for the pages stored without vectors of the
configured model (``SearchBackend.unembedded``: none yet, or another model's, the setting
changed since), embeds their sections (:class:`index.semantic.SectionMatch`)
``SEARCH_SEMANTIC_BATCH_PAGES`` at a time and writes each group back at once
(``SearchBackend.write_vectors``): the embedded engine adds the stored document again with
its vectors, Elasticsearch indexes it again from its stored copy one version past the one
read, so a page the crawl wrote meanwhile keeps its newer copy and is embedded next time.
A page listed that holds the model's vectors already (indexed by Elasticsearch before the
model was recorded) is written back as it is, which records it.
A run stops after ``SEARCH_SEMANTIC_BUDGET`` pages; a killed run loses at most the group
it was embedding, and the next run starts with the pages still without vectors. Until a
page has vectors it is ranked as before, in the engine's order.

``python manage.py embed`` runs it in-process (the embedded default, after the crawl and
``manage.py rank``: scripts/demo.sh); where Celery is configured, the ``semantic.embed``
task (batch/tasks.py) runs it on the beat schedule.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from crawler.options import setting, setting_default
from index.base import SearchBackend
from index.semantic import SectionMatch, SemanticOptions, windows

__all__ = ["LISTED", "EmbedReport", "EmbedSettings", "embed_pending", "open_match"]

#: Pages without vectors listed at a time.
LISTED = 5000


@dataclass(frozen=True)
class EmbedSettings:
    """Pages a run embeds at most (``SEARCH_SEMANTIC_BUDGET``) and pages embedded and
    written back together (``SEARCH_SEMANTIC_BATCH_PAGES``)."""

    budget: int = 2000
    group: int = 64

    @classmethod
    def from_settings(cls, settings=None, **overrides) -> EmbedSettings:
        """From a settings object (Scrapy's, Django's, Celery's conf), the defaults of
        crawler/settings.py for what it lacks, then ``overrides`` (``None`` ignored)."""
        def get(name):
            value = setting(settings, name)
            return setting_default(name) if value is None else value

        values = {"budget": int(get("SEARCH_SEMANTIC_BUDGET")),
                  "group": int(get("SEARCH_SEMANTIC_BATCH_PAGES"))}
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


@dataclass
class EmbedReport:
    """What a run did: ``embedded`` pages given vectors and written back, their
    ``windows``, whether pages without vectors are left (``more``: the budget ran out),
    ``seconds``; ``enabled`` false when semantic matching is off (nothing done)."""

    embedded: int = 0
    windows: int = 0
    more: bool = False
    seconds: float = 0.0
    enabled: bool = True

    def to_dict(self) -> dict:
        return asdict(self)


def embed_pending(backend: SearchBackend, match: SectionMatch | None, settings: EmbedSettings,
                  progress: Callable[[EmbedReport], None] | None = None) -> EmbedReport:
    """Embed up to ``settings.budget`` pages of ``backend`` stored without vectors, a group
    of ``settings.group`` at a time, each group written back before the next; ``progress``
    is called after each group. ``match`` ``None`` (semantic matching off): nothing."""
    started = time.monotonic()
    report = EmbedReport(enabled=match is not None)
    if match is None:
        return report
    asked = 0
    while asked < settings.budget:
        # at most LISTED at a time (Elasticsearch's window is 10,000)
        ids = backend.unembedded(min(LISTED, settings.budget - asked), match.version)
        if not ids:
            break
        asked += len(ids)
        for at in range(0, len(ids), settings.group):
            docs = backend.get_many(ids[at:at + settings.group])
            todo = [doc for doc in docs if not match.holds(doc.vectors)]
            report.windows += sum(len(windows(doc, match.sections)) for doc in todo)
            list(match.embed(todo))
            if docs:
                backend.write_vectors(docs)
            report.embedded += len(todo)
            report.seconds = round(time.monotonic() - started, 2)
            if progress is not None:
                progress(report)
    report.more = asked >= settings.budget and bool(backend.unembedded(1, match.version))
    report.seconds = round(time.monotonic() - started, 2)
    return report


def open_match(settings=None) -> SectionMatch | None:
    """The process's :class:`SectionMatch` of the ``SEARCH_SEMANTIC_*`` settings (``None``
    when semantic matching is off)."""
    return SemanticOptions.of(*(setting(settings, name) for name in (
        "SEARCH_SEMANTIC", "SEARCH_SEMANTIC_SECTIONS", "SEARCH_SEMANTIC_DEPTH",
        "SEARCH_SEMANTIC_MODEL", "SEARCH_SEMANTIC_QUERIES"))).match()

