"""Kernel transfer operators on torch: the exact Koopman and Perron–Frobenius estimators with
their n×n Gram matrices and eigenproblems on the device (private).

:class:`~asymkern.operators.KoopmanOperator` and :class:`~asymkern.operators.
PerronFrobeniusOperator` take their validated pairs, the observables' values and the Gram matrices
on the device from here (:func:`transfer_samples_torch`, typed :class:`TransferSamples`;
:func:`observable_values`) for torch tensors or a set ``device``, and run their own fits, the
code of their numpy fits, on them; forecasts evaluate k(x, X) coef through
:func:`asymkern._shared.operators.evaluate`, as the numpy landmark models do. The
Koopman estimators are those of the numpy path (paper
002 §4.4; Kostic et al. 2022, §3, dual form), (K̂ f)(x) = k(x, X) U Vᵀ f(Y) with the pairs
(x_i, y_i), G = k(X, X), C = k(Y, X) and H = k(Y, Y), all formed on the device in float64 (as
the numpy path computes):

* ``'full'`` (kernel ridge regression, U Vᵀ = (G + nεI)⁻¹): the eigenpairs of K̂ are those of the
  auxiliary matrix A = (G + nεI)⁻¹ C (Prop. 3.8; ``torch.linalg.cholesky`` + ``cholesky_solve``,
  then, as on the numpy path, the dense eigenproblem for n ≤ 150 — ``torch.linalg.eig`` — and
  above it ARPACK, the numpy path's call with the same starting vector, on the host with its
  products A·v on the device), sorted by decreasing ``|λ|``; the eigenfunctions are
  ψ = k(·, X) w, RKHS-normalised (wᴴ G w = 1), with the post-processing of the numpy path's
  ``EmpiricalOperator.eig(method='auxiliary')`` (:func:`asymkern.linalg.eig_auxiliary`): real
  eigenpairs when every ``|Im λ|`` ≤ 1e-8·``|λ₁|``, eigenvalues ≤ 1e-12·``|λ₁|`` treated as
  zero, eigenfunctions of numerically zero norm dropped with a warning, repeated eigenvalues'
  eigenfunctions orthonormalised, the complex phase fixed (largest coefficient real positive).
  These steps need only the k×k Gram matrix Wᴴ G W of the k kept eigenvectors, computed on the
  device. Forecasts use the coefficients (G + nεI)⁻¹ Y and iterate a ← (G + nεI)⁻¹ C a.
* ``'pcr'`` / ``'rrr'``: the estimators' own algorithms (:func:`asymkern.operators._koopman.
  pcr_dual` / ``rrr_dual``, written once against the executor primitives and handed down by
  the estimator) run on the device tensors: ``torch.linalg.eigh`` for n ≤ 200, ARPACK with
  its products on the device above, as for numpy arrays; the small r×r matrix M = Vᵀ C U
  goes to numpy, where :func:`~asymkern.operators._koopman.reduced_eig` and the estimator's
  ``_finish_reduced`` do the bookkeeping (left eigenfunctions, modes).

So every estimator runs the numpy path's eigensolver at every n, and the two paths agree to
rounding even where ``n_components`` cuts a complex-conjugate pair (a dense solver and ARPACK
may keep different members of the pair).

Nothing of size n×n goes to the host: the fitted ``operator_`` is the numpy
:class:`~asymkern.operators.EmpiricalOperator` on the same samples, whose B is lazy for
``'full'`` (its Cholesky factor is computed on first use) and the n×r factors for 'pcr'/'rrr'.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._dispatch import any_torch, is_torch_tensor, require_torch
from .._shared.operators import lagged_pairs
from .._validation import check_finite_result
from .device import as_tensor, resolve_device, to_numpy


# ------------------------------------------------------------------------------ inputs
@dataclass(frozen=True)
class TransferSamples:
    """The time-lagged pairs of a transfer-operator fit on the device.

    Attributes
    ----------
    X0, X1 : tensor
        The pairs (x_i, y_i) as float64 copies on the device.
    dtype : torch.dtype
        The input dtype (outputs follow it).
    as_numpy : bool
        Whether every input was numpy.
    X0n, X1n : ndarray or None
        Their float64 numpy copies (the fitted model's samples), set by an exact fit with
        ``G``; None for the landmark estimators, which keep no sample.
    G : tensor or None
        G_X = k(X0, X0), float64, formed by an exact fit (never by the landmark estimators,
        which form no n×n matrix).
    """

    X0: Any
    X1: Any
    dtype: Any
    as_numpy: bool
    X0n: np.ndarray | None = None
    X1n: np.ndarray | None = None
    G: Any = None


def transfer_samples_torch(est, X, y, lag: int) -> TransferSamples:
    """The time-lagged pairs (x_i, y_i) of a transfer-operator fit as float64 copies on the
    device, with the numpy path's validation
    (:func:`asymkern._shared.operators.lagged_pairs`, the pairs of every executor).

    Parameters
    ----------
    est : KoopmanOperator or PerronFrobeniusOperator
        The estimator (``device``; ``n_features_in_`` is recorded).
    X : tensor or array-like of shape (n, d)
        One trajectory (``y`` None) or the snapshots x_i.
    y : tensor, array-like or None
        The time-shifted snapshots y_i, X's shape (1-D only when d = 1).
    lag : int
        τ in steps for a trajectory.

    Returns
    -------
    TransferSamples
        The pairs (never the caller's memory), X's dtype (float32 or float64) and whether
        every input was numpy (outputs are then numpy); no Gram matrix, no host copies.

    Raises
    ------
    ValueError
        For a trajectory shorter than lag + 2, or a y whose shape is not X's (naming y).
    """
    from .._validation import as_data, check_input, check_tensor_input

    torch = require_torch()
    dev = resolve_device(est.device, X, y)
    as_numpy = not any_torch(X, y)
    if not is_torch_tensor(X):
        X = check_input(est, X, reset=True, min_samples=2)
    Xt = as_tensor(X, dev, "X")
    if is_torch_tensor(X):
        check_tensor_input(est, Xt)
    Y = y if y is None or is_torch_tensor(y) else as_data(y, "y", ensure_2d=False)
    X0, X1 = lagged_pairs(Xt.to(torch.float64), Y, lag)
    if y is not None:  # on the device, float64, checked as X is
        X1 = as_tensor(X1, dev, "y").to(torch.float64)
    return TransferSamples(X0=X0.clone(), X1=X1.clone(), dtype=Xt.dtype, as_numpy=as_numpy)


# ------------------------------------------------------------------------------ Koopman
def observable_values(est, observables, X0, X1, lag: int, y_given: bool, as_numpy: bool):
    """The observable values g(y_i) at the shifted samples, validated by the numpy path's
    ``KoopmanOperator._observable_data``: a float64 (n, p) tensor on the device, or None.

    A callable is called with the shifted samples in the type of the input (torch tensors on
    the device for tensor input, numpy arrays otherwise), so a torch function runs on the
    device; values given as a tensor are copied to the host for the checks.
    """
    torch = require_torch()
    if callable(observables):
        vals = observables(to_numpy(X1) if as_numpy else X1)
        vals = to_numpy(vals) if is_torch_tensor(vals) else np.asarray(vals)
        vals = check_finite_result(vals, "observables(y)")  # real: complex is refused
        if vals.shape[:1] != (X1.shape[0],) or (vals.ndim == 2 and vals.shape[1] == 0):
            raise ValueError(f"observables(y) has shape {vals.shape}; expected "
                             f"({X1.shape[0]},) or ({X1.shape[0]}, p) with p >= 1 observables "
                             "(at least one column): one row per shifted snapshot y_i")
        obs, y_given = vals, True
    else:
        obs = to_numpy(observables) if is_torch_tensor(observables) else observables
    vals = est._observable_data(obs, X0, X1, lag, y_given)  # None without observables
    return None if vals is None else torch.as_tensor(vals, dtype=torch.float64, device=X1.device)
