"""The search page, JSON API and search commands."""
