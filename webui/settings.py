"""Django settings. Service locations come from crawler.config; nothing here reads os.environ.

Settings the web UI shares with the crawler are taken from crawler/settings.py, not copied.
"""

import os
import secrets
from pathlib import Path

import dj_database_url

from crawler import settings as crawl_settings
from crawler.config import get_config

_config = get_config()
BASE_DIR = _config.data_dir


def _secret_key() -> str:
    """DATA_DIR/secret_key, created 0600 on first use: written to a private temporary file
    (mode given to open, never readable by others) and linked into place, so a process
    starting at the same time reads either nothing new or the whole key."""
    path = _config.path("secret_key")
    if not path.exists():
        tmp = path.with_name(f".secret_key.{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_urlsafe(50))
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass  # another process won; use its key
        finally:
            tmp.unlink()
    return path.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]", "testserver"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "webui.control",
    "webui.search",
    "webui.dashboard",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "webui.security.LoginThrottleMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "webui.security.ContentSecurityPolicyMiddleware",
]

ROOT_URLCONF = "webui.urls"
WSGI_APPLICATION = "webui.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [Path(__file__).resolve().parent / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

if _config.database_url:
    DATABASES = {"default": dj_database_url.parse(_config.database_url, conn_max_age=60)}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(_config.path("db.sqlite3")),
            "OPTIONS": {"timeout": 20},
        }
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = str(_config.data_dir / "static")
(_config.data_dir / "static").mkdir(parents=True, exist_ok=True)

# HTTPS (WEB_HTTPS=1, for a deployment behind TLS): redirect http to https, HSTS, cookies
# sent over https only; behind a trusted reverse proxy that terminates TLS, its
# X-Forwarded-Proto says whether the request was https (the proxy must set it, always).
HTTPS = _config.web_https
SECURE_SSL_REDIRECT = HTTPS
SECURE_HSTS_SECONDS = 31_536_000 if HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = HTTPS
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
if HTTPS and _config.web_trusted_proxies:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# HSTS preload lists a domain in browsers for good: the operator's decision, not a default.
SILENCED_SYSTEM_CHECKS = ["security.W021"]
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
CSRF_COOKIE_HTTPONLY = True
SESSION_COOKIE_HTTPONLY = True
LOGIN_URL = "/admin/login/"
# Content-Security-Policy sent on every response ("{nonce}" becomes the request's nonce).
# Inline styles are allowed: the SVG plots use style attributes; scripts must be files or nonce'd.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self' 'nonce-{nonce}'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)

# A cached copy (webui/search/cache.py) is served under its own policy: no scripts, no
# network (inline images only), no forms, framed by this site only, and sandboxed.
CACHE_CONTENT_SECURITY_POLICY = (
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; font-src data:; "
    "form-action 'none'; base-uri 'none'; frame-ancestors 'self'; "
    "sandbox allow-popups allow-popups-to-escape-sandbox"
)

# The rate limiter's and login throttling's counters live in this cache, shared by every web
# process: Redis when REDIS_URL is set, else one SQLite file in DATA_DIR (webui/sqlitecache.py;
# gunicorn's workers each counting in their own memory would multiply every limit).
if _config.redis_url:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": _config.redis_url,
            "KEY_PREFIX": "webui",
        }
    }
else:
    CACHES = {"default": {"BACKEND": "webui.sqlitecache.SQLiteCache",
                          "LOCATION": str(_config.path("webcache.sqlite3"))}}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # LOG_FORMAT=json: one JSON object per line (crawler/logjson.py)
    "formatters": {"json": {"()": "crawler.logjson.JsonFormatter"}},
    "handlers": {"console": {"class": "logging.StreamHandler",
                             **({"formatter": "json"} if _config.log_json else {})}},
    # Only Django's own loggers: the crawler process configures the root logger itself.
    "loggers": {"django": {"handlers": ["console"], "level": "WARNING"}},
}

# Client addresses (rate limits, login throttling) are REMOTE_ADDR unless it is one of these
# reverse proxies (CIDRs, WEB_TRUSTED_PROXIES); then X-Forwarded-For, see webui/security.py.
TRUSTED_PROXIES = list(_config.web_trusted_proxies)
# Login attempts per client address within the window before /admin/login/ answers 429;
# each counted before the password is checked, a successful one uncounted after.
LOGIN_FAILURE_LIMIT = 10
LOGIN_FAILURE_WINDOW_S = 900

