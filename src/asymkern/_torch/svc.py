"""NystromSVC on torch: the kernel work of ``fit`` / ``predict`` on the device (private).

Paper 004 (Algorithm 1, §II–III) with the same algebra as the in-memory estimator. The SVM
itself is scikit-learn's (libsvm for ``svm='nusvc'`` / ``'svc'``, liblinear for
``'linearsvc'``) and runs on the host, on a numpy copy of what the device produced:

* landmarks (:func:`.machines.nystrom_landmarks_torch`, shared with KRR and KPCA): drawn on
  the host by the numpy samplers from the same ``random_state`` stream ('uniform', row
  indices, 'kmeans', 'leverage'; the sketch S of 'gaussian'; indices into K for
  ``kernel='precomputed'``), A = V_s Σ_s⁻¹ from K_mm as in memory
  (:func:`asymkern._shared.nystrom_basis.basis_from_landmarks`);
* on the device: the features F = K_nm A (n × s, float64, streamed over row blocks of K_nm:
  k(X, C), K[:, idx] for a precomputed K, or K S for a sketch, K S accumulated over row blocks
  of K and dropped after the fit) for 'lla', 'ncr', 'gsa' and 'spa'; the n×n Gram F Fᵀ of 'spa'
  and K(X, X) of 'exact' (the given K, precomputed); GSA's pseudo-inverse factor
  G^† = V Σ⁻¹ Uᵀ from the thin SVD of F and its duals α̂ = G^† Wᵀ (eq. (20)); the landmark
  coefficients β = A Fᵀ D of 'spa';
* on the host: the SVM fit on F (linear kernel) or on the Gram matrix (precomputed kernel),
  the signed duals D of the precomputed machines, the Platt sigmoids of ``probability=True``.

Decision values are computed on the device for every mode, streamed over row blocks of the
test points: K(Z, C) β + b for 'lla', 'ncr' and 'spa' (β = A Wᵀ, resp. A Fᵀ D, which is what
the fitted solver evaluates on the features t(Z) = K(Z, C) A, resp. t(Z) Fᵀ) and
K(Z, X_fit) α + b for 'gsa' (α = G^† Wᵀ) and 'exact' (α = D); for a sketch K(Z, C_H)β =
K(Z, X_fit)(Sβ); for ``kernel='precomputed'`` Z is K(Z, X_fit) (n_test × n_train):
K_test[:, idx]β + b, resp. K_test α + b. With several classes libsvm's
one-vs-one values are turned into scikit-learn's 'ovr' shape on the device
(``sklearn.utils.multiclass._ovr_decision_function``'s formula). Labels follow the solver's
rule on those values: libsvm's one-vs-one vote (a tie goes to the first class; two classes:
classes_[1] for a value ≥ 0), liblinear's sign / argmax.

Labels: the fitted ``classes_`` stay numpy (scikit-learn's metadata); ``predict`` of a tensor
returns a tensor on the device when the labels are numeric (int, float or bool), else numpy.

Supported: modes 'lla', 'ncr', 'gsa', 'spa', 'exact'; the kernels of
:data:`~.kernels.SUPPORTED_KERNELS` (PSD ones for the Nyström modes; 'exact' also takes the
row-normalised 'sne' and 't', as in memory) and 'precomputed' (landmarks 'uniform' or row
indices, as on numpy); landmarks 'uniform', row indices, 'kmeans', 'leverage', 'gaussian';
every ``svm``; ``probability=True`` (its cross-validation folds K[train][:, train] of a
precomputed K, as on numpy).
"""

from __future__ import annotations

import numpy as np

from .._dispatch import any_torch, require_torch
from .device import from_numpy, to_numpy
from .kernels import TorchKernel, TorchKernelMatrix
from .machines import (
    check_finite_tensor,
    exact_state,
    fitted_input,
    full_times,
    landmark_times,
    nystrom_landmarks_torch,
    training_input,
)

_LINEAR = ("lla", "ncr", "gsa")


