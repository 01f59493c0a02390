from django.contrib import admin

from webui.control.models import HostRule, Seed


@admin.register(HostRule)
class HostRuleAdmin(admin.ModelAdmin):
    list_display = ("pattern", "action", "crawl_delay", "page_budget", "render_js", "updated")
    list_filter = ("action", "render_js")
    search_fields = ("pattern", "note")


@admin.register(Seed)
class SeedAdmin(admin.ModelAdmin):
    list_display = ("url", "active", "created")
    list_filter = ("active",)
    search_fields = ("url",)