# --- search ---
SEARCH_PAGE_SIZE = 10
# The anonymous query log (webui/search/querylog.py): first-page searches, their result
# counts and clicks, nothing about who searched; the dashboard's zero-result and no-click
# rates. False turns it off.
SEARCH_QUERY_LOG = True
SEARCH_QUERY_LOG_DAYS = 30  # rows older than this are deleted
SEARCH_MAX_PAGE = 100
# Bounds on what one request may make the engine rank (it ranks page x size results plus
# its re-rank depth): at most SEARCH_MAX_SIZE results a page, and no result past the
# SEARCH_MAX_RESULTS-th (the search page's last page, 100 x 10, reaches it). Measured on a
# 30,000-page index: page=100&size=100&facets=1&explain=1 cost 22.6x a first page of 10;
# within these bounds the dearest request costs 6.5x. explain=1 is for staff (docs/webui.md).
SEARCH_MAX_SIZE = 50
SEARCH_MAX_RESULTS = 1000
SEARCH_MAX_QUERY_LENGTH = 500
# Completions /api/complete returns, and the longest text it completes (characters).
SEARCH_COMPLETIONS = 8
SEARCH_COMPLETE_MAX_CHARS = 100
# Logged queries offered as completions (webui/search/complete.py): those with results
# searched at least SEARCH_COMPLETE_LOG_MIN times, the most searched SEARCH_COMPLETE_LOG_QUERIES,
# read from the query log every SEARCH_COMPLETE_LOG_REFRESH_S seconds.
SEARCH_COMPLETE_LOG_MIN = 3
SEARCH_COMPLETE_LOG_QUERIES = 10_000
SEARCH_COMPLETE_LOG_REFRESH_S = 300
# Where cached copies are read: the crawl's WARC directory (WARC_DIR, default DATA_DIR/warc).
WARC_DIR = crawl_settings.WARC_DIR
# A cached copy shows at most this many bytes of the stored page (cleaning 1 MB takes ~10 ms).
CACHED_COPY_MAX_BYTES = 1024 * 1024
# Requests per client address allowed in any SEARCH_RATE_WINDOW_S seconds (a sliding window;
# search page and API each); 0 switches the limit off.
SEARCH_RATE_LIMIT = 60
SEARCH_RATE_WINDOW_S = 60

# --- crawl dashboard, URL inspector, recrawl ---
# The frontier these pages read and push to is the crawl's: the name of the `web` spider's
# crawl (the crawler's FRONTIER_CRAWL defaults to the spider's name), and the crawler's own
# settings for the rest (crawler/settings.py; a FRONTIER_* name set here wins).
FRONTIER_CRAWL = "web"
# How far back the dashboard's plots reach, in seconds.
DASHBOARD_WINDOW_S = 3600

# --- what the web UI shares with the crawler: defined once, in crawler/settings.py ---
# the seen filter's size (every process that opens the frontier must agree on it) and the
# search backends' ES_* settings (the rest of them: docs/elasticsearch.md, index-engine.md)
FRONTIER_BLOOM_CAPACITY = crawl_settings.FRONTIER_BLOOM_CAPACITY
FRONTIER_BLOOM_FPR = crawl_settings.FRONTIER_BLOOM_FPR
ES_INDEX_PREFIX = crawl_settings.ES_INDEX_PREFIX
ES_SHARDS = crawl_settings.ES_SHARDS
ES_REPLICAS = crawl_settings.ES_REPLICAS
SEARCH_CACHE_TTL = crawl_settings.SEARCH_CACHE_TTL
SEARCH_CACHE_SIZE = crawl_settings.SEARCH_CACHE_SIZE

# --- serving: gunicorn, static files, metrics, health checks (docs/serving.md) ---
# gunicorn reads these through webui/gunicorn.conf.py; its command-line flags win over them
# (`gunicorn -c webui/gunicorn.conf.py --workers 8 ...`).
WEB_BIND = "127.0.0.1:8000"
WEB_WORKERS = 2  # processes; each opens the search backend once
WEB_THREADS = 4  # threads per process (gunicorn's gthread worker when above 1)
WEB_TIMEOUT_S = 30  # a worker silent this long is killed and replaced
WEB_GRACEFUL_TIMEOUT_S = 30  # on stop or restart, requests in flight get this long to finish
WEB_KEEPALIVE_S = 5  # idle keep-alive connections (from the reverse proxy) are kept this long
WEB_METRICS_ENABLED = True  # /metrics in the Prometheus text format
# prometheus_client's multiprocess directory under gunicorn (emptied when gunicorn starts)
WEB_METRICS_DIR = str(_config.data_dir / "metrics" / "web")
INSTALLED_APPS = [*INSTALLED_APPS, "webui.monitoring"]
# Outermost, so that static files (answered by whitenoise) and error pages are timed too.
MIDDLEWARE = ["webui.monitoring.middleware.RequestMetricsMiddleware", *MIDDLEWARE]
# Static files: `manage.py collectstatic` copies them to STATIC_ROOT with gzip (and brotli,
# when installed) variants that whitenoise serves; before it has run (tests, a first
# runserver) whitenoise serves them straight from the apps.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = not any(Path(STATIC_ROOT).iterdir())
