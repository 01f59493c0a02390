from pathlib import Path

from crawler.config import Config
from tests.frontiers import options


def test_unset_means_embedded(tmp_path):
    cfg = Config.from_env({"DATA_DIR": str(tmp_path)})
    assert cfg.data_dir == tmp_path.resolve()
    assert cfg.redis_url is None and cfg.elasticsearch_url is None
    assert cfg.database_url is None and cfg.celery_broker_url is None
    assert not cfg.distributed


def test_broker_defaults_to_redis():
    cfg = Config.from_env({"REDIS_URL": "redis://127.0.0.1:6379/0", "ELASTICSEARCH_URL": " "})
    assert cfg.celery_broker_url == "redis://127.0.0.1:6379/0"
    assert cfg.elasticsearch_url is None
    assert cfg.data_dir == Path("data").resolve()


def test_only_config_reads_the_environment():
    root = Path(__file__).resolve().parents[1]
    offenders = []
    for path in root.glob("*/**/*.py"):
        rel = path.relative_to(root)
        if rel.parts[0] in (".venv", "tests", "harness", "bench", ".services") or rel == Path(
            "crawler/config.py"
        ):
            continue
        text = path.read_text(encoding="utf-8")
        if "os.environ.get(" in text or "os.getenv(" in text or "os.environ[" in text:
            offenders.append(str(rel))
    assert offenders == []


def test_frontier_partitions_default_to_redis_url():
    one = Config.from_env({"REDIS_URL": "redis://127.0.0.1:6379/0"})
    assert one.frontier_urls == ("redis://127.0.0.1:6379/0",)
    several = Config.from_env({
        "REDIS_URL": "redis://127.0.0.1:6379/0",
        "FRONTIER_REDIS_URLS": "redis://127.0.0.1:6379/0, redis://127.0.0.1:6380/0",
    })
    assert several.frontier_urls == ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6380/0")
    assert several.redis_url == "redis://127.0.0.1:6379/0"
    assert Config.from_env({}).frontier_urls == ()


def test_open_frontier_partitions_over_several_servers(tmp_path):
    from crawler.frontier import open_frontier
    from crawler.frontier.partitioned import PartitionedFrontier
    from crawler.frontier.redis_backend import RedisFrontier
    from harness.redisserver import running_redis

    with running_redis(tmp_path / "r1") as r1, running_redis(tmp_path / "r2") as r2:
        cfg = Config.from_env({"REDIS_URL": r1.url,
                               "FRONTIER_REDIS_URLS": f"{r1.url},{r2.url}"})
        frontier = open_frontier(cfg, "cfg", **options(bloom_capacity=1000, ip_limit=8))
        assert isinstance(frontier, PartitionedFrontier)
        assert [p.ip_limit for p in frontier.partitions] == [4, 4]
        assert frontier.client.connection_pool.connection_kwargs["port"] == r1.port
        frontier.close()
        single = open_frontier(Config.from_env({"REDIS_URL": r2.url}), "one",
                               **options(bloom_capacity=1000))
        assert isinstance(single, RedisFrontier)
        single.close()
