from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

urlpatterns = [
    path("favicon.ico", RedirectView.as_view(url=static("webui/favicon.svg"), permanent=True)),
    path("admin/", admin.site.urls),
    path("dashboard/", include("webui.dashboard.urls")),
    path("", include("webui.monitoring.urls")),
    path("", include("webui.search.urls")),
]
