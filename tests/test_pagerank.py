"""PageRank by SciPy power iteration against networkx.pagerank on small graphs."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from batch.pagerank import (
    KeyTable,
    LinkGraph,
    PowerIterationFailedConvergence,
    doc_ids_to_keys,
    keys_to_doc_ids,
    pagerank,
)
from crawler.urls import doc_id_for

L1 = 1e-6


def reference(edges, nodes=(), **kwargs) -> dict:
    g = nx.DiGraph()
    g.add_nodes_from(nodes)
    g.add_edges_from(edges)
    return nx.pagerank(g, **kwargs)


def ours(edges, nodes=(), **kwargs) -> dict:
    src = np.array([a for a, _ in edges], dtype=np.int64)
    dst = np.array([b for _, b in edges], dtype=np.int64)
    graph = LinkGraph.from_arrays(src, dst, np.array(list(nodes), dtype=np.int64))
    scores = pagerank(graph, **kwargs)
    return dict(zip(graph.node_ids(), scores.tolist(), strict=True))


def l1(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return sum(abs(a[k] - b[k]) for k in a)


CASES = {
    "cycle": [(0, 1), (1, 2), (2, 0)],
    "dangling": [(0, 1), (0, 2), (1, 2), (3, 2)],
    "disconnected": [(0, 1), (1, 0), (2, 3), (3, 4), (4, 2), (5, 6)],
    "self_loops": [(0, 0), (0, 1), (1, 1), (1, 2), (2, 0)],
    "duplicates": [(0, 1), (0, 1), (0, 1), (0, 2), (2, 0), (2, 0), (1, 2)],
    "star": [(i, 0) for i in range(1, 30)] + [(0, 1)],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_networkx(name):
    edges = CASES[name]
    assert l1(ours(edges), reference(edges)) <= L1


def test_isolated_nodes_match_networkx():
    edges = [(0, 1), (1, 2)]
    assert l1(ours(edges, nodes=[7, 8, 9]), reference(edges, nodes=[7, 8, 9])) <= L1


@pytest.mark.parametrize("seed", range(4))
def test_random_graphs_match_networkx(seed):
    rng = np.random.default_rng(seed)
    n = 300
    edges = list(
        zip(
            rng.integers(0, n, 1500).tolist(),
            (n * rng.random(1500) ** 2).astype(int).tolist(),
            strict=True,
        )
    )
    nodes = range(n)
    for alpha in (0.85, 0.5):
        assert l1(ours(edges, nodes, alpha=alpha), reference(edges, nodes, alpha=alpha)) <= L1


def test_personalization_matches_networkx():
    edges = CASES["disconnected"] + CASES["dangling"]
    seeds = {2: 1.0, 5: 3.0, 99: 5.0}  # 99 is not a node: ignored, as networkx does
    got = ours(edges, personalization=seeds)
    want = reference(edges, personalization=seeds)
    assert l1(got, want) <= L1
    assert got[5] > got[6] > 0


def test_tolerance_and_max_iter_like_networkx():
    edges = CASES["star"]
    with pytest.raises(PowerIterationFailedConvergence):
        ours(edges, max_iter=2)
    with pytest.raises(nx.PowerIterationFailedConvergence):
        reference(edges, max_iter=2)
    tight = {"tol": 1e-10, "max_iter": 2000}
    assert l1(ours(edges, **tight), reference(edges, **tight)) <= 1e-9


def test_personalization_without_known_nodes_is_an_error():
    with pytest.raises(ValueError, match="personalization"):
        ours([(0, 1)], personalization={42: 1.0})


def test_empty_graph():
    graph = LinkGraph.from_arrays(np.array([], np.int64), np.array([], np.int64))
    assert graph.n == 0
    assert pagerank(graph).size == 0


def test_doc_id_graph_matches_networkx_and_round_trips_ids():
    urls = [f"https://h{i % 3}.test/p{i}" for i in range(12)]
    ids = [doc_id_for(u) for u in urls]
    edges = [(ids[i], ids[(i * 5 + 1) % 12]) for i in range(10)] + [(ids[0], ids[11])]
    graph = LinkGraph.from_doc_edges(iter(edges), nodes=ids, chunk_size=4)
    assert sorted(graph.node_ids()) == sorted(ids)
    got = dict(zip(graph.node_ids(), pagerank(graph).tolist(), strict=True))
    assert l1(got, reference(edges, nodes=ids)) <= L1
    assert graph.index_of([ids[3], "0" * 16]).tolist()[1] == -1


def test_doc_id_codec():
    ids = ["0123456789abcdef", "ffffffffffffffff", "0000000000000000", "ABCDEF0123456789"]
    keys = doc_ids_to_keys(ids)
    assert keys.dtype == np.uint64
    assert keys.tolist() == [int(i, 16) for i in ids]
    assert keys_to_doc_ids(keys) == [i.lower() for i in ids]
    for bad in ("0123", "0123456789abcdeg", "0123456789abcdef0"):
        with pytest.raises(ValueError, match="document id"):
            doc_ids_to_keys([bad])


def test_key_table_lookup_sequential_and_random_keys():
    rng = np.random.default_rng(1)
    for keys in (np.arange(5000), rng.integers(0, 2**63, 5000, dtype=np.int64)):
        table = KeyTable([keys, keys[:100]])
        assert len(table) == len(np.unique(keys))
        idx = table.lookup(keys)
        assert (table.keys()[idx].view(np.int64) == keys).all()
        with pytest.raises(KeyError):
            table.lookup(np.array([-5]))
        assert table.lookup(np.array([-5]), missing=-1).tolist() == [-1]


def test_host_graph_drops_links_within_a_host():
    pairs = [("a.test", "a.test"), ("a.test", "b.test"), ("c.test", "b.test"), ("b.test", "a.test")]
    graph = LinkGraph.from_host_edges(pairs)
    assert sorted(graph.node_ids()) == ["a.test", "b.test", "c.test"]
    assert graph.edges == 3
    got = dict(zip(graph.node_ids(), pagerank(graph).tolist(), strict=True))
    assert l1(got, reference([p for p in pairs if p[0] != p[1]])) <= L1
    assert got["b.test"] > got["c.test"]
    assert graph.index_of(["nowhere.test"]).tolist() == [-1]
    counted = LinkGraph.from_host_edges([(a, b, 7) for a, b in pairs])  # LinkStore's rows
    assert counted.node_ids() == graph.node_ids() and counted.edges == 3
    seeded = pagerank(graph, personalization={"c.test": 1.0})
    assert seeded.sum() == pytest.approx(1.0)


def test_batches_cover_every_node_once():
    graph = LinkGraph.from_arrays(np.arange(10), (np.arange(10) + 1) % 10)
    scores = pagerank(graph)
    batches = list(graph.batches(scores, size=3))
    assert [len(b) for b in batches] == [3, 3, 3, 1]
    merged = {k: v for b in batches for k, v in b.items()}
    assert sorted(merged) == list(range(10))
    assert sum(merged.values()) == pytest.approx(1.0)
