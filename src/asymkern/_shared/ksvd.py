"""KernelSVD's kernel set-up and input checks: the data-driven bandwidth rules and the sample
weights (shared with asymkern._dask and asymkern._torch)."""

from __future__ import annotations

import numpy as np

from .._validation import as_weights
from ..kernels import resolve_kernel
from ..kernels.base import neg_scaled_sq_dists

#: Multiple of the median distance used by ``bandwidth='auto'`` (measured on the citation and
#: Amazon graphs, docs/results/embed_defaults.md).
AUTO_BANDWIDTH_FACTOR = 8.0


def median_sample_indices(n: int, m: int, n_samples: int = 500, wx=None, wz=None):
    """The rows of X and Z that :func:`median_bandwidth` uses (fixed seed, sorted): at most
    ``n_samples`` of each set, drawn among the rows of positive weight ``wx`` / ``wz`` (a row
    of weight 0 is not in the sample, as it is not in the weighted problem)."""
    rng = np.random.default_rng(0)

    def draw(count, w):
        if w is None:
            return np.sort(rng.choice(count, min(n_samples, count), replace=False))
        pos = np.flatnonzero(np.asarray(w) > 0)
        return pos[np.sort(rng.choice(pos.size, min(n_samples, pos.size), replace=False))]

    i = draw(n, wx)
    j = draw(m, wz)
    return i, j


def weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    """The median of ``values`` taken ``weights`` times: the mean of v_lo and v_hi, the first
    sorted values whose cumulative weight c_k reaches half the total W (c_lo ≥ W/2) and
    passes it (c_hi > W/2). For integer weights this is exactly ``np.median`` of the
    repeated values (the two middle ones of an even count, the middle one of an odd count);
    it depends on the weights only up to a common factor."""
    order = np.argsort(values, kind="stable")
    v, c = values[order], np.cumsum(weights[order])
    half = float(c[-1]) / 2
    tie = 4.0 * v.size * float(np.finfo(np.float64).eps) * half  # the sums' rounding
    at = np.array([np.searchsorted(c, half - tie, side="left"),
                   np.searchsorted(c, half + tie, side="right")])
    at = np.minimum(at, v.size - 1)
    return float(0.5 * (v[at[0]] + v[at[1]]))


def median_bandwidth(X, Z, n_samples: int = 500, wx=None, wz=None) -> float:
    """Median Euclidean distance ‖x_i − z_j‖ between the rows of X and of Z.

    The standard median heuristic for the bandwidth γ of κ(x, z) = exp(−‖x − z‖²/γ²) (Tao et al.
    (2024) §4 and App. C.2 tune γ around the data scale; this is a cheap data-driven scale). At
    most ``n_samples`` rows of each set are used, drawn with a fixed seed, so the value is
    deterministic. Zero distances (x_i = z_j) are skipped; 1.0 when every distance is zero.
    The distances are those of the kernels (:func:`~asymkern.kernels.base.neg_scaled_sq_dists`:
    centred, so data far from the origin keep their digits; scikit-learn's
    ``euclidean_distances`` gave 2.83 instead of 2.16 for unit-normal data at an offset of 1e8,
    and 22.6 at 1e9).

    With sample weights ``wx`` (rows of X) and ``wz`` (rows of Z), the median of the pairs'
    distances is weighted by w_i·v_j over the rows of positive weight (:func:`weighted_median`),
    so that a weight 0 removes the row and, for sets of at most ``n_samples`` rows, an integer
    weight equals repeating it, as in the weighted KSVD the bandwidth is chosen for.

    Parameters
    ----------
    X : (n, d) array or sparse matrix.  Z : (m, d) array or sparse matrix.
    n_samples : int, default 500
    wx, wz : (n,) and (m,) arrays of weights ≥ 0, optional

    Returns
    -------
    float
    """
    i, j = median_sample_indices(X.shape[0], Z.shape[0], n_samples, wx, wz)
    with np.errstate(over="ignore"):
        D = np.sqrt(-neg_scaled_sq_dists(X[i], Z[j], 1.0), dtype=np.float64)
    keep = np.isfinite(D) & (D > 0)
    if not keep.any():
        return 1.0
    if wx is None and wz is None:
        return float(np.median(D[keep]))
    a = np.ones(i.size) if wx is None else np.asarray(wx, dtype=np.float64)[i]
    b = np.ones(j.size) if wz is None else np.asarray(wz, dtype=np.float64)[j]
    W = a[:, None] * b[None, :]
    return weighted_median(D[keep], W[keep])


