"""NystromKernelPCA on torch: ``fit`` / ``transform`` for tensors or ``device`` (private).

Paper 004 (KPCA as one of the machines of (1); GSA through eq. (20)) with the algebra of the
in-memory estimator, step by step, so that both paths agree to rounding. The landmarks and the
basis A = V_s Σ_s⁻¹ of K_mm come from the numpy code on the host, from the same
``random_state`` stream (:func:`.machines.nystrom_landmarks_torch`, shared with KRR and SVC:
landmark points, a Gaussian sketch, or indices into a precomputed K). On the device, in
float64:

* the features F = K_nm A (n × s), formed over row blocks of K_nm (k(X, C) for landmark points,
  never held whole; K[:, idx] for ``kernel='precomputed'``; (K S) for a sketch, K S kept n×m
  during the fit only), and their centring F_c = F − 1 f̄ᵀ;
* LLA / NCR / GSA: the thin SVD F_c = U Σ Vᵀ (``torch.linalg.svd``), signs by the
  ``svd_flip`` convention (the largest-magnitude entry of each column of U positive),
  W = V_k, eigenvalues σ_k²; GSA's dual coefficients α̂ = F_c^{†ᵀ}W = U_r Σ_r⁻¹ V_rᵀ W
  (eq. (20), the same cut-off σ > max(n, s)·eps·σ₁ as the numpy path);
* SPA: ``eigh`` of the n×n F_c F_cᵀ, α = U_k Λ_k^{-1/2}, W = F_cᵀα;
* exact: the n×n Gram matrix K(X, X) (a float64 copy of the given K for
  ``kernel='precomputed'``), its double centring and ``eigh``, α = U_k Λ_k^{-1/2}.

Only s×k and m×k matrices go to the host (``landmark_coef_ = A W``). ``transform`` evaluates
K(Z, C)β + b (lla, ncr, spa) or K(Z, X_fit)α + b (gsa, exact) over row blocks of at most
``working_memory`` MiB, in float64, and returns X's dtype: for a sketch K(Z, C_H)β =
K(Z, X_fit)(Sβ); for ``kernel='precomputed'`` Z is the (n_test, n_train) matrix K(Z, X_fit),
so K_test[:, idx]β + b, resp. K_test α + b (:func:`.machines.landmark_times`,
:func:`.machines.full_times`).

Supported: modes 'lla' (default), 'ncr', 'gsa', 'spa', 'exact'; ``center`` True or False;
landmarks 'uniform', row indices, 'kmeans', 'leverage' and 'gaussian'; the kernels of
:data:`~.kernels.SUPPORTED_KERNELS` (symmetric PSD ones for the Nyström modes, as numpy; the
exact mode also takes the row-normalised 'sne' / 't', symmetrised as numpy does) and
'precomputed' (X the (n, n) training Gram matrix, a tensor or numpy with ``device``; landmarks
'uniform' or row indices, the samplers that need data points refused with numpy's
``ValueError``).
"""

from __future__ import annotations

import numpy as np

from .._dispatch import require_torch
from .device import from_numpy, numpy_dtype, to_numpy
from .kernels import TorchKernel, TorchKernelMatrix
from .linalg import flip_signs
from .machines import (
    check_finite_tensor,
    exact_state,
    fitted_input,
    full_times,
    landmark_times,
    nystrom_landmarks_torch,
    training_input,
)

TORCH_MODES = ("lla", "ncr", "gsa", "spa", "exact")



def _top_eigh(S, k: int):
    """The top-k eigenpairs of the symmetric tensor S, decreasing, columns sign-flipped."""
    torch = require_torch()
    lam, U = torch.linalg.eigh(S)
    lam, U = lam.flip(0)[:k], U.flip(1)[:, :k]
    return lam, flip_signs(U, U[:1])[0]


