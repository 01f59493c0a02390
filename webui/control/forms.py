"""Admin forms of the control app."""

from __future__ import annotations

from django import forms

from crawler.urls import InvalidURL, canonicalize


class BulkSeedForm(forms.Form):
    """Many seed URLs at once, one per line; blank lines and ``#`` comments are skipped."""

    urls = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 12, "cols": 90}),
        help_text="One URL per line; lines starting with # are ignored.",
    )
    recrawl = forms.BooleanField(
        required=False, help_text="Also queue them in the crawl's frontier now (top priority)."
    )

    max_lines = 10_000

    def clean_urls(self) -> list[str]:
        lines = [
            ln.strip()
            for ln in self.cleaned_data["urls"].splitlines()
            if ln.strip() and not ln.lstrip().startswith("#")
        ]
        if len(lines) > self.max_lines:
            raise forms.ValidationError(f"At most {self.max_lines} URLs at once.")
        urls, bad = [], []
        for line in lines:
            try:
                url = canonicalize(line)
            except InvalidURL:
                bad.append(line)
                continue
            if url not in urls:
                urls.append(url)
        if bad:
            shown = ", ".join(bad[:5]) + (" …" if len(bad) > 5 else "")
            raise forms.ValidationError(
                f"{len(bad)} line(s) are not http(s) URLs with a host: {shown}"
            )
        if not urls:
            raise forms.ValidationError("Enter at least one URL.")
        return urls
