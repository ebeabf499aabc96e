"""KernelSVD: the coupled covariances eigenproblem (CCE) solved by the SVD of an asymmetric kernel
matrix (Tao et al. (2024), §2, Prop. 2.4–2.5).

With G_ij = κ(x_i, z_j) = ⟨φ(x_i), ψ(z_j)⟩ and its top-r SVD G = U Σ Vᵀ, the CCE stationarity
conditions read G V = U Σ and Gᵀ U = V Σ. Projection scores of new data (Tao et al. (2024), §2.2,
after Prop. 2.5): left e(x) = [κ(x, z_j)]_j V (equals UΣ on the training rows), right
e(z) = [κ(x_i, z)]_iᵀ U (equals VΣ on the training columns). With ``center=True`` both feature
maps are centred on the training sets (G̃ = H_n G H_m) and new kernel rows are centred the same
way.
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import _get_feature_names, check_is_fitted

from .._backend import NUMPY, Centered, DenseMatrix, LazyMatrix, _centred_product, ops_of
from .._dask import any_dask, is_dask_array
from .._dispatch import any_torch
from .._shared.ksvd import (  # noqa: F401 - AUTO_BANDWIDTH_FACTOR, median_bandwidth: public here
    AUTO_BANDWIDTH_FACTOR,
    _resolve_bandwidth,
    build_kernel,
    check_weights,
    median_bandwidth,
    median_sample_indices,
)
from .._shared.nystrom_predict import kernel_row_bytes, pass_within, rows_within
from .._torch import check_device, use_torch
from .._validation import (
    array_nbytes,
    as_data,
    check_bool,
    check_input,
    check_positive,
    check_random_state,
    check_tensor_shape,
    clip_count,
    forgets_previous_fit,
    input_precision,
    like_input,
    narrowed,
    user_stacklevel,
)
from ..config import check_memory
from ..kernels import CompatibilityTransform, KernelMatrix, get_kernel
from ..kernels.base import _dense
from ..linalg._svd_core import PRECISIONS, _solver_blocks, check_randomized_options
from ..linalg.nystrom import check_nystrom_options
from ..linalg.svd import (
    SOLVERS,
    _nystrom_options,
    auto_solver,
    blocks_within,
    budget_bytes,
    check_svd_budget,
    matrix_kind,
    pass_block_bytes,
    svd_solver_bytes,
    top_svd,
)

#: the rounding error of one kernel entry in units of eps·|G_ij| (the distance expansion, the
#: exponential and a normalisation), in the noise level of a centred fit
_ENTRY_ROUNDING = 8.0

#: fitted arrays another executor holds; numpy input gets numpy copies (``_executor_arrays``)
#: options of the asymmetric Nyström solver that are first-class KernelSVD parameters (formerly
#: keys of ``nystrom_params``, where they are deprecated since 0.2 and removed in 0.4)
NYSTROM_PARAMS = ("n_row_landmarks", "n_col_landmarks", "sampling")
#: the keys of ``nystrom_params`` whose values are checked before any work, whatever the solver
#: (:func:`~asymkern.linalg.nystrom.check_nystrom_options`)
_NYSTROM_VALUE_OPTIONS = ("tol", "estimate", "weights", "max_landmarks", "n_probes",
                          "core_solver", "rcond", "normalize", "orthogonalize")
#: the release in which the keys of NYSTROM_PARAMS stop being accepted in ``nystrom_params``
NYSTROM_PARAMS_REMOVAL = "0.4"

_EXECUTOR_ATTRS = ("singular_values_", "left_singular_vectors_", "right_singular_vectors_",
                   "X_fit_", "Z_fit_", "row_means_", "col_means_", "_train_scores")


def _weighted_norm(a, w=None) -> float:
    """(Σ_i w_i a_i²)^½ (w: host weights, None for ones) of a vector of any executor, in
    float64, scaled by max|a| first so that entries near 1e300 do not overflow the squares; a
    Dask vector is reduced by its workers (only scalars reach the client)."""
    if is_dask_array(a):
        top = float(abs(a).max().compute()) if a.size else 0.0
        if top == 0.0:
            return 0.0
        b = a / top
        return top * float(np.sqrt((b * b if w is None else b * b * w).sum().compute()))
    a = np.asarray(_host(a), dtype=np.float64)
    top = float(np.max(np.abs(a))) if a.size else 0.0
    if top == 0.0:
        return 0.0
    b = a / top
    return top * float(np.sqrt(b @ b if w is None else (np.asarray(w, dtype=np.float64) * b) @ b))


def _host(a):
    """Weights given as another executor's array (a tensor) as a numpy array."""
    return ops_of(a).to_host(a) if any_torch(a) else a


def _numpy_dtype(G) -> np.dtype:
    """The numpy dtype of G's entries (any executor)."""
    if isinstance(G, LazyMatrix) or ops_of(G) is NUMPY:
        return np.dtype(G.dtype)
    return ops_of(G).dtype(G)


