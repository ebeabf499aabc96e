"""Generate the API reference pages from the ``__all__`` of every public asymkern module.

Run by Sphinx (``config-inited``, before Sphinx looks for source files): one page
``api/modules/<module>.rst`` per public module that has an ``__all__``, listing every entry,
and ``api/modules/by_task.inc``, the body of the API index (``api/index.rst`` includes it): the
modules grouped by task (:data:`TASKS`), each with a one-line summary and its main entry points.
Each object is documented once, at its *canonical* public location (see :func:`canonical`);
the other modules that re-export it list it in a second table that links to that page, so no
object is described twice (no duplicate-object warnings) and no public name is missing.

``tests/test_docs_site.py`` imports this file to check that every ``__all__`` entry is listed.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import Any

PACKAGE = "asymkern"
MAX_VALUE_REPR = 300  # longer constant values are not printed on the API page
INDEX_FILE = "by_task.inc"  # in api/modules/, included by api/index.rst

# The API index, by task: (title, reST introduction, [(module, one-line summary, main entry
# points as documented full names)]). Every public module belongs to exactly one task
# (tests/test_docs_site.py checks it); a module missing here is listed under OTHER_TASK.
TASKS: list[tuple[str, str, list[tuple[str, str, list[str]]]]] = [
    ("Kernels and kernel SVD",
     "Symmetric and asymmetric kernels and the SVD of the kernel matrices they give. User guide: "
     ":doc:`../user_guide/kernels`, :doc:`../user_guide/ksvd`.",
     [("asymkern", "The main estimators and settings, importable from the package itself.",
       []),
      ("asymkern.decomposition", "Kernel SVD of an asymmetric kernel matrix between two sets "
       "(or the rows and columns of one data matrix), and the kernel PCA baseline.",
       ["asymkern.decomposition.KernelSVD", "asymkern.decomposition.KernelPCA"]),
      ("asymkern.kernels", "Kernels by name or as objects (RBF, Laplacian, polynomial, SNE, T, "
       "KL divergence, directed graph, ...), the lazy kernel matrix and compatibility "
       "matrices.",
       ["asymkern.kernels.get_kernel", "asymkern.kernels.SNEKernel",
        "asymkern.kernels.KernelMatrix", "asymkern.kernels.DirectedGraphKernel"]),
      ("asymkern.graphs", "Evaluating node embeddings of directed graphs: node classification, "
       "graph reconstruction, choosing a bandwidth by cross-validation.",
       ["asymkern.graphs.node_classification", "asymkern.graphs.select_by_cv"])]),
    ("Nyström methods and SVD solvers",
     "Top-r SVDs of large (possibly never formed) matrices, the asymmetric Nyström method and "
     "landmark selection. User guide: :doc:`../user_guide/nystrom_svd`.",
     [("asymkern.linalg", "Top-r SVD solvers (dense, ARPACK, randomized, block Krylov), Nyström "
       "approximations, accuracy metrics and the SVD routines of empirical operators.",
       ["asymkern.linalg.top_svd", "asymkern.linalg.asymmetric_nystrom", "asymkern.linalg.eta"]),
      ("asymkern.linalg.nystrom", "The asymmetric Nyström method and the symmetric baseline, "
       "with sampling schemes and error estimates.",
       ["asymkern.linalg.nystrom.residual_estimate"]),
      ("asymkern.linalg.metrics", "How close approximate singular vectors are to the exact "
       "ones (the η metric and its components).",
       ["asymkern.linalg.metrics.eta_components"]),
      ("asymkern.landmarks", "Choosing landmarks for every Nyström method: uniform, k-means, "
       "ridge leverage scores, Gaussian sketches.",
       ["asymkern.landmarks.select_landmarks"])]),
    ("Classification and regression",
     "Least-squares SVMs, AsK-LS for asymmetric kernels and Nyström kernel machines. User "
     "guide: :doc:`../user_guide/lssvm`, :doc:`../user_guide/nystrom_machines`.",
     [("asymkern.lssvm", "Least-squares SVM classifiers and regressors, AsK-LS (two decision "
       "functions for an asymmetric kernel) and their solvers and regularisation paths.",
       ["asymkern.lssvm.AsKLSClassifier", "asymkern.lssvm.LSSVMClassifier",
        "asymkern.lssvm.LSSVMRegressor"]),
      ("asymkern.nystrom", "Kernel ridge regression, SVMs and kernel PCA on Nyström landmarks, "
       "in the GSA, LLA, NCR and SPA modes.",
       ["asymkern.nystrom.NystromKernelRidge", "asymkern.nystrom.NystromSVC",
        "asymkern.nystrom.NystromKernelPCA"]),
      ("asymkern.nystrom.feature_map", "The Nyström feature map as a scikit-learn transformer, "
       "for symmetric and asymmetric kernels.",
       ["asymkern.nystrom.NystromFeatureMap"]),
      ("asymkern.nystrom.errors", "For analysis: the exact RKHS distance between a Nyström "
       "machine and the exact kernel machine.",
       ["asymkern.nystrom.approximation_error"])]),
    ("Dynamical systems and RKHS operators",
     "Covariance, cross-covariance, conditional mean embedding, Koopman and Perron–Frobenius "
     "operators and kernel CCA, with their SVD and eigendecomposition. User guide: "
     ":doc:`../user_guide/operators`, :doc:`../user_guide/forecasting`.",
     [("asymkern.operators", "The operator estimators and the RKHS functions (eigen- and "
       "singular functions) they return.",
       ["asymkern.operators.KoopmanOperator", "asymkern.operators.KernelCCA",
        "asymkern.operators.ConditionalMeanEmbedding", "asymkern.operators.RKHSFunction"]),
      ("asymkern.operators.estimators", "All the estimators in one module (each is also "
       "importable from :mod:`asymkern.operators`).", []),
      ("asymkern.operators.koopman", "Where the Koopman operator is defined.", []),
      ("asymkern.operators.perron_frobenius", "Where the Perron–Frobenius operator is defined.",
       []),
      ("asymkern.operators.transfer", "What the Koopman and Perron–Frobenius estimators "
       "share (time-lagged pairs; the warning for ill-conditioned lagged Gram matrices).", []),
      ("asymkern.operators.covariance", "Where the covariance and cross-covariance operators "
       "are defined.", []),
      ("asymkern.operators.embedding", "Where the conditional mean embedding is defined.", []),
      ("asymkern.operators.cca", "Where kernel CCA is defined.", []),
      ("asymkern.operators.empirical", "Lower level: empirical operators S = Ψ B Φᵀ built from "
       "samples and a coefficient matrix.",
       ["asymkern.operators.EmpiricalOperator"]),
      ("asymkern.linalg.operator_svd", "Lower level: the matrix routines behind the operators' "
       "SVD and eigendecomposition (kernel QR, auxiliary and block problems).",
       ["asymkern.linalg.svd_qr", "asymkern.linalg.eig_auxiliary"])]),
    ("Data, settings and reproductions",
     "Library-wide settings, warnings, the dataset loaders of the reproductions and the "
     "reproductions themselves. Running on Dask arrays or on a GPU needs no module of its own: "
     "the estimators accept those inputs (:doc:`../user_guide/scaling_out`, "
     ":doc:`../user_guide/gpu`).",
     [("asymkern.config", "Memory budgets, progress bars and parallelism settings.",
       ["asymkern.config.set_config", "asymkern.config.config_context"]),
      ("asymkern.exceptions", "Warnings and errors you may want to filter or catch.",
       ["asymkern.exceptions.ClippedParameterWarning"]),
      ("asymkern.datasets", "Where the real datasets are read from (a data directory; nothing "
       "is shipped).", ["asymkern.datasets.get_data_dir"]),
      ("asymkern.datasets.uci", "UCI tabular datasets.", ["asymkern.datasets.uci.load_uci"]),
      ("asymkern.datasets.libsvm", "LIBSVM-archive classification datasets (usps, dna, "
       "phishing).", ["asymkern.datasets.libsvm.load_usps"]),
      ("asymkern.datasets.bcot", "Document–term biclustering datasets.",
       ["asymkern.datasets.bcot.load_bcot"]),
      ("asymkern.experiments", "The reproductions of the papers' tables and figures, run by "
       "``asymkern reproduce NAME``.", ["asymkern.experiments.get_experiment"])]),
]
OTHER_TASK = "Other modules"

# "Read more in the user guide" on the API page of an object: documented full name → the
# user-guide pages (docnames, main page first) that cover it. tests/test_docs_site.py checks
# that every name is documented and every page exists.
_KERNELS = ["Kernel", "RBFKernel", "LaplacianKernel", "PolynomialKernel", "LinearKernel",
            "SNEKernel", "TKernel", "KLHistogramKernel", "GMMKLKernel", "DirectedGraphKernel",
            "KernelMatrix", "get_kernel"]
_OPERATORS = ["CovarianceOperator", "CrossCovarianceOperator", "ConditionalMeanEmbedding",
              "PerronFrobeniusOperator", "KernelCCA"]
USER_GUIDE: dict[str, list[str]] = {
    "asymkern.decomposition.KernelSVD": ["user_guide/ksvd", "user_guide/nystrom_svd",
                                         "user_guide/gpu"],
    "asymkern.kernels.CompatibilityTransform": ["user_guide/ksvd"],
    **{f"asymkern.kernels.{n}": ["user_guide/kernels"] for n in _KERNELS},
    "asymkern.graphs.select_by_cv": ["user_guide/kernels"],
    **{f"asymkern.linalg.{n}": ["user_guide/nystrom_svd"]
       for n in ["top_svd", "asymmetric_nystrom", "symmetric_nystrom", "eta", "eta_strict"]},
    **{f"asymkern.linalg.{n}": ["user_guide/operators"]
       for n in ["kernel_qr", "svd_qr", "svd_auxiliary", "svd_block", "eig_auxiliary",
                 "eig_qr"]},
    **{f"asymkern.operators.{n}": ["user_guide/operators", "user_guide/gpu"] for n in _OPERATORS},
    "asymkern.operators.KoopmanOperator": ["user_guide/forecasting", "user_guide/operators",
                                           "user_guide/gpu"],
    "asymkern.operators.EmpiricalOperator": ["user_guide/operators"],
    "asymkern.operators.RKHSFunction": ["user_guide/operators"],
    **{f"asymkern.lssvm.{n}": ["user_guide/lssvm"]
       for n in ["AsKLSClassifier", "LSSVMClassifier", "LSSVMRegressor", "IllConditionedWarning"]},
    **{f"asymkern.nystrom.{n}": ["user_guide/nystrom_machines", "user_guide/gpu"]
       for n in ["NystromKernelRidge", "NystromSVC", "NystromKernelPCA"]},
    **{f"asymkern.nystrom.{n}": ["user_guide/nystrom_machines"]
       for n in ["approximation_error", "gsa_approximation_error", "lla_approximation_error"]},
}


def public_modules() -> list[str]:
    """Names of the public modules of asymkern that define ``__all__``, sorted.

    A module is public when no part of its dotted name after the package starts with ``_``.
    """
    pkg = importlib.import_module(PACKAGE)
    names = [PACKAGE] + sorted(
        m.name for m in pkgutil.walk_packages(pkg.__path__, PACKAGE + ".")
        if not any(part.startswith("_") for part in m.name.split(".")[1:])
    )
    return [n for n in names if getattr(importlib.import_module(n), "__all__", None)]


def _home(obj: Any) -> str | None:
    """The module that defines ``obj`` (classes and functions), else None (constants)."""
    if isinstance(obj, type) or callable(obj):
        mod = getattr(obj, "__module__", None)
        return mod if isinstance(mod, str) else None
    return None


def canonical(exporters: list[str], home: str | None) -> str:
    """The module under which an object exported by ``exporters`` is documented.

    The shortest exporting module that contains the defining module ``home`` (so
    ``asymkern.linalg.eta``, defined in ``asymkern.linalg.metrics``, is documented under
    ``asymkern.linalg``), the top-level package only when nothing else exports the object;
    without such a module, the shortest exporter (ties: alphabetical).
    """
    if not exporters:
        raise ValueError("exporters: expected at least one module name, got none")
    sub = [m for m in exporters if m != PACKAGE] or list(exporters)
    if home is not None:
        inside = [m for m in sub if home == m or home.startswith(m + ".")]
        if inside:
            return min(inside, key=lambda m: (len(m.split(".")), m))
    return min(sub, key=lambda m: (len(m.split(".")), m))


def api_table(modules: list[str] | None = None) -> dict[str, list[tuple[str, str]]]:
    """module → [(name, canonical module)] for every ``__all__`` entry, in ``__all__`` order."""
    modules = public_modules() if modules is None else modules
    exporters: dict[tuple[int, str], list[str]] = {}
    homes: dict[tuple[int, str], str | None] = {}
    entries: dict[str, list[tuple[str, tuple[int, str]]]] = {}
    for mod in modules:
        m = importlib.import_module(mod)
        entries[mod] = []
        for name in m.__all__:
            if not hasattr(m, name):
                raise AttributeError(f"{mod}.__all__ lists {name!r}, which {mod} does not define")
            obj = getattr(m, name)
            key = (id(obj), name)
            exporters.setdefault(key, []).append(mod)
            homes[key] = _home(obj)
            entries[mod].append((name, key))
    return {mod: [(name, canonical(exporters[key], homes[key])) for name, key in rows]
            for mod, rows in entries.items()}


def _underline(text: str, char: str) -> str:
    return f"{text}\n{char * len(text)}\n"


def module_page(mod: str, rows: list[tuple[str, str]], taken: frozenset[str] = frozenset()
                ) -> str:
    """reST source of the API page of ``mod``.

    ``taken``: full names documented as objects; a module of the same name (``asymkern.linalg.
    operator_svd`` is a module and a function of ``asymkern.linalg``) is shown, not indexed.
    """
    m = importlib.import_module(mod)
    constants = [n for n, home in rows if home == mod and _home(getattr(m, n)) is None]
    own = [n for n, home in rows if home == mod and n not in constants]
    other = [(n, home) for n, home in rows if home != mod]
    out = [
        ".. This page is generated from __all__ by docs/_ext/asymkern_apigen.py; do not edit.\n",
        _underline(f"``{mod}``", "="),
        f".. automodule:: {mod}\n   :no-members:\n" + ("   :no-index:\n" if mod in taken else ""),
        f".. currentmodule:: {mod}\n",
    ]
    if own:
        out.append(_underline("Documented here", "-"))
        out.append(".. autosummary::\n   :toctree: ../generated\n   :nosignatures:\n")
        out.extend(f"   {n}" for n in own)
        out.append("")
    if constants:
        # documented on this page: autosummary would show the docstring of the value's type
        out.append(_underline("Constants", "-"))
        for n in constants:
            long = len(repr(getattr(m, n))) > MAX_VALUE_REPR
            out.append(f".. autodata:: {n}" + ("\n   :no-value:" if long else "") + "\n")
    if other:
        out.append(_underline("Also exported here", "-"))
        out.append(f"These names are importable from ``{mod}`` too; each is documented at the "
                   "location linked.\n")
        # full names, outside the current module (autosummary warns about names under it)
        out.append(".. currentmodule:: None\n")
        out.append(".. autosummary::\n   :nosignatures:\n")
        out.extend(f"   ~{home}.{n}" for n, home in other)
        out.append("")
    return "\n".join(out) + "\n"


def write_pages(outdir: Path, table: dict[str, list[tuple[str, str]]] | None = None) -> list[Path]:
    """Write one page per public module into ``outdir`` (files unchanged are not rewritten,
    stale ones are removed); returns the paths of the pages."""
    table = api_table() if table is None else table
    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    taken = frozenset(f"{home}.{n}" for rows in table.values() for n, home in rows)
    for mod, rows in table.items():
        path = outdir / f"{mod}.rst"
        text = module_page(mod, rows, taken)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        written.append(path)
    for stale in set(outdir.glob("*.rst")) - set(written):
        stale.unlink()
    return written


def _role(full: str) -> str:
    obj: Any = importlib.import_module(full.rsplit(".", 1)[0])
    obj = getattr(obj, full.rsplit(".", 1)[1])
    role = "class" if isinstance(obj, type) else "func" if callable(obj) else "data"
    return f":{role}:`~{full}`"


def tasks_table(modules: list[str]) -> list[tuple[str, str, list[tuple[str, str, list[str]]]]]:
    """:data:`TASKS` restricted to ``modules``, plus :data:`OTHER_TASK` for the modules that no
    task lists (summary: the first line of the module's docstring)."""
    present = set(modules)
    out = [(title, intro, [row for row in rows if row[0] in present])
           for title, intro, rows in TASKS]
    listed = {row[0] for _, _, rows in TASKS for row in rows}
    other = []
    for mod in modules:
        if mod not in listed:
            doc = (importlib.import_module(mod).__doc__ or "").strip()
            other.append((mod, doc.splitlines()[0] if doc else "", []))
    if other:
        out.append((OTHER_TASK, "Public modules not yet placed under a task.", other))
    return [group for group in out if group[2]]


def index_include(table: dict[str, list[tuple[str, str]]]) -> str:
    """reST body of the API index: one section per task, a table of its modules (link, summary,
    main entry points), and a hidden toctree of every module page in the same order."""
    groups = tasks_table(list(table))
    out = [".. This file is generated by docs/_ext/asymkern_apigen.py; do not edit.\n"]
    for title, intro, rows in groups:
        out.append(_underline(title, "-"))
        out.append(intro + "\n")
        out.append(".. list-table::\n   :header-rows: 1\n   :widths: 32 68\n")
        out.append("   * - module\n     - what it is for\n")
        for mod, summary, entries in rows:
            text = summary + (f" Main entry points: {', '.join(map(_role, entries))}."
                              if entries else "")
            out.append(f"   * - :doc:`{mod} <modules/{mod}>`\n     - {text}\n")
    out.append(".. toctree::\n   :hidden:\n   :maxdepth: 1\n")
    out.extend(f"   modules/{mod}" for _, _, rows in groups for mod, _, _ in rows)
    return "\n".join(out) + "\n"


def write_index(outdir: Path, table: dict[str, list[tuple[str, str]]] | None = None) -> Path:
    """Write :data:`INDEX_FILE` (see :func:`index_include`) into ``outdir``; returns its path."""
    table = api_table() if table is None else table
    outdir.mkdir(parents=True, exist_ok=True)
    path = outdir / INDEX_FILE
    text = index_include(table)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return path


def aliases(table: dict[str, list[tuple[str, str]]]) -> dict[str, list[str]]:
    """Documented full name → every full name it is known by (the documented one first):
    sphinx-gallery records an example's use of an object under the shortest module it can be
    reached through (for instances, often ``asymkern.<name>``), so the page's mini-gallery asks
    for all of them."""
    out: dict[str, list[str]] = {}
    for mod, rows in table.items():
        for name, home in rows:
            names = out.setdefault(f"{home}.{name}", [f"{home}.{name}"])
            for alias in (f"{mod}.{name}", f"{PACKAGE}.{name}"):
                if alias not in names:
                    names.append(alias)
    return out


def _is_hidden(base: Any, documented: frozenset[int] | None) -> bool:
    """A base class not to show: a private name, or (given ``documented``, the ids of the
    documented objects) an asymkern class that has no page of its own."""
    if not isinstance(base, type):
        return False
    if base.__name__.startswith("_"):
        return True
    home = getattr(base, "__module__", "") or ""
    return (documented is not None and (home == PACKAGE or home.startswith(PACKAGE + "."))
            and id(base) not in documented)


def public_bases(bases: list[Any], documented: frozenset[int] | None = None) -> list[Any]:
    """``bases`` with every hidden class (a private name, or an undocumented asymkern class
    when ``documented`` is given) replaced by its nearest shown ancestors, and ``object`` left
    out: what a class page shows after "Bases:"."""
    out: list[Any] = []
    for base in bases:
        if base is object:
            continue
        hidden = _is_hidden(base, documented)
        for b in public_bases(list(base.__bases__), documented) if hidden else [base]:
            if b not in out:
                out.append(b)
    return out


_DOCUMENTED: list[frozenset[int]] = []


def documented_ids(table: dict[str, list[tuple[str, str]]] | None = None) -> frozenset[int]:
    """ids of the objects documented in the API reference (cached for the build)."""
    if table is not None or not _DOCUMENTED:
        table = api_table() if table is None else table
        ids = frozenset(id(getattr(importlib.import_module(home), n))
                        for rows in table.values() for n, home in rows)
        _DOCUMENTED[:] = [ids]
    return _DOCUMENTED[0]


def _on_process_bases(app: Any, name: str, obj: Any, options: Any, bases: list[Any]) -> None:
    bases[:] = public_bases(bases, documented_ids())


def _drop_empty_bases(app: Any, doctree: Any) -> None:
    """Remove the "Bases:" line of a class whose bases are all private or ``object``."""
    from docutils import nodes

    for para in list(doctree.findall(nodes.paragraph)):
        if para.astext().strip() == "Bases:":
            para.parent.remove(para)


def _on_config_inited(app: Any, config: Any) -> None:
    table = api_table()
    documented_ids(table)
    write_pages(Path(app.srcdir) / "api" / "modules", table)
    write_index(Path(app.srcdir) / "api" / "modules", table)
    # read by the autosummary templates (docs/_templates/autosummary)
    config.autosummary_context = {**(config.autosummary_context or {}),
                                  "asymkern_user_guide": USER_GUIDE,
                                  "asymkern_aliases": aliases(table)}


def setup(app: Any) -> dict[str, Any]:
    """Sphinx extension entry point: generate the pages before Sphinx looks for sources."""
    app.connect("config-inited", _on_config_inited)
    app.connect("autodoc-process-bases", _on_process_bases)
    app.connect("doctree-read", _drop_empty_bases)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
