"""Real-web crawl acceptance: does a default crawl keep every real documentation site whole
while it still contains the hostile hosts?

One ``scrapy crawl web`` with the default quality and value settings and
``FRONTIER_DELAY`` 0.25 over the ``testweb --real-docs`` corpus: every installed real
documentation site (``testweb.docsites``), its mirror (``pgdocs-mirror.test``), and the
hostile hosts of the test web (``site0.test`` and its mirror ``mirror.test``, the calendars
``events.test`` and ``calendar.test``, ``sessions.test``, ``deadlinks.test`` and every spam
host). The crawl is measured against two baselines computed in the same run: the ground
truth (each real site's robots-allowed HTML pages reachable by links from its home page,
found by walking the served files in this process) and the politeness bound (for each host,
its requests times its delay, max(``FRONTIER_DELAY``, robots.txt Crawl-delay); the largest
host decides: no polite crawl can be shorter). Per site it reports:

- ``fetched``: requests to the host (robots.txt included); ``pages``: distinct pages
  answered 200;
- ``reachable`` and ``coverage``: real sites only, the share of the reachable pages fetched;
  with a page budget (``--budget``), the HTML pages fetched over what the budget allows:
  the reachable pages, at most the budget less the host's other URLs fetched (images,
  files, redirects, errors: the budget counts every URL);
- ``verdicts``: the crawl's host verdicts (``spam``, ``mirror of ...``, ``template trap``)
  with what the crawl did with them; ``dropped``: the host's items the quality rules kept out
  of the index, by reason (``skip_index``).

Last line, one JSON object: ``sites``, ``real_sites_judged`` (real host -> verdict, must be
empty: a template-trap, spam or mirror verdict on a real site, acted on), ``min_site_coverage``
(must be >= 0.99), ``per_site``, ``span_s`` (first request start to last response end, from
the test web's log), ``politeness_bound_s``, ``span_over_bound``, ``due_lag_ms`` (p50/p95
of how long after a host was due and had work its request started, the p95 after the
crawl's first 10 s and the requests over 50 ms late, in those 10 s and in all,
``harness.politeness.gap_report``), ``due_lag_sites_ms`` (the same over the real sites'
requests alone: the hosts ``--baseline``'s plain Scrapy crawls, whose first seconds do not
hold the hostile hosts' requests) and ``gap_median_within_10pct`` (hosts whose median gap
after a response, where they had work, is within 10% of their delay; per site
``gap_median_s`` and ``promised_s``), ``useful_fetch_share``
(distinct pages worth having: real sites' reachable pages, site0.test's, deadlinks.test's
documents, over every request), ``violations`` (politeness, all four definitions,
``harness.politeness``), ``hostile`` (requests per hostile host), ``stats`` (the crawl's
quality and frontier drop counters, its budgets' refunds, waiting pages and promotions,
and the reactor's lateness: ``reactor/*``, the engine's refusals for the scraper's sake
(``scraper/backout``),
``crawler.extensions.ReactorLag``), ``crawl_cpu_s`` (the crawl process's CPU seconds, every
thread: a span near it is a CPU-bound crawl, not idle capacity), ``cpu_ms_per_request``
and ``load_avg`` (the box's 1-minute load average, sampled every 5 s through the crawls).
Whether a late request waited for a core or beside an idle one (``harness.crawlcpu``: the
crawl process sampled every 0.1 s, cores a whole second): ``due_lag_by_cpu`` splits the
requests of ``due_lag_ms`` by the cores the process's main thread (the reactor's; the
whole process's where the system gives no thread times, as its ``cpu`` says) used in the
second each started, ``idle`` (under 0.8) and ``saturated`` (0.8 or more): each side's
``seconds``, ``n``, ``p50``, ``p95`` (ms) and ``over_50ms``, the requests in seconds not
sampled (``unsampled``) and the first 20 requests over 50 ms late in idle seconds
(``late_in_idle``: ``at_s`` from the crawl's first request, host, lag, the main thread's
and the process's cores); ``saturated_s``, the saturated seconds; ``crawl_cpu_per_s``,
the cores a second of the ``process`` (every thread), its ``main`` thread and its
extraction ``workers``: p50, p95 and max over the crawl's ``seconds``.

``--baseline`` also crawls the same real sites (the mirror and the hostile hosts left
out), after the project's crawl and against the same served test web, with plain Scrapy
(``harness.baseline.run_polite``: ``bench/baseline_spider.py``, the spider
``bench/crawl.py`` runs, Scrapy's own scheduler and LinkExtractor, no project component but
the test web's resolver) at the same
politeness: one request in flight per host, ``DOWNLOAD_DELAY`` 0.25 not randomized (a
host's robots.txt Crawl-delay, where larger, as its download slot's delay), robots.txt
obeyed, same-host links only, the same per-host page budget (``--budget``, else
``FRONTIER_HOST_PAGE_BUDGET``'s default). It adds ``baseline_span_s``,
``baseline_politeness_bound_s`` and ``baseline_span_over_bound`` (its own bound, computed
the same way from its own requests), ``baseline_crawl_cpu_s``,
``baseline_cpu_ms_per_request``, ``baseline_requests``, ``baseline_pages`` (distinct pages
answered 200), ``baseline_violations``, ``baseline_due_lag_ms`` and
``baseline_gap_median_within_10pct`` (from its own request log, defined as the project's),
``baseline_due_lag_own_ms`` (due ``DOWNLOAD_DELAY`` after the previous request started,
Scrapy's own promise), ``baseline_due_lag_by_cpu``, ``baseline_saturated_s`` and
``baseline_crawl_cpu_per_s`` (its process sampled as the project's) and
``span_over_baseline_span``: whether any Scrapy
crawler meets the politeness bound on this box, beside the project.

    python -m bench.realweb [--quick] [--sites a.test,b.test] [--budget N] [--timeout S]
                            [--baseline] [--set NAME=VALUE] [--save DIR]

``--quick``: three small real sites, ``httpd.test`` (the Apache manual: a meta-refresh root
and thin language indexes, the case that was once judged a doorway), the mirror pair and a
spam hosts of three kinds, 40 pages a host.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter, defaultdict, deque
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import testweb
from harness import log
from harness.baseline import SPIDER as BASELINE_SPIDER
from harness.baseline import polite_figures, polite_lags, run_polite
from harness.crawlcpu import CrawlCPUSampler, cpu_per_second, cpu_summary, lag_by_cpu
from harness.crawlrun import final_stats, migrate, run_crawl
from harness.politeness import (
    HTML,
    crawl_delays,
    found_times,
    gap_report,
    path_of,
    politeness_bound,
    politeness_violations,
    report_lags,
)
from harness.politeness import span as crawl_span
from harness.rounds import LoadSampler, ratio

DELAY = 0.25
HOSTILE = ("site0.test", "mirror.test", "events.test", "calendar.test", "sessions.test",
           "deadlinks.test")
QUICK_SITES = ("httpd.test", "click.test", "jinja.test", "requests.test",
               "postgresql.test", "pgdocs-mirror.test")
QUICK_HOSTILE = ("site0.test", "mirror.test", "events.test", "stuffing.test", "doorway.test",
                 *(f"farm{n}.test" for n in range(5)))
QUICK_BUDGET = 40


def reachable_pages(web, host: str, budget: int = 0) -> set[str]:
    """Paths of the robots-allowed HTML pages of ``host`` reachable by links from ``/``
    (redirects followed, as the crawler does), walked in this process; stops at ``budget``
    pages when set (coverage is then of the budget)."""
    from protego import Protego

    from crawler.extract import extract
    from crawler.urls import InvalidURL, canonicalize, host_of

    robots_text = web.render(host, "/robots.txt")
    robots = Protego.parse(robots_text.body.decode("utf-8", "replace")
                           if robots_text.status == 200 else "")
    base = web.url(host, "/")
    todo, seen, pages = deque(["/"]), {"/"}, set()
    while todo and not (budget and len(pages) >= budget):
        path = todo.popleft()
        response, hops = web.render(host, path), 0
        while response.status in (301, 302, 303, 307, 308) and hops < 5:
            location = urljoin(web.url(host, path), response.headers.get("Location", ""))
            if urlsplit(location).hostname != host:
                break
            path = path_of(location)
            response, hops = web.render(host, path), hops + 1
        if response.status != 200 or not HTML.search(response.headers.get("Content-Type", "")):
            continue
        pages.add(path)
        page = extract(response.body, web.url(host, path))
        targets = [link.url for link in page.links if not link.nofollow]
        if page.refresh_url:
            targets.append(page.refresh_url)
        for url in targets:
            try:
                url = canonicalize(url, base=base)
            except InvalidURL:
                continue
            if host_of(url) != host:
                continue
            target = path_of(url)
            if target not in seen and robots.can_fetch(url, "*"):
                seen.add(target)
                todo.append(target)
    return pages


def crawl(web, hosts: list[str], data_dir: Path, budget: int, timeout: float,
          extra: dict | None = None) -> dict:
    """The crawl: request-log lines, stats, items (url, skip_index), wall time; ``extra``
    more settings (``--set``)."""
    migrate(data_dir)
    settings = {
        "FRONTIER_DELAY": DELAY,
        "RESOLVE_OVERRIDES": ",".join(f"{h}={ip}" for h, ip in web.resolve_map().items()),
        "LOG_FILE": str(data_dir / "crawl.log"),
        "LOG_LEVEL": "INFO",
        "CLOSESPIDER_TIMEOUT": int(timeout),
        "FEEDS": json.dumps({str(data_dir / "items.jsonl"): {
            "format": "jsonlines", "fields": ["url", "fetched_url", "skip_index"]}}),
    }
    if budget:
        settings["FRONTIER_HOST_PAGE_BUDGET"] = budget
    settings.update(extra or {})
    seeds = [web.home_url(h) for h in hosts]
    before = len(web.read_log())
    started, cpu_before = time.monotonic(), _children_cpu()
    proc = run_crawl(data_dir, seeds, settings, {"allowed_hosts": ",".join(hosts)},
                     timeout=timeout + 180)
    wall, cpu = time.monotonic() - started, _children_cpu() - cpu_before
    if proc.returncode != 0:
        raise SystemExit(f"crawl failed:\n{proc.stderr[-3000:]}")
    lines = web.settled_log(before)
    text = (data_dir / "crawl.log").read_text(encoding="utf-8", errors="replace")
    stats = final_stats(text)
    items_file = data_dir / "items.jsonl"
    items = [json.loads(line) for line in items_file.read_text().splitlines()
             if line.strip()] if items_file.exists() else []
    log(f"crawl: {len(lines)} requests in {wall:.0f} s ({stats.get('finish_reason')})")
    return {"lines": lines, "stats": stats, "items": items, "wall": wall, "cpu": cpu}


def _default_budget() -> int:
    """``FRONTIER_HOST_PAGE_BUDGET``'s default: the project crawl's budget without
    ``--budget``."""
    from crawler.settings import FRONTIER_HOST_PAGE_BUDGET

    return FRONTIER_HOST_PAGE_BUDGET


def _children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpu_split(timed: list, sampler: CrawlCPUSampler) -> dict:
    """``due_lag_by_cpu``, ``saturated_s`` and ``crawl_cpu_per_s`` of one crawl: its due
    lags (``timed``, ``harness.politeness.report_lags``) split by the CPU its process's
    main thread used in each second (``sampler``'s samples, ``harness.crawlcpu``)."""
    per_second = cpu_per_second(sampler.samples)
    saturated, summary = cpu_summary(per_second)
    return {"due_lag_by_cpu": lag_by_cpu(timed, per_second), "saturated_s": saturated,
            "crawl_cpu_per_s": summary}


def save(directory: Path, run: dict, base: dict | None, crawl_log: Path,
         cpu: dict[str, CrawlCPUSampler]) -> None:
    """``--save``: the request logs (one JSON object a line, as the test web logs them),
    the crawl's log and each crawl's CPU a second (``cpu.json``: side -> second ->
    ``harness.crawlcpu.cpu_per_second``'s row), to read the lags by time and the stall
    stacks afterwards."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "cpu.json").write_text(json.dumps(
        {side: cpu_per_second(sampler.samples) for side, sampler in cpu.items()}))
    for name, lines in (("requests.jsonl", run["lines"]),
                        ("baseline.jsonl", base["lines"] if base else None)):
        if lines is not None:
            (directory / name).write_text("".join(json.dumps(line) + "\n" for line in lines))
    if crawl_log.exists():
        (directory / "crawl.log").write_bytes(crawl_log.read_bytes())


def verdicts_of(data_dir: Path) -> dict[str, list]:
    from crawler.quality.verdicts import LocalVerdictStore

    store = LocalVerdictStore(data_dir / "quality" / "web.sqlite3")
    try:
        found = defaultdict(list)
        for v in store.all():
            found[v.host.split(":", 1)[0]].append(v)
        return found
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"a few sites, {QUICK_BUDGET} pages a host (under a minute)")
    parser.add_argument("--sites", help="comma-separated real sites (default: every installed)")
    parser.add_argument("--budget", type=int, default=0,
                        help="FRONTIER_HOST_PAGE_BUDGET (0: the default)")
    parser.add_argument("--timeout", type=float, default=3600,
                        help="seconds the crawl may take at most")
    parser.add_argument("--baseline", action="store_true",
                        help="also crawl the real sites with plain Scrapy at the same "
                             "politeness, after the project's crawl (baseline_* keys)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting of the project's crawl (e.g. "
                             "REACTOR_STALL_STACKS=True); repeatable")
    parser.add_argument("--save", type=Path,
                        help="keep the request logs (requests.jsonl, baseline.jsonl), "
                             "the crawl's log (crawl.log) and both crawls' CPU a second "
                             "(cpu.json) in this directory")
    args = parser.parse_args()
    from testweb.docsites import available_doc_sites
    from testweb.quality import SPAM_HOSTS

    installed = {site.host: site for site in available_doc_sites()}
    if not installed:
        raise SystemExit("no documentation site is installed: run scripts/setup.sh "
                         "(scripts/apt-packages.txt lists the Debian packages)")
    if args.quick:
        wanted, hostile = QUICK_SITES, QUICK_HOSTILE
        args.budget = args.budget or QUICK_BUDGET
        args.timeout = min(args.timeout, 240)
    else:
        wanted, hostile = tuple(installed), (*HOSTILE, *SPAM_HOSTS)
    if args.sites:
        wanted = tuple(args.sites.split(","))
    sites = [installed[h] for h in wanted if h in installed]
    real = [s.host for s in sites if not s.mirror_of]
    hosts = [s.host for s in sites] + list(hostile)
    with tempfile.TemporaryDirectory(prefix="realweb-") as tmp, \
            testweb.run(hosts=1, pages=150, log=Path(tmp) / "web.log", real_docs=True) as web, \
            LoadSampler() as load:
        truth = web.web
        started = time.monotonic()
        reachable = {host: reachable_pages(truth, host, args.budget) for host in real}
        log(f"ground truth: {sum(map(len, reachable.values()))} reachable pages on "
            f"{len(real)} real sites ({time.monotonic() - started:.0f} s)")
        with CrawlCPUSampler(("scrapy crawl web",)) as crawl_cpu:
            run = crawl(web, hosts, Path(tmp) / "crawl", args.budget, args.timeout,
                        dict(item.split("=", 1) for item in args.set))
        verdicts = verdicts_of(Path(tmp) / "crawl")
        crawl_delay_of = crawl_delays(web)
        base = None
        if args.baseline:
            with CrawlCPUSampler((BASELINE_SPIDER.name,)) as base_cpu:
                base = run_polite(web, real, Path(tmp) / "baseline", DELAY,
                                  args.budget or _default_budget(), args.timeout)
        lines = run["lines"]
        requests = Counter(line["host"].rsplit(":", 1)[0] for line in lines)
        ok_pages: dict[str, set[str]] = defaultdict(set)
        for line in lines:
            if line["status"] == 200 and line["path"] != "/robots.txt":
                ok_pages[line["host"].rsplit(":", 1)[0]].add(line["path"])
        dropped: dict[str, Counter] = defaultdict(Counter)
        for item in run["items"]:
            if item.get("skip_index"):
                dropped[urlsplit(item["url"]).hostname or ""][item["skip_index"]] += 1
        per_site, judged = {}, {}
        for host in hosts:
            row = {"fetched": requests[host], "pages": len(ok_pages[host]),
                   "verdicts": [f"{v.label}: {v.action or 'acted on'}"
                                for v in verdicts.get(host, [])],
                   "dropped": dict(dropped[host])}
            if host in reachable:
                want, got = len(reachable[host]), len(ok_pages[host] & reachable[host])
                if args.budget:
                    html = sum(1 for p in ok_pages[host] if HTML.search(
                        truth.render(host, p).headers.get("Content-Type", "")))
                    others = requests[host] - 1 - html  # robots.txt is not in the budget
                    want, got = min(want, max(args.budget - others, 1)), html
                row.update(reachable=len(reachable[host]),
                           coverage=round(min(1.0, got / want), 4) if want else 1.0)
                acted = [v for v in verdicts.get(host, []) if v.acted]
                if acted:
                    judged[host] = "; ".join(v.label for v in acted)
            per_site[host] = row
        useful = sum(len(ok_pages[h] & reachable[h]) for h in real)
        useful += len(ok_pages["site0.test"])
        useful += sum(1 for p in ok_pages["deadlinks.test"] if p == "/" or p.startswith("/doc/"))
        span, bound = crawl_span(lines), politeness_bound(lines, DELAY, crawl_delay_of)
        def promised(host: str) -> float:
            return max(DELAY, crawl_delay_of(host) or 0.0)

        found = found_times(web, lines)
        timed = report_lags(lines, promised, found)
        gaps, host_gaps = gap_report(lines, web, promised, timed=timed)
        # the hosts plain Scrapy crawls (--baseline): the real sites, their requests alone
        real_lines = [line for line in lines if line["host"].rsplit(":", 1)[0] in real]
        gaps["due_lag_sites_ms"] = gap_report(real_lines, web, promised,
                                              found=found)[0]["due_lag_ms"]
        gaps.update(cpu_split(timed, crawl_cpu))
        for host, row in host_gaps.items():
            if host in per_site:
                per_site[host].update(row)
        audit = politeness_violations(lines, DELAY, crawl_delay_of)
        coverages = [per_site[h]["coverage"] for h in real]
        out = {
            "sites": real,
            "real_sites_judged": judged,
            "min_site_coverage": min(coverages) if coverages else None,
            "per_site": per_site,
            "span_s": round(span, 1),
            "politeness_bound_s": round(bound, 1),
            "span_over_bound": round(span / bound, 3) if bound else None,
            **gaps,
            "useful_fetch_share": round(useful / max(len(lines), 1), 4),
            "violations": audit["total"],
            "requests": len(lines),
            "hostile": {h: requests[h] for h in hostile},
            "finished": run["stats"].get("finish_reason") == "finished",
            "wall_s": round(run["wall"], 1),
            "crawl_cpu_s": round(run["cpu"], 1),
            "cpu_ms_per_request": ratio(run["cpu"] * 1000, len(lines), 2),
            "stats": {k: v for k, v in sorted(run["stats"].items())
                      if k.startswith(("quality/", "frontier/dropped/", "frontier/condemned/",
                                       "reactor/", "scraper/", "frontier/budget_",
                                       "frontier/cluster/budget_", "frontier/cluster/waiting",
                                       "frontier/acquitted", "dedup/mirror", "dedup/host"))},
            "budget": args.budget or None,
            "delay": DELAY,
        }
        if base is not None:
            out.update(polite_figures(base, DELAY, crawl_delay_of))
            base_found = found_times(web, base["lines"])
            base_timed = report_lags(base["lines"], promised, base_found)
            out.update(polite_lags(base["lines"], web, DELAY, crawl_delay_of, base_found,
                                   timed=base_timed))
            out.update({"baseline_" + key: value
                        for key, value in cpu_split(base_timed, base_cpu).items()})
            out["span_over_baseline_span"] = ratio(span, crawl_span(base["lines"]))
        if args.save:
            save(args.save, run, base, Path(tmp) / "crawl" / "crawl.log",
                 {"crawl": crawl_cpu, **({"baseline": base_cpu} if base else {})})
    out["load_avg"] = load.summary()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
