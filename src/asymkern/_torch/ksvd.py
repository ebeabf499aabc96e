"""KernelSVD on torch: ``fit`` / ``transform`` / ``transform_right`` for tensors or ``device``.

:class:`~asymkern.KernelSVD` hands the call here at the top of its entry points when an input
is a torch tensor, when its ``device`` parameter is set, or when it was fitted here. The fit
builds the lazy :class:`~.kernels.TorchKernelMatrix` on the device and runs the solver of
:mod:`.linalg` ('dense', 'randomized', 'block_krylov', 'nystrom', 'arpack'; 'auto' follows
:func:`asymkern.linalg.top_svd`, so both paths run the same solver: 'dense' for min(n, m) ≤ 1000
or many components when the matrix fits ``max_dense_memory``, else 'arpack' — on a lazy kernel
formed once on the device when it fits that budget — and 'randomized' for a lazy kernel that
does not fit). ``solver='arpack'`` is :func:`asymkern.linalg.arpack_svd` itself (scipy's ARPACK
on the host, the numpy path's starting vector, tolerance and signs) on a ``LinearOperator``
whose products with G and Gᵀ run on the device (:func:`.linalg.arpack_svd`); as there,
r = min(n, m) falls back to the dense SVD (``solver_`` 'dense').

Output types: a tensor input gives tensors on the compute device (the input dtype kept);
numpy input (with ``device`` set) gives numpy arrays. Fitted vectors follow the type of the fit
input. ``center=True`` (paper 000 §2: G̃ = H_n G H_m) runs the solvers on the doubly centred
operator, applied through the row, column and grand means (accumulated in float64, as the
numpy path does) so that nothing beyond G is formed; new rows and columns are centred with
the training means in ``transform`` / ``transform_right`` (with ``solver='nystrom'`` the
landmark blocks G̃[I, J] and the extension products are centred the same way, as the numpy
path's centred KernelMatrix gives them). A sparse precomputed G (scipy sparse with ``device``,
or a sparse torch tensor) is held on the device as CSR tensors G and Gᵀ
(:class:`~.sparse.TorchSparseMatrix`): 'arpack', 'randomized' and 'block_krylov' use sparse
products, ``center=True`` the means of G (float64 sums), while 'dense' and sample weights form
G densely on the device (the numpy path densifies it for them too); sparse kernel rows are
accepted by ``transform`` / ``transform_right``. Not available on torch
(``NotImplementedError`` naming the option): sparse data features (a sparse X or Z with a
kernel other than 'precomputed') and ``solver='nystrom'`` with a sparse G (its landmark
blocks need entries of G). Sample weights form the weighted
matrix W^{1/2} G̃ W_z^{1/2} densely on the device (as the numpy path forms it); the
compatibility transform of a non-square ``fit(A)`` is computed on the host with numpy (it
works on the d-dimensional data, not on G) and the kernel SVD then runs on the device.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._dispatch import any_torch, is_torch_tensor, require_torch
from ..linalg._svd_core import RANDOMIZED_SOLVERS
from .device import as_tensor, from_numpy, numpy_dtype, resolve_device, to_numpy
from .kernels import TorchKernel, TorchKernelMatrix
from .linalg import (
    arpack_svd,
    dense_svd,
    nystrom_extension_map,
    nystrom_svd,
    products,
    randomized_svd,
)
from .sparse import TorchSparseMatrix, as_sparse_matrix, is_sparse_input


def _working_memory(est) -> float:
    from ..config import get_config

    wm = est.working_memory
    return float(get_config()["working_memory"] if wm is None else wm)


def _out(T, as_numpy: bool):
    return to_numpy(T) if as_numpy else T


def fit_torch(est, X, Z, sample_weight=None, sample_weight_Z=None) -> None:
    """Fit ``est`` (a KernelSVD) on the torch backend (see the module docstring)."""
    from .._shared.ksvd import build_kernel, median_bandwidth, median_sample_indices
    from .._validation import check_input, clip_count
    from ..config import get_config
    from ..kernels import get_kernel

    require_torch()
    sparse = is_sparse_input(X)
    if sparse or is_sparse_input(Z):
        _check_sparse_fit(est)
    dev = resolve_device(est.device, X, Z)
    as_numpy = not any_torch(X, Z)
    if as_numpy:  # scikit-learn bookkeeping (feature names, n_features_in_) as in memory
        X = check_input(est, X, reset=True, name="X", allow_sparse=sparse)
    # the fitted model keeps X and Z (not a precomputed G): never the caller's memory; a
    # sparse precomputed G is held as CSR tensors on the device (products only)
    Xt: Any = as_sparse_matrix(X, dev, "X") if sparse else \
        as_tensor(X, dev, "X", copy=not est._precomputed())
    est.torch_fit_ = True
    est._train_scores = est._z_norm = None
    est._torch_state = state = {"device": dev, "dtype": getattr(Xt, "template", lambda: Xt)().dtype}
    if est._precomputed():
        if Z is not None:
            raise ValueError("Z must be None when kernel='precomputed' (pass G as X)")
        if est.gamma is not None:
            raise ValueError(f"gamma={est.gamma!r} cannot be used with kernel='precomputed' "
                             "(the kernel matrix is given); leave gamma=None")
        G = Xt
        est.n_features_in_ = int(G.shape[1])
        est.X_fit_ = est.Z_fit_ = None
        state["kernel"] = None
    else:
        est.kernel_, auto_bw = build_kernel(est)
        if Z is None:
            N, M = Xt.shape
            if N == M:
                Zt = Xt.T.contiguous()
            else:  # the compatibility transform of the data matrix, on the host (numpy)
                Xt, Zt = _compat_fit(est, Xt)
            est.n_features_in_, est.z_features_in_ = int(M), int(N)
        else:
            Zt = as_tensor(Z, dev, "Z", dtype=Xt.dtype, copy=True)
            if est.kernel_.checks_features and Xt.shape[1] != Zt.shape[1]:
                raise ValueError(f"X has {Xt.shape[1]} features but Z has {Zt.shape[1]}; the "
                                 "kernel needs equal feature counts")
            est.n_features_in_, est.z_features_in_ = int(Xt.shape[1]), int(Zt.shape[1])
        if auto_bw:  # the in-memory heuristic on the same ≤ 500 rows per side
            i, j = median_sample_indices(int(Xt.shape[0]), int(Zt.shape[0]))
            Xs, Zs = to_numpy(Xt[from_index(i, dev)]), to_numpy(Zt[from_index(j, dev)])
            params = dict(est.kernel_params)
            bw = median_bandwidth(Xs, Zs)
            if str(params["bandwidth"]).lower() == "auto":
                from .._shared.ksvd import AUTO_BANDWIDTH_FACTOR

                bw *= AUTO_BANDWIDTH_FACTOR
            est.bandwidth_ = bw
            est.kernel_ = get_kernel(est.kernel, **{**params, "bandwidth": bw})
        tk = TorchKernel(est.kernel_, int(Xt.shape[1]))
        G = TorchKernelMatrix(tk, Xt, Zt, working_memory=_working_memory(est))
        est.X_fit_, est.Z_fit_ = (_out(Xt, as_numpy), _out(Zt, as_numpy))
        state.update(kernel=tk, X=Xt, Z=Zt)
    n, m = (int(k) for k in G.shape)
    weights = _weights(sample_weight, sample_weight_Z, n, m)
    r = clip_count(est.n_components, min(n, m), "n_components",
                   f"min(n, m) of the {n}x{m} kernel matrix", owner="KernelSVD")
    solver = est.solver
    itemsize = Xt.element_size()
    lazy = state.get("kernel") is not None and weights is None  # else G is held (formed)
    form = False
    if solver == "auto":  # the rule of asymkern.linalg.top_svd, so both paths run one solver
        budget = get_config()["max_dense_memory"] * 2**20
        if min(n, m) <= 1000 or r > 0.25 * min(n, m):
            solver = "dense" if 7 * n * m * itemsize <= budget else "randomized"
        elif lazy and n * m * itemsize > budget:
            solver = "randomized"
        else:  # a large matrix for a few components: ARPACK (a lazy kernel formed once)
            solver, form = "arpack", lazy
    options = est._solver_options() if solver == est.solver else {}
    if solver == "arpack" and r >= min(n, m):  # as asymkern.linalg.arpack_svd: dense
        solver = "dense"
    # the solver's memory, refused before the centring statistics or any pass over G
    _check_solver_budget(solver, n, m, r, itemsize, options,
                         held=form or weights is not None)
    if weights is not None:
        G = _weighted(G, est, state, as_numpy, *weights)
    elif est.center:
        G = _centered(G, est, state, as_numpy)
    G_formed = G.to_dense() if form else None
    if solver == "dense":
        U, s, V = dense_svd(G if not hasattr(G, "to_dense") else G.to_dense(), r)
    elif solver == "arpack":  # ARPACK on the host, products with G on the device
        U, s, V = arpack_svd(G if G_formed is None else G_formed, r,
                             random_state=est.random_state, **options)
    elif solver in RANDOMIZED_SOLVERS:
        U, s, V = randomized_svd(G, r, random_state=est.random_state,
                                 method=RANDOMIZED_SOLVERS[solver], **options)
    else:
        res = nystrom_svd(G, r, random_state=est.random_state, **options)
        U, s, V = res.U, res.s, res.V
        est.nystrom_ = res
        est.row_landmarks_ = res.row_landmarks
        est.col_landmarks_ = res.col_landmarks
    np_dtype = numpy_dtype(Xt)
    s = np.asarray(s, dtype=np.float64).astype(np_dtype)
    est._check_noise_level(types.SimpleNamespace(dtype=np_dtype), s, n, m)
    est.singular_values_ = s if as_numpy else from_numpy(s, U)
    est.n_components_ = int(s.shape[0])
    est.left_singular_vectors_ = _out(U, as_numpy)
    est.right_singular_vectors_ = _out(V, as_numpy)
    state.update(U=U, V=V, s=from_numpy(s, U))
    if getattr(G, "kernel", None) is not None and G.kernel.row_normalized:
        state["log_norm"] = G.log_norm()  # the training rows' normalisers (transform_right)
    est.solver_ = solver
    est.n_rows_, est.n_cols_ = n, m
    if weights is not None:  # the training scores, as transform/transform_right give them
        w, wz = (state[k] for k in ("w", "wz"))
        D = state.pop("centred")
        est._train_scores = (_out(D @ (V * torch_sqrt(wz)[:, None]), as_numpy),
                             _out(D.T @ (U * torch_sqrt(w)[:, None]), as_numpy))


def _check_solver_budget(solver: str, n: int, m: int, r: int, itemsize: int, options: dict,
                         held: bool) -> None:
    """``max_dense_memory`` check of the torch solvers before any work: the dense SVD (G
    formed, its copy, the factors, the workspace: 4 copies of G), ARPACK (on the host) and the
    randomized range finders (the estimates of the numpy solvers); ``held``: a dense G is held
    besides (weighted or formed for ARPACK)."""
    from ..config import check_memory
    from ..linalg._svd_core import check_svd_budget

    if solver == "dense":
        check_memory(4 * n * m * itemsize, f"a dense SVD of the {n}x{m} kernel matrix on torch",
                     "solver='randomized' or 'nystrom'")
        return
    dtype = np.float32 if itemsize == 4 else np.float64
    check_svd_budget(solver, n, m, r, dtype, n_oversamples=options.get("n_oversamples", 10),
                     n_iter=options.get("n_iter", "auto"),
                     extra=n * m * itemsize if held else 0)


def _check_sparse_fit(est) -> None:
    """Sparse input on torch: only a precomputed G, and not with the Nyström solver."""
    if not est._precomputed():
        raise NotImplementedError(
            "sparse data features are not available on the torch backend (its kernels work on "
            "dense feature blocks): pass dense X and Z (e.g. X.toarray()), a sparse kernel "
            "matrix with kernel='precomputed', or use device=None for the numpy path")
    if est.solver == "nystrom":
        raise NotImplementedError(
            "solver='nystrom' with a sparse precomputed G is not available on the torch "
            "backend (the landmark blocks G[I, J] need entries of G); use solver='arpack', "
            "'randomized', 'block_krylov' or 'dense', or pass G dense")


class _CenteredOperator:
    """G̃ = G − r1ᵀ − 1cᵀ + g11ᵀ (= H_n G H_m) for the torch solvers: products through G and
    the means, blocks G̃[I, J] for the Nyström landmarks, ``to_dense`` forms G once and centres
    it in place."""

    def __init__(self, G, r, c, g: float):
        self.G, self.r, self.c, self.g = G, r, c, g
        self.shape = G.shape
        self.X = G.template() if hasattr(G, "template") else G  # dtype/device template
        self.Z = G.Z if hasattr(G, "Z") else G.T  # the column points (k-means landmarks)
        self.device = self.X.device

    def template(self):
        """The dtype/device template of the solvers."""
        return self.X

    def step(self, other: int) -> int:
        """Rows per block of G (the blocks of G̃ are G's, shifted)."""
        return int(self.G.step(other)) if hasattr(self.G, "step") else \
            int(max(1, 64 * 2**20 // (max(1, other) * 8 * 4)))

    def block(self, rows, cols):
        """G̃[rows, cols] for index tensors (or slices)."""
        B = self.G.block(rows, cols) if hasattr(self.G, "block") else self.G[rows][:, cols]
        return B - self.r[rows][:, None] - self.c[cols][None, :] + self.g

    def matmat(self, B, cols=None):
        """G̃[:, cols] @ B (``cols`` None: every column)."""
        if hasattr(self.G, "matmat"):
            out = self.G.matmat(B, cols=cols)
        else:
            out = (self.G if cols is None else self.G[:, cols]) @ B
        c = self.c if cols is None else self.c[cols]
        return _center_scores(out, self.r, c, B, self.g)

    def rmatmat(self, B, rows=None):
        """G̃[rows, :]ᵀ @ B (``rows`` None: every row)."""
        if hasattr(self.G, "rmatmat"):
            out = self.G.rmatmat(B, rows=rows)
        else:
            out = (self.G if rows is None else self.G[rows]).T @ B
        r = self.r if rows is None else self.r[rows]
        return _center_scores(out, self.c, r, B, self.g)

    def to_dense(self):
        # a tensor's own to_dense() returns the tensor itself: copy a precomputed G
        D = self.G.clone() if is_torch_tensor(self.G) else self.G.to_dense()
        D -= self.r[:, None]
        D -= self.c[None, :]
        D += self.g
        return D


def torch_sqrt(t):
    """Elementwise square root of a tensor."""
    torch = require_torch()
    return torch.sqrt(t)


def _weights(sample_weight, sample_weight_Z, n: int, m: int):
    """The checked float64 numpy weights (w, w_z) of a weighted fit (ones for the side not
    given), or None: the numpy path's :func:`asymkern._shared.ksvd.check_weights`."""
    from .._shared.ksvd import check_weights

    if sample_weight is None and sample_weight_Z is None:
        return None
    sw = to_numpy(sample_weight) if any_torch(sample_weight) else sample_weight
    swz = to_numpy(sample_weight_Z) if any_torch(sample_weight_Z) else sample_weight_Z
    w = check_weights(sw, n, "sample_weight", "row of X (row of G)")
    wz = check_weights(swz, m, "sample_weight_Z", "row of Z (column of G)")
    return (np.ones(n) if w is None else w), (np.ones(m) if wz is None else wz)


def _weighted(G, est, state: dict, as_numpy: bool, w: np.ndarray, wz: np.ndarray):
    """G_w = W^{1/2} G̃ W_z^{1/2} on the device (``KernelSVD._fit_weighted``, the repeated-rows
    fit of the class Notes): G formed densely, a row-normalised kernel renormalised with the
    weights of Z, centred with the weighted means, then scaled by √w and √w_z."""
    from ..config import check_memory

    torch = require_torch()
    n, m = (int(k) for k in G.shape)
    like = G.template() if hasattr(G, "template") else G
    check_memory(2 * n * m * like.element_size(), "KernelSVD with sample weights on torch (the "
                 "weighted kernel matrix)", "no sample weights")
    D = G.clone() if is_torch_tensor(G) else G.to_dense()
    dt, dev = D.dtype, D.device
    wt = torch.as_tensor(w, dtype=dt, device=dev)
    wzt = torch.as_tensor(wz, dtype=dt, device=dev)
    z_norm = None
    kernel = state.get("kernel")
    if kernel is not None and est.kernel_.row_normalized and not np.all(wz == 1):
        # κ(x, z) = k(x, z) / Σ_r k(x, r): repeating z_r w_z,r times weights the normaliser too
        z_norm = (D @ wzt).to(torch.float64)
        D = D / z_norm[:, None].to(dt)
    if est.center:  # weighted means: the centring of the repeated-rows fit
        sw, swz = float(w.sum()), float(wz.sum())
        r64 = (D @ wzt).to(torch.float64) / swz
        c64 = (wt @ D).to(torch.float64) / sw
        g = float(torch.as_tensor(w, dtype=torch.float64, device=dev) @ r64) / sw
        D = D - r64[:, None].to(dt)
        D -= c64[None, :].to(dt)
        D += g
        est.row_means_, est.col_means_ = _out(r64, as_numpy), _out(c64, as_numpy)
        est.grand_mean_ = g
        state.update(row_means=r64.to(dt), col_means=c64.to(dt), grand_mean=g)
    est.sample_weight_, est.sample_weight_Z_ = w, wz
    est._z_norm = None if z_norm is None else to_numpy(z_norm)
    state.update(w=wt, wz=wzt, z_norm=z_norm, centred=D)
    return (D * torch.sqrt(wt)[:, None]) * torch.sqrt(wzt)[None, :]


def _means64(G):
    """Row and column means of G (float64 tensors) and the grand mean (float), one pass over
    row blocks of G accumulated in float64 (as :meth:`KernelMatrix.means`)."""
    torch = require_torch()
    n, m = (int(k) for k in G.shape)
    if isinstance(G, TorchSparseMatrix):
        rows, cols = G.sums64()
    elif not hasattr(G, "block"):
        D = G.to(torch.float64)
        rows, cols = D.sum(dim=1), D.sum(dim=0)
    else:
        rows = torch.empty(n, dtype=torch.float64, device=G.device)
        cols = torch.zeros(m, dtype=torch.float64, device=G.device)
        step = G.step(m)
        for a in range(0, n, step):
            sl = slice(a, min(a + step, n))
            B = G.block(sl, slice(None)).to(torch.float64)
            rows[sl] = B.sum(dim=1)
            cols += B.sum(dim=0)
    return rows / m, cols / n, float(rows.sum()) / (n * m)


def _centered(G, est, state: dict, as_numpy: bool) -> _CenteredOperator:
    """Record the training means on ``est`` (numpy path's attributes) and return G̃."""
    r64, c64, g = _means64(G)
    like = G.template() if hasattr(G, "template") else G
    r, c = r64.to(like.dtype), c64.to(like.dtype)
    # the numpy path keeps float64 means for a precomputed G, the matrix dtype otherwise
    keep = (r64, c64) if state.get("kernel") is None else (r, c)
    est.row_means_, est.col_means_ = (_out(v, as_numpy) for v in keep)
    est.grand_mean_ = g
    state.update(row_means=r, col_means=c, grand_mean=g)
    return _CenteredOperator(G, r, c, g)


def _center_scores(out, row_means_new, train_means, B, g: float):
    """Scores of centred new kernel rows K̃ = K − k̄1ᵀ − 1 m_trainᵀ + g11ᵀ times B, from
    ``out`` = K B: K̃B = KB − k̄(1ᵀB) − 1(m_trainᵀB) + g1(1ᵀB) (:meth:`KernelSVD._center_rows`
    and ``_center_cols``)."""
    s = B.sum(dim=0, keepdim=True)
    return out - row_means_new[:, None] * s - (train_means @ B - g * s)


def from_index(idx, device):
    """A numpy index array as a tensor on ``device``."""
    torch = require_torch()
    return torch.as_tensor(np.asarray(idx), device=device)


def transform_torch(est, X, left: bool = True):
    """Left (``left=True``: e(x)) or right (e(z)) projection scores on the torch backend."""
    from .._validation import check_input

    check_is_fitted(est, "singular_values_")
    state = getattr(est, "_torch_state", None)
    if state is None:  # fitted by the numpy path, now given a tensor: refit on torch
        raise ValueError("this KernelSVD was fitted on numpy arrays without device=...; fit it "
                         "with torch tensors (or a device) to transform torch tensors")
    dev, dtype = state["device"], state["dtype"]
    as_numpy = not any_torch(X)
    name = "X" if left else "Z"
    sparse = is_sparse_input(X)
    if sparse and not est._precomputed():
        raise NotImplementedError(
            f"sparse {name} is not available on the torch backend (its kernels work on dense "
            f"feature blocks); pass a dense {name} (e.g. {name}.toarray())")
    if as_numpy and left and not est._precomputed():
        X = check_input(est, X, reset=False, name="X")
    # sparse precomputed kernel rows: CSR on the device, used through products only
    Xn: Any = as_sparse_matrix(X, dev, name, dtype=dtype) if sparse else \
        as_tensor(X, dev, name, dtype=dtype)
    s = state["s"]
    nys = est.solver_ == "nystrom"
    if nys:
        res = est.nystrom_
        Mx = from_numpy(nystrom_extension_map(res, left), Xn.template() if sparse else Xn)
        idx = from_index(res.col_landmarks if left else res.row_landmarks, dev)
    if est._precomputed():
        expected = est.n_cols_ if left else est.n_rows_
        if Xn.shape[1] != expected:
            raise ValueError(f"precomputed {name} has {Xn.shape[1]} columns; expected {expected}")
        mm = products(Xn)[0] if sparse else None  # K[:, cols] @ B for the sparse K
        if "w" in state:
            return _out(_weighted_scores(est, state, mm or (lambda B: Xn @ B), left), as_numpy)
        if nys:
            out = mm(Mx, cols=idx) if mm else Xn[:, idx] @ Mx
            if est.center:  # centred rows: their own full means, the landmarks' training means
                tm = state["col_means" if left else "row_means"][idx]
                out = _center_scores(out, _row_means(Xn), tm, Mx, state["grand_mean"])
            out = out * s
        else:
            B = state["V"] if left else state["U"]
            out = mm(B) if mm else Xn @ B
            if est.center:
                tm = state["col_means" if left else "row_means"]
                out = _center_scores(out, _row_means(Xn), tm, B, state["grand_mean"])
        return _out(out, as_numpy)
    expected = est.n_features_in_ if left else est.z_features_in_
    if Xn.shape[1] != expected:
        raise ValueError(f"{name} has {Xn.shape[1]} features, but KernelSVD is expecting "
                         f"{expected} features as input")
    Xn = _compat_new(est, Xn, left)
    tk, wm = state["kernel"], _working_memory(est)
    if "w" in state:
        if left:
            G = TorchKernelMatrix(tk, Xn, state["Z"], reference=state["Z"], working_memory=wm)
            return _out(_weighted_scores(est, state, G.matmat, left), as_numpy)
        G = TorchKernelMatrix(tk, state["X"], Xn, reference=state["Z"], working_memory=wm,
                              log_norm=state.get("log_norm"))
        return _out(_weighted_scores(est, state, G.rmatmat, left), as_numpy)
    if left:
        G = TorchKernelMatrix(tk, Xn, state["Z"], reference=state["Z"], working_memory=wm)
        B = Mx if nys else state["V"]
        out = G.matmat(B, cols=idx if nys else None)
        if est.center:  # centred rows: their own means, the training columns' means
            ones = torch_ones(G.shape[1], Xn)
            tm = state["col_means"][idx] if nys else state["col_means"]
            out = _center_scores(out, G.matmat(ones)[:, 0] / G.shape[1], tm, B,
                                 state["grand_mean"])
        if nys:
            out = out * s
    else:
        G = TorchKernelMatrix(tk, state["X"], Xn, reference=state["Z"], working_memory=wm,
                              log_norm=state.get("log_norm"))
        B = Mx if nys else state["U"]
        out = G.rmatmat(B, rows=idx if nys else None)
        if est.center:
            ones = torch_ones(G.shape[0], Xn)
            tm = state["row_means"][idx] if nys else state["row_means"]
            out = _center_scores(out, G.rmatmat(ones)[:, 0] / G.shape[0], tm, B,
                                 state["grand_mean"])
        if nys:
            out = out * s
    return _out(out, as_numpy)


def _row_means(K):
    """Row means of precomputed kernel rows K (a dense tensor, or a TorchSparseMatrix whose
    means are accumulated in float64), in K's dtype."""
    if isinstance(K, TorchSparseMatrix):
        return (K.sums64()[0] / K.shape[1]).to(K.template().dtype)
    return K.mean(dim=1)


def _compat_fit(est, A):
    """Rows and columns of a non-square data matrix A (a tensor) made comparable by the
    compatibility transform (paper 000 §3: a0–a2, 'pca', 'pinv', 'random'), computed on the
    host with :class:`~asymkern.kernels.CompatibilityTransform` (as the numpy path; same
    ``random_state``) and moved back to A's device and dtype; sets ``est.compat_``."""
    from ..kernels import CompatibilityTransform

    N, M = (int(k) for k in A.shape)
    if est.compat is None:
        raise ValueError(f"X is a {N}x{M} data matrix whose rows (dimension {M}) and columns "
                         f"(dimension {N}) differ: set compat to 'pca', 'pinv', 'random' or a "
                         "matrix, or pass the second set as Z")
    est.compat_ = CompatibilityTransform(est.compat, est.random_state)
    Xv, Zv = est.compat_.fit_transform(to_numpy(A))
    return (as_tensor(Xv, A.device, "X", dtype=A.dtype, copy=True),
            as_tensor(Zv, A.device, "Z", dtype=A.dtype, copy=True))


def _compat_new(est, P, left: bool):
    """New rows (``left``: of A, length M) or columns (given as rows, length N) through the
    fitted compatibility transform, on the host."""
    if getattr(est, "compat_", None) is None:
        return P
    f = est.compat_.transform_x if left else est.compat_.transform_z
    return as_tensor(f(to_numpy(P)), P.device, "X" if left else "Z", dtype=P.dtype)


def _weighted_scores(est, state: dict, prod, left: bool):
    """Scores of new rows (``left``) or columns after a weighted fit (``KernelSVD.transform``
    / ``transform_right`` with ``_right_map`` / ``_left_map``), from ``prod(B)`` = K B with K
    the new kernel rows against the training side (columns: κ(x_i, z) as rows).

    Left: K̂ = K / (K w_z) for a row-normalised kernel renormalised with the weights, centred
    with its own weighted means and the training column means, times W_z^{1/2} V. Right: K̂ =
    K / z_norm (the training rows' weighted normalisers), centred likewise, times W^{1/2} U.
    One product K [w | B] gives both the weighted row sums and the scores.
    """
    torch = require_torch()
    w, z_norm = (state["wz"], None) if left else (state["w"], state["z_norm"])
    B = (state["V"] if left else state["U"]) * torch.sqrt(w)[:, None]
    ws, Bs = w, B
    if z_norm is not None:  # right: κ(x_i, z) / z_norm_i
        zn = z_norm[:, None].to(B.dtype)
        ws, Bs = w / zn[:, 0], B / zn
    P = prod(torch.cat([ws[:, None], Bs], dim=1))
    a, out = P[:, 0], P[:, 1:]
    if left and state["z_norm"] is not None:  # left: K̂ = K / (K w_z), whose K̂ w_z is 1
        out = out / a[:, None]
        a = torch.ones_like(a)
    if est.center:
        tm = state["col_means" if left else "row_means"]
        out = _center_scores(out, a / float(w.sum()), tm, B, state["grand_mean"])
    return out


def torch_ones(k: int, like):
    """A (k, 1) column of ones with the dtype and device of ``like``."""
    torch = require_torch()
    return torch.ones((k, 1), dtype=like.dtype, device=like.device)
