from django.apps import AppConfig


class ControlConfig(AppConfig):
    name = "webui.control"
    verbose_name = "Crawl control"