def fit_pca_torch(est, X, mode: str):
    """Fit ``est`` (a NystromKernelPCA) on the torch backend (module docstring); returns it.

    Parameters
    ----------
    est : NystromKernelPCA
        The estimator (its ``device``, ``n_components``, ``center``, landmark options).
    X : tensor or array-like of shape (n, d)
        Training data (the (n, n) Gram matrix with ``kernel='precomputed'``); a tensor is
        never modified and the model keeps its own copy.
    mode : str
        The validated ``mode``.

    Returns
    -------
    est : NystromKernelPCA
        Fitted: float64 attributes as tensors on the device for tensor input, numpy arrays
        for numpy input.

    Raises
    ------
    NotImplementedError
        For a mode not on torch.
    ValueError
        As the numpy path for bad inputs (``n_components``, too few samples, a non-PSD
        kernel in a Nyström mode, too few positive directions; with ``kernel='precomputed'``
        a non-square X, ``gamma`` / ``kernel_params`` set, or a sampler that needs the data).
    """
    from .._shared.nystrom_basis import check_psd_kernel
    from .._validation import check_n_components

    torch = require_torch()
    if mode not in TORCH_MODES:
        raise NotImplementedError(f"mode={mode!r} is not available on the torch backend; use "
                                  f"one of {TORCH_MODES} or device=None with numpy input")
    dev, as_numpy, Xt = training_input(est, X)  # checks a precomputed K is square
    n, d = (int(k) for k in Xt.shape)
    check_n_components(est.n_components, np.iinfo(np.int64).max)
    if est.center and n < 2:
        raise ValueError(f"X has {n} sample(s) (shape={tuple(Xt.shape)}) while a minimum of 2 "
                         "is required by NystromKernelPCA(center=True): one centred sample has "
                         "no variance")
    est.dask_fit_ = False
    est.torch_fit_ = True
    est.coef_ = est.landmark_coef_ = est.dual_coef_ = None
    tk = None if est._precomputed() else TorchKernel(est._kernel(), d)  # None: X is K
    X_fit = to_numpy(Xt).copy() if as_numpy else Xt
    f64 = dict(dtype=torch.float64, device=dev)
    lb = None
    if mode == "exact":  # eigenvectors of HKH (n×n) on the device
        est._no_basis(Xt)
        k = est.n_components_ = est._clip_components(*est._rank_limit(n, n))
        K = Xt.to(torch.float64, copy=True) if tk is None else \
            TorchKernelMatrix(tk, Xt, Xt).to_dense().to(torch.float64)  # written in place
        check_finite_tensor(K, "the kernel matrix of X")
        r = torch.zeros(n, **f64)
        if est.center:  # K − r1ᵀ − 1rᵀ + mean(r), r the row means (as numpy, in place)
            r = K.mean(dim=1)
            K.sub_(r[:, None]).sub_(r[None, :]).add_(r.mean())
        K = (K + K.T).mul_(0.5)
        lam, U = _top_eigh(K, k)
        del K
        est._check_positive_eigenvalues(float(lam.min()), float(lam.max()), n, k)
        dual = U / torch.sqrt(lam)
        W = None
        intercept = -(r @ dual)
    else:
        est._ncr_requires_full()
        if tk is not None:
            check_psd_kernel(tk.kernel)
        lb = nystrom_landmarks_torch(est, Xt, tk, X_fit if as_numpy else None)
        s = est.subspace_dim_
        k = est.n_components_ = est._components_for(s, n)
        F = lb.features()  # F = K_nm A, block by block
        lb.release()
        check_finite_tensor(F, "the kernel matrix K_nm between X and the landmarks")
        fbar = F.mean(dim=0) if est.center else torch.zeros(s, **f64)
        F.sub_(fbar)  # F_c, in place
        dual = None
        if mode == "spa":  # eigenvectors of the n×n K̃_c = F_c F_cᵀ (the reference)
            lam, U = _top_eigh(F @ F.T, k)
            dual = U / torch.sqrt(lam)
            W = F.T @ dual
        else:
            U, S, Vt = torch.linalg.svd(F, full_matrices=False)
            U, V, _ = flip_signs(U, Vt.T)
            W = V[:, :k]
            lam = S[:k] ** 2
            if mode == "gsa":  # eq. (20): α̂ = F_c^{†ᵀ}W = U_r Σ_r⁻¹ V_rᵀ W
                eps = float(np.finfo(numpy_dtype(Xt)).eps)
                keep = S > max(n, s) * eps * S[0]
                dual = (U[:, keep] / S[keep]) @ (V[:, keep].T @ W)
        del F, U
        intercept = -(fbar @ W)
    beta = None if W is None else from_numpy(est.basis_.A, W) @ W  # landmark_coef_ = A W
    _store(est, as_numpy, lam, W, beta, dual, intercept)
    est.X_fit_ = X_fit
    est._torch_state = {**(exact_state(tk, Xt) if lb is None else lb.state()), "device": dev,
                        "dtype": Xt.dtype, "dual": dual, "intercept": intercept,
                        "beta": None if lb is None else lb.column_coef(beta)}
    return est


def _store(est, as_numpy: bool, lam, W, beta, dual, intercept) -> None:
    """The fitted attributes (float64; numpy for numpy input, tensors on the device for tensor
    input), each checked finite as the numpy path's ``_finite_fit`` checks them."""
    out = (lambda T: to_numpy(T)) if as_numpy else (lambda T: T)
    if W is not None:
        check_finite_tensor(W, "the fitted coef_")
        check_finite_tensor(beta, "the fitted landmark_coef_")
        est.coef_ = out(W.T.contiguous())
        est.landmark_coef_ = out(beta)
    if dual is not None:
        check_finite_tensor(dual, "the fitted dual_coef_")
        est.dual_coef_ = out(dual)
    check_finite_tensor(intercept, "the fitted intercept_")
    check_finite_tensor(lam, "the fitted eigenvalues_")
    est.intercept_ = out(intercept)
    est.eigenvalues_ = out(lam.contiguous())


def transform_pca_torch(est, X):
    """Scores ⟨f_k, Φ(z) − μ⟩ of a NystromKernelPCA fitted on the torch backend.

    Parameters
    ----------
    est : NystromKernelPCA
        Fitted on torch (tensors, or numpy with ``device`` set).
    X : tensor or array-like of shape (n_test, d)
        Samples (the (n_test, n_train) kernel matrix with ``kernel='precomputed'``); a tensor
        is never modified.

    Returns
    -------
    tensor or ndarray of shape (n_test, ``n_components_``)
        In the training dtype; a tensor on the fit's device for tensor input, numpy for numpy
        input.

    Raises
    ------
    ValueError
        If the model was fitted on the numpy path, X has the wrong number of features, or the
        scores are not finite.
    """
    state, Xn, as_numpy = fitted_input(est, X)
    if state["beta"] is None or est.mode == "gsa":  # K(Z, X_fit) α (K_test α), row blocks
        out = full_times(state, Xn, state["dual"])
    else:  # K(Z, C) β (a sketch: K(Z, X_fit)(Sβ); precomputed: K_test[:, idx] β)
        out = landmark_times(state, Xn, state["beta"])
    out += state["intercept"]
    check_finite_tensor(out, "the transformed values", "rescale X like the training data")
    out = out.to(state["dtype"])
    return to_numpy(out) if as_numpy else out
