from django.apps import AppConfig


class ControlConfig(AppConfig):
    name = "webui.control"
    verbose_name = "Crawl control"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in

        from webui.security import uncount_login

        user_logged_in.connect(uncount_login, dispatch_uid="webui-login-throttle")
