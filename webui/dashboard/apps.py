from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "webui.dashboard"
    verbose_name = "Crawl dashboard"
