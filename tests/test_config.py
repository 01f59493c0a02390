from pathlib import Path

from crawler.config import Config


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
        if rel.parts[0] in (".venv", "tests", "bench", ".services") or rel == Path(
            "crawler/config.py"
        ):
            continue
        text = path.read_text(encoding="utf-8")
        if "os.environ.get(" in text or "os.getenv(" in text or "os.environ[" in text:
            offenders.append(str(rel))
    assert offenders == []