def fit_svc_torch(est, X, y, mode: str):
    """Fit ``est`` (a NystromSVC) with the kernel work on the torch backend; returns ``est``."""
    from .._shared.nystrom_basis import check_psd_kernel
    from .._validation import check_finite_output

    torch = require_torch()
    if mode != "exact":
        est._ncr_requires_full()
    svm = est._make_svm("precomputed" if mode in ("spa", "exact") else "linear")  # refuses early
    dev, as_numpy, Xt = training_input(est, X, y)  # checks a precomputed K is square
    n, d = (int(k) for k in Xt.shape)
    y = est._check_labels(to_numpy(y) if any_torch(y) else y, n)
    est.dask_fit_ = False
    est.torch_fit_ = True
    est.coef_ = est.landmark_coef_ = est.dual_coef_ = None
    tk = None if est._precomputed() else TorchKernel(est._kernel(), d)  # None: X is K
    X_fit = to_numpy(Xt).copy() if as_numpy else Xt
    f64 = dict(dtype=torch.float64, device=dev)
    lb = dual = None
    if mode == "exact":
        est._no_basis(Xt)
        K = Xt.double() if tk is None else TorchKernelMatrix(tk, Xt, Xt).to_dense().double()
        est.estimator_ = est._fit_solver(
            svm, to_numpy(check_finite_tensor(K, "the kernel matrix of X")), y)
        del K
        D = est._machine_duals(n)
        dual = torch.as_tensor(D, **f64)
    else:
        if tk is not None:
            check_psd_kernel(tk.kernel)
        lb = nystrom_landmarks_torch(est, Xt, tk, X_fit if as_numpy else None)
        A = est.basis_.A
        Ft = check_finite_tensor(lb.features(), "the features F = K(X, C)A")
        lb.release()
        if mode == "spa":  # the projected Gram matrix K̃ = F Fᵀ (n×n) as a precomputed kernel
            est.estimator_ = est._fit_solver(svm, to_numpy(Ft @ Ft.T), y)
            D = est._machine_duals(n)
            est.landmark_coef_ = A @ to_numpy(Ft.T @ torch.as_tensor(D, **f64))
            dual = torch.as_tensor(D, **f64)
        else:
            est.estimator_ = est._fit_solver(svm, to_numpy(Ft), y)
            W = np.atleast_2d(np.asarray(est.estimator_.coef_))
            est.coef_ = W
            est.landmark_coef_ = A @ W.T
            if mode == "gsa":  # eq. (20): α̂ = G^† Wᵀ, G^† = V Σ⁻¹ Uᵀ from Gᵀ = F = V Σ Uᵀ
                V, sig, Ut = torch.linalg.svd(Ft, full_matrices=False)
                eps = float(torch.finfo(Xt.dtype).eps)
                keep = sig > max(Ft.shape) * eps * (sig[0] if sig.numel() else 0.0)
                P = (V[:, keep] / sig[keep]) @ Ut[keep]
                dual = P @ torch.tensor(W.T, **f64)
        del Ft
    if dual is not None:
        est.dual_coef_ = to_numpy(dual).copy() if as_numpy else dual
    est.classes_ = est.estimator_.classes_
    if hasattr(est.estimator_, "n_iter_"):
        est.n_iter_ = est.estimator_.n_iter_
    b = np.atleast_1d(np.asarray(est.estimator_.intercept_, dtype=np.float64))
    for name in ("coef_", "landmark_coef_"):
        if getattr(est, name) is not None:
            check_finite_output(getattr(est, name), f"the fitted {name}",
                                "rescale X (e.g. StandardScaler) or change the kernel parameters")
    if dual is not None:
        check_finite_tensor(dual, "the fitted dual_coef_")
    est.X_fit_ = X_fit
    labels = None
    if est.classes_.dtype.kind in "biuf":
        try:
            labels = torch.tensor(est.classes_, device=dev)
        except (TypeError, RuntimeError):  # an unsigned dtype torch lacks: labels stay numpy
            labels = None
    est._torch_state = {
        **(exact_state(tk, Xt) if lb is None else lb.state()), "device": dev,
        "dtype": Xt.dtype, "dual": dual, "b": torch.tensor(b, **f64), "labels": labels,
        "beta": None if lb is None else lb.column_coef(torch.tensor(est.landmark_coef_, **f64)),
        "libsvm": est.svm != "linearsvc"}
    # the clones of the cross-validation keep ``device`` and get row folds of the device copy
    est.calibration_ = est._fit_calibration(Xt, y) if est.probability else None
    return est


