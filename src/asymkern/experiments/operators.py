"""Mollenhauer et al. (2020) Examples 3.10, 3.16 and 4.2: SVD / EVD of empirical RKHS operators.

* :func:`run_covariance` — Example 3.10: covariance operator of k(x, x') = (1 + xᵀx')² under the
  uniform distribution on [−2, 2]², m = 5000 samples; eigenvalues against the analytical
  (269 ± √60841)/90, 32/9, 8/3, 8/3, 64/45 and eigenfunctions against the analytical ones.
* :func:`run_crosscov` — Example 3.16: SVD of Ĉ_YX = (1/m) ΨΦᵀ for
  p(x, y) = ½(p₁(x)p₂(y) + p₂(x)p₁(y)), p₁,₂ = N(±1, ρ²), normalised Gaussian kernel of bandwidth
  0.1, m = 10 000; all three SVD routes.
* :func:`run_gyre` — Example 4.2: coherent sets of the periodically driven double gyre by kernel
  CCA (Gaussian kernel σ = 0.25, lag τ = 10, 120 × 60 box midpoints on [0, 2] × [0, 1]).

No external data is needed.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from .report import Report, _timed, new_figure, save_figure

SQ = np.sqrt(60841.0)
COV_EIGENVALUES = np.array([(269 + SQ) / 90, 32 / 9, 8 / 3, 8 / 3, 64 / 45, (269 - SQ) / 90])
COV_PAPER = [5.78, 3.56, 2.69, 2.66, 1.46, 0.24]  # Figure 1 of Mollenhauer et al. (2020)
#: Example 3.16 text: σ₁ ≈ 0.47, σ₂ ≈ 0.43 (the others "close to zero")
CROSSCOV_PAPER = (0.47, 0.43)
#: Figure 3 of Mollenhauer et al. (2020), captions (a)–(c): σ₁, σ₂, σ₃ of the double gyre
GYRE_PAPER = (0.99, 0.98, 0.94)


def _analytic_cov_eigenfunctions(P: np.ndarray) -> np.ndarray:
    """Unnormalised e_1..e_6 of Example 3.10 at the rows of P."""
    x1, x2 = P[:, 0], P[:, 1]
    r2 = x1**2 + x2**2
    return np.column_stack([
        (-179 + SQ) / 120 + r2,
        x1 * x2,
        x1,
        x2,
        x1**2 - x2**2,
        (-179 - SQ) / 120 + r2,
    ])


def _grid(n: int, lo=-2.0, hi=2.0):
    t = lo + (np.arange(n) + 0.5) * (hi - lo) / n  # midpoints: a quadrature rule for the mean
    g1, g2 = np.meshgrid(t, t, indexing="xy")
    return np.column_stack([g1.ravel(), g2.ravel()]), t


def _svd_routes(op, k: int) -> dict:
    """Top-``k`` SVD of ``op`` by the kernel QR, auxiliary and block routes: (seconds, result)."""
    from ..config import progress_bar

    return {method: _timed(op.svd, k, method=method, solver="auto" if method == "qr" else "arpack")
            for method in progress_bar(("qr", "auxiliary", "block"), desc="SVD routes")}


def _show_symmetric(ax, vals, shape, extent):
    """``imshow`` of ``vals`` reshaped to ``shape``, on a colour scale symmetric about 0."""
    lim = float(np.abs(vals).max())
    return ax.imshow(vals.reshape(shape), origin="lower", extent=extent, cmap="RdBu_r",
                     vmin=-lim, vmax=lim)


QUICK_PREFIX = "QUICK RUN (reduced sizes; the full run's settings are on the results page): "


def run_covariance(quick: bool = False, data_dir=None, out=None, seed: int = 0) -> Report:
    """Example 3.10: eigen-decomposition of the empirical covariance operator, B = I/m."""
    from ..config import progress_bar
    from ..kernels import get_kernel
    from ..linalg.operator_svd import RankDeficientGramWarning
    from ..operators import CovarianceOperator

    m = 1000 if quick else 5000
    n_rep = 2 if quick else 10
    kernel = get_kernel("poly", degree=2, gamma=1.0, coef0=1.0)
    P, t = _grid(60 if quick else 200)
    E = _analytic_cov_eigenfunctions(P)
    E = E / np.sqrt(np.mean(E**2, axis=0))  # ‖e_i‖_{L²(μ)} = 1 by the midpoint rule
    lams, timings, ranks = [], [], []
    first = None
    for rep in progress_bar(range(n_rep), desc="samples"):
        rng = np.random.default_rng(seed + rep)
        X = rng.uniform(-2, 2, (m, 2))
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always", RankDeficientGramWarning)
            cov = CovarianceOperator(kernel=kernel, n_components=6).fit(X)
        timings.append(time.perf_counter() - t0)
        ranks.append(cov.operator_.factor("in").rank)
        lams.append(cov.eigenvalues_)
        if rep == 0:
            first = (X, cov, rec)
    lams = np.array(lams)
    X, cov, rec = first
    op = cov.operator_
    # the other routes on the first sample: Prop. 3.8 (auxiliary eigenproblem) and the 3 SVDs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankDeficientGramWarning)
        t_aux, aux = _timed(op.eig, 6, method="auxiliary", solver="arpack")
        routes = [("eig, kernel QR (Cor. 3.6)", lams[0], timings[0]),
                  ("eig, auxiliary B G (Prop. 3.8, ARPACK)", aux.eigenvalues, t_aux)]
        routes += [(f"svd, {m}", res.singular_values, t)
                   for m, (t, res) in _svd_routes(op, 6).items()]
        try:
            op.eig(7, method="qr")
            rank_error = "none (unexpected)"
        except ValueError as exc:
            rank_error = str(exc).split(";")[0]
    # eigenfunctions: ê_i = v_i / √λ_i (v_i RKHS-normalised) vs analytical e_i in L²(μ)
    V = cov.eigenfunctions_(P) / np.sqrt(cov.eigenvalues_)
    rows = []
    for i in range(6):
        err = np.nan
        if i not in (2, 3):
            d = min(np.mean((V[:, i] - E[:, i]) ** 2), np.mean((V[:, i] + E[:, i]) ** 2))
            err = float(np.sqrt(d))
        rows.append({
            "i": i + 1,
            "analytical λ": float(COV_EIGENVALUES[i]),
            "paper λ (m=5000)": COV_PAPER[i],
            f"ours λ (seed {seed})": float(lams[0, i]),
            f"ours mean ± sd ({n_rep} samples)":
                f"{lams[:, i].mean():.3f} ± {lams[:, i].std():.3f}",
            "‖ê_i − e_i‖_L²(μ)": err,
        })
    # λ_3 = λ_4: compare the 2-D eigenspace by principal angles in L²(μ)
    Q1, _ = np.linalg.qr(E[:, 2:4])
    Q2, _ = np.linalg.qr(V[:, 2:4])
    cosines = np.linalg.svd(Q1.T @ Q2, compute_uv=False)
    sin_max = float(np.sqrt(max(0.0, 1 - cosines.min() ** 2)))
    rows[2]["‖ê_i − e_i‖_L²(μ)"] = f"span{{e3,e4}}: sin θ_max = {sin_max:.3g}"
    rows[3]["‖ê_i − e_i‖_L²(μ)"] = "(see i = 3)"

    route_rows = [{"route": route, "λ_1..λ_6": np.array2string(lam, precision=6),
                   "max abs. diff. vs eig-QR": float(np.max(np.abs(lam - lams[0]))),
                   "time (s)": t_route} for route, lam, t_route in routes]
    notes = [
        "ê_i = v_i/√λ_i where v_i is the RKHS-normalised eigenfunction; then (1/m)Σ ê_i(x_j)² = 1 "
        "exactly, and ê_i is compared with the analytical e_i normalised in L²(μ) (μ uniform on "
        "[−2, 2]², midpoint rule on a grid), up to sign.",
        f"The Gram matrix of the polynomial kernel has rank 6 (numerical rank found by the pivoted "
        f"Cholesky kernel QR: {sorted(set(ranks))}); the RankDeficientGramWarning was raised "
        f"{len(rec)} time(s) on the first sample, as documented. Asking for a 7th eigenpair "
        f"raises: “{rank_error}”.",
        f"Our eigenvalues fluctuate around the analytical ones by the Monte-Carlo error of "
        f"m = {m} samples (the sd column); compare the paper's single run (5.78, 2.69/2.66, 1.46) "
        "with that spread. λ_3 = λ_4 analytically: the empirical pair is split by sampling "
        "noise and only the 2-D eigenspace is determined (Remark 3.14), hence the principal "
        "angle instead of a per-function error.",
    ]
    if quick:  # the paper comparison (the m = 5000 spread) does not apply at quick sizes
        notes = notes[1:2]
    report = Report(
        title=("Mollenhauer et al. (2020) Example 3.10 — eigendecomposition of the covariance "
               "operator"),
        tables={"Eigenvalues and eigenfunctions": rows,
                "Routes agree (first sample)": route_rows},
        notes=notes, quick=quick,
        protocol=(QUICK_PREFIX if quick else "")
        + (f"Kernel (1 + xᵀx')², X uniform on [−2, 2]², m = {m}, B = I/m; eigenpairs by the "
                  f"kernel QR route (CovarianceOperator); {n_rep} independent samples "
                  f"(seeds {seed}..{seed + n_rep - 1}); eigenfunctions compared on a "
                  f"{len(t)}×{len(t)} grid."),
    )
    if out is not None:
        fig, axes = new_figure(2, 6, figsize=(15, 5.2))
        ext = (-2, 2, -2, 2)
        for i in range(6):
            e = E[:, i]
            sign = 1.0 if i in (2, 3) else np.sign(np.sum(V[:, i] * e)) or 1.0
            for row, (vals, lab) in enumerate(((e, "analytical"), (sign * V[:, i], "ours"))):
                ax = axes[row, i]
                _show_symmetric(ax, vals, (len(t), len(t)), ext)
                lam = COV_EIGENVALUES[i] if row == 0 else lams[0, i]
                ax.set_title(f"{lab} e{i + 1}, λ={lam:.3f}", fontsize=9)
                ax.set_xticks([-2, 0, 2])
                ax.set_yticks([-2, 0, 2])
                ax.tick_params(labelsize=7)
                if row == 1:
                    ax.set_xlabel("x₁ (dimensionless)", fontsize=8)
                if i == 0:
                    ax.set_ylabel("x₂ (dimensionless)", fontsize=8)
        fig.suptitle("Example 3.10: eigenfunctions of the covariance operator, kernel (1+xᵀx')² "
                     "(e3/e4: eigenspace only determined up to rotation; colour: "
                     "eigenfunction value, L²(μ)-normalised, symmetric scale per panel)",
                     fontsize=10)
        report.figures.append(save_figure(fig, out, "operators_covariance.png"))
    return report


# ------------------------------------------------------------------------------------------------
RHO = 0.3  # standard deviation of p₁, p₂ (not given in Mollenhauer et al. (2020); see the notes)
BANDWIDTH_316 = 0.1


def _normalized_gaussian(X, Z):
    """Normalised Gaussian kernel exp(−(x−z)²/2s²)/√(2πs²), s = 0.1 (a density in z)."""
    from sklearn.metrics.pairwise import rbf_kernel

    s2 = BANDWIDTH_316**2
    return rbf_kernel(X, Z, gamma=1.0 / (2 * s2)) / np.sqrt(2 * np.pi * s2)


def _sample_316(m, rng, rho=RHO):
    comp = rng.random(m) < 0.5
    x = np.where(comp, 1.0, -1.0) + rho * rng.standard_normal(m)
    y = np.where(comp, -1.0, 1.0) + rho * rng.standard_normal(m)
    return x[:, None], y[:, None]


def _population_svals(rho=RHO, s=BANDWIDTH_316):
    """Singular values of C_YX for the normalised kernel: ½(α ± β), α = ‖μ₁‖², β = ⟨μ₁, μ₂⟩."""
    v = s**2 + 2 * rho**2
    alpha = 1.0 / np.sqrt(2 * np.pi * v)
    beta = alpha * np.exp(-4.0 / (2 * v))
    return 0.5 * (alpha + beta), 0.5 * (alpha - beta)


def run_crosscov(quick: bool = False, data_dir=None, out=None, seed: int = 0) -> Report:
    """Example 3.16: SVD of the empirical cross-covariance operator by the three routes."""
    from ..linalg.operator_svd import RankDeficientGramWarning
    from ..operators import EmpiricalOperator
    from ..operators.empirical import scaled_identity

    m = 2000 if quick else 10000
    k = 6
    rng = np.random.default_rng(seed)
    X, Y = _sample_316(m, rng)
    t0 = time.perf_counter()
    op = EmpiricalOperator(_normalized_gaussian, X, _normalized_gaussian, Y,
                           scaled_identity(m, 1.0 / m))
    _ = op.gram_in, op.gram_out
    t_gram = time.perf_counter() - t0
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always", RankDeficientGramWarning)
        routes = _svd_routes(op, k)
    ranks = (op.factor("in").rank, op.factor("out").rank)
    ref = routes["qr"][1]
    P = np.linspace(-2.5, 2.5, 301)[:, None]
    rows = []
    for method, (seconds, res) in routes.items():
        s = res.singular_values
        cos_v = [abs(float(ref.right[i].inner(res.right[i])[0, 0])) for i in range(2)]
        cos_u = [abs(float(ref.left[i].inner(res.left[i])[0, 0])) for i in range(2)]
        rows.append({
            "route": method,
            "σ_1": s[0], "σ_2": s[1], "σ_3": s[2], "σ_4": s[3], "σ_5": s[4], "σ_6": s[5],
            "max abs(σ − σ_qr)": float(np.max(np.abs(s - ref.singular_values))),
            "min abs⟨v_i, v_i^qr⟩ (i ≤ 2)": min(cos_v),
            "min abs⟨u_i, u_i^qr⟩ (i ≤ 2)": min(cos_u),
            "time (s)": seconds,
        })
    p1, p2 = _population_svals()
    rows.append({"route": "population (our ρ = 0.3)", "σ_1": p1, "σ_2": p2, "σ_3": 0.0})
    rows.append({"route": "paper (Fig. 2)", "σ_1": CROSSCOV_PAPER[0], "σ_2": CROSSCOV_PAPER[1],
                 "σ_3": "≈ 0"})
    # Eckart–Young: the rank-2 truncation keeps almost all of the operator
    s_all = ref.singular_values
    notes = [
        "Kernel: the normalised Gaussian k(x, x') = exp(−(x−x')²/(2·0.1²))/√(2π·0.1²) on both "
        "sides (our reading of “normalized Gaussian kernel with bandwidth 0.1”; Mollenhauer et al. "
        "(2020) writes "
        "Gaussians with bandwidth σ as exp(−‖x−x'‖²/2σ²), i.e. gamma = 1/(2σ²) = 50).",
        "ρ (the standard deviation of p₁, p₂) is not stated in Mollenhauer et al. (2020); we use ρ "
        "= 0.3. For this "
        "density C_YX = ½(μ₂⊗μ₁ + μ₁⊗μ₂) has rank two with σ₁,₂ = ½(α ± β), α = ‖μ₁‖² = "
        "1/√(2π(s² + 2ρ²)), β = ⟨μ₁, μ₂⟩ = α·exp(−2/(s² + 2ρ²)). Since σ₁/σ₂ = (1+e^{−2/v})/"
        "(1−e^{−2/v}) and σ₁ = α(1+e^{−2/v})/2, the paper's pair (0.47, 0.43) would need "
        "v = s² + 2ρ² ≈ 0.64 for the ratio but v ≈ 0.20 for the level; no ρ gives both with this "
        "kernel, so the paper's numbers cannot be matched exactly. With ρ = 0.3 the two dominant "
        "singular values are nearly degenerate (β ≈ 1e-5), at the level (≈ 0.46) of the paper's.",
        f"The Gram matrices ({m}×{m}) are numerically singular (Gaussian kernel); the kernel QR "
        f"route used the rank-revealing pivoted Cholesky factor (numerical ranks {ranks}), with "
        f"{len(rec)} RankDeficientGramWarning(s) as documented. The auxiliary (Prop. 3.13) and "
        "block (Thm. 3.17) routes ran ARPACK on the m×m and 2m×2m non-symmetric auxiliary "
        "matrices (matrix-free products with the Gram matrices).",
        f"σ_3..σ_6 are ≲ {s_all[2]:.1e}: the operator is numerically rank two, and the rank-2 "
        f"truncation keeps a fraction {np.sum(s_all[:2]**2) / np.sum(s_all**2):.6f} of the "
        "squared HS norm of the top-6 part (Eckart–Young).",
        f"Gram matrices: {t_gram:.1f} s to form. Times are single runs on the shared 2-core "
        "machine.",
    ]
    if quick:  # the comparison with the paper's (0.47, 0.43) needs the full m
        notes = notes[2:]
    report = Report(
        title="Mollenhauer et al. (2020) Example 3.16 — SVD of the cross-covariance operator",
        tables={"Singular values by route": rows},
        notes=notes, quick=quick,
        protocol=(QUICK_PREFIX if quick else "")
        + (f"m = n = {m} pairs (x_i, y_i) from p(x, y) = ½(p₁(x)p₂(y) + p₂(x)p₁(y)), "
                  f"p₁,₂ = N(±1, ρ² = {RHO}²), seed {seed}; Ĉ_YX = (1/m)ΨΦᵀ (B = I/m); top "
                  f"{k} singular triplets by kernel QR, auxiliary and block routes."),
    )
    if out is not None:
        g = np.linspace(-2.5, 2.5, 151)
        GX, GY = np.meshgrid(g, g, indexing="xy")

        def npdf(z, mu):
            return np.exp(-((z - mu) ** 2) / (2 * RHO**2)) / np.sqrt(2 * np.pi * RHO**2)

        dens = 0.5 * (npdf(GX, 1) * npdf(GY, -1) + npdf(GX, -1) * npdf(GY, 1))
        v = ref.right(P)
        u = ref.left(P)
        # paired sign: make the largest |v_i| positive (u_i follows since S v_i = σ_i u_i)
        sg = np.sign(v[np.argmax(np.abs(v), axis=0), np.arange(v.shape[1])])
        v, u = v * sg, u * sg
        fig, axes = new_figure(2, 3, figsize=(13, 7.5))
        ext = (-2.5, 2.5, -2.5, 2.5)
        axes[0, 0].imshow(dens, origin="lower", extent=ext, cmap="viridis")
        axes[0, 0].set_title("(a) density p(x, y)")
        axes[0, 1].hist2d(X[:, 0], Y[:, 0], bins=80, range=[[-2.5, 2.5], [-2.5, 2.5]],
                          cmap="viridis")
        axes[0, 1].set_title(f"(b) histogram of the {m} samples")
        for i in range(2):
            axes[0, 2].plot(P[:, 0], v[:, i], label=f"v{i + 1}")
            axes[1, 0].plot(P[:, 0], u[:, i], label=f"u{i + 1}")
        axes[0, 2].set_title("(c) right singular functions v1, v2 (of x)")
        axes[1, 0].set_title("(d) left singular functions u1, u2 (of y)")
        axes[0, 2].legend()
        axes[1, 0].legend()
        sv = ref.singular_values
        uu = ref.left(g[:, None]) * sg
        vv = ref.right(g[:, None]) * sg
        for i, ax in enumerate((axes[1, 1], axes[1, 2])):
            # (σ_i u_i ⊗ v_i)(x, y) = σ_i u_i(y) v_i(x): rows y, columns x
            T = sv[i] * np.outer(uu[:, i], vv[:, i])
            _show_symmetric(ax, T, T.shape, ext)
            ax.set_title(f"({'ef'[i]}) σ{i + 1} u{i + 1}⊗v{i + 1}, σ{i + 1} = {sv[i]:.4f}")
        for ax in axes.ravel():
            ax.set_xlabel("x (dimensionless)")
        axes[1, 0].set_xlabel("y (dimensionless)")
        for ax in (axes[0, 0], axes[0, 1], axes[1, 1], axes[1, 2]):
            ax.set_ylabel("y (dimensionless)")
        axes[0, 2].set_ylabel("v_i(x) (RKHS-normalised)")
        axes[1, 0].set_ylabel("u_i(y) (RKHS-normalised)")
        fig.tight_layout()
        report.figures.append(save_figure(fig, out, "operators_crosscov.png"))
    return report


# ------------------------------------------------------------------------------------------------
GYRE = {"A": 0.25, "delta": 0.25, "omega": 2 * np.pi}


def double_gyre_flow(P: np.ndarray, tau: float = 10.0, t0: float = 0.0, rtol: float = 1e-8,
                     atol: float = 1e-10, A: float = GYRE["A"], delta: float = GYRE["delta"],
                     omega: float = GYRE["omega"]) -> np.ndarray:
    """Flow map Ξ^τ of the periodically driven double gyre (Mollenhauer et al., 2020, Ex. 4.2),
    scipy RK45.

    ẋ₁ = −πA sin(πf) cos(πx₂), ẋ₂ = πA cos(πf) sin(πx₂) ∂f/∂x, f(x, t) = δ sin(ωt) x² +
    (1 − 2δ sin(ωt)) x. All points are integrated together as one vector field.
    """
    from scipy.integrate import solve_ivp

    n = P.shape[0]

    def rhs(t, z):
        x1, x2 = z[:n], z[n:]
        st = delta * np.sin(omega * t)
        f = st * x1**2 + (1 - 2 * st) * x1
        df = 2 * st * x1 + (1 - 2 * st)
        return np.concatenate([-np.pi * A * np.sin(np.pi * f) * np.cos(np.pi * x2),
                               np.pi * A * np.cos(np.pi * f) * np.sin(np.pi * x2) * df])

    sol = solve_ivp(rhs, (t0, t0 + tau), np.concatenate([P[:, 0], P[:, 1]]), method="RK45",
                    rtol=rtol, atol=atol)
    if not sol.success:  # pragma: no cover
        raise RuntimeError(f"double gyre integration failed: {sol.message}")
    z = sol.y[:, -1]
    return np.column_stack([z[:n], z[n:]])


def _centred_span_cosines(V: np.ndarray, U: np.ndarray) -> np.ndarray:
    """cos of the angle between each centred column of V and the span of U's centred columns
    (the grid inner product, i.e. L² of the uniform measure on the box)."""
    Q = np.linalg.qr(U - U.mean(axis=0))[0]
    Vc = V - V.mean(axis=0)
    return np.linalg.norm(Q.T @ Vc, axis=0) / np.linalg.norm(Vc, axis=0)


def gyre_transfer_estimators(X, Y, gamma: float, alpha: float, V_cca, k: int = 3,
                             n_landmarks: int = 800, rank: int = 8, seed: int = 0):
    """Coherent sets of the double gyre from the reduced-rank Koopman estimators.

    The RRR estimator K̂ = Φ_X U Vᵀ Ψ_Yᵀ (``KoopmanOperator(estimator='rrr')``, exact and
    Nyström) maps the data g(Y) of a function of the final state to the values
    (K̂g)(X) = E U Vᵀ g(Y) (E = [k(x_i, x_j)] U-side basis at the initial states). Its SVD
    between the empirical L² spaces of the y_i and the x_i (each with the inner product
    (1/n) Σ_i f(z_i) g(z_i), the VAMP/CCA-type normalisation of coherent sets) is that of the
    rank-r matrix (E U)(V)ᵀ: thin QR of both factors and an r×r SVD. Its left singular
    functions u_i (of the initial state) are compared with the centred kernel-CCA functions v_i
    (columns of ``V_cca``) by cos∠(v_i, span{u_1..u_{k+1}}) in L² of the grid (centred; u_1 is
    the nearly constant function, σ_1 ≈ 1). Returns ``(rows, panels)``.
    """
    from ..config import progress_bar
    from ..operators import KoopmanOperator

    configs = [(f"rrr, rank {rank}", dict()),
               (f"rrr, rank {rank}, Nyström m = {n_landmarks}", dict(n_landmarks=n_landmarks))]
    rows, panels = [], []
    for name, kw in progress_bar(configs, desc="Koopman estimators"):
        t0 = time.perf_counter()
        est = KoopmanOperator(kernel="rbf", kernel_params={"gamma": gamma}, alpha=alpha,
                              n_components=k + 1, estimator="rrr", rank=rank,
                              random_state=seed, **kw).fit(X, Y)
        B = est.operator_.B  # U Vᵀ (n×n, rank r; Nyström: U nonzero on the landmark rows)
        nz = np.flatnonzero(np.any(B.U != 0, axis=1))
        EU = est.kernel_(X, est.X_fit_[nz]) @ B.U[nz]
        Q1, R1 = np.linalg.qr(EU)
        Q2, R2 = np.linalg.qr(B.V)
        A, sv, _ = np.linalg.svd(R1 @ R2.T)
        U = Q1 @ A[:, : k + 1] * np.sqrt(X.shape[0])  # unit empirical L² norm
        dt = time.perf_counter() - t0
        cos = _centred_span_cosines(V_cca[:, :k], U)
        row = {"estimator": name}
        row.update({f"σ_{i + 1}": float(sv[i]) for i in range(k + 1)})
        row.update({f"cos∠(v_{i + 1}, span u)": float(cos[i]) for i in range(k)})
        row["fit + SVD (s)"] = round(dt, 2)
        rows.append(row)
        panels.append((name, U, sv))
    return rows, panels


def plot_gyre_estimators(panels, nx: int, ny: int, out) -> str:
    """Figure ``operators_gyre_estimators.png``: the left L² singular functions u_i of
    :func:`gyre_transfer_estimators` on the nx×ny grid, one row per estimator."""
    ncol = panels[0][1].shape[1]
    fig, axes = new_figure(len(panels), ncol, figsize=(3.9 * ncol, 2.3 * len(panels)),
                           squeeze=False, sharex=True, sharey=True)
    for r_, (name, U, sv) in enumerate(panels):
        for i in range(ncol):
            ax = axes[r_, i]
            ui = U[:, i] * (np.sign(U[np.argmax(np.abs(U[:, i])), i]) or 1.0)
            im = _show_symmetric(ax, ui, (ny, nx), (0, 2, 0, 1))
            ax.set_title(f"{name}: u{i + 1}, σ = {sv[i]:.3g}", fontsize=7)
            if r_ == len(panels) - 1:
                ax.set_xlabel("x₁ (dimensionless)", fontsize=8)
            if i == 0:
                ax.set_ylabel("x₂ (dimensionless)", fontsize=8)
            fig.colorbar(im, ax=ax, shrink=0.8).set_label(f"u{i + 1}(x) (L²-normalised)",
                                                           fontsize=7)
    fig.suptitle("Example 4.2: left L² singular functions of the RRR Koopman estimators",
                 fontsize=10)
    fig.tight_layout()
    return save_figure(fig, out, "operators_gyre_estimators.png")


GYRE_FIGURE_DATE = "2026-11-23"  # the full default run whose figure the v_i reading describes


def gyre_centring_note(centred, uncentred, regularization: float, quick: bool = False,
                       defaults: bool = False) -> str:
    """The centring note of :func:`run_gyre`, built from the computed canonical correlations
    (``centred``: σ_1.. of the centred CCA operator, ``uncentred``: of the uncentred one).

    The description of the singular functions v_i is a reading of the figure of one full run;
    it is printed only when ``defaults`` (ε = 1e-4, centred) and not ``quick``."""
    paper = np.asarray(GYRE_PAPER, dtype=float)
    c = np.asarray(centred, dtype=float)[: len(paper)]
    u = np.asarray(uncentred, dtype=float)
    dc = np.abs(c - paper)
    du = np.abs(u[: len(paper)] - paper)
    fmt = ", ".join
    text = (f"Centring (this run, ε = {regularization:g}"
            + (", quick grid" if quick else "") + "): the centred CCA operator gives "
            f"σ_1, σ_2, σ_3 = {fmt(f'{v:.3f}' for v in c)} against the paper's "
            f"{fmt(f'{v:.2f}' for v in paper)} (differences {fmt(f'{v:.3f}' for v in dc)}); "
            f"the uncentred one gives σ_1.. = {fmt(f'{v:.3f}' for v in u)} (differences from "
            f"the paper's {fmt(f'{v:.3f}' for v in du)}).")
    shift = np.abs(u[1: len(c) + 1] - c[: len(u) - 1])
    if u[0] >= 0.995 and shift.size and float(shift.max()) <= 0.01:
        text += (f" The uncentred values are an extra leading σ ≈ {u[0]:.3f} (an almost "
                 "constant singular function: constants are invariant under any flow) followed "
                 f"by the centred ones (to within {float(shift.max()):.1g}).")
    if float(dc.max()) < float(du.max()):
        text += (" App. A.2 writes the uncentred operators, but the centred values are the "
                 "closer to the paper's, so we take its figure to be centred (as is usual for "
                 "CCA).")
    else:
        text += (" Here the centred values are not the closer to the paper's (largest "
                 f"difference {float(dc.max()):.3f} vs {float(du.max()):.3f} uncentred).")
    if min(float(dc.max()), float(du.max())) > 0.02:
        text += " Neither matches the paper's values to within 0.02."
    text += " ε is not given in the paper, and σ_3 depends on it."
    if defaults and not quick:
        text += (f" With the default options, the figure of a run on {GYRE_FIGURE_DATE} showed: "
                 "v_1 separates the two gyres, v_2 their cores from the outer region, v_3 mixes "
                 "both: the finite-time coherent sets.")
    return text


def run_gyre(quick: bool = False, data_dir=None, out=None, seed: int = 0,
             regularization: float = 1e-4, center: bool = True) -> Report:
    """Example 4.2: coherent sets of the double gyre by kernel CCA (SVD of the CCA operator)."""
    from ..operators import KernelCCA

    nx, ny = (40, 20) if quick else (120, 60)
    tau, sigma, k = 10.0, 0.25, 3
    n_sv = k + 1
    xs = (np.arange(nx) + 0.5) * 2.0 / nx
    ys = (np.arange(ny) + 0.5) * 1.0 / ny
    GX, GY = np.meshgrid(xs, ys, indexing="xy")
    X = np.column_stack([GX.ravel(), GY.ravel()])
    t_flow, Y = _timed(double_gyre_flow, X, tau)
    gamma = 1.0 / (2 * sigma**2)

    def cca(centred):
        return KernelCCA(kernel_x="rbf", kernel_y="rbf", kernel_x_params={"gamma": gamma},
                         kernel_y_params={"gamma": gamma}, alpha=regularization,
                         n_components=n_sv, center=centred).fit(X, Y)

    t_fit, kcca = _timed(cca, center)
    op = kcca.operator_
    s = kcca.canonical_correlations_
    lab = "centred" if center else "uncentred"
    rows = [{"": f"ours ({lab}, kernel QR route)", "σ_1": s[0], "σ_2": s[1], "σ_3": s[2],
             "σ_4": s[3]},
            {"": "paper (Fig. 3)", **dict(zip(("σ_1", "σ_2", "σ_3"), GYRE_PAPER))}]
    so = cca(not center).canonical_correlations_
    rows.append({"": f"ours ({'uncentred' if center else 'centred'})", "σ_1": so[0],
                 "σ_2": so[1], "σ_3": so[2], "σ_4": so[3]})
    # cross-check with the block route (Thm. 3.17, ARPACK, 2n×2n) on the same operator
    t_blk, blk = _timed(op.svd, k, method="block", solver="arpack")
    rows.insert(1, {"": f"ours ({lab}, block route)", "σ_1": blk.singular_values[0],
                    "σ_2": blk.singular_values[1], "σ_3": blk.singular_values[2]})
    cosv = [abs(float(kcca.x_singular_functions_[i].inner(blk.right[i])[0, 0]))
            for i in range(k)]
    V = kcca.x_singular_functions_(X)
    # a coherent set: sign structure of v_2 on the grid (left/right halves for the two gyres)
    notes = [
        f"Flow map by scipy solve_ivp (RK45, adaptive, rtol 1e-8, atol 1e-10), all {X.shape[0]} "
        f"points integrated from t = 0 to τ = {tau} in {t_flow:.1f} s. A = 0.25, δ = 0.25, "
        "ω = 2π as in the paper.",
        f"Gaussian kernel with σ = {sigma}: exp(−‖x−x'‖²/2σ²), gamma = {gamma:g}. The Tikhonov "
        f"parameter of the regularised CCA operator (Ĉ_YY + ε)^(-1/2) Ĉ_YX (Ĉ_XX + ε)^(-1/2) is "
        f"not given in Mollenhauer et al. (2020); we use ε = {regularization:g} "
        f"({'centred' if center else 'uncentred, as in App. A.2'} covariance operators).",
        f"Gram matrices numerically low-rank: their eigendecompositions came from pivoted "
        f"Cholesky factors of rank {op.factor('in').rank} (x) and {op.factor('out').rank} (y) of "
        f"{X.shape[0]}; fit (kernel QR route) {t_fit:.1f} s, block route (ARPACK) "
        f"{t_blk:.1f} s; |⟨v_i^qr, v_i^block⟩| ≥ {min(cosv):.6f}.",
    ]
    if not quick:  # the centring argument compares with the paper's values at full resolution
        notes.append(gyre_centring_note(s if center else so, so if center else s, regularization,
                                        defaults=center and regularization == 1e-4))
    report = Report(
        title=("Mollenhauer et al. (2020) Example 4.2 — coherent sets of the double gyre by "
               "kernel CCA"),
        tables={"Leading singular values (canonical correlations)": rows},
        notes=notes, quick=quick,
        protocol=(QUICK_PREFIX if quick else "")
        + (f"Test points: midpoints of a {nx}×{ny} box discretisation of [0, 2]×[0, 1]; "
                  f"y_i = Ξ^τ(x_i), τ = {tau}; SVD of the regularised CCA operator "
                  "S = Ψ (G_Ψ + nεI)^(-1/2)(G_Φ + nεI)^(-1/2) Φᵀ (KernelCCA, kernel QR route); "
                  "right singular functions v_i evaluated on the grid."),
    )
    if out is not None:
        fig, axes = new_figure(1, k, figsize=(4.6 * k, 2.7))
        for i in range(k):
            vi = V[:, i] * (np.sign(V[np.argmax(np.abs(V[:, i])), i]) or 1.0)
            im = _show_symmetric(axes[i], vi, (ny, nx), (0, 2, 0, 1))
            axes[i].set_title(f"v{i + 1}, σ{i + 1} = {s[i]:.4f}")
            axes[i].set_xlabel("x₁ (dimensionless)")
            if i == 0:
                axes[i].set_ylabel("x₂ (dimensionless)")
            fig.colorbar(im, ax=axes[i], shrink=0.8, label=f"v{i + 1}(x) (RKHS-normalised)")
        fig.suptitle("Example 4.2: right singular functions of the CCA operator (double gyre)",
                     fontsize=10)
        fig.tight_layout()
        report.figures.append(save_figure(fig, out, "operators_gyre.png"))
    # The same coherent-set analysis from the Koopman estimators' SVD
    rows_k, panels = gyre_transfer_estimators(X, Y, gamma, regularization, V, k=k,
                                              n_landmarks=200 if quick else 800, seed=seed)
    report.tables["Reduced-rank Koopman estimators: L² SVD vs the CCA functions"] = rows_k
    report.notes.append(
        "Reduced-rank Koopman estimators: KoopmanOperator(estimator='rrr', rank=8)"
        ".fit(X, Y), exact and Nyström, same kernel and ε; SVD of K̂ between the empirical L² "
        "spaces of the y_i and the x_i (gyre_transfer_estimators). Uncentred, so σ_1 ≈ 1 "
        "belongs to the nearly constant u_1 (compare the uncentred CCA row); "
        "cos∠(v_i, span u) ≈ 1 means the CCA coherent-set function v_i lies in the span of "
        "u_1..u_4. The full-rank and PCR estimators have no informative L² SVD (G(G + nεI)⁻¹ "
        "≈ I, and PCR does not see y), so they are not listed.")
    if out is not None:
        report.figures.append(plot_gyre_estimators(panels, nx, ny, out))
    return report
