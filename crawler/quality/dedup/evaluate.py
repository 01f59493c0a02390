"""Precision and recall of a deduplicator on a labelled page set, decided in arrival order."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from crawler.quality.dedup.core import Deduplicator
from crawler.urls import doc_id_for


@dataclass(frozen=True)
class Score:
    """``true_pos``: copies matched to a page of their label; ``false_pos``: pages matched to a
    page of another label; ``positives``: pages with an earlier page of the same label."""

    true_pos: int
    false_pos: int
    positives: int

    @property
    def precision(self) -> float:
        flagged = self.true_pos + self.false_pos
        return self.true_pos / flagged if flagged else 1.0

    @property
    def recall(self) -> float:
        return self.true_pos / self.positives if self.positives else 1.0


def evaluate(
    dedup: Deduplicator, pages: Iterable, text: Callable[[object], str] = lambda p: p.text
) -> Score:
    """Feed ``pages`` (with ``url``, ``host``, ``label``, ``text(page)`` and a ``title`` if
    they have one, as a crawl's dedup reads them), score the matches."""
    label_of: dict[str, str] = {}
    seen_labels: set[str] = set()
    true_pos = false_pos = positives = 0
    for page in pages:
        doc_id = doc_id_for(page.url)
        label_of[doc_id] = page.label
        positives += page.label in seen_labels
        seen_labels.add(page.label)
        verdict = dedup.check(doc_id, page.host, text(page), title=getattr(page, "title", ""))
        if verdict.kind in ("exact", "near"):
            if label_of[verdict.match] == page.label:
                true_pos += 1
            else:
                false_pos += 1
    return Score(true_pos, false_pos, positives)