def _resolve_bandwidth(params: dict, X, Z, wx=None, wz=None) -> tuple[dict, float | None]:
    """Replace ``bandwidth='auto'`` / ``'median'`` by a number computed from the two sets
    (weighted by the sample weights ``wx``, ``wz`` when given: :func:`median_bandwidth`)."""
    bw = params.get("bandwidth")
    if not isinstance(bw, str):
        return params, None
    key = bw.lower()
    if key not in ("auto", "median"):
        raise ValueError(f"kernel_params['bandwidth'] must be a positive number, 'auto' or "
                         f"'median', got {bw!r}")
    if params.get("gamma") is not None:
        raise ValueError("give either gamma or bandwidth, not both")
    value = median_bandwidth(X, Z, wx=wx, wz=wz)
    if key == "auto":
        value *= AUTO_BANDWIDTH_FACTOR
    return {**params, "bandwidth": value}, value


def build_kernel(est):
    """The kernel of a KernelSVD ``est`` and whether its bandwidth is chosen from the data.

    ``kernel_params={'bandwidth': 'auto'|'median'}`` builds the kernel with a placeholder
    bandwidth (the value needs both training sets, :func:`_resolve_bandwidth`); the
    estimator-level ``gamma`` goes through :func:`~asymkern.kernels.resolve_kernel` (never
    modifying a Kernel instance). ``gamma`` together with a bandwidth in ``kernel_params`` sets
    the width twice: ``ValueError``.
    """
    params = dict(est.kernel_params or {})
    bw = params.get("bandwidth")
    if est.gamma is not None and bw is not None:
        raise ValueError(
            f"gamma={est.gamma!r} is given both as an estimator parameter and as "
            f"kernel_params['bandwidth']={bw!r}; set the kernel width once (gamma=None with "
            "kernel_params={'bandwidth': 'auto'} chooses it from the data)"
        )
    auto_bw = isinstance(bw, str)
    if auto_bw:  # placeholder; the real value needs the two validated sets
        params["bandwidth"] = 1.0
    return resolve_kernel(est.kernel, params, gamma=est.gamma), auto_bw


#: KernelSVD's positive weights lie in [2⁻⁵⁰⁰, 2⁵⁰⁰]: √w, the weighted sums Σ w and the weighted
#: normalisers Σ_r w_r κ(x, z_r) then stay far inside the float64 range
WEIGHT_EXPONENT = 500


def check_weights(weights, n: int, name: str, what: str) -> np.ndarray | None:
    """``sample_weight``-style weights as a float64 (n,) array ≥ 0 with a positive sum (None
    stays None): :func:`asymkern._validation.as_weights`, the one weight validation, and
    KernelSVD's range: every positive weight in [2⁻⁵⁰⁰, 2⁵⁰⁰] (outside it the weighted
    kernel matrix W^{1/2} G W_z^{1/2} and its sums leave the float64 range)."""
    w = as_weights(weights, n, name, what)
    if w is None:
        return None
    positive = w[w > 0]
    low, high = float(positive.min()), float(positive.max())
    bound = 2.0 ** WEIGHT_EXPONENT
    if high > bound or low < 1.0 / bound:
        raise ValueError(
            f"{name}: the positive weights must lie in [2**-{WEIGHT_EXPONENT}, "
            f"2**{WEIGHT_EXPONENT}] (about 3e-151 to 3e150), got {low:.3g} to {high:.3g}; "
            "rescale them (a common factor changes the singular values, not the directions)")
    return w
