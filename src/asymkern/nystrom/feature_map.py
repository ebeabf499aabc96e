"""Nyström feature maps for symmetric and asymmetric kernels (a scikit-learn transformer).

:class:`NystromFeatureMap` is the asymmetric generalisation of
``sklearn.kernel_approximation.Nystroem``: explicit finite-dimensional maps φ̂ (left argument)
and ψ̂ (right argument) with φ̂(x)ᵀψ̂(z) ≈ κ(x, z), for any kernel κ — symmetric or not,
positive semi-definite or not.

Mathematics
-----------
Let C = (c_1, …, c_m) be the landmarks and K_CC = [κ(c_i, c_j)] (m × m, not symmetric in
general) with thin SVD K_CC = U S Vᵀ, keeping the r singular values above the cut-off
(``rcond``·s_max, default m·eps of X's dtype; the rest are treated as zero, i.e. pseudo-inverse).
The asymmetric Nyström approximation of the kernel (Tao et al. (2024), Tao et al. ICML 2024, §3 eq.
(8)–(9), with the same landmark set on both sides; the symmetric one is Li, Liu and Zhang §II-C,
K̃ = K_nm K_mm^† K_mn) is

    κ̃(x, z) = K(x, C) K_CC^† K(C, z),     K_CC^† = V S⁻¹ Uᵀ.

Splitting K_CC^† = (V S^{-1/2} Qᵀ)(U S^{-1/2} Qᵀ)ᵀ for any Q with orthonormal columns gives

    φ̂(x) = K(x, C) · V S^{-1/2} Qᵀ      (left map, ``transform_left``),
    ψ̂(z) = K(C, z)ᵀ · U S^{-1/2} Qᵀ     (right map, ``transform_right``),

and φ̂(x)ᵀψ̂(z) = K(x, C) V S⁻¹ Uᵀ K(C, z) = κ̃(x, z) exactly. Without the rotation (Q = I)
coordinate s is √s_s times the Nyström extension of the s-th pair of singular functions of
Tao et al. (2024) eq. (8): K(x, C) v_s / s_s and K(C, z)ᵀ u_s / s_s. We take **Q = U**, so

    ``normalization_``       = V S^{-1/2} Uᵀ,   ``normalization_right_`` = U S^{-1/2} Uᵀ.

Why: for a symmetric PSD kernel U = V on the kept range and both matrices equal K_CC^{-1/2},
so both maps are *exactly* scikit-learn's ``Nystroem`` map K(x, C) K_CC^{-1/2} (not merely up to
a rotation), and the output always has m = ``n_components_`` columns (stable feature names),
as ``Nystroem``'s does. With every training point as a landmark, φ̂(X)ψ̂(Z)ᵀ reproduces κ on
the training points exactly (K_XX K_XX^† K_XX = K_XX).

Row-normalised kernels (``'sne'``, ``'t'``) are refused: their value κ(x, z) depends on the
reference set the rows are normalised over, so they are not one fixed function of (x, z).
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._shared.nystrom_basis import kernel_block
from .._shared.nystrom_predict import kernel_row_bytes, rows_within
from .._validation import (
    as_data,
    check_finite_output,
    check_indices,
    check_input,
    check_random_state,
    clip_count,
    forgets_previous_fit,
    ndim_of,
)
from ..config import check_memory, get_config
from ..kernels import resolve_kernel
from ..linalg.svd import PASS_BLOCK_ARRAYS, dense_svd_bytes

__all__ = ["NystromFeatureMap"]

class NystromFeatureMap(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Nyström feature map of a (possibly asymmetric) kernel: φ̂(x)ᵀψ̂(z) ≈ κ(x, z).

    The maps are φ̂(x) = K(x, C) V S^{-1/2} Uᵀ and ψ̂(z) = K(C, z)ᵀ U S^{-1/2} Uᵀ from the SVD
    K_CC = U S Vᵀ of the landmark kernel matrix, so that φ̂(x)ᵀψ̂(z) = K(x, C) K_CC^† K(C, z)
    (asymmetric Nyström, Tao et al. (2024) §3 eq. (8)–(9); the symmetric case is Li, Liu and Zhang
    §II-C). For a symmetric PSD kernel both maps equal scikit-learn's ``Nystroem`` map K(x, C)
    K_CC^{-1/2}. The module docstring derives the split.

    API: ``transform(X)`` returns the map selected by ``side`` — ``'left'`` (default, φ̂, the
    kernel's first argument) or ``'right'`` (ψ̂, its second argument) — so either map can be
    a Pipeline step and ``side`` can be grid-searched; ``transform_left`` and
    ``transform_right`` return one map each regardless of ``side``, so one fitted map gives
    both factors of κ̃(X, Z) = transform_left(X) @ transform_right(Z).T.

    Parameters
    ----------
    kernel : str, Kernel or callable, default='rbf'
        Any :mod:`asymkern.kernels` kernel, symmetric or not (row-normalised ones refused).
    gamma : float, default=None
        Kernel width (scikit-learn's meaning, exp(−gamma‖x − z‖²) for ``'rbf'``); None keeps
        the kernel's own default (see :func:`~asymkern.kernels.resolve_kernel`).
    kernel_params : dict, default=None
        Further kernel parameters.
    n_components : int, default=100
        Number of landmarks m (= output width). Larger than n_samples: clipped to n_samples
        with a :class:`~asymkern.exceptions.ClippedParameterWarning` (as ``Nystroem``).
        Ignored when ``landmarks`` is an array of row indices.
    landmarks : {'uniform', 'kmeans'} or array of int, default='uniform'
        ``'uniform'``: m distinct training rows drawn as ``Nystroem`` draws them (the first m
        of ``random_state.permutation(n)``); ``'kmeans'``: k-means centres; an array: the
        training rows with these indices (distinct integers in [0, n_samples); negative
        indices are refused, not wrapped around).
    rcond : float, default=None
        Singular values of K_CC below ``rcond``·s_max are treated as zero (pseudo-inverse);
        default m·eps of X's dtype.
    random_state : None, int or RandomState, default=None
        Randomness of the landmark draw (a numpy ``Generator`` is refused).
    side : {'left', 'right'}, default='left'
        Which map ``transform`` returns.

    Attributes
    ----------
    components_ : ndarray or sparse matrix of shape (m, n_features)
        The landmark points C.
    component_indices_ : ndarray of shape (m,) or None
        Training-row indices of the landmarks (None for k-means).
    normalization_ : ndarray of shape (m, m)
        V S^{-1/2} Uᵀ (left map; ``Nystroem``'s attribute name).
    normalization_right_ : ndarray of shape (m, m)
        U S^{-1/2} Uᵀ (right map).
    singular_values_ : ndarray of shape (r,)
        Kept singular values of K_CC.
    n_components_ : int
        The number of landmarks (output columns) used.
    n_features_in_ : int
        Number of features of X seen in fit.
    feature_names_in_ : ndarray of str
        Column names of X, when X is a DataFrame with string column names.

    See Also
    --------
    sklearn.kernel_approximation.Nystroem : The symmetric PSD special case.
    asymkern.KernelSVD : Kernel SVD, whose ``solver='nystrom'`` uses the same approximation.
    NystromKernelRidge : Kernel machines on Nyström features.

    References
    ----------
    .. [1] Q. Tao, F. Tonin, A. Lambert, Y. Chen, P. Patrinos, J. A. K. Suykens, "Learning in
       Feature Spaces via Coupled Covariances: Asymmetric Kernel SVD and Nyström method",
       ICML 2024.
    .. [2] W. Li, M. Liu and D. Zhang, "Geometric Interpretation of Running Nyström-Based Kernel
       Machines and Error Analysis".

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.nystrom import NystromFeatureMap
    >>> X = np.random.RandomState(0).randn(50, 3)
    >>> fm = NystromFeatureMap(n_components=10, random_state=0).fit(X)
    >>> fm.transform(X).shape
    (50, 10)
    """

    def __init__(self, kernel="rbf", gamma=None, kernel_params=None, n_components=100,
                 landmarks="uniform", rcond=None, random_state=None, side="left"):
        self.kernel = kernel
        self.gamma = gamma
        self.kernel_params = kernel_params
        self.n_components = n_components
        self.landmarks = landmarks
        self.rcond = rcond
        self.random_state = random_state
        self.side = side

    # ---------------------------------------------------------------------------- helpers
    def _kernel(self):
        fitted = vars(self).get("_fitted_kernel")  # the fit's (a copy: later set_params on
        if fitted is not None:  # the caller's Kernel instance cannot change the model)
            return fitted
        kern = resolve_kernel(self.kernel, self.kernel_params, gamma=self.gamma)
        if getattr(kern, "row_normalized", False):
            raise ValueError(
                f"NystromFeatureMap needs a kernel that is one fixed function κ(x, z); {kern!r} "
                "is row-normalised over a reference set (its values depend on the other "
                "argument set), so it has no Nyström feature map: use e.g. 'rbf' or a "
                "callable kernel")
        return kern

    def _accepts_sparse(self) -> bool:
        try:
            return bool(resolve_kernel(self.kernel, self.kernel_params,
                                       gamma=self.gamma).accepts_sparse)
        except Exception:  # an invalid kernel is reported by fit, not by the tags
            return False

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self._accepts_sparse()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    @property
    def _n_features_out(self):
        """Output width (``get_feature_names_out``: nystromfeaturemap0, …)."""
        return self.n_components_

    # -------------------------------------------------------------------------------- fit
    @forgets_previous_fit
    def fit(self, X, y=None):
        """Choose the landmarks C among the rows of X and factor K_CC = U S Vᵀ.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n, d)
            Training data.
        y : None
            Ignored.

        Returns
        -------
        self : NystromFeatureMap
            The fitted transformer.

        Raises
        ------
        ValueError
            If ``side`` or ``landmarks`` is invalid, ``rcond`` is outside [0, 1), the kernel is
            row-normalised, or K_CC is zero.
        TypeError
            For ``landmarks='kmeans'`` with sparse X.
        """
        if self.side not in ("left", "right"):
            raise ValueError(f"side must be 'left' or 'right', got {self.side!r}")
        kern = self._fitted_kernel = self._kernel()
        X = check_input(self, X, reset=True, name="X", allow_sparse=self._accepts_sparse())
        n = X.shape[0]
        rng = check_random_state(self.random_state, "random_state")
        if isinstance(self.landmarks, str):
            if self.landmarks not in ("uniform", "kmeans"):
                raise ValueError(f"landmarks must be 'uniform', 'kmeans' or an array of row "
                                 f"indices, got {self.landmarks!r}")
            m = clip_count(self.n_components, n, "n_components",
                           "the number of samples n_samples", owner=type(self).__name__)
            if self.landmarks == "uniform":
                idx = rng.permutation(n)[:m]  # scikit-learn Nystroem's draw
                C = X[idx]
            else:
                if sp.issparse(X):
                    raise TypeError("landmarks='kmeans' is not available for sparse X; use "
                                    "'uniform' or row indices")
                from ..landmarks import kmeans_landmarks

                idx = None
                _, C = kmeans_landmarks(X, m, return_centers=True, random_state=rng)
                C = np.asarray(C, dtype=X.dtype)
        else:
            idx = check_indices(self.landmarks, n, "landmarks")  # in [0, n), unique
            C = X[idx]
        m = C.shape[0]
        rcond = self.rcond
        if rcond is None:
            rcond = m * float(np.finfo(X.dtype).eps)
        elif not (isinstance(rcond, numbers.Real) and 0 <= rcond < 1):
            raise ValueError(f"rcond must be a number in [0, 1), got {rcond!r}")
        # K_CC (m×m float64) and its SVD (copy, U, Vᵀ, LAPACK workspace), then the two m×m
        # normalisations with an m×r temporary beside U and Vᵀ
        check_memory(8 * m * m + dense_svd_bytes(m, m, np.float64),
                     f"{type(self).__name__}(n_components={m}) factoring the {m}×{m} landmark "
                     "kernel matrix K_CC", "fewer landmarks (n_components)",
                     detail="K_CC, its SVD with the LAPACK workspace and the two m×m "
                            "normalisation matrices")
        Kcc = check_finite_output(kernel_block(kern, C, C), "the landmark kernel matrix K_CC",
                                  "rescale X or change the kernel parameters")
        U, S, Vt = np.linalg.svd(Kcc, full_matrices=False)
        del Kcc
        if not S.size or not S[0] > 0:
            raise ValueError("the landmark kernel matrix K_CC is zero: no Nyström feature map")
        r = int(np.count_nonzero(S > rcond * S[0]))  # S decreases: the kept ones lead
        Ur, Sr, Vr = U[:, :r], S[:r], Vt[:r].T
        inv_sqrt = 1.0 / np.sqrt(Sr)
        self.normalization_ = (Vr * inv_sqrt) @ Ur.T  # V S^{-1/2} Uᵀ
        self.normalization_right_ = (Ur * inv_sqrt) @ Ur.T  # U S^{-1/2} Uᵀ
        self.singular_values_ = Sr
        self.components_ = C
        self.component_indices_ = idx
        self.n_components_ = m
        self._dtype = np.dtype(X.dtype)
        return self

    # -------------------------------------------------------------------------- transform
    def _map(self, X, right: bool):
        """φ̂(X) = K(X, C) ``normalization_`` (left) or ψ̂(X) = K(C, X)ᵀ
        ``normalization_right_`` (right), Tao et al. (2024) §3 eq. (8)–(9), in X's dtype.

        Only the n × m output exists whole: the rows of X are taken in chunks whose float64
        kernel block, its product with the normalisation and the copies of the data forming
        the block fit what the output leaves of ``max_dense_memory`` (and the block fits
        ``working_memory``, as ``kernel_block``'s blocks do). Refused with a
        :class:`~asymkern.config.MemoryBudgetError` before anything is formed when not even
        the output and one row fit.
        """
        check_is_fitted(self, "normalization_")
        if not sp.issparse(X) and ndim_of(X) == 1:  # "reshape your data" first
            as_data(X, "X")
        X = check_input(self, X, reset=False, name="X", allow_sparse=self._accepts_sparse())
        kern = self._kernel()
        n, m = X.shape[0], self.n_components_
        out_dtype = np.dtype(X.dtype)
        step = _chunk_rows(kern, X, self.components_, right, out_dtype,
                           f"{type(self).__name__}.transform of {n} samples ({n}×{m} features)")
        # validated once; one centre for every chunk (squared-distance kernels: the mean of
        # the kernel's second argument, as one block over all of X would use), so the kernel
        # values do not depend on the chunking
        if right:
            C, X = kern.validate_pair(self.components_, X)
            kw = {"center": kern.center_for(X)} if kern.uses_center else {}
        else:
            X, C = kern.validate_pair(X, self.components_)
            kw = {"center": kern.center_for(C)} if kern.uses_center else {}
        N = self.normalization_right_ if right else self.normalization_
        # one chunk: the features themselves are cast (as one block always was); else the
        # output is preallocated and a float64 one takes the products straight in
        out = None if step >= n else np.empty((n, m), dtype=out_dtype)
        for a in range(0, n, step):
            rows = X[a:a + step]
            # the right map's block K(C, Z)ᵀ is copied to rows × m C order (the layout, and
            # so the GEMM, of one block over all of Z)
            K = (np.asarray(kern._raw(C, rows, **kw).T, dtype=np.float64, order="C") if right
                 else np.asarray(kern._raw(rows, C, **kw), dtype=np.float64))
            if out is not None and out_dtype == np.float64:
                F = np.matmul(K, N, out=out[a:a + step])
            else:
                F = K @ N
            del K
            check_finite_output(F, "the Nyström features", "rescale X like the training data")
            if out is None:
                return F.astype(out_dtype, copy=False)
            out[a:a + step] = F
            del F
        return out

    def transform(self, X):
        """The map selected by ``side``: φ̂(X) (``'left'``) or ψ̂(X) (``'right'``).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n, d)
            Samples.

        Returns
        -------
        ndarray of shape (n, ``n_components_``)
            The features (dtype of the input).
        """
        return self._map(X, right=self.side == "right")

    def transform_left(self, X):
        """Left map φ̂(X) = K(X, C) V S^{-1/2} Uᵀ (X in the kernel's first argument).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n, d)
            Samples.

        Returns
        -------
        ndarray of shape (n, ``n_components_``)
            The features (dtype of the input).
        """
        return self._map(X, right=False)

    def transform_right(self, Z):
        """Right map ψ̂(Z) = K(C, Z)ᵀ U S^{-1/2} Uᵀ (Z in the kernel's second argument).

        Parameters
        ----------
        Z : {array-like, sparse matrix} of shape (n, d)
            Samples.

        Returns
        -------
        ndarray of shape (n, ``n_components_``)
            The features (dtype of the input).
        """
        return self._map(Z, right=True)


