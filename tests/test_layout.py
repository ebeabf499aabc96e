"""Package layout: no import cycles inside a layer, no import-time side effects.

The module graph is read from the source with :mod:`ast` (top-level *and* function-level
imports: a lazy ``from .matrix import KernelMatrix`` inside a method is still an edge), so a new
cycle fails here before it fails at import time in some order nobody tried.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "asymkern"
ESTIMATOR_PACKAGES = ("lssvm", "nystrom", "operators", "decomposition")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """Every Import/ImportFrom node, at any depth, except under ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The asymkern module ``name`` refers to: itself or its longest existing parent."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def module_graph() -> dict[str, set[str]]:
    """asymkern module → the asymkern modules it imports (explicitly named targets)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for mod, path in modules.items():
        is_pkg = path.name == "__init__.py"
        package = mod if is_pkg else mod.rpartition(".")[0]
        edges = set()
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    stem = ".".join(base + ([node.module] if node.module else []))
                else:
                    stem = node.module or ""
                # `from pkg import sub` names a submodule; `from mod import name` the module
                targets = [f"{stem}.{a.name}" if f"{stem}.{a.name}" in modules else stem
                           for a in node.names]
            for t in targets:
                if t == "asymkern" or t.startswith("asymkern."):
                    r = _resolve(t, modules)
                    if r is not None and r != mod:
                        edges.add(r)
        graph[mod] = edges
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def _subgraph(graph, prefix: str) -> dict[str, set[str]]:
    inside = {m for m in graph if m == prefix or m.startswith(prefix + ".")}
    return {m: graph[m] & inside for m in inside}


@pytest.fixture(scope="module")
def graph():
    return module_graph()


def test_graph_reader_sees_lazy_imports(graph):
    # function-level imports count: the Dask dispatch inside KernelMatrix.__new__ is an edge
    assert "asymkern._dispatch" in graph["asymkern.kernels.matrix"]
    assert "asymkern.kernels._registry" in graph["asymkern.kernels.matrix"]
    assert "asymkern.linalg.nystrom" in graph["asymkern.linalg.svd"]


@pytest.mark.parametrize("layer", ["kernels", "linalg", "experiments"])
def test_no_import_cycle_inside_layer(graph, layer):
    cycles = find_cycles(_subgraph(graph, f"asymkern.{layer}"))
    assert not cycles, (
        f"import cycle(s) inside asymkern.{layer} (top-level or function-level imports): "
        f"{cycles}; move the shared code to a lower module so every module imports only "
        "modules below it"
    )


def _package(module: str) -> str:
    """The top-level subpackage (or module) of asymkern that ``module`` belongs to."""
    return ".".join(module.split(".")[:2])


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """asymkern subpackage → the subpackages its modules import (the root package left out).

    Importing any module of a subpackage runs that subpackage's ``__init__`` first, so
    ``asymkern._dask`` importing ``asymkern.lssvm._x`` ties it to all of ``asymkern.lssvm``.
    """
    out: dict[str, set[str]] = {}
    for m, ts in graph.items():
        if m == "asymkern":
            continue
        out.setdefault(_package(m), set()).update(
            _package(t) for t in ts if t != "asymkern" and _package(t) != _package(m))
    return out


def test_no_import_cycle_in_the_package(graph):
    # the whole library, module by module and subpackage by subpackage: every module imports
    # only modules below it (top-level and function-level imports alike)
    assert not find_cycles(graph), f"import cycle(s) between modules: {find_cycles(graph)}"
    pkgs = package_graph(graph)
    assert not find_cycles(pkgs), f"import cycle(s) between subpackages: {find_cycles(pkgs)}"


@pytest.mark.parametrize("layer", ["_dispatch", "kernels", "linalg", "landmarks", "_shared",
                                   "_dask", "_torch"])
def test_low_layers_do_not_import_estimators(graph, layer):
    bad = sorted(
        (m, t) for m, ts in _subgraph(graph, f"asymkern.{layer}").items() for t in graph[m]
        if any(t == f"asymkern.{p}" or t.startswith(f"asymkern.{p}.")
               for p in ESTIMATOR_PACKAGES)
    )
    assert not bad, f"asymkern.{layer} imports estimator packages: {bad}"


@pytest.mark.parametrize("layer", ["_dispatch", "kernels", "linalg", "landmarks", "_shared"])
def test_layers_below_the_executors_do_not_import_them(graph, layer):
    # kernels, linalg and the shared helpers reach asymkern._dask only through the hooks it
    # registers in asymkern._dispatch
    bad = sorted((m, t) for m, ts in _subgraph(graph, f"asymkern.{layer}").items() for t in ts
                 for ex in ("asymkern._dask", "asymkern._torch")
                 if t == ex or t.startswith(ex + "."))
    assert not bad, f"asymkern.{layer} imports the Dask or torch executors: {bad}"


def test_dask_dispatch_works_without_importing_the_executors_first():
    # a user who never names asymkern._dask still gets the Dask executors: importing any part
    # of asymkern imports the root package, which registers the hooks
    pytest.importorskip("dask")
    code = ("import numpy as np, dask.array as da, sys\n"
            "from asymkern.kernels.matrix import KernelMatrix\n"
            "from asymkern.kernels import get_kernel\n"
            "X = da.from_array(np.random.default_rng(0).normal(size=(20, 3)), chunks=10)\n"
            "G = KernelMatrix(get_kernel('rbf'), X)\n"
            "print(type(G).__module__)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env={**__import__("os").environ, "PYTHONPATH": str(SRC)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "asymkern._dask.kernel"


# ------------------------------------------------------------------ import-time side effects
_PROBE = r"""
import json, logging, os, pkgutil, sys, warnings
import numpy as np
import scipy, sklearn, joblib  # dependencies: their own import effects are not ours
PRE_MPL = {pre_mpl}
if PRE_MPL:
    import matplotlib

