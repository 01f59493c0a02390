"""Which package may import which: read from the sources (ast), so a function-level import
counts as much as one at the top of a module."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


#: Every top-level package and the packages of the project it may import, from the bottom
#: up: a package imports only packages listed above it (no file imports upward), so the
#: crawl runs without the serving plane, the web UI or the test tools.
LAYERS: dict[str, set[str]] = {
    # the crawl plane; crawler/quality/ judges pages and hosts, dedup included; doc ids are
    # a URL concern (crawler.urls.doc_id_for), host rules come through crawler.hostrules
    "crawler": set(),
    "index": {"crawler"},
    "spiders": {"crawler"},
    "pipelines": {"crawler", "index"},
    # batch jobs over what the crawl stored: PageRank, fitted weights, the rebuild from WARC
    "batch": {"crawler", "index", "pipelines"},
    "operations": {"crawler"},
    "webui": {"crawler", "index", "pipelines", "batch", "operations"},
    # tools for tests and benchmarks, never imported by the packages above
    "testweb": {"crawler"},
    "harness": {"crawler", "index", "pipelines", "batch", "operations", "testweb"},
    "bench": {"crawler", "index", "pipelines", "batch", "operations", "testweb", "harness"},
    "tests": {"crawler", "index", "spiders", "pipelines", "batch", "operations", "webui",
              "testweb", "harness"},
}


def packages() -> list[str]:
    """The top-level Python packages of the repository."""
    return sorted(p.parent.name for p in ROOT.glob("*/__init__.py"))


def imported_packages(package: str) -> dict[str, set[str]]:
    """Top-level packages each module under ``package/`` imports -> the modules importing them."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_package_has_its_place():
    assert packages() == sorted(LAYERS)


@pytest.mark.parametrize("package", sorted(LAYERS))
def test_package_imports_only_packages_below_it(package):
    order = list(LAYERS)
    assert all(order.index(p) < order.index(package) for p in LAYERS[package])
    imports = imported_packages(package)
    forbidden = set(LAYERS) - LAYERS[package] - {package}
    offenders = {name: sorted(imports[name]) for name in forbidden & imports.keys()}
    assert offenders == {}


def test_the_check_sees_imports():
    imports = imported_packages("pipelines")
    assert "pipelines/index.py" in imports["index"]
    assert "crawler" in imported_packages("crawler")
    assert "crawler/quality/dedup/pipeline.py" in imported_packages("crawler")["crawler"]


#: The modules of each search engine (one package each); the shared vocabulary is in index/.
ENGINES = {
    name: {f"index.engines.{name}.{p.stem}".removesuffix(".__init__")
           for p in (ROOT / "index" / "engines" / name).glob("*.py")}
    for name in ("embedded", "elasticsearch")
}


def _module_imports(module: str) -> set[str]:
    path = ROOT / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = ROOT / module.replace(".", "/") / "__init__.py"
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize(("engine", "other"), [("embedded", "elasticsearch"),
                                               ("elasticsearch", "embedded")])
def test_search_engines_share_and_do_not_import_each_other(engine, other):
    """Neither engine imports the other: what they share lives in index/fields.py,
    index/signals.py, index/query.py, index/hits.py and the other shared modules."""
    assert ENGINES[engine] and ENGINES[other]
    offenders = {m: sorted(_module_imports(m) & ENGINES[other]) for m in ENGINES[engine]}
    assert {m: names for m, names in offenders.items() if names} == {}
    shared = {"index.fields", "index.signals", "index.query", "index.hits"}
    backends = ("index.engines.embedded.backend", "index.engines.elasticsearch.backend")
    assert all(shared & _module_imports(m) for m in backends)


#: The most lines a class of index/ may have: a class does one job, and a backend is
#: several small modules (mapping, query compilation, search, paging, suggestions, alias).
MAX_CLASS_LINES = 300


def class_lengths(package: str) -> dict[str, int]:
    """``module:Class`` -> the lines of every class (nested ones too) under ``package/``."""
    lengths = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                name = f"{path.relative_to(ROOT)}:{node.name}"
                lengths[name] = node.end_lineno - first + 1
    return lengths


def test_no_class_in_the_search_plane_is_over_300_lines():
    too_long = {name: n for name, n in class_lengths("index").items() if n > MAX_CLASS_LINES}
    assert too_long == {}


def test_the_class_check_measures_classes():
    lengths = class_lengths("index")
    backend = lengths["index/engines/elasticsearch/backend.py:ElasticsearchBackend"]
    assert 100 < backend <= MAX_CLASS_LINES
    assert lengths["index/base.py:SearchUnavailable"] < 20


CRAWL_IMPORTS = """
import importlib, re, sys
from crawler import settings
import spiders.web


def load(path):
    # the object a dotted path names: a module's attribute, or a class's (Class.method)
    parts = path.split(".")
    for split in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:split]))
        except ModuleNotFoundError:
            continue
        for name in parts[split:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(path)


dotted = re.compile(r"^(crawler|pipelines|spiders)(\\.\\w+)+$")
paths = set()
for name, value in vars(settings).items():
    if name.isupper():
        values = list(value) if isinstance(value, dict) else [value]
        paths.update(v for v in values if isinstance(v, str) and dotted.match(v))
for path in sorted(paths):
    load(path)
print(len(paths), sorted({m.split(".")[0] for m in sys.modules} & {"django", "webui"}))
"""


def test_the_crawl_imports_no_django():
    """``scrapy crawl web`` loads the spider and every component its settings name without
    Django: the crawl reads host rules and seeds through ``crawler.hostrules.ControlStore``,
    which the web UI implements (``CONTROL_STORE``)."""
    done = subprocess.run([sys.executable, "-c", CRAWL_IMPORTS], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=True)
    loaded, django = done.stdout.split(maxsplit=1)
    assert int(loaded) > 15  # the scheduler, middlewares, handlers, pipelines, extensions
    assert django.strip() == "[]"


def module_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports (at any level, type-only imports included);
    ``from package import name`` counts as the module ``package.name`` when there is one."""
    modules: dict[str, Path] = {}
    for package in LAYERS:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        names: list[str] = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names += [f"{node.module}.{alias.name}" for alias in node.names]
        graph[module] = {m for m in map(resolve, names) if m and m != module}
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The sets of modules that import each other round a circle (strongly connected
    components of more than one module, Tarjan's algorithm without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == node:
                        break
                if len(members) > 1:
                    circles.append(sorted(members))
    return sorted(circles)


def test_no_import_circles_between_files():
    assert import_circles(module_graph()) == []


def test_the_circle_check_finds_circles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e", "d"}}
    assert import_circles(graph) == [["a", "b", "c"]]
    graph = module_graph()
    assert "batch.rank_settings" in graph["batch.spark"]  # type-only imports count
    assert "crawler.quality.traps" in graph["crawler.quality.judges"]
