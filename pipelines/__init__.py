"""Scrapy item pipelines: dedup (100), WARC store (200), link graph (300), index writer (900)."""
