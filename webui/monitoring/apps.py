from django.apps import AppConfig


class MonitoringConfig(AppConfig):
    name = "webui.monitoring"
    verbose_name = "Monitoring"
