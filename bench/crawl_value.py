"""Does the crawl spend its fetches on pages worth having? Value order against breadth-first.

One mixed test web (normal hosts, the cross-host mirror ``mirror.test``, the trap hosts
``events.test``, ``calendar.test`` and ``sessions.test``, ``deadlinks.test`` with its 404
subtree and soft 404s, and every spam host) is crawled twice with the default page budget,
side by side in the same run: by the project as configured (``FRONTIER_ORDER=value``) and
by the same crawler ordering breadth-first (``FRONTIER_ORDER=depth``, the baseline). Slots
are scarce (``--concurrency``) as in any crawl with more hosts than slots, so the order
decides what is fetched first. Everything is counted from the test web's request log and
the ground truth:

- ``useful_fetch_share``: distinct pages worth having (normal hosts' pages, deadlinks.test's
  documents, sessions.test's 31 pages without session ids) / every request;
- ``trap_fetches_max``: the most requests any trap host got; ``mirror_fetches``;
- ``spam_precision`` / ``spam_recall``: the crawl's spam verdicts against the test web's
  spam hosts;
- ``pagerank_mass_at_25`` (and ``_50``): the share of the PageRank of the normal hosts'
  link graph (ground truth, every page) held by the pages fetched within the first 25%
  (50%) of the baseline's requests; ``baseline_...`` the same for breadth-first;
- ``violations``: politeness violations from the server's log (both crawls);
- ``trap_pages_indexed``, ``mirror_pages_indexed``: fetched pages of those hosts found in
  the crawl's index (``trap_indexed_pages``: which); ``finished``: both crawls ended by themselves;
- ``crawl_s`` (and ``baseline_crawl_s``): each crawl's wall time, process start to end;
  ``crawl_time_ratio``: the value order's over breadth-first's (the order must not cost
  time: both crawls fetch everything within the budgets).

    python bench/crawl_value.py [--hosts 6] [--pages 150] [--concurrency 4] [--quick]
                                [--set NAME=VALUE]

``--set``: a setting of both crawls (e.g. ``QUALITY_TEMPLATE_GROWTH_SHARE=0``, the template
trap judge without its growth condition), to compare a judge's settings on the same web.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from pathlib import Path

import testweb
from harness import log
from harness.crawlrun import final_stats, migrate, run_crawl
from harness.politeness import crawl_delays, politeness_violations

TRAP_HOSTS = ("events.test", "calendar.test", "sessions.test")
OTHER_HOSTS = ("mirror.test", "deadlinks.test")
DELAY = 0.05


def crawl(kind: str, web, seeds: list[str], workdir: Path, concurrency: int,
          timeout: float, extra: dict[str, str] | None = None) -> tuple[list[dict], dict, Path]:
    """One crawl of the test web (``extra``: more settings); returns its request-log lines,
    its stats and data dir."""
    data_dir = workdir / kind
    data_dir.mkdir()
    migrate(data_dir)
    settings = {
        "FRONTIER_ORDER": "value" if kind == "value" else "depth",
        "FRONTIER_DELAY": DELAY,
        "FRONTIER_LATENCY_FACTOR": 0.5,
        "CONCURRENT_REQUESTS": concurrency,
        "FRONTIER_IP_CONCURRENCY": concurrency,
        "RESOLVE_OVERRIDES": ",".join(f"{h}={ip}" for h, ip in web.resolve_map().items()),
        "LOG_FILE": str(data_dir / "crawl.log"),
        "LOG_LEVEL": "INFO",
        "CLOSESPIDER_TIMEOUT": int(timeout),
        **(extra or {}),
    }
    before = len(web.read_log())
    started = time.monotonic()
    proc = run_crawl(data_dir, seeds, settings, {"allowed_hosts": "*.test"},
                     timeout=timeout + 120)
    if proc.returncode != 0:
        raise SystemExit(f"{kind} crawl failed:\n{proc.stderr[-3000:]}")
    lines = web.settled_log(before)
    text = (data_dir / "crawl.log").read_text(encoding="utf-8", errors="replace")
    stats = final_stats(text)
    seconds = time.monotonic() - started
    log(f"{kind}: {len(lines)} requests in {seconds:.0f} s ({stats.get('finish_reason')})")
    stats["crawl_s"] = round(seconds, 1)
    return lines, stats, data_dir


def useful_pages(truth, lines: list[dict]) -> list[tuple[str, str]]:
    """(host, path) of the pages worth having, in the order first fetched."""
    seen: dict[tuple[str, str], None] = {}
    normal = set(truth.hosts())
    for line in lines:
        host, path = line["host"], line["path"]
        if line["status"] != 200:
            continue
        if host in normal:  # /p/, and /private/ where robots.txt allows it
            key = (host, path.split("?", 1)[0])
            if truth.page(*key) is not None:
                seen.setdefault(key, None)
        elif host == "deadlinks.test" and (path == "/" or path.startswith("/doc/")):
            seen.setdefault((host, path), None)
        elif host == "sessions.test" and path != "/robots.txt":
            seen.setdefault((host, path.split("?", 1)[0].split(";", 1)[0]), None)
    return list(seen)


def pagerank_of_normal_web(truth) -> dict[tuple[str, str], float]:
    """PageRank over every page of the normal hosts (ground-truth links between them)."""
    import networkx as nx

    normal = set(truth.hosts())
    graph = nx.DiGraph()
    todo = [(h, "/") for h in truth.hosts()]
    seen = set(todo)
    while todo:
        host, path = todo.pop()
        page = truth.page(host, path)
        graph.add_node((host, path))
        for link in page.links if page else ():
            target = link.url.split("://", 1)[1]
            t_host, _, t_path = target.partition("/")
            t_host, t_path = t_host.split(":", 1)[0], "/" + t_path
            if t_host not in normal or t_path.startswith("/private/"):
                continue
            graph.add_edge((host, path), (t_host, t_path))
            if (t_host, t_path) not in seen:
                seen.add((t_host, t_path))
                todo.append((t_host, t_path))
    return nx.pagerank(graph, alpha=0.85)


def mass_within(lines: list[dict], budget: int, rank: dict) -> float:
    """PageRank share of the distinct normal pages fetched within the first ``budget``
    requests."""
    fetched = {(line["host"], line["path"].split("?", 1)[0]) for line in lines[:budget]
               if line["status"] == 200}
    return sum(rank.get(key, 0.0) for key in fetched)


def spam_verdicts(data_dir: Path) -> set[str]:
    from crawler.quality.verdicts import SPAM, LocalVerdictStore

    store = LocalVerdictStore(data_dir / "quality" / "web.sqlite3")
    try:
        return {v.host.split(":", 1)[0] for v in store.all() if v.kind == SPAM}
    finally:
        store.close()


def indexed(data_dir: Path, lines: list[dict], hosts: set[str], port: int) -> list[str]:
    """Fetched pages of ``hosts`` that are in the crawl's index (host and path)."""
    from crawler.config import Config
    from crawler.urls import InvalidURL, canonicalize, doc_id_for
    from index import get_backend

    backend = get_backend(Config(data_dir=data_dir))
    try:
        backend.refresh()
        found = []
        for host, path in sorted({(line["host"], line["path"]) for line in lines
                                  if line["host"] in hosts and line["status"] == 200}):
            try:
                if backend.get(doc_id_for(canonicalize(f"http://{host}:{port}{path}"))) is not None:
                    found.append(host + path)
            except InvalidURL:
                continue
        return found
    finally:
        backend.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--hosts", type=int, default=6, help="normal hosts")
    parser.add_argument("--pages", type=int, default=150, help="pages per normal host")
    parser.add_argument("--concurrency", type=int, default=4, help="CONCURRENT_REQUESTS")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per crawl at most")
    parser.add_argument("--quick", action="store_true", help="4 hosts of 80 pages")
    parser.add_argument("--save", type=Path,
                        help="write each crawl's request log (<kind>.jsonl) and crawl log "
                             "(<kind>.log: stats, retries, timeouts) here")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting of both crawls (e.g. "
                             "QUALITY_TEMPLATE_GROWTH_SHARE=0); repeatable")
    args = parser.parse_args()
    extra = dict(item.split("=", 1) for item in args.set)
    if args.quick:
        args.hosts, args.pages = 4, 80
    with tempfile.TemporaryDirectory(prefix="crawl-value-") as tmp, \
            testweb.run(hosts=args.hosts, pages=args.pages, log=Path(tmp) / "web.log") as web:
        workdir = Path(tmp)
        truth = web.web
        spam = set(truth.spam_hosts())
        hosts = [*truth.hosts(), *TRAP_HOSTS, *OTHER_HOSTS, *sorted(spam)]
        seeds = [web.home_url(h) for h in hosts]
        rank = pagerank_of_normal_web(truth)
        results = {}
        for kind in ("depth", "value"):
            lines, stats, data_dir = crawl(kind, web, seeds, workdir, args.concurrency,
                                           args.timeout, extra)
            if args.save:
                args.save.mkdir(parents=True, exist_ok=True)
                (args.save / f"{kind}.jsonl").write_text(
                    "".join(json.dumps(line) + "\n" for line in lines))
                (args.save / f"{kind}.log").write_bytes((data_dir / "crawl.log").read_bytes())
            results[kind] = {
                "lines": lines, "stats": stats,
                "flagged": spam_verdicts(data_dir),
                "trap_indexed": indexed(data_dir, lines, set(TRAP_HOSTS) - {"sessions.test"},
                                        web.port),
                "mirror_indexed": indexed(data_dir, lines, {"mirror.test"}, web.port),
            }
        crawl_delay_of = crawl_delays(web)
        budget25 = len(results["depth"]["lines"]) // 4
        budget50 = len(results["depth"]["lines"]) // 2
        out: dict[str, object] = {}
        for kind, prefix in (("value", ""), ("depth", "baseline_")):
            r = results[kind]
            lines = r["lines"]
            per_host = Counter(line["host"] for line in lines)
            flagged = r["flagged"] & set(hosts)
            out[prefix + "useful_fetch_share"] = round(
                len(useful_pages(truth, lines)) / max(len(lines), 1), 4)
            out[prefix + "requests"] = len(lines)
            out[prefix + "trap_fetches_max"] = max(per_host[h] for h in TRAP_HOSTS)
            out[prefix + "trap_fetches"] = {h: per_host[h] for h in TRAP_HOSTS}
            out[prefix + "mirror_fetches"] = per_host["mirror.test"]
            out[prefix + "deadlinks_dead_fetches"] = sum(
                1 for line in lines if line["host"] == "deadlinks.test"
                and line["path"].startswith(("/archive/", "/moved/")))
            out[prefix + "spam_precision"] = round(len(flagged & spam) / len(flagged), 4) \
                if flagged else 0.0
            out[prefix + "spam_recall"] = round(len(flagged & spam) / len(spam), 4)
            out[prefix + "pagerank_mass_at_25"] = round(mass_within(lines, budget25, rank), 4)
            out[prefix + "pagerank_mass_at_50"] = round(mass_within(lines, budget50, rank), 4)
            out[prefix + "trap_pages_indexed"] = len(r["trap_indexed"])
            out[prefix + "trap_indexed_pages"] = r["trap_indexed"]
            out[prefix + "mirror_pages_indexed"] = len(r["mirror_indexed"])
            out[prefix + "finished"] = r["stats"].get("finish_reason") == "finished"
            out[prefix + "crawl_s"] = r["stats"]["crawl_s"]
            audit = politeness_violations(lines, DELAY, crawl_delay_of)
            out[prefix + "violations"] = audit["total"]
        out["violations"] = out["violations"] + out.pop("baseline_violations")
        out["missed_spam_hosts"] = sorted(spam - results["value"]["flagged"])
        out["false_spam_hosts"] = sorted(results["value"]["flagged"] - spam)
        out["crawl_time_ratio"] = round(out["crawl_s"] / max(out["baseline_crawl_s"], 1e-9), 3)
        out["pagerank_ratio_at_25"] = round(
            out["pagerank_mass_at_25"] / max(out["baseline_pagerank_mass_at_25"], 1e-9), 3)
        out.update(hosts=args.hosts, pages=args.pages, concurrency=args.concurrency)
        if extra:
            out["settings"] = extra
    print(json.dumps(out))


if __name__ == "__main__":
    main()