def _raw_decision(est, X, approach: str):
    """Raw decision values float64 (n × n_machines), the torch state, whether X is numpy."""
    state, Z, as_numpy = fitted_input(est, X)
    if approach in ("gsa", "exact"):  # K(Z, X_fit) α (K_test α when precomputed)
        raw = full_times(state, Z, state["dual"])
    else:  # K(Z, C) β (a sketch: K(Z, X_fit)(Sβ); precomputed: K_test[:, idx] β)
        raw = landmark_times(state, Z, state["beta"])
    raw = check_finite_tensor(raw + state["b"], "the decision values")
    return raw, state, as_numpy


def _ovr(raw, k: int):
    """scikit-learn's 'ovr' values from libsvm's one-vs-one ones (``_ovr_decision_function``
    of ``sklearn.utils.multiclass`` with predictions dec < 0 and confidences −dec)."""
    torch = require_torch()
    votes = torch.zeros((raw.shape[0], k), dtype=raw.dtype, device=raw.device)
    conf = torch.zeros_like(votes)
    p = 0
    for i in range(k):
        for j in range(i + 1, k):
            neg = (raw[:, p] < 0).to(raw.dtype)
            conf[:, i] += raw[:, p]
            conf[:, j] -= raw[:, p]
            votes[:, i] += 1 - neg
            votes[:, j] += neg
            p += 1
    return votes + conf / (3 * (torch.abs(conf) + 1))


def decision_svc_torch(est, X, approach: str):
    """Decision values of a NystromSVC fitted on torch (shaped as the solver's)."""
    raw, state, as_numpy = _raw_decision(est, X, approach)
    k = len(est.classes_)
    if raw.shape[1] == 1:
        out = raw[:, 0]
    elif state["libsvm"]:
        out = _ovr(raw, k)
    else:
        out = raw
    out = out.to(state["dtype"])
    return to_numpy(out) if as_numpy else out


def predict_svc_torch(est, X, approach: str):
    """Labels of a NystromSVC fitted on torch, by the solver's rule on the decision values."""
    torch = require_torch()
    raw, state, as_numpy = _raw_decision(est, X, approach)
    k = len(est.classes_)
    if raw.shape[1] == 1:  # libsvm votes classes_[1] unless its value (−ours) is > 0
        idx = (raw[:, 0] >= 0) if state["libsvm"] else (raw[:, 0] > 0)
        idx = idx.long()
    elif state["libsvm"]:  # one-vs-one vote, a tie to the first class (libsvm)
        votes = torch.zeros((raw.shape[0], k), dtype=torch.long, device=raw.device)
        p = 0
        for i in range(k):
            for j in range(i + 1, k):
                pos = (raw[:, p] > 0).long()
                votes[:, i] += pos
                votes[:, j] += 1 - pos
                p += 1
        idx = torch.argmax(votes, dim=1)
    else:  # liblinear one-vs-rest: the first largest value
        idx = torch.argmax(raw, dim=1)
    if as_numpy or state["labels"] is None:
        return est.classes_[to_numpy(idx)]
    return state["labels"][idx]


def proba_svc_torch(calibration, d, log: bool = False):
    """Platt probabilities (host) of the device decision values ``d``; a tensor like ``d``."""
    torch = require_torch()
    P = from_numpy(calibration.predict_proba(to_numpy(d)), d)
    return torch.log(P) if log else P