def mpl_state():
    if "matplotlib" not in sys.modules:
        return None
    import matplotlib
    # the raw rc value: reading it must not resolve (and so change) an automatic backend
    return [repr(dict.__getitem__(matplotlib.rcParams, "backend")),
            "matplotlib.pyplot" in sys.modules]

def state():
    root = logging.getLogger()
    return {{
        "warnings": [repr(f) for f in warnings.filters],
        "seterr": np.geterr(),
        "printoptions": repr(np.get_printoptions()),
        "logging": [root.level, [repr(h) for h in root.handlers], logging.root.manager.disable,
                    repr(logging.getLoggerClass()), repr(logging.lastResort)],
        "matplotlib": mpl_state(),
        "showwarning": repr(warnings.showwarning),
        "excepthook": repr(sys.excepthook),
    }}

before = state()
import asymkern
names, skipped = ["asymkern"], []
for info in pkgutil.walk_packages(asymkern.__path__, "asymkern."):
    try:
        __import__(info.name)
        names.append(info.name)
    except ModuleNotFoundError as exc:  # an optional dependency that is not installed
        if (exc.name or "").startswith("asymkern"):
            raise
        skipped.append([info.name, exc.name])
after = state()
asymkern_loggers = sorted(
    n for n, lg in logging.root.manager.loggerDict.items()
    if n.startswith("asymkern") and isinstance(lg, logging.Logger)
    and any(not isinstance(h, logging.NullHandler) for h in lg.handlers))
print(json.dumps({{"before": before, "after": after, "names": names, "skipped": skipped,
                   "mpl_imported": "matplotlib" in sys.modules,
                   "tqdm_imported": "tqdm" in sys.modules,
                   "asymkern_loggers": asymkern_loggers}}))
"""


@pytest.mark.parametrize("pre_mpl", [False, True], ids=["matplotlib-absent", "matplotlib-loaded"])
def test_importing_the_library_changes_no_global_state(pre_mpl):
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE.format(pre_mpl=pre_mpl)],
        capture_output=True, text=True, timeout=300,
        env={**__import__("os").environ, "PYTHONPATH": str(SRC), "PYTHONWARNINGS": ""},
    )
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    # every public subpackage and every experiment module was imported
    for name in ("asymkern.kernels", "asymkern.linalg", "asymkern.lssvm", "asymkern.nystrom",
                 "asymkern.operators", "asymkern.decomposition", "asymkern.experiments",
                 "asymkern.experiments.nystrom_solvers", "asymkern.experiments.operators",
                 "asymkern.experiments.ksvd_biclustering", "asymkern.cli"):
        assert name in res["names"], (name, res["skipped"])
    before, after = res["before"], res["after"]
    for key in before:
        assert after[key] == before[key], f"importing asymkern changed {key}"
    if not pre_mpl:
        assert not res["mpl_imported"], "importing asymkern imported matplotlib"
    assert not res["tqdm_imported"], "importing asymkern imported tqdm (progress is off)"
    assert res["asymkern_loggers"] == []


# --------------------------------------------------------- run-time: figures and warning filters
_FIGURE_PROBE = r"""
import json, sys
import matplotlib
before = repr(dict.__getitem__(matplotlib.rcParams, "backend"))
from asymkern.experiments.report import new_figure
fig, axes = new_figure(1, 2, figsize=(2, 1), squeeze=False)
axes[0][0].plot([0, 1], [1, 0])
fig.tight_layout()
fig.savefig(sys.argv[1])
print(json.dumps({"same": repr(dict.__getitem__(matplotlib.rcParams, "backend")) == before,
                  "pyplot": "matplotlib.pyplot" in sys.modules}))
"""


def test_experiment_figures_leave_the_backend_alone(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "f.png"
    proc = subprocess.run([sys.executable, "-c", _FIGURE_PROBE, str(path)], capture_output=True,
                          text=True, timeout=120,
                          env={**__import__("os").environ, "PYTHONPATH": str(SRC)})
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert res == {"same": True, "pyplot": False}
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_no_experiment_module_sets_the_backend_or_global_filters():
    # run-time counterpart of the import test: a plotting or running function may filter
    # warnings only inside `warnings.catch_warnings()` and never calls matplotlib.use
    offenders = []
    for path in sorted((PKG / "experiments").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        guarded: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.With) and any(
                    "catch_warnings" in ast.unparse(item.context_expr) for item in node.items):
                guarded.update(id(n) for n in ast.walk(node))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                src = ast.unparse(node.func)
                if src in ("matplotlib.use", "plt.switch_backend") or (
                        src in ("warnings.simplefilter", "warnings.filterwarnings",
                                "np.seterr", "numpy.seterr") and id(node) not in guarded):
                    offenders.append(f"{path.name}:{node.lineno}: {src}")
    assert not offenders, offenders


def test_nystrom_solvers_run_restores_the_warning_filters(monkeypatch):
    import warnings

    from asymkern.experiments import nystrom_solvers

    seen = {}

    def fake_run(*args, **kwargs):
        seen["filters"] = list(warnings.filters)
        return "report"

    monkeypatch.setattr(nystrom_solvers, "_run", fake_run)
    before = list(warnings.filters)
    assert nystrom_solvers.run(quick=True) == "report"
    assert warnings.filters == before
    assert seen["filters"][0][:3] == ("ignore", None, RuntimeWarning)
