"""LS-SVM / AsK-LS pieces shared with the Dask executor (asymkern._dask.askls).

Label encoding, the ``merge`` check, the regularisation-constant check and the low-rank AsK-LS
solve in reduced form (r×r statistics in, r×k coefficients out: :class:`LowRankStats`,
:func:`askls_lowrank_reduced`), which the in-memory ``askls_solve(method='lowrank')`` and the
Dask executor both call. :mod:`asymkern.lssvm` re-exports what it uses.
"""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
from sklearn.utils.multiclass import check_classification_targets

_RESCALE = "rescale X (e.g. StandardScaler) or change the kernel parameters"


class IllConditionedWarning(UserWarning):
    """The LS-SVM / AsK-LS system is (nearly) singular; a ridge-regularised solution is used.

    Issued when the reciprocal condition number of the linear system falls below the
    solver's ``rcond_tol`` (the AsK-LS rule of He et al., 2023): the solve then falls back
    to a ridge-regularised system instead of returning an inaccurate solution silently.

    See Also
    --------
    asymkern.lssvm.AsKLSClassifier : The estimator that may issue it.
    asymkern.lssvm.askls_solve : The solver that decides the fallback.

    Examples
    --------
    >>> import warnings
    >>> from asymkern.lssvm import IllConditionedWarning
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", IllConditionedWarning)  # make the fallback an error
    >>> issubclass(IllConditionedWarning, UserWarning)
    True
    """


def _check_two_classes(classes):
    """ValueError unless there are at least 2 classes."""
    if classes.size < 2:
        raise ValueError(
            f"the classifier needs samples of at least 2 classes in y; got 1 class "
            f"({classes[0]!r})"
        )


def _one_vs_rest(yi, n_classes: int):
    """±1 one-vs-rest targets of the class indices ``yi`` (one column for two classes)."""
    if n_classes == 2:
        return np.where(yi == 1, 1.0, -1.0)[:, None]
    Y = -np.ones((yi.size, n_classes))
    Y[np.arange(yi.size), yi] = 1.0
    return Y


def _encode_labels(y):
    check_classification_targets(y)
    classes, yi = np.unique(y, return_inverse=True)
    _check_two_classes(classes)
    return classes, yi, _one_vs_rest(yi, classes.size)


def _labels_of(F, classes):
    """Class labels of decision values: the sign for two classes (1-D F), else the argmax."""
    if F.ndim == 1:
        return classes[(F > 0).astype(int)]
    return classes[np.argmax(F, axis=1)]


def _check_merge(merge):
    if merge not in ("sum", "stack", "source", "target"):
        raise ValueError(
            f"merge must be 'sum', 'stack', 'source' or 'target', got {merge!r}"
        )


def _check_C(C, name: str = "C") -> float:
    """C > 0 finite (the LS-SVM / AsK-LS regularisation constant, γ of He et al. (2023))."""
    if isinstance(C, (bool, np.bool_)) or not isinstance(C, numbers.Real):
        # a string such as "1" is refused too (float() would parse it), as is an array
        raise ValueError(f"{name} must be a positive number, got {C!r}")
    try:
        g = float(C)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a positive number, got {C!r}") from exc
    if not np.isfinite(g) or g <= 0:
        raise ValueError(
            f"{name} (the LS-SVM regularisation constant, weight of the squared errors) must be "
            f"a finite number > 0, got {C!r}"
        )
    return g


