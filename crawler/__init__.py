"""The Scrapy project package: settings, frontier, middlewares, extensions."""
