"""Tao et al. (2024) Figures 5–6 (and App. B): node-classification F1 against the number of
landmarks m, KSVD with the asymmetric Nyström method vs KPCA with the symmetric Nyström method,
RBF kernel.

Protocol (our reading of §4.4 and App. C.2): data matrix A = D⁻¹(A_graph + I); KSVD uses the RBF
kernel between the rows x_i and the columns z_j of A (an asymmetric G although the kernel
function is symmetric), KPCA the RBF kernel between rows. Per method the bandwidth is chosen by
10-fold CV (LS-SVM Micro-F1) over the same grid {½, 1, 2, 4, 8}·γ₀, γ₀ = √(M·var A), on the exact
embedding; r = min(r_max, m) components; embeddings [UΣ, VΣ] (KSVD, eq. 5 scores) and U√Λ (KPCA),
rescaled to unit mean squared row norm; linear LS-SVM (γ = 1, one-vs-rest, as in Table 1) on
random stratified 50/50 splits. Both kernels are double-centred (H G H, as KPCA and the KSVD of
Table 1 are; ``center=False`` drops it): the Nyström methods then read rows and columns of the
centred lazy matrix, whose row/column means cost one pass over the kernel values.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..graphs import node_classification
from ..kernels import KernelMatrix, get_kernel
from ..linalg.nystrom import asymmetric_nystrom
from ..linalg.svd import top_svd
from ._graph_data import graph_problem
from .ksvd_graphs import _pick_by_cv, normalize_embedding
from .report import new_figure, save_figure


def kpca_nystrom_embedding(K: KernelMatrix, r: int, m: int, seed: int) -> np.ndarray:
    """Classic (symmetric) Nyström KPCA scores ũ√λ̃ from m uniform landmarks (App. A.2.1)."""
    rs = np.random.RandomState(seed)
    N = K.shape[0]
    I = np.sort(rs.choice(N, m, replace=False))
    C = np.asarray(K.cols(I), dtype=np.float64)
    lam, W = np.linalg.eigh(C[I])
    lam, W = lam[::-1][:r], W[:, ::-1][:, :r]
    keep = lam > lam[0] * 1e-12
    lam, W = lam[keep], W[:, keep]
    # ũ = √(m/N) C W Λ⁻¹ (unit-norm eigenvectors), λ̃ = (N/m) λ; score ũ √λ̃ = C W / √λ
    return C @ (W / np.sqrt(lam))


def ksvd_nystrom_embedding(G: KernelMatrix, r: int, m: int, seed: int) -> np.ndarray:
    """[ŨΣ̃, ṼΣ̃] of the asymmetric Nyström method (eq. 9), m row and m column landmarks."""
    res = asymmetric_nystrom(G, r, m, m, random_state=seed)
    return np.hstack([res.U * res.s, res.V * res.s])


def _exact(method, G, K, r, seed):
    if method == "KSVD":
        ex = top_svd(G.to_array(), r, solver="dense" if G.shape[0] <= 4000 else "arpack",
                     random_state=seed)
        return np.hstack([ex.U * ex.s, ex.V * ex.s])
    Kd = K.to_array()
    if Kd.shape[0] <= 4000:
        lam, W = np.linalg.eigh(Kd)
        lam, W = lam[::-1][:r], W[:, ::-1][:, :r]
    else:
        from scipy.sparse.linalg import eigsh

        lam, W = eigsh(Kd, k=r, which="LA",
                       v0=np.random.RandomState(seed).uniform(-1, 1, Kd.shape[0]))
    return W * np.sqrt(np.maximum(lam, 0.0))


def run_f1_study(names, quick: bool = False, data_dir=None, out=None, seed: int = 0,
                 figures: list | None = None, r_max: int | None = None,
                 m_grid=None, n_trials: int | None = None,
                 center: bool = True, mults=None,
                 orientation: str = "cites") -> tuple[list, list]:
    """Rows (dataset, m, F1 of both methods) and the chosen bandwidths; saves the PNG to ``out``.

    ``mults``: the CV grid of bandwidth multiples of γ0 (default {½, 1, 2, 4, 8}); ``r_max``:
    the component cap (r = min(r_max, m); default 256); ``orientation``: the graph's edge
    orientation ('cites' or 'cited_by', :func:`asymkern.datasets.graphs.load_citation_graph`).
    """
    from ..config import progress_bar

    n_sub = 400 if quick else None
    r_max = r_max or (16 if quick else 256)
    m_grid = m_grid or ([32, 64, 128] if quick else [64, 128, 256, 512, 1024, 2048])
    mults = tuple(float(c) for c in mults) if mults else (
        (1.0, 2.0) if quick else (0.5, 1.0, 2.0, 4.0, 8.0))
    trials = n_trials or (2 if quick else 10)
    folds = 3 if quick else 10
    rows, chosen = [], []
    err = {}  # (dataset, m, method, "micro"/"macro") -> std over trials (figure only)
    for name in progress_bar(names, desc="Fig. 5-6 (F1)"):
        A, X, Z, g0, y = graph_problem(name, data_dir, n_sub, k=1.0, orientation=orientation)
        best = {}
        for method in ("KSVD", "KPCA"):
            cands = {}
            for mu in mults:
                kern = get_kernel("rbf", bandwidth=mu * g0)
                G = KernelMatrix(kern, X, Z, center=center)
                K = KernelMatrix(kern, X, center=center)
                cands[mu] = normalize_embedding(_exact(method, G, K, r_max, seed))
            mu, scores = _pick_by_cv(cands, y, folds, seed)
            best[method] = (mu, cands[mu])
            chosen.append({"dataset": name, "orientation": orientation, "method": method,
                           "bandwidth / γ0": mu,
                           "CV Micro-F1 per multiple": ", ".join(
                               f"{k:g}: {v:.3f}" for k, v in scores.items())})
        for m in [mm for mm in m_grid if mm <= A.shape[0]] + ["exact"]:
            row = {"dataset": name, "orientation": orientation,
                   "r": min(r_max, A.shape[0] if m == "exact" else m), "m": m}
            for method in ("KSVD", "KPCA"):
                mu, E_exact = best[method]
                if m == "exact":
                    E = E_exact
                else:
                    kern = get_kernel("rbf", bandwidth=mu * g0)
                    r = min(r_max, m)
                    E = normalize_embedding(
                        ksvd_nystrom_embedding(KernelMatrix(kern, X, Z, center=center), r, m,
                                               seed)
                        if method == "KSVD" else
                        kpca_nystrom_embedding(KernelMatrix(kern, X, center=center), r, m, seed))
                f = node_classification(E, y, n_trials=trials, random_state=seed)
                for kind in ("micro", "macro"):
                    row[f"{method} {kind}"] = f[f"{kind}_f1"]
                    err[name, m, method, kind] = f[f"{kind}_f1_std"]
            rows.append(row)
    if out is not None:
        path = _plot(rows, names, Path(out), err, trials)
        if figures is not None:
            figures.append(str(path))
    return rows, chosen


def _plot(rows, names, out: Path, err=None, trials=None) -> Path:
    err = err or {}
    fig, axes = new_figure(1, len(names), figsize=(4.6 * len(names), 3.8), squeeze=False,
                           sharey=True)
    for j, (ax, name) in enumerate(zip(axes[0], names)):
        sub = [r_ for r_ in rows if r_["dataset"] == name and r_["m"] != "exact"]
        ex = [r_ for r_ in rows if r_["dataset"] == name and r_["m"] == "exact"]
        ms = [r_["m"] for r_ in sub]
        for key, col in (("KSVD", "green"), ("KPCA", "blue")):
            for kind, fmt in (("macro", "o-"), ("micro", "^:")):
                ax.errorbar(ms, [r_[f"{key} {kind}"] for r_ in sub],
                            yerr=[err.get((name, m, key, kind), 0.0) for m in ms], fmt=fmt,
                            color=col, capsize=2, ms=4, label=f"{key} {kind}-F1")
            if ex:
                ax.axhline(ex[0][f"{key} macro"], color=col, ls="--", lw=0.8,
                           label=f"{key} macro-F1, exact")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("landmarks m (count)")
        if j == 0:
            ax.set_ylabel("F1 on held-out nodes (fraction)")
        ax.set_title(name.capitalize())
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    spread = f"; error bars: std over {trials} splits" if trials else ""
    fig.suptitle("KSVD + asymmetric Nyström vs KPCA + symmetric Nyström (RBF kernel"
                 f"{spread})", fontsize=10)
    fig.tight_layout()
    return Path(save_figure(fig, out, "nystrom_fig5_6_f1.png"))
