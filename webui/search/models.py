"""The anonymous query log: what people search, what found nothing, what they clicked."""

from __future__ import annotations

from django.db import models


class QueryLogEntry(models.Model):
    """One first-page search, with nothing about who made it: no address, no user, no
    cookie; the time is kept to the minute. Rows older than ``SEARCH_QUERY_LOG_DAYS`` are
    deleted as new ones are written."""

    query = models.CharField(max_length=500, help_text="The query as typed (trimmed)")
    normalized = models.CharField(max_length=1000, db_index=True,
                                  help_text="The parsed query (analyzed terms, operators)")
    results = models.PositiveIntegerField(help_text="Matching documents")
    source = models.CharField(max_length=8, choices=[("page", "search page"), ("api", "API")])
    at = models.DateTimeField(db_index=True, help_text="When, to the minute")
    clicked_rank = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Rank of the first result clicked (1 = top)")

    class Meta:
        verbose_name = "query log entry"
        verbose_name_plural = "query log"
        indexes = [models.Index(fields=["results", "at"])]

    def __str__(self) -> str:
        return f"{self.query!r} ({self.results} results)"
