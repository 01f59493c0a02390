"""The web UI's settings with a small rate limit, so that a test sees refusals quickly."""

from webui.settings import *  # noqa: F403

SEARCH_RATE_LIMIT = 5
