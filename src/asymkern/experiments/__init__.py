"""Paper reproductions: one module per table/figure, registered for ``asymkern reproduce NAME``.

Each experiment is a function ``run(quick=False, data_dir=None, out=None, seed=0) -> Report``
listed in :data:`REGISTRY` as ``"module:function"`` and imported only when run.
"""

from __future__ import annotations

import importlib

from .report import Report

# name -> (module path relative to this package, function name, one-line description)
REGISTRY: dict[str, tuple[str, str, str]] = {
    "nystrom-solvers": ("nystrom_solvers", "run",
                        "Tao et al. (2024) Table 4/6, Fig. 4-6: SVD solvers"),
    "askls-nodes": ("askls", "run_nodes", "He et al. (2023) Table III: node classification"),
    "askls-uci": ("askls", "run_uci", "He et al. (2023) Table IV: UCI classification"),
    "askls-kl": ("askls", "run_kl", "He et al. (2023): KL-divergence kernel demonstration"),
    "operators-covariance": ("operators", "run_covariance",
                             "Mollenhauer et al. (2020) Example 3.10"),
    "operators-crosscov": ("operators", "run_crosscov", "Mollenhauer et al. (2020) Example 3.16"),
    "operators-gyre": ("operators", "run_gyre",
                       "Mollenhauer et al. (2020) Example 4.2 (double gyre, KCCA)"),
    "nystrom-machines": ("nystrom_machines", "run", "Li, Liu and Zhang Figures 1-2: GSA vs LLA"),
    "ksvd-graphs": ("ksvd_graphs", "run", "Tao et al. (2024) Table 1: directed-graph embeddings"),
    "ksvd-biclustering": ("ksvd_biclustering", "run", "Tao et al. (2024) Table 2: biclustering"),
    "ksvd-general": ("ksvd_general", "run", "Tao et al. (2024) Table 3/5: general data"),
}


def get_experiment(name: str):
    """The ``run`` function registered under ``name``, imported on demand.

    Parameters
    ----------
    name : str
        A key of :data:`REGISTRY` (e.g. ``'askls-uci'``).

    Returns
    -------
    callable
        ``run(quick=False, data_dir=None, out=None, seed=0) -> Report``.

    Raises
    ------
    ValueError
        For a name not in :data:`REGISTRY`.

    See Also
    --------
    Report : What the experiment returns.

    Examples
    --------
    >>> from asymkern.experiments import get_experiment
    >>> run = get_experiment("operators-covariance")
    >>> callable(run)
    True
    >>> report = run(quick=True)  # doctest: +SKIP
    """
    if name not in REGISTRY:
        raise ValueError(f"unknown experiment {name!r}; available: {', '.join(sorted(REGISTRY))}")
    module, func, _ = REGISTRY[name]
    mod = importlib.import_module(f"{__name__}.{module}")
    return getattr(mod, func)


__all__ = ["REGISTRY", "Report", "get_experiment"]
