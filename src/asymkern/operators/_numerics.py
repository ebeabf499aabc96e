"""Numerics of the operator estimators written once for every executor (private).

Each function takes the arrays of one executor (numpy arrays, or torch tensors on their
device) and reaches them only through the executor's primitives
(:class:`asymkern._backend.ArrayOps`, picked by :func:`asymkern._backend.ops_of`), so the
numpy estimators and the torch fits run the same code: the n×n factorisations on the arrays'
device, small host matrices where the caller needs them.
"""

from __future__ import annotations

import numpy as np

from .._backend import ops_of


def cholesky_shifted(G, shift: float, name: str = "G"):
    """The Cholesky factor of G + shift·I (for the executor's ``cho_solve``).

    Parameters
    ----------
    G : array (n, n)
        A symmetric PSD Gram matrix (numpy or an executor's array; never written to).
    shift : float
        The Tikhonov shift nε.
    name : str, default='G'
        How G is named in the error.

    Returns
    -------
    factor
        What ``ops_of(G).cho_solve`` takes.

    Raises
    ------
    ValueError
        If G + shift·I is not positive definite.
    """
    ops = ops_of(G)
    try:
        return ops.cho_factor(ops.add_diag(G, shift))
    except np.linalg.LinAlgError as exc:
        raise ValueError(
            f"{name} + nεI is not positive definite (nε = {shift:.3g}); the kernel must be PSD "
            "and alpha large enough"
        ) from exc


class LaggedGramSolver:
    """Solves with the time-lagged Gram matrix G_XY = [k(x_i, y_j)] (square, not symmetric).

    G_XY is LU-factorised and its reciprocal condition number ``rcond`` (1-norm, LAPACK ``gecon``,
    on the host from the LU factor) estimated *before* any further solve. When
    ``rcond ≥ rcond_min`` the exact inverse is used (``kind = 'lu'``). Otherwise (numerically
    singular or ill-conditioned, e.g. exact repeats in a trajectory, or i.i.d. samples with a
    smooth kernel) G_XY⁻¹ is replaced by the Tikhonov-regularised inverse (``kind = 'tikhonov'``)

        G_XY^{+δ} = (G_XYᵀ G_XY + δ² I)⁻¹ G_XYᵀ = V diag(σ_i / (σ_i² + δ²)) Uᵀ,

    from the SVD G_XY = U diag(σ) Vᵀ, i.e. the minimiser of ‖G_XY w − v‖² + δ²‖w‖², whose filter
    factors σ²/(σ² + δ²) damp the directions with σ ≲ δ that an exact solve would amplify by 1/σ.
    Works on the arrays of any executor (the factors stay on G_XY's device).

    Parameters
    ----------
    Gxy : array (n, n)
        The time-lagged Gram matrix.
    delta : float
        δ of the regularised inverse.
    rcond_min : float
        The smallest reciprocal condition number solved exactly.
    """

    def __init__(self, Gxy, delta: float, rcond_min: float):
        ops = ops_of(Gxy)
        self.ops = ops
        n = Gxy.shape[0]
        self.shape = tuple(Gxy.shape)
        self.delta = float(delta)
        anorm = float(abs(Gxy).sum(0).max())
        lu = ops.lu_factor(Gxy)
        self.rcond = rcond = ops.lu_rcond(lu, anorm)
        self.n_damped = 0
        if rcond >= rcond_min:
            self.kind, self.lu = "lu", lu
        else:
            self.kind = "tikhonov"
            U, s, Vt = ops.svd_gesvd(Gxy)
            self.U, self.Vt, self.s = U, Vt, s
            self.filt = s / (s**2 + self.delta**2)
            self.n_damped = int((s < self.delta).sum())
        self.n = n

    def solve(self, V):
        """G_XY⁻¹ V (or G_XY^{+δ} V)."""
        if self.kind == "lu":
            return self.ops.lu_solve(self.lu, V)
        return self.Vt.T @ (self.filt[:, None] * (self.U.T @ V))

    def solve_t(self, V):
        """G_XY⁻ᵀ V (or (G_XY^{+δ})ᵀ V)."""
        if self.kind == "lu":
            return self.ops.lu_solve(self.lu, V, trans=True)
        return self.U @ (self.filt[:, None] * (self.Vt @ V))


__all__ = ["LaggedGramSolver", "cholesky_shifted"]
