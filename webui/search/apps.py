from django.apps import AppConfig


class SearchConfig(AppConfig):
    name = "webui.search"
    verbose_name = "Search"
