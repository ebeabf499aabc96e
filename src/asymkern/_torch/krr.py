"""NystromKernelRidge on torch: ``fit`` / ``predict`` for tensors or ``device`` (private).

Paper 004 (Algorithm 1, eq. (11)–(13)) with the same algebra as the in-memory estimator; only
the O(n·m) work runs on the device. The landmarks are drawn by the numpy code from the same
``random_state`` stream and A = V_s Σ_s⁻¹ comes from K_mm exactly as in memory
(:func:`.machines.nystrom_landmarks_torch`, shared with KPCA and SVC, for landmark points, the
Gaussian sketch and a precomputed K). One streamed pass over row blocks of K_nm accumulates, in
float64,

    k̄ = Σᵢ wᵢ K(xᵢ, C) / Σw,   M = K_mnWK_nm − Σw·k̄k̄ᵀ,   R = K_mnW(y − ȳ),

from which LLA and NCR solve their m×m systems on the host (the numpy code's formulas).
SPA takes a second pass for its dual coefficients a = W(y_c − G_cᵀŵ)/alpha. Predictions are
K(X, C)·β + b, block by block on the device. For landmark points K_nm itself (n×m) is never
held.

GSA assembles G_cᵀ = (K_nm − 1k̄ᵀ)A (n × s, rows scaled by W½ when weighted) on the device and
takes its thin SVD G_cᵀ = VΣUᵀ. ``gsa_solver='eq20'``: ŵ = UΣ(Σ² + alpha)⁻¹Vᵀy_c and
α̂ = G_c^†ŵ = V(Σ² + alpha)⁻¹Vᵀy_c (eq. (20)). ``gsa_solver='woodbury'``: problem (3) solved
directly by the Woodbury identity of §II-D, α_W = (y_c − G_cᵀ(G_cG_cᵀ + alpha I)⁻¹G_c y_c)/alpha
(the s×s system solved on the host), ŵ = G_cα_W and α̂ = VVᵀα_W, its minimum-norm
representative (the same α̂). Both predict with K(X, X_fit)·α̂ streamed over row blocks.

``landmarks='gaussian'`` (paper 004 §IV, C_H = X_H S): S (n × m) is drawn by
:func:`asymkern.landmarks.gaussian_sketch` on the host from the same stream, K·S is accumulated
over row blocks of K on the device (K is never formed whole) and kept (n×m, as the numpy path
keeps K_nm), K_mm = SᵀKS; predictions are K(Z, X_fit)·(Sβ), streamed over row blocks of Z.

``kernel='precomputed'``: X is the (n, n) training Gram matrix (a tensor, or numpy with
``device``), landmarks are its row/column indices ('uniform' from the same stream, or an index
array; the samplers that need data points are refused as in memory), K_nm = K[:, idx],
K_mm = K[idx][:, idx]; ``predict`` takes K_test (n_test, n_train): K_test[:, idx]·β, or
K_test·α for GSA and 'exact' (which solves on a float64 copy of K).

The exact machine (mode 'exact', the reference of paper 004) forms the n×n kernel on the device
in float64, centres it with the (weighted) mean feature and solves
(W½ K_c W½ + alpha I) b = W½ y_c there (``torch.linalg.solve``, LU as numpy's), a = W½ b;
predictions are K(X, X_fit)·a + b streamed over row blocks, as GSA's.

Supported: modes 'lla' (default), 'ncr', 'gsa' (``gsa_solver`` 'eq20' or 'woodbury'), 'spa',
'exact'; landmarks 'uniform', row indices, 'kmeans' and 'leverage' (both chosen on the host by
the numpy samplers, same random stream) and 'gaussian'; the kernels of
:data:`~.kernels.SUPPORTED_KERNELS` that are PSD, and 'precomputed'; sample weights.
``solver='sklearn'`` (scikit-learn's ``Ridge`` on host numpy features) raises
``NotImplementedError`` saying so; use ``solver='auto'``, the same ridge problem in Gram form.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._dispatch import any_torch, require_torch
from .._validation import check_nonnegative_weights, check_regression_targets
from .device import from_numpy, numpy_dtype, to_numpy
from .kernels import TorchKernel
from .machines import (
    exact_state,
    fitted_input,
    full_times,
    landmark_times,
    nystrom_landmarks_torch,
    row_step,
    training_input,
)

TORCH_MODES = ("lla", "ncr", "gsa", "spa", "exact")


def fit_ridge_torch(est, X, y, sample_weight, alpha: float, mode: str):
    """Fit ``est`` (a NystromKernelRidge) on the torch backend; returns ``est``."""
    from .._shared.nystrom_basis import check_psd_kernel

    torch = require_torch()
    if mode not in TORCH_MODES:
        raise NotImplementedError(f"mode={mode!r} is not available on the torch backend; use one "
                                  f"of {TORCH_MODES} or device=None with numpy input")
    if est.solver != "auto":
        raise NotImplementedError(
            f"solver={est.solver!r} is not available on the torch backend: it runs "
            "scikit-learn's Ridge on host numpy features F = K_nm A, which would move the n×s "
            "features off the device; use solver='auto' (the same ridge problem in Gram form, "
            "equal predictions) or device=None with numpy input")
    est._ncr_requires_full()
    dev, as_numpy, Xt = training_input(est, X, y)  # checks a precomputed K is square
    n, d = (int(k) for k in Xt.shape)
    Y = check_regression_targets(to_numpy(y) if any_torch(y) else y, n)
    sw = check_nonnegative_weights(
        to_numpy(sample_weight) if any_torch(sample_weight) else sample_weight, n)
    est.dask_fit_ = False
    est.torch_fit_ = True
    est._y_1d = Y.ndim == 1
    Y = Y.reshape(n, -1)
    unweighted = sample_weight is None
    wsum = sw.sum()
    ybar = (Y.mean(axis=0) if unweighted else (sw @ Y) / wsum) if est.fit_intercept \
        else np.zeros(Y.shape[1])
    tk: Any = None  # the TorchKernel; None for a precomputed kernel matrix
    if not est._precomputed():
        kernel = est._kernel()
        check_psd_kernel(kernel)
        tk = TorchKernel(kernel, d)
    if mode == "exact":
        return _fit_exact(est, Xt, Y, sw, unweighted, ybar, alpha, tk, as_numpy)
    f64 = dict(dtype=torch.float64, device=dev)
    X_fit = to_numpy(Xt).copy() if as_numpy else Xt
    lb = nystrom_landmarks_torch(est, Xt, tk, X_fit if as_numpy else None)
    b, knm, m = lb.basis, lb.knm, lb.basis.n_landmarks

    Yt = torch.as_tensor(Y - ybar, **f64)
    wt = torch.as_tensor(sw, **f64)
    M = torch.zeros((m, m), **f64)
    R = torch.zeros((m, Y.shape[1]), **f64)
    Ssum = torch.zeros(m, **f64)
    step = row_step(m, Y.shape[1])
    for a in range(0, n, step):
        Kb = knm(a, a + step)
        WK = wt[a:a + step, None] * Kb
        Ssum += WK.sum(dim=0)
        M += Kb.T @ WK
        R += WK.T @ Yt[a:a + step]
    M, R = to_numpy(M), to_numpy(R)
    kbar = to_numpy(Ssum) / wsum if est.fit_intercept else None
    if kbar is not None:
        M -= wsum * np.outer(kbar, kbar)
    A = b.A
    est.coef_ = est.landmark_coef_ = est.dual_coef_ = None
    a_all = None
    if mode == "ncr":
        from .._shared.nystrom_basis import psd_pinv

        beta = psd_pinv(M + alpha * b.Kmm, dtype=numpy_dtype(Xt)) @ R  # eq. (11)
    elif mode == "gsa":  # eq. (20) through one thin SVD of W½G_cᵀ (n × s) on the device
        At = from_numpy(A, Yt)
        kb = from_numpy(kbar, Yt) if kbar is not None else None
        Gt = torch.empty((n, A.shape[1]), **f64)
        for a in range(0, n, step):
            Kb = knm(a, a + step)
            Gt[a:a + step] = ((Kb - kb) if kb is not None else Kb) @ At
        weighted = not unweighted and not np.all(sw == 1.0)
        rw = torch.sqrt(wt)[:, None]
        Yg = rw * Yt if weighted else Yt
        if weighted:
            Gt = rw * Gt
        V, sig, Ut = torch.linalg.svd(Gt, full_matrices=False)
        eps = float(np.finfo(numpy_dtype(Xt)).eps)
        keep = sig > max(n, A.shape[1]) * eps * (sig[0] if sig.numel() else 0.0)
        V, sig, U = V[:, keep], sig[keep], Ut[keep].T
        if est.gsa_solver == "woodbury":
            # problem (3) solved directly (paper 004 §II-D, Woodbury): α_W = (K̃_c + αI)⁻¹y_c =
            # (y_c − G_cᵀ(G_cG_cᵀ + αI)⁻¹G_c y_c)/α with the s×s system on the host, then
            # ŵ = G_c α_W and the minimum-norm representative α̂ = V Vᵀ α_W (eq. (20)'s α̂)
            Hp = to_numpy(Gt.T @ Gt)
            Hp[np.diag_indices_from(Hp)] += alpha
            sol = np.linalg.solve(Hp, to_numpy(Gt.T @ Yg))
            a_w = (Yg - Gt @ from_numpy(sol, Yg)) / alpha
            w = to_numpy(Gt.T @ a_w)
            a_all = V @ (V.T @ a_w)
        else:  # ŵ = U Σ(Σ² + α)⁻¹Vᵀy_c, α̂ = V(Σ² + α)⁻¹Vᵀy_c
            filt = (V.T @ Yg) / (sig**2 + alpha)[:, None]
            w = to_numpy(U @ (sig[:, None] * filt))
            a_all = V @ filt
        del Gt
        if weighted:
            a_all = rw * a_all
        est.coef_ = w.T
        beta = A @ w
        est.dual_coef_ = a_all if not as_numpy else to_numpy(a_all)
    else:
        H = A.T @ M @ A  # G_c W G_cᵀ
        H[np.diag_indices_from(H)] += alpha
        w = np.linalg.solve(H, A.T @ R)
        if mode == "lla":
            est.coef_ = w.T
            beta = A @ w
        else:  # spa: a = W(y_c − G_cᵀ ŵ)/alpha, second pass; β = A G_c a
            At, wt_sol = from_numpy(A, Yt), from_numpy(w, Yt)
            kb = from_numpy(kbar, Yt) if kbar is not None else None
            a_all = torch.empty_like(Yt)
            GtA = torch.zeros((A.shape[1], Y.shape[1]), **f64)
            for a in range(0, n, step):
                Kb = knm(a, a + step)
                Gt = ((Kb - kb) if kb is not None else Kb) @ At
                ab = wt[a:a + step, None] * (Yt[a:a + step] - Gt @ wt_sol) / alpha
                a_all[a:a + step] = ab
                GtA += Gt.T @ ab
            beta = A @ to_numpy(GtA)
            est.dual_coef_ = a_all if not as_numpy else to_numpy(a_all)
    lb.release()  # release K S before the model is kept
    est.landmark_coef_ = beta
    est.intercept_ = ybar - (kbar @ beta if kbar is not None else 0.0)
    est.X_fit_ = X_fit
    # a sketch predicts K(Z, X)(Sβ): one n×k product, not K(Z, X)S
    est._torch_state = {**lb.state(), "device": dev, "dtype": Xt.dtype, "dual": a_all,
                        "beta": lb.column_coef(from_numpy(beta, Yt)),
                        "b": from_numpy(np.atleast_1d(est.intercept_), Yt)}
    from .._validation import check_finite_output

    for name in ("coef_", "landmark_coef_", "intercept_"):
        if getattr(est, name) is not None:
            check_finite_output(getattr(est, name), f"the fitted {name}",
                                "rescale X (e.g. StandardScaler) or increase alpha")
    return est


def _fit_exact(est, Xt, Y, sw, unweighted: bool, ybar, alpha: float, tk, as_numpy: bool):
    """The exact machine on the device: (W½ K_c W½ + alpha I) b = W½ y_c, a = W½ b (the numpy
    path's formulas, paper 004's reference), K_c the kernel centred with the (weighted) mean
    feature r: K_c = K − r1ᵀ − 1rᵀ + (mean r)11ᵀ. ``tk`` None: ``Xt`` is the precomputed K."""
    from .._validation import check_finite_output
    from .kernels import TorchKernelMatrix

    torch = require_torch()
    est._no_basis(Xt)  # the memory check and the basis attributes of mode='exact'
    f64 = dict(dtype=torch.float64, device=Xt.device)
    K = Xt.to(torch.float64, copy=True) if tk is None else \
        TorchKernelMatrix(tk, Xt, Xt).to_dense().to(torch.float64)
    if not bool(torch.isfinite(K).all()):
        raise ValueError("the kernel matrix of X has non-finite entries; rescale X (e.g. "
                         "StandardScaler) or change the kernel parameters")
    wt = torch.as_tensor(sw, **f64)
    wsum = float(sw.sum())
    Yc = torch.as_tensor(Y - ybar, **f64)
    r = None
    if est.fit_intercept:  # the (weighted) mean feature; K is symmetric
        r = K.mean(dim=0) if unweighted else (wt @ K) / wsum
        rbar = float(r.mean()) if unweighted else float(wt @ r) / wsum
        K = K - r[:, None] - r[None, :] + rbar
    rw = torch.sqrt(wt)[:, None]
    if not unweighted:
        K = rw * K * rw.T
    K.diagonal().add_(alpha)
    a = rw * torch.linalg.solve(K, rw * Yc)
    del K
    est.coef_ = est.landmark_coef_ = None
    est.intercept_ = ybar - (to_numpy(r @ a) if r is not None else 0.0)
    est.dual_coef_ = to_numpy(a) if as_numpy else a
    est.X_fit_ = to_numpy(Xt).copy() if as_numpy else Xt
    est._torch_state = {**exact_state(tk, Xt), "device": Xt.device, "dtype": Xt.dtype,
                        "dual": a, "beta": None,
                        "b": from_numpy(np.atleast_1d(est.intercept_), a)}
    for name in ("dual_coef_", "intercept_"):
        check_finite_output(to_numpy(a) if name == "dual_coef_" else est.intercept_,
                            f"the fitted {name}",
                            "rescale X (e.g. StandardScaler) or increase alpha")
    return est


def predict_ridge_torch(est, X, approach=None):
    """Predictions K(X, C)β + b of a NystromKernelRidge on the torch backend."""
    state, Xn, as_numpy = fitted_input(est, X)
    approach = approach or est.mode
    if approach not in TORCH_MODES:
        raise NotImplementedError(f"predictions of {approach!r} are not available on the torch "
                                  "backend")
    if approach in ("gsa", "exact"):  # K(X, X_fit) α (K_test α when precomputed), streamed
        out = full_times(state, Xn, state["dual"], dtype=state["dtype"])
    else:  # K(X, C) β (a sketch: K(X, X_fit)(Sβ); precomputed: K_test[:, idx] β)
        out = landmark_times(state, Xn, state["beta"])
    return _finish(est, out + state["b"], state, as_numpy)


def _finish(est, out, state, as_numpy: bool):
    """Cast to the training dtype, check finiteness, 1-D for a 1-D y, numpy for numpy input."""
    torch = require_torch()
    out = out.to(state["dtype"])
    if not bool(torch.isfinite(out).all()):
        raise ValueError("the predictions contain NaN or infinity; rescale X like the training "
                         "data")
    if est._y_1d:
        out = out.reshape(-1)
    return to_numpy(out) if as_numpy else out
