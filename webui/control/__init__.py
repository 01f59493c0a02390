"""Crawl control: host rules and seeds, edited in the admin, read by the crawler."""
