"""Hedged search requests: a query the first copy has not answered in time goes to another.

Design ("per-shard deadlines, hedged requests, and return a partial result"): with one
replica on two data nodes every shard has a copy on each, so a search can be answered by
either node alone. :class:`Hedger` learns the data nodes from ``_nodes`` and sends each
search to one of them in turn, to that node's own HTTP endpoint with
``preference=_prefer_nodes:<its id>`` (its local copies, another node's only for a shard it
lacks). When no answer has come after the hedge delay (``ES_HEDGE_DELAY_S``), or the first
node failed, the same search goes to the next data node the same way, and the first answer
wins; the slower request is left to finish on its own thread (nothing waits for it).

A node stalled (a long GC, a SIGSTOP, a full disk queue) still accepts connections and
stays in the cluster for its fault-detection timeout, so without hedging a query routed to
it waits that long; ``bench/search.py --hedge`` measures both ways with one node stalled
in bursts. The per-shard ``timeout`` of the body still bounds a slow shard, and a partial
answer (``timed_out``, failed shards) stays flagged in the winning response as it comes.

Nothing is hedged on a single data node, for a search that names its own ``preference``,
or when hedging is off (``ES_HEDGE``). When every copy failed, the search is sent once more
through the shared client, whose retries cover nodes the ``_nodes`` view does not know.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from elasticsearch import ApiError, Elasticsearch, TransportError

from index.engines.elasticsearch.requests import is_outage

__all__ = ["Hedger", "Route"]

logger = logging.getLogger(__name__)

#: Seconds the data nodes learnt from ``_nodes`` are trusted before being asked again.
ROUTES_TTL_S = 60.0
#: Seconds the node list may take (a stalled node is left out, the old list kept).
NODES_TIMEOUT_S = 5.0
#: Attempts in flight at once per process (an abandoned slow attempt counts until it
#: ends); past it searches go unhedged through the shared client.
MAX_ATTEMPTS_IN_FLIGHT = 64


@dataclass(frozen=True)
class Route:
    """One data node: the client that reaches it and the preference for its own copies."""

    node: str
    client: Elasticsearch
    preference: str

    def search(self, kwargs: dict) -> Any:
        """``search`` on this node's copies."""
        return self.client.search(**kwargs, preference=self.preference)


def _host_port(url: str) -> str:
    parts = urlsplit(url if "//" in url else f"http://{url}")
    return f"{parts.hostname}:{parts.port or 9200}"