# --------------------------------------------------------------------------------------------
# low-rank AsK-LS in reduced form: r×r statistics in, r×k coefficients out
# --------------------------------------------------------------------------------------------
@dataclass
class LowRankStats:
    """Sufficient statistics of the low-rank AsK-LS system with K = U diag(s) Wᵀ (n × r factors).

    Every field is a sum over the rows, so the statistics of row blocks add up
    (:meth:`__add__`): a Dask executor reduces them over row chunks and the client solves the
    same small problem as the in-memory path (:func:`askls_lowrank_reduced`).
    """

    n: int
    UtU: np.ndarray  # (r, r)
    WtW: np.ndarray  # (r, r)
    Ut1: np.ndarray  # (r,)
    Wt1: np.ndarray  # (r,)
    UtY: np.ndarray  # (r, k)
    WtY: np.ndarray  # (r, k)
    sumY: np.ndarray  # (k,)
    ete: float | None = None  # eᵀe of a weighted border vector e (None: e = 1, eᵀe = n)

    @classmethod
    def of(cls, U, W, Y, e=None) -> LowRankStats:
        """The statistics of one row block (float64 accumulation); ``e`` the border vector of
        a weighted system (√v, with U, W, Y already scaled by it), None for ones."""
        U, W, Y = (np.asarray(A, dtype=np.float64) for A in (U, W, Y))
        if e is None:
            return cls(int(U.shape[0]), U.T @ U, W.T @ W, U.sum(axis=0), W.sum(axis=0),
                       U.T @ Y, W.T @ Y, Y.sum(axis=0))
        e = np.asarray(e, dtype=np.float64)
        return cls(int(U.shape[0]), U.T @ U, W.T @ W, e @ U, e @ W, U.T @ Y, W.T @ Y, e @ Y,
                   float(e @ e))

    def __add__(self, other: LowRankStats) -> LowRankStats:
        if (self.ete is None) != (other.ete is None):
            raise ValueError("cannot add weighted and unweighted low-rank statistics")
        ete = None if self.ete is None or other.ete is None else self.ete + other.ete
        return LowRankStats(self.n + other.n, self.UtU + other.UtU, self.WtW + other.WtW,
                            self.Ut1 + other.Ut1, self.Wt1 + other.Wt1, self.UtY + other.UtY,
                            self.WtY + other.WtY, self.sumY + other.sumY, ete)


@dataclass
class LowRankCoef:
    """Solution of the low-rank AsK-LS system in reduced form.

    With the factors (U, W) and the targets Y of the training rows, the signed coefficients are
    ã = y_scale·Y − 1·offset[0] − U·A_u and b̃ = y_scale·Y − 1·offset[1] − W·A_w
    (:meth:`expand`, row block by row block); ``bias`` = (b1, b2), (2, k).
    """

    bias: np.ndarray
    y_scale: float
    offset: np.ndarray  # (2, k)
    A_u: np.ndarray  # (r, k)
    A_w: np.ndarray  # (r, k)
    fallback: bool = False

    def expand(self, U, W, Y, e=None):
        """(ã, b̃) = (α ⊙ y, β ⊙ y) of the rows (U, W, Y) of one block, each (n_block, k)
        (``e``: the border vector of a weighted system, rows of U, W, Y scaled by it)."""
        U, W, Y = (np.asarray(A, dtype=np.float64) for A in (U, W, Y))
        one = 1.0 if e is None else np.asarray(e, dtype=np.float64)[:, None]
        a = self.y_scale * Y - one * self.offset[0][None, :] - U @ self.A_u
        b = self.y_scale * Y - one * self.offset[1][None, :] - W @ self.A_w
        return a, b


def _lu_or_none(M):
    """LU factors ``(lu, piv)`` of M (real or complex; its storage is reused), or None when M is
    singular or not finite."""
    from .._backend import lu_factor_quiet  # no process-wide warnings filter (thread-safe)

    try:
        lu = lu_factor_quiet(M, overwrite_a=True)
    except (np.linalg.LinAlgError, ValueError):
        return None
    if not np.all(np.isfinite(lu[0].diagonal())) or np.any(lu[0].diagonal() == 0):
        return None
    return lu


