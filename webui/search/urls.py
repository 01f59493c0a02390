from django.urls import path

from webui.search import views

app_name = "search"
urlpatterns = [
    path("", views.search_page, name="page"),
    path("api/search", views.api_search, name="api"),
    path("api/complete", views.api_complete, name="complete"),
    path("cache", views.cache_page, name="cache"),
    path("cache/frame", views.cache_frame, name="cache_frame"),
    path("click", views.click, name="click"),
    path("api/openapi.json", views.api_schema, name="openapi"),
    path("opensearch.xml", views.opensearch, name="opensearch"),
    path("about", views.about, name="about"),
]