class Hedger:
    """Searches sent to one data node at a time, hedged to another after ``delay_s``.

    An error that :func:`~index.engines.elasticsearch.requests.is_outage` names ("this copy cannot
    answer") sends the search to the next copy; any other (a bad query) is raised as it comes, since
    every copy would say it too.
    """

    def __init__(self, client: Elasticsearch, hosts: list[str], delay_s: float,
                 request_timeout_s: float = 30.0):
        self.client = client
        self.hosts = {_host_port(h): h for h in hosts}
        self.delay_s = delay_s
        self.request_timeout_s = request_timeout_s
        self._lock = threading.Lock()
        self._routes: list[Route] = []
        self._clients: dict[str, Elasticsearch] = {}
        self._routes_at = float("-inf")
        self._refreshing = False
        self._turn = itertools.count()
        self._in_flight = threading.BoundedSemaphore(MAX_ATTEMPTS_IN_FLIGHT)
        self.hedged = 0
        self.hedge_wins = 0

    # --- routes -------------------------------------------------------------------------

    def _node_client(self, url: str) -> Elasticsearch:
        """The client of one node (made once; the caller holds the lock)."""
        client = self._clients.get(url)
        if client is None:
            # no retries of its own: another copy is the retry
            client = Elasticsearch(url, request_timeout=self.request_timeout_s, max_retries=0)
            self._clients[url] = client
        return client

    def routes(self) -> list[Route]:
        """The data nodes, each reached directly when its HTTP address is one of ``hosts``
        (else through the shared client, with its preference alone); empty while the
        cluster has not answered. Learnt on first use, then refreshed every
        ``ROUTES_TTL_S`` on a thread of its own, so no search waits for the node list (a
        stalled node would hold it up)."""
        with self._lock:
            age = time.monotonic() - self._routes_at
            known = self._routes_at != float("-inf")
            if age < ROUTES_TTL_S or self._refreshing:
                return self._routes
            self._refreshing = True
        if not known:
            self._refresh()
            return self._routes
        threading.Thread(target=self._refresh, name="es-hedge-routes", daemon=True).start()
        return self._routes

    def _refresh(self) -> None:
        try:
            info = self.client.options(request_timeout=NODES_TIMEOUT_S).nodes.info(
                metric="http", timeout=f"{NODES_TIMEOUT_S:g}s",
                filter_path="_nodes,nodes.*.name,nodes.*.roles,nodes.*.http").body
        except (ApiError, TransportError) as exc:
            logger.debug("hedging: no node list (%s); searches go unhedged", exc)
            info = None
        with self._lock:
            self._refreshing = False
            self._routes_at = time.monotonic()
            if info is None:
                self._routes_at -= ROUTES_TTL_S - 5.0  # ask again soon
                return
            if info.get("_nodes", {}).get("failed") and self._routes:
                return  # a node did not answer (stalled?): keep routing to the copies known
            routes = []
            for node_id, node in sorted(info.get("nodes", {}).items()):
                if not any(r == "data" or r.startswith("data_") for r in node["roles"]):
                    continue
                url = self._configured_url(node.get("http", {}).get("publish_address", ""))
                client = self._node_client(url) if url else self.client
                routes.append(Route(node["name"], client, f"_prefer_nodes:{node_id}"))
            self._routes = routes

    def _configured_url(self, publish_address: str) -> str | None:
        """The configured URL of a node publishing ``host/ip:port`` or ``ip:port``."""
        name, _, address = publish_address.rpartition("/")
        port = address.rpartition(":")[2]
        for candidate in (address, f"{name}:{port}" if name else ""):
            if candidate in self.hosts:
                return self.hosts[candidate]
        return None

    # --- searches -----------------------------------------------------------------------

    def _submit(self, route: Route, kwargs: dict) -> Future | None:
        """Start one attempt on a daemon thread of its own (an abandoned one may wait on a
        stalled node until its timeout, and must not hold up the process's exit); ``None``
        when ``MAX_ATTEMPTS_IN_FLIGHT`` are already under way."""
        if not self._in_flight.acquire(blocking=False):
            return None
        future: Future = Future()

        def attempt() -> None:
            try:
                future.set_result(route.search(kwargs))
            except BaseException as exc:  # handed to the waiting search
                future.set_exception(exc)
            finally:
                self._in_flight.release()

        future.set_running_or_notify_cancel()
        threading.Thread(target=attempt, name="es-hedge", daemon=True).start()
        return future

    def search(self, kwargs: dict) -> Any:
        """The first answer of this search from one data node's copies or, after
        ``delay_s`` or a failure, another's; through the shared client when hedging cannot
        apply or every copy failed."""
        routes = self.routes() if "preference" not in kwargs else []
        if len(routes) < 2:
            return self.client.search(**kwargs)
        start = next(self._turn)
        order = [routes[(start + k) % len(routes)] for k in range(len(routes))]
        first = self._submit(order[0], kwargs)
        if first is None:  # too many attempts under way (a stalled node): no hedging now
            return self.client.search(**kwargs)
        pending = {first}
        sent = 1
        timeout: float | None = self.delay_s
        while pending:
            done, pending = wait(pending, timeout=timeout, return_when=FIRST_COMPLETED)
            for attempt in done:
                exc = attempt.exception()
                if exc is None:
                    if attempt is not first:
                        with self._lock:
                            self.hedge_wins += 1
                    return attempt.result()
                if not is_outage(exc):
                    raise exc
            if sent < len(order) and (not done or not pending):
                # slow past the delay, or every attempt so far failed: the next copy
                hedge = self._submit(order[sent], kwargs)
                if hedge is None:  # too many under way: wait for what was sent
                    sent, timeout = len(order), None
                    continue
                pending.add(hedge)
                sent += 1
                with self._lock:
                    self.hedged += 1
                timeout = self.delay_s
            elif sent >= len(order):
                timeout = None  # every copy asked: the first answer, however late
        return self.client.search(**kwargs)

    def stats(self) -> dict:
        """``search/hedged`` (second attempts sent) and ``search/hedge_wins`` (answered
        first by a second attempt)."""
        with self._lock:
            return {"search/hedged": self.hedged, "search/hedge_wins": self.hedge_wins}

    def close(self) -> None:
        """Close the per-node clients; attempts still in flight end on their own."""
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
            self._routes, self._routes_at = [], float("-inf")
        for client in clients:
            client.close()
