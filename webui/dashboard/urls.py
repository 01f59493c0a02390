from django.urls import path

from webui.dashboard import views

app_name = "dashboard"
urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("inspect", views.inspect, name="inspect"),
    path("recrawl", views.recrawl, name="recrawl"),
]
