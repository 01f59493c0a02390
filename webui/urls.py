from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("dashboard/", include("webui.dashboard.urls")),
    path("", include("webui.search.urls")),
]