def _lowrank_reduced_once(st: LowRankStats, s: np.ndarray, c, shift):
    """Bordered system [[shift·I₂, E], [Eᵀ, B(c)]] [b; x] = [0; (Y; Y)] on the statistics.

    B(c) = cI + Z C Zᵀ with Z = blockdiag(U, W), C = [[0, S], [S, 0]] (Woodbury:
    B⁻¹v = (v − Z C L⁻¹ Zᵀ v)/c, L = cI + ZᵀZ C); every vector stays in span(1, Y, U) (top)
    and span(1, Y, W) (bottom), so only r×r, r×k and k-sized sums are needed. Returns
    (b (2, k), T_u (r, k), T_w (r, k)) with x_top = (Y − 1 b₁ − U T_u)/c and
    x_bot = (Y − 1 b₂ − W T_w)/c, or None when the system cannot be solved.
    """
    r = s.size
    S = np.diag(s)
    Zr = np.zeros((r, r))
    C = np.block([[Zr, S], [S, Zr]])
    ZtZC = np.block([[st.UtU, Zr], [Zr, st.WtW]]) @ C
    L = ZtZC.astype(np.result_type(ZtZC, c), copy=True)
    L[np.diag_indices(2 * r)] += c
    lu = _lu_or_none(L)
    if lu is None:
        return None
    ZtR = np.vstack([st.UtY, st.WtY])
    ZtE = np.zeros((2 * r, 2))
    ZtE[:r, 0], ZtE[r:, 1] = st.Ut1, st.Wt1
    TR = C @ sla.lu_solve(lu, ZtR, check_finite=False)
    TE = C @ sla.lu_solve(lu, ZtE, check_finite=False)
    EZr = np.vstack([st.sumY - st.Ut1 @ TR[:r], st.sumY - st.Wt1 @ TR[r:]]) / c
    ete = st.n if st.ete is None else st.ete
    EZb = np.array([[ete - st.Ut1 @ TE[:r, 0], -(st.Ut1 @ TE[:r, 1])],
                    [-(st.Wt1 @ TE[r:, 0]), ete - st.Wt1 @ TE[r:, 1]]]) / c
    Smat = EZb - shift * np.eye(2)
    cond = np.linalg.cond(Smat) if np.all(np.isfinite(Smat)) else np.inf
    if not (np.isfinite(cond) and cond < 1e15):
        return None
    b = np.linalg.solve(Smat, EZr)
    Tu, Tw = TR[:r] - TE[:r] @ b, TR[r:] - TE[r:] @ b
    if not (np.all(np.isfinite(b)) and np.all(np.isfinite(Tu)) and np.all(np.isfinite(Tw))):
        return None
    return b, Tu, Tw


def askls_lowrank_reduced(st: LowRankStats, s, C: float, *, ridge: float | None = 1.0
                          ) -> LowRankCoef:
    """AsK-LS, He et al. (2023) eq. (6), with K ≈ U diag(s) Wᵀ, solved on r×r statistics only.

    The low-rank solve of :func:`askls_solve` (``method='lowrank'``, Woodbury + bordered 2×2
    bias system) written on the sums of :class:`LowRankStats`, so that the n-sized unknowns are
    never formed: ã = α ⊙ y and b̃ = β ⊙ y are affine in the rows of (Y, U, W)
    (:meth:`LowRankCoef.expand`). As in memory, the rcond estimate is skipped for low-rank
    factors; when the system cannot be solved (singular L or bias block, non-finite values) the
    paper's ridge fallback (AᵀA + ridge·I)⁻¹Aᵀb is used, as the complex-shifted structured system
    c → c − iμ, bias block −iμ (μ = √ridge; real part), with an :class:`IllConditionedWarning`.
    ``C`` is the regularisation constant (γ of eq. 6).
    """
    c = 1.0 / _check_C(C)
    s = np.asarray(s, dtype=np.float64)
    out = _lowrank_reduced_once(st, s, c, 0.0)
    if out is not None:
        b, Tu, Tw = out
        return LowRankCoef(b, 1.0 / c, b / c, Tu / c, Tw / c, False)
    if ridge is None or ridge <= 0:
        raise np.linalg.LinAlgError(
            f"the low-rank AsK-LS system is singular and ridge fallback is disabled "
            f"(ridge={ridge})"
        )
    warnings.warn(
        f"ill-conditioned LS-SVM system (singular low-rank system); using the ridge-regularised "
        f"normal equations (AᵀA + {ridge:g}·I)⁻¹Aᵀb as the paper's code does",
        IllConditionedWarning,
        stacklevel=3,
    )
    mu = float(np.sqrt(ridge))
    cz = complex(c, -mu)
    out = _lowrank_reduced_once(st, s, cz, complex(0.0, -mu))
    if out is None:  # pragma: no cover - the complex shift is never singular in exact arithmetic
        raise np.linalg.LinAlgError("ridge-regularised system could not be factorised")
    b, Tu, Tw = out
    return LowRankCoef(b.real.copy(), float((1.0 / cz).real), (b / cz).real, (Tu / cz).real,
                       (Tw / cz).real, True)
