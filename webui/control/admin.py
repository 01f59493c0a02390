"""Admin for host rules and seeds, with the crawl actions: block a host, recrawl now."""

from __future__ import annotations

from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from crawler.urls import InvalidURL
from webui.control.actions import (
    RECRAWL_PERMISSION,
    crawl_verdicts,
    recrawl_now,
    remove_host_from_index,
    set_host_never_judge,
    set_host_quality,
)
from webui.control.forms import BulkSeedForm
from webui.control.models import HostRule, Seed


def _remove_pages(modeladmin: admin.ModelAdmin, request: HttpRequest, patterns: list[str]):
    for pattern in patterns:
        try:
            removed = remove_host_from_index(pattern)
        except Exception as exc:
            modeladmin.message_user(
                request,
                f"{pattern} is blocked for the crawl, but its pages could not be removed from "
                f"the index ({exc}). Once the index is writable, run: "
                f"python manage.py removehost '{pattern}'",
                messages.WARNING,
            )
        else:
            modeladmin.message_user(
                request, f"Blocked {pattern}: {removed} page(s) removed from the index."
            )


admin.site.site_header = "websearch administration"
admin.site.site_title = "websearch admin"
admin.site.index_title = "Crawl control"


@admin.register(HostRule)
class HostRuleAdmin(admin.ModelAdmin):
    list_display = ("pattern", "action", "crawl_delay", "page_budget", "render_js", "quality",
                    "never_judge", "note", "updated")
    list_filter = ("action", "render_js", "quality", "never_judge", "updated")
    search_fields = ("pattern", "note")
    fields = ("pattern", "action", "crawl_delay", "page_budget", "render_js", "quality",
              "never_judge", "note")
    actions = ["block_hosts", "allow_hosts"]
    change_list_template = "admin/control/hostrule/change_list.html"

    def get_urls(self):
        return [
            path("quality/", self.admin_site.admin_view(self.quality_view),
                 name="control_hostrule_quality"),
            *super().get_urls(),
        ]

    def quality_view(self, request: HttpRequest) -> HttpResponse:
        """The crawl's host verdicts (mirror of, spam, template trap) with their reasons,
        and buttons that override them with a host rule."""
        if request.method == "POST":
            if not self.has_change_permission(request):
                return HttpResponseRedirect(reverse("admin:control_hostrule_changelist"))
            host = request.POST.get("host", "")
            quality = request.POST.get("quality", "")
            never_judge = request.POST.get("never_judge")
            if host and never_judge in ("0", "1"):
                set_host_never_judge(host, never_judge == "1")
                self.message_user(request, f"{host}: " + (
                    "never judged; its verdicts are shown, not acted on." if never_judge == "1"
                    else "judged by the crawl again."))
            elif host and quality in {choice for choice, _ in HostRule.QUALITY}:
                set_host_quality(host, quality)
                self.message_user(request, f"{host}: quality set to "
                                           f"{quality or 'judged by the crawl'}.")
            return HttpResponseRedirect(reverse("admin:control_hostrule_quality"))
        error = None
        try:
            with crawl_verdicts() as store:
                verdicts = store.all()
        except Exception as exc:
            verdicts, error = [], f"{type(exc).__name__}: {exc}"
        overrides = dict(HostRule.objects.exclude(quality="").values_list("pattern", "quality"))
        never = set(HostRule.objects.filter(never_judge=True).values_list("pattern", flat=True))
        rows = [(v, overrides.get(v.host.split(":", 1)[0], ""), v.host.split(":", 1)[0] in never)
                for v in verdicts]
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Host quality: the crawl's verdicts",
            "rows": rows,
            "error": error,
        }
        return TemplateResponse(request, "admin/control/hostrule/quality.html", context)

    def save_model(self, request, obj: HostRule, form, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if obj.action == HostRule.BLOCK and (
            not change or {"action", "pattern"} & set(form.changed_data)
        ):
            _remove_pages(self, request, [obj.pattern])

    @admin.action(description="Block selected hosts and remove their pages from the index")
    def block_hosts(self, request: HttpRequest, queryset) -> None:
        patterns = list(queryset.values_list("pattern", flat=True))
        queryset.update(action=HostRule.BLOCK)
        _remove_pages(self, request, patterns)

    @admin.action(description="Allow selected hosts")
    def allow_hosts(self, request: HttpRequest, queryset) -> None:
        n = queryset.update(action=HostRule.ALLOW)
        self.message_user(request, f"{n} host rule(s) now allow crawling.")


@admin.register(Seed)
class SeedAdmin(admin.ModelAdmin):
    list_display = ("url", "active", "created")
    list_filter = ("active", "created")
    search_fields = ("url",)
    actions = ["recrawl", "activate", "deactivate"]
    change_list_template = "admin/control/seed/change_list.html"

    def get_urls(self):
        return [
            path("bulk-add/", self.admin_site.admin_view(self.bulk_add_view),
                 name="control_seed_bulk_add"),
            *super().get_urls(),
        ]

    def bulk_add_view(self, request: HttpRequest) -> HttpResponse:
        """A textarea of URLs: new ones become active seeds, and may be queued at once."""
        if not self.has_add_permission(request):
            return HttpResponseRedirect(reverse("admin:control_seed_changelist"))
        form = BulkSeedForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            urls = form.cleaned_data["urls"]
            existing = set(Seed.objects.filter(url__in=urls).values_list("url", flat=True))
            Seed.objects.bulk_create([Seed(url=u) for u in urls if u not in existing])
            Seed.objects.filter(url__in=existing, active=False).update(active=True)
            self.message_user(
                request, f"Added {len(urls) - len(existing)} seed(s); {len(existing)} existed."
            )
            if form.cleaned_data["recrawl"]:
                if self.has_recrawl_permission(request):
                    self._recrawl(request, urls)
                else:
                    self.message_user(request, "Not queued: recrawling needs the "
                                      "\"Can queue URLs to recrawl now\" permission.",
                                      messages.ERROR)
            return HttpResponseRedirect(reverse("admin:control_seed_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Add seeds in bulk",
            "form": form,
        }
        return TemplateResponse(request, "admin/control/seed/bulk_add.html", context)

    def has_recrawl_permission(self, request: HttpRequest) -> bool:
        """The "recrawl now" action needs ``control.recrawl_seed``."""
        return request.user.has_perm(RECRAWL_PERMISSION)

    def _recrawl(self, request: HttpRequest, urls: list[str]) -> None:
        try:
            added = recrawl_now(urls)
        except InvalidURL as exc:
            self.message_user(request, f"Nothing queued: {exc}.", messages.ERROR)
        except Exception as exc:
            self.message_user(request, f"Could not reach the frontier ({exc}).", messages.ERROR)
        else:
            self.message_user(request, f"Queued {added} URL(s) at top priority.")

    @admin.action(description="Recrawl selected seeds now", permissions=["recrawl"])
    def recrawl(self, request: HttpRequest, queryset) -> None:
        self._recrawl(request, list(queryset.values_list("url", flat=True)))

    @admin.action(description="Activate selected seeds")
    def activate(self, request: HttpRequest, queryset) -> None:
        queryset.update(active=True)

    @admin.action(description="Deactivate selected seeds")
    def deactivate(self, request: HttpRequest, queryset) -> None:
        queryset.update(active=False)
