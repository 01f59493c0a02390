"""Spiders of the crawler; `web` is the only one."""