def _weighted_normaliser(zn, what: str):
    """The weighted normalisers Σ_r w^z_r κ(x_i, z_r) of a row-normalised kernel (host or
    device array), checked: each must be positive and finite. It is 0 where the whole kernel
    mass of x_i lies on columns of weight 0 (or underflows), and the renormalised row is then
    undefined."""
    host = np.asarray(_host(zn), dtype=np.float64)
    bad = ~(np.isfinite(host) & (host > 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"sample_weight_Z: the weighted normaliser Σ_r w_r κ(x, z_r) of {what} {i} is "
            f"{host[i]!r}: its kernel mass lies on columns of weight 0 (or "
            "underflows); give those columns a positive weight or widen the kernel")
    return zn


def _within(G, left: float, others=()):
    """G with blocks whose passes hold at most ``left`` bytes: a numpy KernelMatrix through
    :func:`~asymkern.linalg.svd.blocks_within`, the torch kernel matrix through its own
    ``within`` (``others``: lengths of its passes' other axis besides the full rows); any other
    matrix as it is."""
    if hasattr(G, "within") and hasattr(G, "pass_bytes"):
        return G.within(left, others)
    return blocks_within(G, left)


def _pass_bytes(G, others=()) -> int:
    """Bytes the kernel blocks of a pass over G hold (:func:`~asymkern.linalg.svd.pass_block_bytes`,
    or the torch kernel matrix's own count, as numpy counts them); 0 for a formed matrix."""
    if hasattr(G, "within") and hasattr(G, "pass_bytes"):
        return int(G.pass_bytes(others))
    return pass_block_bytes(G)


def _row_bytes(kernel, P, train) -> tuple[int, int]:
    """:func:`~asymkern._shared.nystrom_predict.kernel_row_bytes` of K(P, train) (bytes a row
    of P, fixed bytes), for torch tensors too: numpy's count, linear in the rows of ``train``,
    taken from host stand-ins of one and two rows (nothing of the size of the data is copied
    to the host)."""
    if not any_torch(P, train):
        return kernel_row_bytes(kernel, P, train)
    d, cols = int(P.shape[1]), int(train.shape[0])
    one = kernel_row_bytes(kernel, np.zeros((1, d)), np.zeros((1, d)))
    two = kernel_row_bytes(kernel, np.zeros((1, d)), np.zeros((2, d)))
    return (one[0] + (two[0] - one[0]) * (cols - 1), one[1] + (two[1] - one[1]) * (cols - 1))


def _buffers(a) -> list:
    """The numpy buffers behind ``a``: a dense array (or what ``numpy.asarray`` makes of an
    array-like such as a DataFrame, often a view of it), or the data, index and pointer
    arrays of a sparse matrix; none for anything else (a list is always converted to a new
    array)."""
    if a is None or isinstance(a, (list, tuple)):
        return []
    if sp.issparse(a):
        return [getattr(a, k) for k in ("data", "indices", "indptr", "row", "col", "offsets")
                if isinstance(getattr(a, k, None), np.ndarray)]
    if isinstance(a, np.ndarray):
        return [a]
    if hasattr(a, "__array__") and not any_torch(a):
        return [np.asarray(a)]
    return []


def _owned(data, *given):
    """A training set as the kernel sees it (``data``: X_fit_ or Z_fit_ of the in-memory
    fit), copied when it may share memory with one of the caller's inputs ``given``: the
    model keeps its own training data, never a reference to the caller's (the safety
    contract of docs/ARCHITECTURE.md). A set the fit computed (a compatibility transform, a
    transposed or densified copy) is kept as it is."""
    mine = _buffers(data)
    theirs = [b for g in given for b in _buffers(g)]
    if any(np.may_share_memory(a, b) for a in mine for b in theirs):
        return data.copy()
    return data


def _times_sigma(a, s):
    """a Σ in a's dtype: scores and embeddings keep the factors' dtype (a Nyström fit keeps
    float64 singular values also for float32 data)."""
    return a * ops_of(s).astype(s, ops_of(a).dtype(a))


class KernelSVD(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Kernel SVD (KSVD) with an asymmetric kernel between two sets (Tao et al., 2024).

    Parameters
    ----------
    n_components : int, default 2
        Number r of singular triplets; more than min(n, m) is clipped to it with a
        :class:`~asymkern.exceptions.ClippedParameterWarning` (the value used is
        ``n_components_``).
    kernel : str, Kernel or callable, default 'rbf'
        Kernel name (see ``asymkern.kernels.KERNELS``), a ``Kernel``, a callable
        ``f(X, Z) -> (n, m)``, or ``'precomputed'`` (``fit(G)`` with G the n×m kernel matrix).
    kernel_params : dict, optional
        Constructor arguments of the named kernel (e.g. ``{'gamma': 0.5}``). For the kernels with
        a ``bandwidth`` (rbf, sne), ``{'bandwidth': 'median'}`` sets γ to the median distance
        between the two training sets (:func:`median_bandwidth`; weighted by ``sample_weight``
        and ``sample_weight_Z`` when given, so a weight 0 removes the row from it too) and
        ``{'bandwidth': 'auto'}`` to :data:`AUTO_BANDWIDTH_FACTOR` times it; the value used is
        ``bandwidth_``. At most 500 rows of each set enter the median, drawn with a fixed seed
        by position (so for larger sets the value depends on the rows' order, by a few %).
    center : bool, default False
        Centre both feature maps on the training sets (G̃ = H_n G H_m, §2).
    compat : {'pca', 'polar', 'pinv', 'random', 'a0', 'a1', 'a1c', 'a2'}, array or None
        Default 'pca'. Compatibility matrix (Remark 2.3, App. D) used when ``fit(A)`` is given
        one data matrix whose rows x_i ∈ R^M and columns z_j ∈ R^N differ in dimension.
        Ignored when Z is given (but an unknown name or a value of the wrong type is refused
        there too). ``'polar'``/``'a1c'`` is a1 corrected so that both sets share
        coordinates (:func:`asymkern.kernels.compat.polar_factor`).
        Works on a dask A too (:mod:`asymkern._dask.compat`, the same C as in memory). a2 draws
        C from :func:`asymkern._random.normal_rows` (chunk-independent; its numbers differ from
        those of asymkern ≤ 0.1.0) and a1 fixes the signs of its factor (largest entry of each
        column of W positive), so results no longer depend on the LAPACK build.
    solver : {'auto', 'dense', 'arpack', 'randomized', 'block_krylov', 'nystrom'}, default 'auto'
        Top-r SVD solver (:func:`asymkern.linalg.svd.top_svd`): 'dense' (LAPACK on G),
        'arpack' (Lanczos), 'randomized' (Halko et al.; its fused passes square the
        spectrum, so when σ_r falls below 2·eps^(1/3)·σ_1 it iterates on in the two-pass
        form: :func:`asymkern.linalg.svd.randomized_svd`),
        'block_krylov' (randomized block Krylov, Musco & Musco: about half the passes over a
        lazy G for the same accuracy),
        'nystrom' (the asymmetric Nyström method of §3, eq. (8)–(9) of [1]_, which evaluates
        only sampled rows and columns of G); 'auto' picks one from the size of G and r. The
        solver used is ``solver_``.
    n_oversamples : int, default 10
        Extra random vectors of the 'randomized' and 'block_krylov' solvers.
    n_iter : int or 'auto', default 'auto'
        Power iterations of the 'randomized' solver, Krylov steps of 'block_krylov'
        (:func:`asymkern.linalg.randomized_svd`).
    nystrom_params : dict, optional
        Further keyword options of the asymmetric Nyström solver
        (:func:`~asymkern.linalg.asymmetric_nystrom`: ``tol``, ``estimate``, ``max_landmarks``,
        ``row_sampling``, ``col_sampling``, ``row_points``, ``col_points``, ``normalize``,
        ``orthogonalize``, ``core_solver``, ``rcond``, …). The landmark counts and the
        sampling are the parameters ``n_row_landmarks``, ``n_col_landmarks`` and ``sampling``:
        giving them as keys of this dict is deprecated since 0.2 (``FutureWarning`` at fit)
        and will be an error in 0.4; giving one both ways raises ``ValueError``.
    working_memory : float, optional
        MiB per kernel block (default: ``asymkern.get_config()``).
    random_state : None, int or numpy.random.RandomState, default None
        Randomness of the arpack/randomized/Nyström solvers and of compat 'random' (a2).
        ``None`` draws from numpy's global RandomState (fresh entropy, never a fixed seed); an
        int makes fits reproducible; a :class:`numpy.random.Generator` is refused with a
        ``TypeError`` (:func:`asymkern._validation.check_random_state`, the library's one
        policy). The dense solver and compat 'pca'/'pinv' use no randomness.
    gamma : float or None, default None
        Kernel width at estimator level (scikit-learn's meaning: κ = exp(−gamma‖x − z‖²) for
        'rbf' and 'sne'; the papers' bandwidth σ is gamma = 1/σ²), resolved by
        :func:`asymkern.kernels.resolve_kernel`. ``None`` keeps the kernel's own default (or
        ``kernel_params``). Refused (``ValueError``) for a kernel without a width, with
        ``'precomputed'``, and together with ``kernel_params['bandwidth']`` (including
        ``'auto'``/``'median'``): the width is set once. A Kernel instance is never modified.
    device : None, str or torch.device, default None
        Run on the torch backend (:mod:`asymkern._torch`) on this device (``'cpu'``,
        ``'cuda'``, ``'cuda:0'``, …): numpy inputs are copied there and the fitted arrays and
        outputs come back as numpy arrays. ``None``: the numpy path for numpy input, the
        tensor's own device for torch tensors (which give tensors back, dtype kept). The
        torch backend supports the kernels of ``asymkern._torch.kernels.SUPPORTED_KERNELS``
        and every solver: 'auto', 'dense', 'randomized', 'block_krylov', 'nystrom' (every
        sampling, and growth to ``tol``) and 'arpack' (scipy's ARPACK on the host, the
        numpy path's starting vector, tolerance and signs, with the products G·v and Gᵀ·u
        on the device), ``center=True``, sample weights (the weighted matrix formed densely
        on the device) and the compatibility transform (computed on the host). With
        ``kernel='precomputed'`` G may be sparse (scipy sparse, or a sparse torch tensor):
        it is kept as CSR tensors on the device for 'arpack', 'randomized' and
        'block_krylov' (formed densely for 'dense' and sample weights). Sparse data
        features, and 'nystrom' with a sparse G, raise ``NotImplementedError``. Needs
        PyTorch (``pip install "asymkern[torch]"``).
    n_row_landmarks : int or None, default None
        Number s_x of sampled rows of G (landmarks) of ``solver='nystrom'``; not used by the
        other solvers (but checked whatever the solver: an integer ≥ 1 or None). Above the
        rows of G: clipped with a ``ClippedParameterWarning``. ``None``:
        the value of ``n_col_landmarks`` (capped at n), or min(n, max(10r, 100)) when both
        are None; with ``nystrom_params['tol']`` the starting count of the growth. A
        parameter of its own so that a grid search can tune it
        (``GridSearchCV(pipe, {'ksvd__n_row_landmarks': [50, 100]})``).
    n_col_landmarks : int or None, default None
        Number s_z of sampled columns of G of ``solver='nystrom'``, as ``n_row_landmarks``.
    sampling : {'uniform', 'kmeans', 'leverage'} or None, default None
        How ``solver='nystrom'`` draws the landmarks of both sides (``None``: ``'uniform'``);
        ``nystrom_params['row_sampling']``/``['col_sampling']`` override it per side. Checked
        whatever the solver, as the keys of ``nystrom_params``.
    precision : {'high', 'low'}, default 'high'
        ``'low'`` (``solver='randomized'`` or ``'block_krylov'``): the passes that find the
        subspace run in a lower precision than the data's, and a last product in the data's
        precision (the Rayleigh–Ritz step) gives the result
        (:func:`asymkern.linalg.randomized_svd`): float32 kernel blocks for float64 numpy
        data and a kernel bounded by 1 (RBF, Laplacian, Cauchy, SNE, T, softmax; about half
        the time per pass), float16/bfloat16 operands through PyTorch's fused attention
        kernels on the torch backend (RBF, SNE, softmax). Any other combination raises
        ``ValueError``.

    Attributes
    ----------
    singular_values_ : ndarray of shape (r,)
        Singular values σ_1 ≥ … ≥ σ_r of G (of G̃ when centred, of G_w when weighted), in
        the dtype of G, except after ``solver='nystrom'``, which keeps them in float64 (they
        are formed as √(NM/(s_x s_z))·λ^W from float64 factors) also for float32 data.
    left_singular_vectors_ : ndarray of shape (n, r)
        Orthonormal left singular vectors U (the dual variables B_φ of Prop. 2.5 of [1]_).
    right_singular_vectors_ : ndarray of shape (m, r)
        Orthonormal right singular vectors V (the dual variables B_ψ).
    n_components_ : int
        Number of singular triplets computed (``n_components`` clipped to min(n, m)); fewer
        after ``solver='nystrom'`` when the landmark core G[I, J] has a lower numerical rank
        (:func:`~asymkern.linalg.asymmetric_nystrom` warns and keeps that rank).
    n_informative_ : int
        How many singular values exceed the numerical noise level (see Notes).
    solver_ : str
        The solver that ran ('dense', 'arpack', 'randomized', 'block_krylov' or 'nystrom').
    kernel_ : Kernel or None
        The kernel used (None when ``kernel='precomputed'``).
    compat_ : CompatibilityTransform or None
        The compatibility transform of ``fit(A)`` with a non-square A (else None).
    bandwidth_ : float or None
        The bandwidth chosen by ``'auto'``/``'median'`` (else None).
    X_fit_, Z_fit_ : ndarray or sparse matrix, or None
        The two training sets as the kernel sees them (after compat; None when precomputed).
    n_rows_, n_cols_ : int
        Shape (n, m) of the kernel matrix G.
    row_means_, col_means_ : ndarray of shape (n,) and (m,)
        Row and column means of G (only when ``center``; weighted means after a weighted fit).
    grand_mean_ : float
        Grand mean of G (only when ``center``).
    sample_weight_, sample_weight_Z_ : ndarray or None
        The weights of the fit (None when unweighted; a vector of ones for the side left
        unweighted in a weighted fit).
    nystrom_ : object
        The asymmetric Nyström factorisation (only after ``solver='nystrom'``).
    row_landmarks_, col_landmarks_ : ndarray of int
        Sampled rows I and columns J of G (only after ``solver='nystrom'``).
    n_features_in_ : int
        Number of features of X (of the columns of A, of G when precomputed).
    feature_names_in_ : ndarray of str
        Column names of X, when X is a DataFrame with string column names.
    z_features_in_ : int
        Number of features of Z (the number N of rows of A in ``fit(A)``).
    z_feature_names_in_ : ndarray of str or None
        Column names of Z when Z is a DataFrame.

    See Also
    --------
    KernelPCA : Kernel PCA, the symmetric special case (X = Z, symmetric PSD kernel).
    asymkern.nystrom.NystromFeatureMap : Nyström features for asymmetric kernels.
    asymkern.kernels.CompatibilityTransform : The compatibility matrices a0–a2.

    Notes
    -----
    **Why the second set is ``Z=`` and not ``y``.** The two sets of KSVD are *unpaired*: X has n
    rows and Z has m rows, in general n ≠ m, and no row of X belongs to a row of Z. In
    scikit-learn ``y`` is paired with X sample by sample: cross-validation, ``Pipeline`` and
    ``GridSearchCV`` split ``y`` with the rows of X, which would tear Z apart. So ``fit(X,
    y=None, *, Z=None)`` takes the second set as a keyword-only argument; ``y`` is ignored (a
    2-D ``y`` without ``Z`` is refused with a pointer to ``Z=``) and a third positional argument
    is accepted as Z for one release with a ``FutureWarning``. Singular values are those of G
    itself (the paper's 1/√(nm) scaling only rescales them). One caveat remains: scikit-learn's
    cross-validation (``cross_validate(..., params=...)``, ``GridSearchCV.fit(..., **params)``)
    splits *every* fit parameter that has as many rows as X. A ``Z`` (or ``sample_weight_Z``)
    with m = n rows passed that way is split with the folds, while the final refit sees all of
    it; with m ≠ n it is passed whole. KernelSVD cannot tell the two apart, so with m = n fit
    the folds yourself (e.g. with ``sklearn.model_selection.KFold``) and pass Z to each fit.

    **Sample weights.** The CCE (Tao et al. (2024), Def. 2.1, eq. 1) couples the empirical
    covariance operators Σ_φ = Σ_i φ(x_i)φ(x_i)* and Σ_ψ = Σ_j ψ(z_j)ψ(z_j)* (up to the factors
    1/n, 1/m, which only rescale the singular values): Σ_φ W_ψ = Λ W_φ, Σ_ψ W_φ = Λ W_ψ. Weighting
    the sample x_i by w_i and z_j by w^z_j — counting it w_i times — gives
    Σ_φ = Σ_i w_i φ(x_i)φ(x_i)* and Σ_ψ = Σ_j w^z_j ψ(z_j)ψ(z_j)*, and the dual derivation of
    Prop. 2.4–2.5 with Φ → W^{1/2}Φ, Ψ → W_z^{1/2}Ψ turns G V = U Σ, Gᵀ U = V Σ into the SVD
    of G_w = W^{1/2} G̃ W_z^{1/2} (W = diag(w), W_z = diag(w^z), G̃ = G centred with the weighted
    means when ``center``). For integer weights this is exactly KSVD on the set in which x_i is
    repeated w_i times (and z_j w^z_j times): the same singular values and right vectors, and
    the left vector of every copy of x_i is u_i/√w_i (a weight 0 removes the row).
    ``left_singular_vectors_``/``right_singular_vectors_`` are the orthonormal singular
    vectors of G_w; scores are e(x) = [κ̃(x, z_j)]_j W_z^{1/2} V and e(z) = [κ̃(x_i, z)]_iᵀ
    W^{1/2} U — the scores of the repeated-rows fit. ``sample_weight`` weights the rows of G
    (the samples X; in ``fit(A)`` the rows of A; with ``'precomputed'`` the rows of G),
    ``sample_weight_Z`` its columns (the set Z; the columns of A or G). For the row-normalised
    kernels ('sne', 't': κ(x, z) = k(x, z)/Σ_{r∈Z} k(x, r)) the normaliser becomes the weighted
    Σ_r w^z_r k(x, r), as repeating the z_r would make it. In the data-matrix mode
    ``fit(A)`` the weights act on G with the two sets fixed; repeating a row of A instead would
    also lengthen every column z_j, so there the weights are not equivalent to repetition.
    Weighted fits form G (dense, within ``asymkern.get_config()``'s memory limit) and do not
    support ``solver='nystrom'`` or dask input.

    **Inverse transform.** KernelSVD has no ``inverse_transform``: the scores are projections
    onto the span of the kernel sections κ(·, z_j) — an asymmetric feature map with no
    reconstruction of x, and a pre-image map (KernelPCA's kernel ridge from scores to X) would
    need a symmetric kernel on the scores and has no counterpart in Tao et al. (2024).

    ``set_output(transform='pandas')`` applies to ``transform``/``fit_transform`` (left
    scores, columns ``kernelsvd0``, …); ``transform_right`` returns arrays.

    ``fit`` warns (``UserWarning``) when some σ_k fall below the noise level: the SVD's own
    error max(n, m) · eps(dtype of G) · σ_1 (the rank tolerance of ``numpy.linalg.matrix_rank``)
    and, for a centred fit, the rounding errors of G's entries, which are relative to the
    entries before centring and survive it: 8 · eps · a bound on ‖G‖_F (√min(n, m)·σ_1 plus
    the norms of the row, column and grand means' part of G; of W^{1/2} G W_z^{1/2} for a
    weighted fit). Those components carry no
    information. A far too large bandwidth (a nearly constant kernel matrix) is the usual
    cause.

    **Mathematics.** The coupled covariances eigenproblem (CCE, Def. 2.1, eq. (1) of [1]_)
    Σ_φ W_ψ = Λ W_φ, Σ_ψ W_φ = Λ W_ψ has, with W_φ = Γ_φ* B_φ and W_ψ = Γ_ψ* B_ψ, the dual
    shifted eigenvalue problem GᵀG B_ψ = Gᵀ B_φ Λ, GGᵀ B_φ = G B_ψ Λ (Prop. 2.4, eq. (4)),
    solved by the SVD G = U Σ Vᵀ: G B_ψ = B_φ Λ, Gᵀ B_φ = B_ψ Λ (Prop. 2.5). The projection
    scores of §2.2 are e(x) = [κ(x, z_j)]_j V and e(z) = [κ(x_i, z)]_iᵀ U; the out-of-sample
    extension of the adjoint eigenfunctions is eq. (8).

    References
    ----------
    .. [1] Q. Tao, F. Tonin, A. Lambert, Y. Chen, P. Patrinos, J. A. K. Suykens, "Learning in
       Feature Spaces via Coupled Covariances: Asymmetric Kernel SVD and Nyström method",
       ICML 2024.

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern import KernelSVD
    >>> rng = np.random.RandomState(0)
    >>> X, Z = rng.randn(30, 4), rng.randn(20, 4)
    >>> ksvd = KernelSVD(n_components=3, kernel="sne", gamma=0.5).fit(X, Z=Z)
    >>> ksvd.singular_values_.shape
    (3,)
    >>> ksvd.transform(X).shape, ksvd.transform_right(Z).shape
    ((30, 3), (20, 3))
    """

    def __init__(
        self,
        n_components: int = 2,
        kernel="rbf",
        kernel_params: dict | None = None,
        center: bool = False,
        compat="pca",
        solver: str = "auto",
        n_oversamples: int = 10,
        n_iter="auto",
        nystrom_params: dict | None = None,
        working_memory: float | None = None,
        random_state=None,
        gamma: float | None = None,
        device=None,
        n_row_landmarks: int | None = None,
        n_col_landmarks: int | None = None,
        sampling: str | None = None,
        precision: str = "high",
    ):
        self.n_components = n_components
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.center = center
        self.compat = compat
        self.solver = solver
        self.n_oversamples = n_oversamples
        self.n_iter = n_iter
        self.nystrom_params = nystrom_params
        self.working_memory = working_memory
        self.random_state = random_state
        self.gamma = gamma
        self.device = device
        self.n_row_landmarks = n_row_landmarks
        self.n_col_landmarks = n_col_landmarks
        self.sampling = sampling
        self.precision = precision

    # ------------------------------------------------------------------------------ fitting
    def _precomputed(self) -> bool:
        return isinstance(self.kernel, str) and self.kernel == "precomputed"

    def _check_params(self):
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}, got {self.solver!r}")
        check_bool(self.center, "center")
        if self.kernel_params is not None and not isinstance(self.kernel_params, dict):
            raise TypeError(f"kernel_params must be a dict or None, got {self.kernel_params!r}")
        if self.nystrom_params is not None and not isinstance(self.nystrom_params, dict):
            raise TypeError(f"nystrom_params must be a dict or None, got {self.nystrom_params!r}")
        self._check_nystrom_params()
        if isinstance(self.n_components, bool) or not isinstance(
            self.n_components, numbers.Integral
        ):
            raise TypeError(f"n_components must be a positive integer, got {self.n_components!r}")
        check_random_state(self.random_state)  # the policy (Generator refused), value passed on
        if not isinstance(self.precision, str) or self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {self.precision!r}")
        if self.precision == "low" and self.solver not in ("randomized", "block_krylov"):
            raise ValueError("precision='low' applies to the passes of solver='randomized' or "
                             f"'block_krylov', got solver={self.solver!r}")
        # checked whatever the solver, so a bad value never waits for the solver that reads it
        check_randomized_options(self.n_oversamples, self.n_iter)
        check_positive(self.working_memory, "working_memory", allow_none=True)
        self._check_nystrom_options()
        if self.compat is not None:  # used by fit(A) with N ≠ M only, checked always
            CompatibilityTransform(self.compat)._method()

    def _check_nystrom_options(self) -> None:
        """The options of ``solver='nystrom'`` (the asymmetric Nyström method of Tao et al.
        (2024), §3), checked whatever the solver: the landmark counts (integers ≥ 1 or None),
        the sampling (None or one of :data:`asymkern.linalg.nystrom.SAMPLINGS`) and the keys
        of ``nystrom_params`` (:func:`~asymkern.linalg.asymmetric_nystrom`'s options), each
        refused with the message the Nyström solver gives."""
        given = self.nystrom_params or {}
        unknown = sorted(set(given) - set(_nystrom_options()))
        if unknown:
            raise TypeError(
                f"nystrom_params has unknown option(s) {', '.join(map(repr, unknown))}; valid "
                f"options (those of asymkern.linalg.asymmetric_nystrom): "
                f"{', '.join(_nystrom_options())}")
        # a parameter, or its deprecated key in nystrom_params (never both)
        rows, cols, sampling = (given.get(k) if getattr(self, k) is None else getattr(self, k)
                                for k in NYSTROM_PARAMS)
        # the values of the options that do not depend on G (the others: at the solve)
        values = {k: v for k, v in given.items() if k in _NYSTROM_VALUE_OPTIONS}
        check_nystrom_options(rows, cols, "uniform" if sampling is None else sampling,
                              **values)

    def _check_nystrom_params(self) -> None:
        """Refuse a Nyström option given both as a parameter and as a key of
        ``nystrom_params``; warn (``FutureWarning``) for the keys that are parameters now."""
        given = self.nystrom_params or {}
        moved = [k for k in NYSTROM_PARAMS if k in given]
        for key in moved:
            if getattr(self, key) is not None:
                raise ValueError(
                    f"{key}={getattr(self, key)!r} is given both as a KernelSVD parameter and "
                    f"as nystrom_params[{key!r}]={given[key]!r}; pass it once, as {key}="
                )
        if moved:
            keys = ", ".join(f"{k!r}" for k in moved)
            instead = ", ".join(f"{k}={given[k]!r}" for k in moved)
            warnings.warn(
                f"KernelSVD(nystrom_params={{{keys}: ...}}) is deprecated since 0.2 and will be "
                f"an error in {NYSTROM_PARAMS_REMOVAL}; use the parameters KernelSVD({instead}) "
                f"(tunable in a grid search, e.g. as 'ksvd__{moved[0]}' in a Pipeline)",
                FutureWarning,
                stacklevel=user_stacklevel(),
            )

    def _solver_options(self, shape: tuple[int, int] | None = None) -> dict:
        """The keyword arguments of the solver; with ``shape`` (n, m) of G, landmark counts
        above n rows or m columns clipped with a ``ClippedParameterWarning`` (the counts
        convention of docs/ARCHITECTURE.md, as ``n_components``)."""
        if self.solver in ("randomized", "block_krylov"):
            return {"n_oversamples": self.n_oversamples, "n_iter": self.n_iter,
                    "precision": self.precision}
        if self.solver == "nystrom":
            opts = dict(self.nystrom_params or {})
            for key in NYSTROM_PARAMS:  # checked by _check_nystrom_params: never given twice
                if getattr(self, key) is not None:
                    opts[key] = getattr(self, key)
            if shape is not None:
                for key, limit, what in (("n_row_landmarks", shape[0], "rows"),
                                         ("n_col_landmarks", shape[1], "columns")):
                    if opts.get(key) is not None:
                        opts[key] = clip_count(
                            opts[key], limit, key,
                            f"the {what} of the {shape[0]}x{shape[1]} kernel matrix",
                            owner="KernelSVD")
            return opts
        return {}

    def fit(self, X, y=None, *args, Z=None, sample_weight=None, sample_weight_Z=None):
        """Fit on two sets (``fit(X, Z=Z)``), one data matrix (``fit(A)``: rows vs columns) or a
        precomputed kernel matrix (``kernel='precomputed'``: ``fit(G)``).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n, d)
            The row set; in ``fit(A)`` the (N, M) data matrix A; with ``'precomputed'`` the
            (n, m) kernel matrix G.
        y : None
            Ignored (scikit-learn's signature; Z is not y, see the class Notes). A 2-D ``y``
            without ``Z`` (a second set passed by position) is refused with a ``TypeError``.
        *args : array-like
            Deprecated: a third positional argument is taken as Z with a ``FutureWarning``.
        Z : {array-like, sparse matrix} of shape (m, d), optional
            Keyword-only: the unpaired column set.
        sample_weight : array-like of shape (n,), optional
            Weights ≥ 0 of the rows of G (see the class Notes).
        sample_weight_Z : array-like of shape (m,), optional
            Weights ≥ 0 of the columns of G.

        Returns
        -------
        self : KernelSVD
            The fitted estimator.

        Raises
        ------
        ValueError
            If ``solver`` is unknown; if Z is given with ``'precomputed'``; if X and Z have
            different feature counts for a kernel that needs equal ones; if ``fit(A)`` gets a
            non-square A with ``compat=None``; if the weights are malformed; if a Nyström
            option is given both as a parameter and as a key of ``nystrom_params``; if
            ``n_oversamples``, ``n_iter``, ``working_memory``, ``precision``,
            ``n_row_landmarks``, ``n_col_landmarks``, ``sampling`` or ``compat`` is invalid
            (whatever the solver, and ``compat`` also when Z is given); if ``device`` is
            invalid or set with dask inputs.
        TypeError
            If ``center``, ``kernel_params``, ``nystrom_params``, ``n_components``, a landmark
            count or ``compat`` have the wrong type, if ``nystrom_params`` has a key that
            :func:`~asymkern.linalg.asymmetric_nystrom` does not take (whatever the solver), if
            ``random_state`` is a ``numpy.random.Generator``, or if Z is passed both
            positionally and by keyword.

        Warns
        -----
        FutureWarning
            If ``nystrom_params`` has a key ``'n_row_landmarks'``, ``'n_col_landmarks'`` or
            ``'sampling'`` (the parameters of the same names replace them; an error in 0.4),
            or Z is passed positionally.
        """
        Z = self._positional_z(args, Z, "fit")
        self._fit(X, y, Z, sample_weight, sample_weight_Z)
        return self

    def fit_transform(self, X, y=None, *args, Z=None, sample_weight=None,
                      sample_weight_Z=None):
        """Fit (as :meth:`fit`) and return the left scores of the training rows (U Σ).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n, d)
            The row set (or A, or G), as in :meth:`fit`.
        y : None
            Ignored.
        *args : array-like
            Deprecated positional Z, as in :meth:`fit`.
        Z : {array-like, sparse matrix} of shape (m, d), optional
            Keyword-only: the unpaired column set.
        sample_weight : array-like of shape (n,), optional
            Weights ≥ 0 of the rows of G.
        sample_weight_Z : array-like of shape (m,), optional
            Weights ≥ 0 of the columns of G.

        Returns
        -------
        ndarray of shape (n, r)
            Left scores of the training rows, U Σ (the first element of :meth:`embeddings`);
            a dask array chunked like X for dask input, whatever the solver (as
            :meth:`transform` of dask input).
        """
        Z = self._positional_z(args, Z, "fit_transform")
        self._fit(X, y, Z, sample_weight, sample_weight_Z)
        out = self.embeddings()[0]
        if self.dask_fit_ and not any_dask(out):  # a solver that ran on the client
            import dask.array as da

            rows = X.chunks[0] if any_dask(X) and len(X.chunks[0]) else "auto"
            out = da.from_array(out, chunks=(rows, -1))
        return out

    @staticmethod
    def _positional_z(args: tuple, Z, where: str):
        """A third positional argument of fit is Z (the pre-issue-15 signature), deprecated."""
        if not args:
            return Z
        if len(args) > 1 or Z is not None:
            raise TypeError(f"KernelSVD.{where}() takes X and y positionally; pass the second "
                            f"set as the keyword Z=")
        warnings.warn(
            f"KernelSVD.{where}(X, y, Z): passing Z positionally is deprecated since 0.2 and will "
            f"be an error in 0.3; use KernelSVD.{where}(X, Z=Z)",
            FutureWarning,
            stacklevel=user_stacklevel(),
        )
        return args[0]

    @forgets_previous_fit
    def _fit(self, X, y, Z, sample_weight=None, sample_weight_Z=None):
        self._check_params()
        check_device(self, X, Z)  # the same error on every executor
        if y is not None and Z is None and len(getattr(y, "shape", ())) == 2:
            raise TypeError(
                "the second set must be passed by keyword: fit(X, Z=Z) (the second positional "
                "argument is y, which KernelSVD ignores)"
            )
        weighted = sample_weight is not None or sample_weight_Z is not None
        if weighted and self.solver == "nystrom":
            raise ValueError("sample_weight/sample_weight_Z are not supported with "
                             "solver='nystrom'; use solver='dense', 'arpack' or 'randomized'")
        if self._precomputed():  # parameter checks: the same on every executor
            if Z is not None:
                raise ValueError("Z must be None when kernel='precomputed' (pass G as X)")
            if self.gamma is not None:
                raise ValueError(f"gamma={self.gamma!r} cannot be used with kernel='precomputed' "
                                 "(the kernel matrix is given); leave gamma=None")
        self.kernel_ = self.compat_ = self.bandwidth_ = None
        self.dask_fit_ = False
        self.sample_weight_ = self.sample_weight_Z_ = None
        self.z_feature_names_in_ = None
        if any_dask(X, Z):  # Dask executor (asymkern._dask)
            if weighted:
                raise NotImplementedError("sample_weight/sample_weight_Z with dask input are not "
                                          "available; pass in-memory arrays")
            from .._dask.estimator import fit_inputs

            self.dask_fit_ = True
            self._dask_lse = None
            inp = fit_inputs(self, X, Z)
            self.kernel_, self.compat_, self.bandwidth_ = inp.kernel, inp.compat, inp.bandwidth
            self.n_features_in_ = inp.n_features
            if inp.z_features is not None:
                self.z_features_in_ = inp.z_features
            self.X_fit_, self.Z_fit_ = inp.X_fit, inp.Z_fit
            self._fit_matrix(inp.G, tuple(int(k) for k in inp.G.shape))
            if inp.kernel is not None:
                self._dask_lse = inp.G.row_lse()
            return self
        self.torch_fit_ = False
        if use_torch(self, X, Z):  # torch executor: tensors on the device (asymkern._torch)
            from .._torch.ksvd import TorchInputs

            self.torch_fit_ = True
            return self._fit_on(TorchInputs.for_fit(self.device, X, Z), X, Z, sample_weight,
                                sample_weight_Z)
        if self._precomputed():
            G = check_input(self, X, reset=True, name="X (precomputed kernel matrix G)",
                              allow_sparse=True)
            self.n_features_in_ = G.shape[1]
            self.X_fit_ = self.Z_fit_ = None
            self._fit_matrix(G, G.shape, sample_weight, sample_weight_Z)
            return
        self.kernel_, auto_bw = build_kernel(self)
        sparse_ok = self.kernel_.accepts_sparse
        if Z is not None:
            Xv = check_input(self, X, reset=True, allow_sparse=sparse_ok)
            Zv = as_data(Z, "Z", allow_sparse=sparse_ok)
            self._set_sets(Xv, Zv, Z)
        else:
            A = check_input(self, X, reset=True, allow_sparse=True)
            N, M = self._set_data_matrix(A)
            if N == M:
                Xv = A
                if not sp.issparse(A):
                    self._check_square_fit(A, sample_weight, sample_weight_Z)
                Zv = A.T.tocsr() if sp.issparse(A) else np.ascontiguousarray(A.T)
            else:
                self.compat_ = CompatibilityTransform(self.compat, self.random_state)
                Xv, Zv = self.compat_.fit_transform(A)
            if not sparse_ok:
                Xv, Zv = _dense(Xv), _dense(Zv)
        # the model's own copies: a later change to the caller's X, Z (or A) must not change
        # what transform computes
        Xv, Zv = _owned(Xv, X, Z), _owned(Zv, X, Z)
        self.X_fit_, self.Z_fit_ = Xv, Zv
        if auto_bw:
            wx, wz = self._bandwidth_weights(sample_weight, sample_weight_Z, Xv, Zv)
            params, self.bandwidth_ = _resolve_bandwidth(dict(self.kernel_params), Xv, Zv,
                                                         wx, wz)
            self.kernel_ = get_kernel(self.kernel, **params)
        G = KernelMatrix(
            self.kernel_, Xv, Zv, center=False, working_memory=self.working_memory
        )
        self._fit_matrix(G, G.shape, sample_weight, sample_weight_Z)

    @staticmethod
    def _bandwidth_weights(sample_weight, sample_weight_Z, Xv, Zv):
        """The validated host weights of the two sets for the data-driven bandwidth (None
        where not given): the median is taken over the weighted problem's pairs."""
        n, m = int(Xv.shape[0]), int(Zv.shape[0])
        return (check_weights(_host(sample_weight), n, "sample_weight", "row of X (row of G)"),
                check_weights(_host(sample_weight_Z), m, "sample_weight_Z",
                              "row of Z (column of G)"))

    def _check_square_fit(self, A: np.ndarray, sample_weight, sample_weight_Z) -> None:
        """``fit(A)`` with a dense square A: the budget check of the solve before the sets.

        The fit keeps Aᵀ (a new N×N array) and its own copy of A as ``Z_fit_`` and
        ``X_fit_``; :meth:`_check_svd_budget` counts them, but runs only once they exist. Here
        it runs first on views of A standing for them (the same shapes, so the same estimate),
        so that a fit over the budget is refused before either copy is made.

        Parameters
        ----------
        A : ndarray of shape (N, N)
            The validated data matrix (the caller's memory: only read).
        sample_weight, sample_weight_Z : array-like or None
            The fit's weights (a weighted fit forms G and G_w).

        Raises
        ------
        MemoryBudgetError
            When the fit's estimated peak exceeds ``max_dense_memory``.
        """
        n = int(A.shape[0])
        # n_components is a positive int (_check_params); clipped without a second warning
        r = min(int(self.n_components), n)
        # A itself stands for Aᵀ (the same shape): KernelMatrix would copy a strided Aᵀ
        G = KernelMatrix(self.kernel_, A, A, center=False, working_memory=self.working_memory)
        self.X_fit_, self.Z_fit_ = A, A.T  # read by the estimate only, never kept
        try:
            self._check_svd_budget(G, n, n, r, weighted=sample_weight is not None
                                   or sample_weight_Z is not None)
        finally:
            del self.X_fit_, self.Z_fit_

    def _set_sets(self, Xv, Zv, Z) -> None:
        """Feature counts of ``fit(X, Z=Z)`` (equal ones for a kernel that needs them; and, for
        two DataFrames, the same column names in the same order: features pair by position)."""
        if self.kernel_.checks_features and Xv.shape[1] != Zv.shape[1]:
            raise ValueError(
                f"X has {Xv.shape[1]} features but Z has {Zv.shape[1]}; the kernel needs equal "
                "feature counts (for one data matrix whose rows and columns are the two sets, "
                "call fit(A) with a compat transform)"
            )
        x_names, z_names = getattr(self, "feature_names_in_", None), _get_feature_names(Z)
        if self.kernel_.checks_features and x_names is not None and z_names is not None \
                and list(x_names) != list(z_names):
            raise ValueError(
                f"the feature names of Z ({list(z_names)[:5]}...) must be those of X "
                f"({list(x_names)[:5]}...), in the same order: the kernel pairs features by "
                "position; reorder Z's columns (Z[X.columns])"
            )
        self.z_features_in_ = int(Zv.shape[1])
        self.n_features_in_ = int(Xv.shape[1])
        self.z_feature_names_in_ = _get_feature_names(Z)

    def _set_data_matrix(self, A) -> tuple[int, int]:
        """Feature counts of ``fit(A)``: rows x_i ∈ R^M, columns z_j ∈ R^N; (N, M)."""
        N, M = (int(k) for k in A.shape)
        self.z_features_in_ = N
        self.n_features_in_ = M
        if N != M and self.compat is None:
            raise ValueError(
                f"X is a {N}x{M} data matrix whose rows (dimension {M}) and columns "
                f"(dimension {N}) differ: set compat to 'pca', 'pinv', 'random' or a matrix, "
                "or pass the second set as Z"
            )
        return N, M

    def _fit_on(self, ex, X, Z, sample_weight, sample_weight_Z) -> None:
        """The fit on another executor (``ex``: its input conversions, e.g.
        :class:`asymkern._torch.ksvd.TorchInputs`): the steps of the in-memory fit, with the
        arrays on the executor; the compatibility transform and the bandwidth heuristic run on
        the host (they work on the d-dimensional data, not on G)."""
        sparse = ex.is_sparse(X) or ex.is_sparse(Z)
        if sparse:
            ex.check_sparse_fit(self._precomputed(), self.solver)
        if ex.host_out:  # numpy input: scikit-learn's bookkeeping (feature names) as in memory
            X = check_input(self, X, reset=True, name="X", allow_sparse=sparse)
        if self._precomputed():
            G = ex.matrix(X, "X")
            self.n_features_in_ = int(G.shape[1])
            self.X_fit_ = self.Z_fit_ = None
        else:
            self.kernel_, auto_bw = build_kernel(self)
            Xv = ex.data(X, "X", copy=True)  # the model never shares the caller's memory
            ops = ops_of(Xv)
            if Z is not None:
                Zv = ex.data(Z, "Z", copy=True)
                if ops.dtype(Zv) != ops.dtype(Xv):  # float32 with float64: both float64,
                    if ops.dtype(Zv).itemsize > ops.dtype(Xv).itemsize:  # as numpy does
                        Xv = ex.data(Xv, "X", like=Zv)
                    else:
                        Zv = ex.data(Zv, "Z", like=Xv)
                self._set_sets(Xv, Zv, Z)
            elif self._set_data_matrix(Xv)[0] == Xv.shape[1]:
                Zv = ops.contiguous(Xv.T)
            else:  # the compatibility transform of the data matrix, on the host
                self.compat_ = CompatibilityTransform(self.compat, self.random_state)
                Xh, Zh = self.compat_.fit_transform(ops.to_host(Xv))
                Xv, Zv = (ex.data(Xh, "X", copy=True, like=Xv),
                          ex.data(Zh, "Z", copy=True, like=Xv))
            if auto_bw:  # the in-memory heuristic on the same ≤ 500 rows per side
                wx, wz = self._bandwidth_weights(sample_weight, sample_weight_Z, Xv, Zv)
                i, j = median_sample_indices(int(Xv.shape[0]), int(Zv.shape[0]), wx=wx, wz=wz)
                params, self.bandwidth_ = _resolve_bandwidth(
                    dict(self.kernel_params or {}), ops.rows(Xv, i), ops.rows(Zv, j),
                    None if wx is None else wx[i], None if wz is None else wz[j])
                self.kernel_ = get_kernel(self.kernel, **params)
            G = ex.kernel_matrix(self.kernel_, Xv, Zv, working_memory=self.working_memory)
            self.X_fit_, self.Z_fit_ = Xv, Zv
        self._fit_matrix(G, G.shape, sample_weight, sample_weight_Z)
        self._row_norms = ex.row_norms(G)
        if ex.host_out:  # numpy input: numpy attributes, the executor's arrays kept aside
            keep = {k: v for k, v in vars(self).items() if k in _EXECUTOR_ATTRS}
            self._executor_arrays = keep
            for k, v in keep.items():
                setattr(self, k, tuple(ex.out(a) for a in v) if isinstance(v, tuple)
                        else ex.out(v))

    def _ex(self, name: str):
        """A fitted array as the executor holds it (numpy output is a copy, kept aside)."""
        return getattr(self, "_executor_arrays", {}).get(name, getattr(self, name))

    def _fit_matrix(self, G, shape, sample_weight=None, sample_weight_Z=None):
        n, m = shape
        w = check_weights(_host(sample_weight), n, "sample_weight", "row of X (row of G)")
        wz = check_weights(_host(sample_weight_Z), m, "sample_weight_Z",
                           "row of Z (column of G)")
        # a weight 0 removes the row: W½ G W_z½ has rank at most the positive counts, and the
        # components beyond them (σ = 0, arbitrary vectors) are clipped as for the dropped rows
        n_pos = n if w is None else int(np.count_nonzero(w))
        m_pos = m if wz is None else int(np.count_nonzero(wz))
        what = f"min(n, m) of the {n}x{m} kernel matrix"
        if (n_pos, m_pos) != (n, m):
            what += f" ({n_pos} rows and {m_pos} columns of positive weight)"
        r = clip_count(self.n_components, min(n_pos, m_pos), "n_components", what,
                       owner="KernelSVD")
        self._train_scores = None
        self._z_norm = None
        left, passes = self._check_svd_budget(G, n, m, r,
                                              weighted=w is not None or wz is not None)
        if w is not None or wz is not None:
            self._fit_weighted(G, n, m, r, w, wz)
            return
        if left is not None:  # the blocks of the centring pass and of the solver's passes
            G = _within(G, left)
        if self.center and passes is not None and isinstance(G, KernelMatrix):
            # the centring pass fills the block cache that the solver's passes then read
            opts = self._solver_options()
            G = _solver_blocks(G, passes, r, cache=opts.get("precision") != "low",
                               n_oversamples=opts.get("n_oversamples", 10),
                               n_iter=opts.get("n_iter", "auto"))
        # a numpy kernel matrix formed by the solver gives its means as it is formed
        formed = self.center and isinstance(G, KernelMatrix) and passes is None \
            and self.solver != "nystrom"
        if self.center:
            if isinstance(G, KernelMatrix) or getattr(G, "is_dask", False):
                G.center = True  # the executor centres its own blocks (float64 means)
                if not formed:
                    self._keep_means(G)
            elif isinstance(G, LazyMatrix):  # any other executor: G̃ through G and the means
                r64, c64, g = G.means64()
                rr, cc = G.ops.astype(r64, G.dtype), G.ops.astype(c64, G.dtype)
                # as in memory: a given G keeps float64 means, a kernel matrix its dtype
                self.row_means_, self.col_means_ = (r64, c64) if self._precomputed() else \
                    (rr, cc)
                self.grand_mean_ = g
                G = Centered(G, rr, cc, g)
            else:  # memory checked by _check_svd_budget
                G = _dense(G)
                self.row_means_ = G.mean(axis=1, dtype=np.float64)
                self.col_means_ = G.mean(axis=0, dtype=np.float64)
                self.grand_mean_ = float(self.row_means_.mean())
                G = G - self.row_means_[:, None].astype(G.dtype)
                G -= self.col_means_[None, :].astype(G.dtype)
                G += G.dtype.type(self.grand_mean_)
        res = top_svd(G, r, solver=self.solver, random_state=self.random_state,
                      **self._solver_options((n, m)))
        if formed:
            self._keep_means(G)
        self._store(res, G, n, m)

    def _keep_means(self, G) -> None:
        """The centring statistics of a kernel matrix G (numpy or Dask) as fitted attributes,
        the row and column means in the matrix dtype on every executor (Dask's are float64)."""
        rm, cm, self.grand_mean_ = G.means()
        self.row_means_, self.col_means_ = rm.astype(G.dtype), cm.astype(G.dtype)

    def _check_svd_budget(self, G, n: int, m: int, r: int,
                          weighted: bool) -> tuple[float | None, str | None]:
        """Refuse, before the centring statistics or any pass over G, a fit whose SVD solver
        would exceed the memory budget (the solver checks again when it runs). The solver
        'auto' picks is the rule of :func:`~asymkern.linalg.svd.top_svd` on every executor.

        Returns the bytes left for the kernel blocks of the passes over a lazy numpy G (the
        centring statistics, an iterative solver's products): the budget less the solver's
        arrays when the solver runs on G lazily, the whole budget when G is formed first or
        the Nyström solver runs (it fits its own blocks); None for any other G. And the
        solver whose passes run over that G's blocks (None when none does).
        """
        if getattr(G, "is_dask", False):  # the Dask executor checks its own blocks
            return None, None
        kind = matrix_kind(G)
        lazy = kind == "kernel"
        in_memory = not isinstance(G, LazyMatrix)
        formed = weighted or (self.center and not lazy and in_memory)  # G formed before SVD
        if self.center and not lazy and not weighted and in_memory:
            check_memory(8 * n * m * (2 if sp.issparse(G) else 1), "KernelSVD(center=True) "
                         "centring the precomputed matrix", "center=False")
        blocked = lazy and not weighted  # a numpy KernelMatrix, passed over in blocks
        if self.solver == "nystrom":  # asymmetric_nystrom checks its landmark blocks
            return (budget_bytes(G) if blocked else None), None
        kind = "kernel" if lazy and not weighted else (
            "sparse" if kind == "sparse" and not formed else "dense")
        dtype = np.dtype(np.float32 if _numpy_dtype(G) == np.float32 else np.float64)
        limit = getattr(G, "max_dense_memory", None) if lazy else None
        solver, form = self.solver, False
        if solver == "auto":
            solver, form = auto_solver(kind, n, m, r, dtype, limit)
        # the formed G (and, weighted, G_w beside it: _fit_weighted) held during the solve;
        # the dense solver's estimate counts one copy of the matrix it factorises, so with
        # weights both G and G_w come on top of it
        if solver == "dense":
            held = 2 * n * m * dtype.itemsize if weighted else 0
        else:
            held = n * m * dtype.itemsize * (2 if weighted else 1) if form or formed else 0
        # and the sets the fit made (the model's copies of X and Z; with a compatibility
        # transform the mapped sets and its matrix, of the size of G itself)
        held += sum(array_nbytes(a) for a in (getattr(self, "X_fit_", None),
                                              getattr(self, "Z_fit_", None),
                                              getattr(self.compat_, "C_", None)))
        opts = self._solver_options()
        options = {"n_oversamples": opts.get("n_oversamples", 10),
                   "n_iter": opts.get("n_iter", "auto")}
        # the solver's passes run over the lazy G (not over a formed copy of it)
        on_blocks = blocked and not form and solver != "dense" and not (
            solver == "arpack" and r >= min(n, m))
        left = None
        blocks = 0
        if blocked:
            left = budget_bytes(G)
            if on_blocks:
                left -= svd_solver_bytes(solver, n, m, r, dtype, **options) + held
                blocks = _pass_bytes(_within(G, left))
        check_svd_budget(solver, n, m, r, dtype, extra=held, limit=limit, block_bytes=blocks,
                         **options)
        return left, (solver if on_blocks else None)

    def _store(self, res, G, n: int, m: int, w=None, wz=None) -> None:
        s = res.s
        ops = ops_of(res.U)
        if ops is not NUMPY:  # another executor: σ next to the factors, in the dtype numpy
            # gives them (G's; float64 for the Nyström σ = √(NM/(s_x s_z)) λ^W)
            dt = np.float64 if res.solver == "nystrom" else ops.dtype(res.U)
            s = np.asarray(s, dtype=np.float64).astype(dt)
            self.singular_values_ = ops.from_host(s, res.U, dt)
        else:
            self.singular_values_ = s
        self.n_components_ = int(s.shape[0])
        self._check_noise_level(_numpy_dtype(G), s, n, m, w, wz)
        self.left_singular_vectors_ = res.U
        self.right_singular_vectors_ = res.V
        self.solver_ = res.solver
        self.n_rows_, self.n_cols_ = n, m
        if res.info and "nystrom" in res.info:
            self.nystrom_ = res.info["nystrom"]
            self.row_landmarks_ = getattr(self.nystrom_, "row_landmarks", None)
            self.col_landmarks_ = getattr(self.nystrom_, "col_landmarks", None)

    def _fit_weighted(self, G, n: int, m: int, r: int, w, wz) -> None:
        """SVD of G_w = W^{1/2} G̃ W_z^{1/2} (weighted CCE, see the class Notes), on the
        executor of G."""
        w = np.ones(n) if w is None else w
        wz = np.ones(m) if wz is None else wz
        # two n×m arrays at most: G (kept for the training scores) and G_w; G is normalised
        # and centred in place once it is our own copy (_check_svd_budget counts both)
        if isinstance(G, KernelMatrix):
            G, owned = G.to_array(), True  # guarded by the memory limit
        elif isinstance(G, LazyMatrix):
            check_memory(2 * n * m * np.dtype(G.dtype).itemsize, "KernelSVD with sample "
                         "weights (the weighted kernel matrix)", "no sample weights")
            G, owned = G.to_dense(), False  # perhaps the caller's tensor: not written to
        else:
            check_memory(8 * n * m * 2, "KernelSVD with sample weights (the weighted kernel "
                         "matrix)", "no sample weights")
            G, owned = np.array(G.toarray() if sp.issparse(G) else G), True
        ops = ops_of(G)
        dt = ops.dtype(G)
        wd, wzd = ops.from_host(w, G), ops.from_host(wz, G)
        self._z_norm = None
        if self.kernel_ is not None and self.kernel_.row_normalized and not np.all(wz == 1):
            # κ(x, z) = k(x, z) / Σ_{r∈Z} k(x, r): repeating z_r w^z_r times weights the
            # normaliser too, Σ_r w^z_r k(x, r) = (Σ_r k(x, r)) · (G w^z)_x
            self._z_norm = _weighted_normaliser(ops.astype(G @ wzd, np.float64),
                                                "row of the training X")
            zn = ops.astype(self._z_norm, dt)[:, None]
            if owned:
                G /= zn
            else:
                G, owned = G / zn, True
        if self.center:  # weighted means: the centring of the repeated-rows fit
            sw, swz = w.sum(), wz.sum()
            self.row_means_ = ops.astype(G @ wzd, np.float64) / swz
            self.col_means_ = ops.astype(wd @ G, np.float64) / sw
            self.grand_mean_ = float(w @ ops.to_host(self.row_means_) / sw)
            rm = ops.astype(self.row_means_, dt)[:, None]
            if owned:
                G -= rm
            else:
                G, owned = G - rm, True
            G -= ops.astype(self.col_means_, dt)[None, :]
            G += dt.type(self.grand_mean_) if ops is NUMPY else self.grand_mean_
        rw = ops.from_host(np.sqrt(w), G)
        rwz = ops.from_host(np.sqrt(wz), G)
        Gw = G * rw[:, None]
        Gw *= rwz[None, :]
        res = top_svd(Gw, r, solver=self.solver, random_state=self.random_state,
                      **self._solver_options((n, m)))
        self._store(res, Gw, n, m, w, wz)
        self.sample_weight_, self.sample_weight_Z_ = w, wz
        # training scores, as transform/transform_right give them (a weight 0 row included)
        self._train_scores = (G @ self._score_map(left=True), G.T @ self._score_map(left=False))

    def _score_map(self, left: bool):
        """What the scores multiply: for the left scores (``left``, κ̃(x, Z) @ this) V, or
        W_z^{1/2} V after a weighted fit; for the right ones (κ̃(X, z)ᵀ @ this) U, or W^{1/2} U."""
        F = self._ex("right_singular_vectors_" if left else "left_singular_vectors_")
        w = getattr(self, "sample_weight_Z_" if left else "sample_weight_", None)
        if w is None:
            return F
        return F * ops_of(F).from_host(np.sqrt(w), F)[:, None]

    def _check_noise_level(self, dtype, s, n: int, m: int, w=None, wz=None) -> None:
        """Set ``n_informative_`` and warn when trailing σ_k are at the rounding-noise level
        (``dtype``: the numpy dtype of G; ``w``, ``wz``: the sample weights of a weighted fit,
        whose σ_k are those of W^{1/2} G̃ W_z^{1/2})."""
        dtype = np.dtype(dtype)
        if not np.issubdtype(dtype, np.floating):
            dtype = np.dtype(np.float64)
        s = np.asarray(s, dtype=np.float64)
        eps = float(np.finfo(dtype).eps)
        scale = float(s[0]) if s.size else 0.0
        tol = max(n, m) * eps * scale  # the SVD's own error (numpy.linalg.matrix_rank's rule)
        rule = "= max(n, m)·eps·σ_1"
        if self.center and hasattr(self, "grand_mean_"):
            # G's entries carry rounding errors E (|E_ij| ≲ c·eps·|G_ij|) that the centring
            # keeps: ‖H E H‖₂ ≤ ‖E‖_F ≤ c·eps·‖G‖_F, and G = K_c + (the means' rank-3 part)
            # gives ‖G‖_F ≤ √min(n, m)·σ_1 + √n‖col means‖ + √m‖row means‖ + |mean|·√(nm)
            # weighted fits: G_w = W^{1/2} G̃ W_z^{1/2}, so each term is weighted as G_w's
            sw = float(n) if w is None else float(np.sum(w))
            swz = float(m) if wz is None else float(np.sum(wz))
            means = (np.sqrt(sw) * _weighted_norm(self._ex("col_means_"), wz)
                     + np.sqrt(swz) * _weighted_norm(self._ex("row_means_"), w)
                     + abs(float(self.grand_mean_)) * np.sqrt(sw * swz))
            entries = np.sqrt(float(min(n, m))) * scale + means
            if _ENTRY_ROUNDING * eps * entries > tol:
                tol = _ENTRY_ROUNDING * eps * entries
                rule = (f"= {_ENTRY_ROUNDING:g}·eps·‖G‖_F bound, the entries' rounding errors "
                        "that centring keeps")
            scale = max(scale, means)
        k = int(np.count_nonzero(s > tol))
        self.n_informative_ = k
        if scale == 0.0 or k < s.size:
            # the double centring H_n G H_m has rank at most min(n, m) − 1 whatever G is
            bound = min(n, m) - 1 if self.center else min(n, m)
            if scale > 0.0 and self.center and k >= bound:
                cause = (f"centring (center=True) leaves at most min(n, m) − 1 = {bound} "
                         "nonzero singular values, whatever the kernel: ask for at most "
                         f"{bound} components, or center=False")
            elif self._precomputed():
                cause = "the precomputed kernel matrix is (numerically) of low rank"
            else:
                kp = self.kernel_params or {}
                if self.bandwidth_ is not None:
                    setting = f"bandwidth={self.bandwidth_:.4g} (from {kp.get('bandwidth')!r})"
                elif kp.get("bandwidth") is not None:
                    setting = f"bandwidth={kp['bandwidth']!r}"
                elif self.gamma is not None:
                    setting = f"gamma={self.gamma!r}"
                elif kp.get("gamma") is not None:
                    setting = f"gamma={kp['gamma']!r}"
                else:
                    setting = "the kernel's default parameters"
                typical = scale / np.sqrt(float(n) * float(m))  # an entry's typical size
                # the remedy: the median-distance bandwidth, unless it is the one in use
                auto = self.bandwidth_ is not None
                larger = ("a multiple above 1 of the median-distance bandwidth in use "
                          "(kernel_params={'bandwidth': c * est.bandwidth_}), or fewer "
                          "components" if auto else "e.g. kernel_params={'bandwidth': 'auto'}")
                smaller = ("a multiple below 1 of the median-distance bandwidth in use "
                           "(kernel_params={'bandwidth': c * est.bandwidth_}), or fewer "
                           "components" if auto else "e.g. kernel_params={'bandwidth': 'auto'}")
                if typical < np.sqrt(float(np.finfo(dtype).eps)):
                    # kernel values (≤ 1 for the distance kernels) vanished: they underflowed
                    cause = (f"the kernel bandwidth ({setting}) is the likely cause: the kernel "
                             f"values are vanishingly small (σ_1 = {scale:.3g}), as when the "
                             "bandwidth is far smaller than the distances in the data (or gamma "
                             f"far too large) and the kernel underflows; try a larger bandwidth, "
                             f"{larger}")
                else:
                    cause = (f"the kernel bandwidth ({setting}) is the likely cause: a bandwidth "
                             "far larger than the distances in the data (or gamma far too "
                             "small) makes the kernel matrix nearly constant; try a smaller "
                             f"bandwidth, {smaller}")
            warnings.warn(
                f"KernelSVD: only {k} of the {s.size} singular values exceed the numerical noise "
                f"level {tol:.3g} ({rule} for the {n}x{m} {dtype.name} kernel "
                f"matrix); components {k + 1}..{s.size} carry no information; {cause}",
                UserWarning, stacklevel=4,
            )

    # ---------------------------------------------------------------------------- transforms
    def kernel_rows(self, X, subset=None):
        """[κ(x, z_j)]_j for new x (rows), shape (n_new, m), before centring.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_new, d)
            New rows (with ``'precomputed'``: the kernel rows themselves, shape (n_new, m)).
        subset : array-like of int, optional
            Only the columns j in this index array (the Nyström column landmarks); a
            row-normalised kernel is still normalised over every training z.

        Returns
        -------
        ndarray of shape (n_new, m) or (n_new, len(subset))
            The kernel values κ(x, z_j), uncentred.
        """
        Xn = self._new_points(X, left=True)
        if self._precomputed():
            K = Xn.toarray() if sp.issparse(Xn) else Xn
            return K if subset is None else K[:, subset]
        Zs = self.Z_fit_ if subset is None else self.Z_fit_[subset]
        K = KernelMatrix(
            self.kernel_, Xn, Zs, reference=self.Z_fit_,
            working_memory=self.working_memory,
        ).to_array()
        if getattr(self, "_z_norm", None) is not None:  # weighted normaliser (sample_weight_Z)
            zn = _weighted_normaliser(K @ self.sample_weight_Z_.astype(K.dtype), "new row")
            K = K / zn[:, None]
        return K

    def _new_points(self, X, left: bool):
        """New rows (``left``) or columns (as rows) checked and mapped as the fit's sets (the
        compatibility transform, densified for a kernel without sparse support); with
        ``'precomputed'`` the checked kernel values themselves (dense or sparse)."""
        check_is_fitted(self, "singular_values_")
        if left:
            if self._precomputed():
                return check_input(self, X, reset=False, name="X (precomputed kernel rows)",
                                   allow_sparse=True)
            Xn = check_input(self, X, reset=False, allow_sparse=True)
        else:
            if self._precomputed():
                K = as_data(X, "Z (precomputed kernel columns, shape (m_new, n))",
                            allow_sparse=True)
                if K.shape[1] != self.n_rows_:
                    raise ValueError(
                        f"precomputed Z has {K.shape[1]} columns; expected {self.n_rows_} "
                        "(kernel values κ(x_i, z) for every training x_i)"
                    )
                return K
            Xn = as_data(X, "Z", allow_sparse=True)
            expected = self.z_features_in_
            if Xn.shape[1] != expected:
                raise ValueError(f"Z has {Xn.shape[1]} features; expected {expected}")
            self._check_z_names(X)
        if self.compat_ is not None:
            Xn = self.compat_.transform_x(Xn) if left else self.compat_.transform_z(Xn)
        if sp.issparse(Xn) and not self.kernel_.accepts_sparse:
            Xn = Xn.toarray()
        return Xn

    def _new_matrix(self, X, left: bool):
        """The lazy kernel matrix of new points in memory and whether it is used transposed
        (new columns: the training rows against them)."""
        P = self._new_points(X, left)
        if self._precomputed():
            return DenseMatrix(P), False
        return self._points_matrix(P, left), not left

    def _check_z_names(self, Z) -> None:
        """The column names of a DataFrame Z must be those seen in ``fit(X, Z=Z)``."""
        fitted = getattr(self, "z_feature_names_in_", None)
        names = _get_feature_names(Z)
        if fitted is None or names is None:
            return
        if len(names) != len(fitted) or np.any(names != fitted):
            raise ValueError(
                "The feature names of Z should match those that were passed during fit "
                f"(fit: {list(fitted)[:5]}..., now: {list(names)[:5]}...)"
            )

    def kernel_cols(self, Z, subset=None):
        """[κ(x_i, z)]_i for new z (rows), shape (m_new, n), before centring.

        Parameters
        ----------
        Z : {array-like, sparse matrix} of shape (m_new, d)
            New columns given as rows (with ``'precomputed'``: the kernel values κ(x_i, z),
            shape (m_new, n)).
        subset : array-like of int, optional
            Only the rows i in this index array (the Nyström row landmarks).

        Returns
        -------
        ndarray of shape (m_new, n) or (m_new, len(subset))
            The kernel values κ(x_i, z), uncentred, one row per new z.

        Raises
        ------
        ValueError
            If Z has the wrong number of features (or of columns when precomputed), or
            DataFrame column names differing from those seen in fit.
        """
        Zn = self._new_points(Z, left=False)
        if self._precomputed():
            K = Zn.toarray() if sp.issparse(Zn) else Zn
            return K if subset is None else K[:, subset]
        Xs = self.X_fit_ if subset is None else self.X_fit_[subset]
        K = KernelMatrix(
            self.kernel_, Xs, Zn, reference=self.Z_fit_,
            working_memory=self.working_memory,
        ).to_array()
        if getattr(self, "_z_norm", None) is not None:  # weighted normaliser (sample_weight_Z)
            K = K / self._z_norm[:, None].astype(K.dtype)
        return np.ascontiguousarray(K.T)

    def _holds_dask(self) -> bool:
        """A live Dask fit (lazy training sets / factors): numpy input goes through the Dask
        executor too. An unpickled Dask fit holds numpy arrays only and runs in memory."""
        if not getattr(self, "dask_fit_", False):
            return False
        from .._dask.estimator import holds_dask

        return holds_dask(self)

    def __getstate__(self):
        """Pickle without dask objects: the lazy attributes of a Dask fit (training sets,
        singular vectors, means, a Dask compatibility transform) are gathered as numpy
        (:func:`asymkern._dask.estimator.plain_state`), so the model loads and transforms
        numpy input where dask is not installed."""
        state = super().__getstate__()
        if self._holds_dask():
            from .._dask.estimator import plain_state

            state = plain_state(state)
        return state

    def _nystrom_fit(self) -> bool:
        return getattr(self, "solver_", None) == "nystrom" and hasattr(self, "nystrom_")

    def transform(self, X):
        """Left projection scores e(x) = [κ̃(x, z_j)]_j V (= UΣ on training rows).

        After ``solver='nystrom'`` the scores are λ̃ · u(x) with u(x) the out-of-sample
        extension of eq. 8 of Tao et al. (2024) (kernel values against the column landmarks only);
        on
        a training row they equal the rows of UΣ. After a weighted fit V is replaced by
        W_z^{1/2} V (class Notes).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_new, d)
            New rows (for ``'precomputed'``: kernel rows κ(x, z_j), shape (n_new, m)).

        Returns
        -------
        ndarray of shape (n_new, r)
            The left projection scores.
        """
        return self._transform(X, left=True)

    def transform_right(self, Z):
        """Right projection scores e(z) = [κ̃(x_i, z)]_iᵀ U (= VΣ on training columns).

        New z are rows: for ``fit(X, Z=Z)`` rows with Z's features; for ``fit(A)`` new columns of
        A given as rows (length N); for ``'precomputed'`` an (m_new, n) array of κ(x_i, z).
        After a weighted fit U is replaced by W^{1/2} U (class Notes).

        Parameters
        ----------
        Z : {array-like, sparse matrix} of shape (m_new, d)
            New columns given as rows (see above).

        Returns
        -------
        ndarray of shape (m_new, r)
            The right projection scores.
        """
        return self._transform(Z, left=False)

    def _transform(self, X, left: bool):
        """Left (``left``) or right scores of new points, on the executor of the input or fit,
        in the input's precision (:func:`~asymkern._validation.input_precision`)."""
        if any_torch(X) and not getattr(self, "torch_fit_", False):
            raise ValueError("this KernelSVD was not fitted with torch (tensors or device=...); "
                             "fit it with torch tensors (or a device) to transform torch tensors")
        if any_dask(X) or self._holds_dask():  # Dask executor (asymkern._dask)
            from .._dask.estimator import transform_dask

            out = transform_dask(self, X, left=left)
            if is_dask_array(out):  # cast in the tasks that compute the chunks
                dt = input_precision(X)
                return out.map_blocks(narrowed, dt, "the input's", "pass float64 input",
                                      dtype=dt)
        else:
            out = self._scores_of(X, left)
        return like_input(out, X, "pass float64 input")

    def _scores_of(self, X, left: bool):
        """The scores of :meth:`_transform` on the numpy or torch executor."""
        if use_torch(self, X):  # torch executor (asymkern._torch)
            return self._transform_on(X, left=left)
        if self._precomputed():  # the caller's kernel values: nothing n_new × n is formed
            K, transposed = self._new_matrix(X, left)
            return self._scores(K, transposed, left)
        P = self._new_points(X, left)
        n_new, step, fixed, scores = self._transform_rows(P, left)
        parts = []
        for a in range(0, n_new, step):
            Pc = P[a:a + step]
            K = self._points_matrix(Pc, left)
            K = pass_within(K, fixed + scores * int(Pc.shape[0]),
                            f"KernelSVD.{'transform' if left else 'transform_right'} of "
                            f"{n_new} new points ({Pc.shape[0]} at a time)",
                            "fewer new points at a time")
            parts.append(self._scores(K, not left, left))
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _transform_rows(self, P, left: bool) -> tuple[int, int, int, int]:
        """(n_new, new points a pass takes at a time, bytes held whatever the points, bytes
        held a point) of the scores of the new points P within ``max_dense_memory``.

        Held: the training-side operands (the weights and the score map, float64), the
        scores of every point and their concatenation; a point: its scores, products and
        centred copy, and its kernel values of a pass
        (:func:`~asymkern._shared.nystrom_predict.kernel_row_bytes`: a row against the
        training set on the left, also a bound on the landmark columns of the Nyström
        extension; a column of one-row blocks, or of the landmark rows, on the right). Each
        pass's blocks are then shrunk to what is left
        (:func:`~asymkern._shared.nystrom_predict.pass_within`).
        """
        n_new = int(P.shape[0])
        train = self.Z_fit_ if left else self.X_fit_
        n_train, r = int(train.shape[0]), int(self.n_components_)
        # left: a row of K(P, Z_fit); right: K(X_fit, P) is passed over by training rows, so a
        # new point holds a column of one-row blocks (of |I| rows: the Nyström extension's
        # landmark rows, formed at once), bounded by a row against that many points
        rows = len(self.nystrom_.row_landmarks) if self._nystrom_fit() else 1
        kernel_row, data = _row_bytes(self.kernel_, P, train if left else train[:rows])
        if not left:  # and, whatever the points, the data copies of every training row (and
            # a row-normalised kernel's normalisers of them): a one-point column of K(X_fit, P)
            data += n_train * _row_bytes(self.kernel_, train, P[:1])[0]
        fixed = data + 8 * (n_train * (2 * r + 2) + 2 * n_new * r)
        scores = 8 * 3 * (r + 1)
        step = rows_within(n_new, kernel_row + scores, fixed,
                           f"KernelSVD.{'transform' if left else 'transform_right'} of {n_new} "
                           "new points", "fewer new points at a time",
                           "the kernel row of one new point against the training set and its "
                           "scores, beside the score map and the scores of every point")
        return n_new, step, fixed - data, scores

    def _points_matrix(self, P, left: bool):
        """The lazy kernel matrix of the checked new points P against the training side:
        K(P, Z_fit) (``left``), else K(X_fit, P), used transposed."""
        rows, cols = (P, self.Z_fit_) if left else (self.X_fit_, P)
        return KernelMatrix(self.kernel_, rows, cols, reference=self.Z_fit_,
                            working_memory=self.working_memory)

    def _transform_on(self, X, left: bool):
        """Left (``left``: e(x)) or right (e(z)) scores of new points on the executor of the
        fit (torch), through the lazy kernel matrix of the new points: its products with V
        (or U, or the Nyström extension maps of eq. 8 of Tao et al., 2024, on the landmarks)
        and, with ``center``, the centring of §2 through the new points' own means and the
        training means (nothing new × training is formed)."""
        check_is_fitted(self, "singular_values_")
        if not getattr(self, "torch_fit_", False):
            raise ValueError("this KernelSVD was fitted on numpy arrays without device=...; fit "
                             "it with torch tensors (or a device) to transform torch tensors")
        from .._torch.ksvd import TorchInputs

        like = self._ex("left_singular_vectors_")
        ex = TorchInputs.for_transform(like, X)
        ops = ops_of(like)
        name = "X" if left else "Z"
        if ex.is_sparse(X) and not self._precomputed():
            ex.refuse_sparse(name)
        if ex.host_out and left and not self._precomputed():
            X = check_input(self, X, reset=False, name="X")
        if self._precomputed():  # kernel rows (n_new, m) or columns as rows (m_new, n)
            K = ex.matrix(X, name)
            expected = self.n_cols_ if left else self.n_rows_
            if K.shape[1] != expected:
                raise ValueError(f"precomputed {name} has {K.shape[1]} columns; expected "
                                 f"{expected}")
            transposed = False
        else:
            Xn = ex.data(X, name)
            check_tensor_shape(Xn, "KernelSVD", name)
            expected = self.n_features_in_ if left else self.z_features_in_
            if Xn.shape[1] != expected:
                raise ValueError(f"{name} has {Xn.shape[1]} features, but KernelSVD is "
                                 f"expecting {expected} features as input")
            if self.compat_ is not None:  # on the host, as in the fit
                f = self.compat_.transform_x if left else self.compat_.transform_z
                Xn = ex.data(f(ops.to_host(Xn)), name, like=Xn)
            return ex.out(self._device_scores(ex, Xn, left))
        return ex.out(self._scores(K, transposed, left))

    def _device_scores(self, ex, Xn, left: bool):
        """Scores of the new points ``Xn`` (a checked tensor) on the torch device, within
        ``max_dense_memory`` as the numpy path: as many points at a time as
        :meth:`_transform_rows` allows (the same refusal), each pass's kernel blocks shrunk
        to what the outputs and operands leave (the torch kernel matrix's ``within``) and
        checked before they are formed."""
        Zf = self._ex("Z_fit_")
        what = f"KernelSVD.{'transform' if left else 'transform_right'}"
        n_new, step, fixed, scores = self._transform_rows(Xn, left)
        # the lengths of the other axis of the passes (besides K's full rows): the landmarks
        # of the Nyström extension; on the right, column blocks of every training row
        nys = self._nystrom_fit()
        others: tuple = ()
        if nys:
            res = self.nystrom_
            others = (len(res.col_landmarks if left else res.row_landmarks),)
        if not left and (self.center or not nys):
            others += (self.n_rows_,)
        out = None
        for a in range(0, n_new, step):
            Pc = Xn[a:a + step]
            if left:
                K = ex.kernel_matrix(self.kernel_, Pc, Zf, reference=Zf,
                                     working_memory=self.working_memory)
            else:  # κ(x_i, z): the training rows against the new columns, used transposed
                K = ex.kernel_matrix(self.kernel_, self._ex("X_fit_"), Pc, reference=Zf,
                                     working_memory=self.working_memory,
                                     row_norms=getattr(self, "_row_norms", None))
            held = fixed + scores * int(Pc.shape[0])
            K = _within(K, budget_bytes() - held, others)
            check_memory(held + _pass_bytes(K, others),
                         f"{what} of {n_new} new points ({Pc.shape[0]} at a time)",
                         "fewer new points at a time",
                         detail=f"the outputs and operands ({held / 2**20:.2f} MiB) beside the "
                                f"kernel blocks of the {K.shape[0]}×{K.shape[1]} kernel "
                                "matrix's pass")
            part = self._scores(K, not left, left)
            if step >= n_new:
                return part
            if out is None:
                out = K.ops.empty((n_new, int(part.shape[1])), part)
            out[a:a + step] = part
        return out

    def _scores(self, K, transposed: bool, left: bool):
        """Scores of the new points of the lazy K (rows; ``transposed``: columns) against the
        training side: K̃ B with B = W_z^{1/2} V (left) or W^{1/2} U (right), or the Nyström
        extension on the landmarks times σ; K̃ is K centred (class Notes) and, after a
        weighted fit of a row-normalised kernel, renormalised with the weights."""
        ops = K.ops
        like = self._ex("left_singular_vectors_")

        def prod(B, sel=None):  # K[:, sel]ᵀ-side product: one row per new point
            return K.rmatmat(B, rows=sel) if transposed else K.matmat(B, cols=sel)

        n_train = self.n_cols_ if left else self.n_rows_
        weights = self.sample_weight_Z_ if left else self.sample_weight_
        w = np.ones(n_train) if weights is None else weights
        tm: Any = None
        if self.center:  # the training means, in the factors' dtype
            tm = ops.astype(self._ex("col_means_" if left else "row_means_"), ops.dtype(like))
        if self._nystrom_fit():
            res = self.nystrom_
            B = ops.from_host(res.extension_map(left), like)
            sel = ops.index(res.col_landmarks if left else res.row_landmarks, like)
            out = prod(B, sel)
            if self.center:  # the new points' own means over every training point
                a = prod(ops.from_host(w[:, None], like))[:, 0]
                out = _centred_product(out, a / float(w.sum()), tm[sel], B, self.grand_mean_)
            return _times_sigma(out, self._ex("singular_values_"))
        B = self._score_map(left)
        z_norm = getattr(self, "_z_norm", None)
        ws, Bs = ops.from_host(w[:, None], like), B
        if z_norm is not None and not left:  # κ(x_i, z) / z_norm_i
            zn = ops.astype(z_norm, ops.dtype(B))[:, None]
            ws, Bs = ws / zn, B / zn
        P = prod(ops.concat([ws, Bs]))  # the weighted row sums and the products, one pass
        a, out = P[:, 0], P[:, 1:]
        if z_norm is not None and left:  # K̂ = K / (K w_z), whose K̂ w_z is 1
            out = out / a[:, None]
            a = a * 0 + 1
        if self.center:
            out = _centred_product(out, a / float(w.sum()), tm, B, self.grand_mean_)
        return out

    def embeddings(self) -> tuple[np.ndarray, np.ndarray]:
        """Training embeddings (U Σ, V Σ) of the rows and columns.

        After a weighted fit: the scores ``transform``/``transform_right`` give the training
        rows and columns.

        Returns
        -------
        left : ndarray of shape (n, r)
            Scores of the training rows, U Σ.
        right : ndarray of shape (m, r)
            Scores of the training columns, V Σ.
        """
        check_is_fitted(self, "singular_values_")
        if getattr(self, "_train_scores", None) is not None:
            return self._train_scores
        s = self.singular_values_
        return (_times_sigma(self.left_singular_vectors_, s),
                _times_sigma(self.right_singular_vectors_, s))

    @property
    def _n_features_out(self) -> int:
        return self.n_components_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        # no pairwise tag with 'precomputed': G is n×m (rows X, columns the unpaired Z), so
        # cross-validation must split its rows only, not rows and columns as for a square
        # pairwise kernel matrix
        return tags
