"""Scrapy settings of the `web` crawler: every component's defaults, sorted and commented.

Service locations come from ``crawler.config`` (the one reader of the environment); the
rest are plain defaults that ``-s NAME=VALUE`` or the admin's host rules override.
"""

from crawler.config import get_config

_config = get_config()

BOT_NAME = "websearch"
SPIDER_MODULES = ["spiders"]
NEWSPIDER_MODULE = "spiders"

# --- where things live (see crawler/config.py) ---
DATA_DIR = str(_config.data_dir)
REDIS_URL = _config.redis_url
ELASTICSEARCH_URL = _config.elasticsearch_url

# --- identity and etiquette ---
USER_AGENT = "websearch-bot/0.1 (+http://127.0.0.1:8000/about)"
ROBOTSTXT_OBEY = True
COOKIES_ENABLED = False
TELNETCONSOLE_ENABLED = False

# --- name resolution: "*.test" reaches the local test web only when configured ---
TWISTED_DNS_RESOLVER = "crawler.resolver.OverrideResolver"
RESOLVE_OVERRIDES = {}

# --- SSRF guard (crawler/ssrf.py): connect to public addresses only ---
# Checked after every name resolution (redirects included) and on literal-IP URLs.
SSRF_GUARD_ENABLED = True
SSRF_ALLOWED_NETWORKS = []  # CIDRs allowed anyway; the test web and demo pass 127.0.0.0/8
DOWNLOAD_HANDLERS = {
    "http": "crawler.handlers.GuardedDownloadHandler",
    "https": "crawler.handlers.GuardedDownloadHandler",
}
FETCH_HANDLER = "scrapy.core.downloader.handlers.http11.HTTP11DownloadHandler"  # behind the guard

# --- JavaScript rendering (crawler/render.py): only app-shell pages and render_js hosts ---
RENDER_JS_ENABLED = True
RENDER_HANDLER = "crawler.render.RenderingDownloadHandler"  # plain requests stay plain HTTP
RENDER_TIMEOUT_MS = 15_000
PLAYWRIGHT_BROWSER_TYPE = "chromium"
PLAYWRIGHT_LAUNCH_OPTIONS = {
    "executable_path": "/usr/bin/chromium",  # Debian's chromium (scripts/apt-packages.txt)
    "headless": True,
    "args": ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-dev-shm-usage"],
}
PLAYWRIGHT_MAX_CONTEXTS = 1
PLAYWRIGHT_MAX_PAGES_PER_CONTEXT = 4  # the bounded pool of browser pages
PLAYWRIGHT_ABORT_REQUEST = "crawler.render.should_abort"
PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT = 15_000

# --- concurrency and politeness ---
CONCURRENT_ITEMS = 100
CONCURRENT_REQUESTS = 32
CONCURRENT_REQUESTS_PER_DOMAIN = 1
DOWNLOAD_DELAY = 0.25
DOWNLOAD_DELAY_JITTER = 0
REACTOR_THREADPOOL_MAXSIZE = 10

# --- limits on what one response may cost ---
DOWNLOAD_MAXSIZE = 10 * 1024 * 1024
DOWNLOAD_TIMEOUT = 20
DOWNLOAD_WARNSIZE = 2 * 1024 * 1024
REDIRECT_MAX_TIMES = 5
RETRY_HTTP_CODES = [500, 502, 503, 504, 522, 524, 408, 429]
RETRY_TIMES = 2
# crawler/fetch.py: bodies past DOWNLOAD_MAXSIZE are cut and flagged truncated, not dropped;
# the n-th retry waits RETRY_BACKOFF_BASE * 2**(n-1) s, at most RETRY_BACKOFF_MAX
FETCH_LIMITS_ENABLED = True
RETRY_BACKOFF_BASE = 1.0
RETRY_BACKOFF_MAX = 60.0

# --- crawl scope ---
DEPTH_LIMIT = 0  # 0 = unlimited; `-a max_depth=N` limits one crawl
DEPTH_PRIORITY = 1  # breadth-first: shallower pages first
CRAWL_ALLOWED_HOSTS = []  # host patterns; empty = any host not blocked by a host rule
CRAWL_MAX_PAGES = 0  # 0 = unlimited; `-a max_pages=N` for one crawl
# sitemaps (crawler/sitemaps.py): robots.txt `Sitemap:` lines, else /sitemap.xml
SITEMAPS_ENABLED = True
SITEMAP_PROBE_DEFAULT = True  # try /sitemap.xml on hosts whose robots.txt names none
SITEMAP_MAX_DEPTH = 2  # sitemap indexes followed below the first sitemap
SITEMAP_MAX_SIZE = 50 * 1024 * 1024  # bytes a gzipped sitemap may inflate to

# --- components ---
# The spider scopes links and tracks depth itself; Referer is not sent.
SPIDER_MIDDLEWARES = {
    "scrapy.spidermiddlewares.depth.DepthMiddleware": None,
    "scrapy.spidermiddlewares.referer.RefererMiddleware": None,
}
DOWNLOADER_MIDDLEWARES = {
    "scrapy.downloadermiddlewares.offsite.OffsiteMiddleware": None,
    # next to the handler: sees raw failures before RetryMiddleware, bodies before inflation
    "crawler.fetch.FetchLimitsMiddleware": 950,
}
ITEM_PIPELINES = {
    "pipelines.index.IndexPipeline": 900,
}
EXTENSIONS = {
    "crawler.extensions.CrawlProgress": 500,
}
CRAWL_PROGRESS_INTERVAL = 5.0

# --- search index writer ---
INDEX_BATCH_SIZE = 200

# --- host rules from the admin (crawler/hostrules.py) ---
HOST_RULES_LOADER = "webui.control.rules.load_host_rules"
HOST_RULES_TTL = 30.0

# --- logging: the detailed log goes to DATA_DIR/logs, progress lines to stderr ---
LOG_LEVEL = "INFO"
LOG_FILE = str(_config.path("logs", "crawl.log"))
LOG_FILE_APPEND = True

FEED_EXPORT_ENCODING = "utf-8"
