from django.apps import AppConfig


class ControlConfig(AppConfig):
    name = "webui.control"
    verbose_name = "Crawl control"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_login_failed

        from webui.security import count_login_failure

        user_login_failed.connect(count_login_failure, dispatch_uid="webui-login-throttle")