def _chunk_rows(kernel, X, C, right: bool, out_dtype: np.dtype, what: str) -> int:
    """Rows of X a Nyström feature map takes at a time.

    As many as what the n × m output (``out_dtype``) and the copies of the landmarks leave
    of ``max_dense_memory`` at a row's cost (:func:`~asymkern._shared.nystrom_predict.rows_within`):
    its kernel block and the kernel's temporaries, the float64 product with the normalisation,
    the finiteness mask and the copies of the row forming the block makes
    (:func:`~asymkern._shared.nystrom_predict.kernel_row_bytes`: the larger ones, those of
    the block's rows, counted for X's rows and for the landmarks whichever side X is on); at
    most the rows of one ``working_memory`` block (half of it for the block, as
    ``kernel_block``), all n at most.

    Raises
    ------
    MemoryBudgetError
        When the output and one row exceed ``max_dense_memory`` (``what`` names the
        transform and its rows).
    """
    n, m = int(X.shape[0]), int(C.shape[0])
    per_row, landmark_data = kernel_row_bytes(kernel, X, C)  # K(X, C): X's rows, C's columns
    x_data = per_row - PASS_BLOCK_ARRAYS * 8 * m  # the copies of one row of X forming it
    if right:  # K(C, Z): the landmarks are its rows, X its columns
        landmark_data = max(landmark_data, x_data * m)
    per_row += 8 * m + m  # the product K N (float64) and check_finite_output's mask
    held = n * m * out_dtype.itemsize + landmark_data
    step = rows_within(n, per_row, held, what, "a transform of fewer rows at a time",
                       f"the {n}×{m} features in {out_dtype.name} beside one row's float64 "
                       "kernel block K(X, C), its product with the normalisation and the "
                       "data copies forming it")
    wm_rows = int(get_config()["working_memory"] * 2**20 // max(1, 2 * m * 8))
    return max(1, min(step, wm_rows))
