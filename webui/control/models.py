"""Host rules and seeds: the crawl's control plane."""

from django.core.exceptions import ValidationError
from django.db import models

from crawler.urls import InvalidURL, canonicalize


class HostRule(models.Model):
    """Allow or block hosts matching a pattern; override delay, budget, JS rendering."""

    ALLOW = "allow"
    BLOCK = "block"
    ACTIONS = [(ALLOW, "allow"), (BLOCK, "block")]

    pattern = models.CharField(
        max_length=255,
        unique=True,
        help_text="Host name or glob, e.g. example.org or *.example.org",
    )
    action = models.CharField(max_length=5, choices=ACTIONS, default=ALLOW)
    crawl_delay = models.FloatField(
        null=True, blank=True, help_text="Seconds between requests; overrides robots.txt"
    )
    page_budget = models.PositiveIntegerField(
        null=True, blank=True, help_text="Most pages to crawl from this host"
    )
    render_js = models.BooleanField(default=False, help_text="Render pages with a browser")
    AUTO = ""
    TRUSTED = "trusted"
    SPAM = "spam"
    QUALITY = [(AUTO, "judged by the crawl"), (TRUSTED, "trusted: never spam or a mirror"),
               (SPAM, "spam: stop crawling, keep out of the index")]
    quality = models.CharField(
        max_length=7, choices=QUALITY, default=AUTO, db_default=AUTO, blank=True,
        help_text="Overrides the crawl's spam and mirror verdicts for matching hosts",
    )
    never_judge = models.BooleanField(
        default=False, db_default=False,
        help_text="Never judge this host: the crawl still computes and shows its spam, mirror "
                  "and template-trap verdicts but never acts on them (implies trusted)",
    )
    note = models.CharField(max_length=255, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["pattern"]

    def __str__(self) -> str:
        return f"{self.action} {self.pattern}"

    def clean(self):
        self.pattern = self.pattern.strip().lower()
        if not self.pattern or any(c in self.pattern for c in "/: "):
            raise ValidationError({"pattern": "Enter a host name or glob, without scheme or path."})


class Seed(models.Model):
    """A URL the crawl starts from."""

    url = models.URLField(max_length=2000, unique=True)
    active = models.BooleanField(default=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["url"]
        permissions = [("recrawl_seed", "Can queue URLs to recrawl now (top priority, "
                                        "past the seen filter and budget)")]

    def __str__(self) -> str:
        return self.url

    def clean(self):
        try:
            self.url = canonicalize(self.url)
        except InvalidURL as exc:
            raise ValidationError({"url": str(exc)}) from None
