"""Django settings. Service locations come from crawler.config; nothing here reads os.environ."""

import secrets
from pathlib import Path

import dj_database_url

from crawler.config import get_config

_config = get_config()
BASE_DIR = _config.data_dir


def _secret_key() -> str:
    path = _config.path("secret_key")
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
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

# The rate limiter's counters live in this cache: Redis when REDIS_URL is set (shared by all
# web processes), else this process's memory.
if _config.redis_url:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": _config.redis_url,
            "KEY_PREFIX": "webui",
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    # Only Django's own loggers: the crawler process configures the root logger itself.
    "loggers": {"django": {"handlers": ["console"], "level": "WARNING"}},
}

# --- search ---
SEARCH_PAGE_SIZE = 10
SEARCH_MAX_PAGE = 100
SEARCH_MAX_QUERY_LENGTH = 500
# Requests per client address allowed in each window of SEARCH_RATE_WINDOW_S seconds (search
# page and API each); 0 switches the limit off.
SEARCH_RATE_LIMIT = 60
SEARCH_RATE_WINDOW_S = 60

# --- crawl dashboard, URL inspector, recrawl ---
# The frontier these pages read and push to: the same values as the crawler's settings of the
# same names (FRONTIER_CRAWL defaults to the spider name there; the Bloom size must match).
FRONTIER_CRAWL = "web"
FRONTIER_BLOOM_CAPACITY = 10_000_000
FRONTIER_BLOOM_FPR = 0.01
# How far back the dashboard's plots reach, in seconds.
DASHBOARD_WINDOW_S = 3600

# --- search backends: ES_* when ELASTICSEARCH_URL is set, EMBEDDED_* otherwise; the rest of
# their settings and defaults are in docs/elasticsearch.md and docs/index-engine.md ---
ES_INDEX_PREFIX = "websearch"  # the alias; indices are websearch-v1, -v2, ...
ES_SHARDS = 1  # primary shards of a new index
ES_REPLICAS = 0  # replicas (1 or more on a multi-node cluster)

# --- serving: gunicorn, static files, metrics, health checks (docs/operations.md "Serving
# the web UI"; issue 23 items 3 and 4) ---
# gunicorn reads these through webui/gunicorn.conf.py; its command-line flags win over them
# (`gunicorn -c webui/gunicorn.conf.py --workers 8 ...`).
WEB_BIND = "127.0.0.1:8000"
WEB_WORKERS = 2  # processes; each opens the search backend once
WEB_THREADS = 4  # threads per process (gunicorn's gthread worker when above 1)
WEB_TIMEOUT_S = 30  # a worker silent this long is killed and replaced
WEB_GRACEFUL_TIMEOUT_S = 30  # on stop or restart, requests in flight get this long to finish
WEB_KEEPALIVE_S = 5  # idle keep-alive connections (from the reverse proxy) are kept this long
# Addresses of the reverse proxies whose X-Forwarded-Proto gunicorn believes (it then sets
# the request's scheme, so Django's request.is_secure() and redirects see https).
WEB_FORWARDED_ALLOW_IPS = "127.0.0.1,::1"
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
