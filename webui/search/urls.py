from django.urls import path

from webui.search import views

app_name = "search"
urlpatterns = [
    path("", views.search_page, name="page"),
    path("api/search", views.api_search, name="api"),
]
