"""The Django project: search page, JSON API, admin, dashboard, batch commands."""
