"""Top-r SVD solvers on torch: dense, randomized and the asymmetric Nyström method (private).

Each solver runs the algorithm of its numpy counterpart in :mod:`asymkern.linalg` step by step
so that, with the same ``random_state``, the results agree to rounding:

* :func:`randomized_svd` — Halko, Martinsson & Tropp (2011) Alg. 4.4/5.1 as
  :func:`asymkern.linalg.randomized_svd`: the Gaussian test matrix Ω is drawn with numpy by
  :func:`asymkern._random.normal_rows` from the same ``check_random_state`` stream and moved to
  the device; the passes G·X, Gᵀ·Y, the QR factorisations and the small SVD run on the device.
* :func:`nystrom_svd` — paper 000 §3, eq. 8–9, as :func:`asymkern.linalg.asymmetric_nystrom`
  with fixed landmark counts: the landmarks are drawn by the numpy code (same stream), the small
  core W = G[I, J] is solved by the numpy core solver (``_core_solve``), and the O((N + M) r)
  products G[:, J]·B and G[I, :]ᵀ·A run on the device.
* :func:`arpack_svd` — implicitly restarted Lanczos as :func:`asymkern.linalg.arpack_svd`:
  that very function (scipy ``svds``, ARPACK, on the host, with its starting vector v0 drawn
  from the same ``check_random_state`` stream, tolerance and sign convention) is called on a
  ``scipy.sparse.linalg.LinearOperator`` whose matvec/rmatvec/matmat/rmatmat run G·v and Gᵀ·u
  on the device; only the Lanczos vectors travel between host and device.
* :func:`dense_svd` — ``torch.linalg.svd`` of the formed matrix.

Signs follow :func:`asymkern.linalg.flip_signs`: the largest-magnitude entry of each u_i is
positive, u_i and v_i flipped together.
"""

from __future__ import annotations

import numpy as np

from .._dispatch import require_torch
from .device import from_numpy, numpy_dtype, to_numpy


def flip_signs(U, V):
    """Paired sign flip (torch): the largest-magnitude entry of each column of U positive."""
    torch = require_torch()
    idx = torch.argmax(torch.abs(U), dim=0)
    signs = torch.sign(U[idx, torch.arange(U.shape[1], device=U.device)])
    signs[signs == 0] = 1
    return U * signs, V * signs, signs


def dense_svd(G, r: int):
    """Top-r SVD of the dense tensor G by ``torch.linalg.svd`` (s returned as float64 numpy)."""
    torch = require_torch()
    U, s, Vt = torch.linalg.svd(G, full_matrices=False)
    U, V, _ = flip_signs(U[:, :r], Vt[:r].T)
    return U.contiguous(), to_numpy(s[:r]).astype(np.float64), V.contiguous()


def products(G):
    """(B ↦ G·B, B ↦ Gᵀ·B, template) for a lazy torch matrix (one with ``matmat`` /
    ``rmatmat``: :class:`~.kernels.TorchKernelMatrix`, the centred operator of :mod:`.ksvd`,
    :class:`~.sparse.TorchSparseMatrix`) or a dense tensor; the template carries the dtype and
    device of the results."""
    if hasattr(G, "matmat"):
        return G.matmat, G.rmatmat, (G.template() if hasattr(G, "template") else G)

    def mm(B):
        return G @ B

    def rmm(B):
        return G.T @ B

    return mm, rmm, G


def arpack_svd(G, r: int, random_state=None, tol: float = 0.0):
    """Top-r SVD by ARPACK on the host with the products G·v, Gᵀ·u on the device.

    Calls :func:`asymkern.linalg.arpack_svd` itself — scipy ``svds(solver='arpack')`` with the
    starting vector v0 = U(−1, 1) drawn from ``check_random_state(random_state)``, ``tol``, the
    eigenvalue problem of GᵀG (or GGᵀ when n < m) and :func:`asymkern.linalg.flip_signs` — on
    a ``scipy.sparse.linalg.LinearOperator`` whose products move each Lanczos block to the
    device, multiply there and move the result back. With the same ``random_state`` it agrees
    with the numpy path to ARPACK's tolerance. ``r ≥ min(n, m)`` falls back to a dense SVD, as
    there (``KernelSVD`` routes that case to :func:`dense_svd` on the device first).

    Parameters
    ----------
    G : TorchKernelMatrix, centred operator, TorchSparseMatrix or tensor (n, m)
    r : int
        Number of singular triplets, 1 ≤ r ≤ min(n, m).
    random_state : None, int or RandomState
        Seed of the starting vector.
    tol : float, default 0.0
        ARPACK's relative tolerance (0: machine precision).

    Returns
    -------
    U : tensor (n, r), s : ndarray (r,) float64 (the device dtype's values), V : tensor (m, r)
    """
    from scipy.sparse.linalg import LinearOperator

    from ..linalg._svd_core import arpack_svd as host_arpack_svd

    mm, rmm, like = products(G)

    def on_device(f):
        def apply(x):
            x = np.asarray(x)
            return to_numpy(f(from_numpy(x.reshape(x.shape[0], -1), like)))
        return apply

    op = LinearOperator(shape=tuple(int(k) for k in G.shape), dtype=numpy_dtype(like),
                        matvec=on_device(mm), rmatvec=on_device(rmm), matmat=on_device(mm),
                        rmatmat=on_device(rmm))
    res = host_arpack_svd(op, r, tol=tol, random_state=random_state)
    return from_numpy(res.U, like), np.asarray(res.s, dtype=np.float64), from_numpy(res.V, like)


def randomized_svd(G, r: int, n_oversamples: int = 10, n_iter="auto", random_state=None,
                   method: str = "power"):
    """Randomized SVD of the lazy G (:class:`~.kernels.TorchKernelMatrix`) or a dense tensor.

    Parameters
    ----------
    G : TorchKernelMatrix or tensor (n, m)
    r : int
        Number of singular triplets.
    n_oversamples : int
        Extra columns of the sketch.
    n_iter : int or 'auto'
        Power iterations ('auto': 7 when r < 0.1·min(n, m), else 4), or the Krylov steps of
        ``method='block_krylov'`` ('auto': 3, else 2).
    random_state : None, int or RandomState
    method : {'power', 'block_krylov'}
        As :func:`asymkern.linalg.randomized_svd`.

    Returns
    -------
    U : tensor (n, r), s : ndarray (r,) float64 (the device dtype's values), V : tensor (m, r)
    """
    from .._random import normal_rows, seed_from
    from .._validation import check_random_state
    from ..linalg._svd_core import (
        check_randomized_options,
        krylov_passes,
        randomized_passes,
        resolve_randomized_plan,
    )

    torch = require_torch()
    n, m = G.shape
    n_oversamples, n_iter = check_randomized_options(n_oversamples, n_iter, method)
    rng = check_random_state(random_state)
    k = min(r + n_oversamples, n, m)
    method, n_iter = resolve_randomized_plan(method, n_iter, r, k, n, m)
    mm, rmm, like = products(G)
    dtype = numpy_dtype(like)
    Omega = from_numpy(normal_rows(seed_from(rng), 0, m, k, dtype), like)

    def gram(W):  # Gᵀ(G W); the numpy path fuses the two passes, with the same result
        return rmm(mm(W))

    def lu_normalize(Y):  # P L of LU with partial pivoting, as scipy's lu(permute_l=True)
        P, L, _ = torch.linalg.lu(Y)
        return P @ L

    def qr_basis(Y):
        return torch.linalg.qr(Y).Q

    # the same passes as the numpy solver (asymkern.linalg._svd_core.randomized_passes)
    if method == "block_krylov":
        W, Y = krylov_passes(mm, gram, qr_basis, Omega, n_iter,
                             concat=lambda blocks: torch.cat(blocks, dim=1))
    else:
        W, Y = randomized_passes(mm, gram, lu_normalize, qr_basis, Omega, n_iter)
    U, s, Vyt = torch.linalg.svd(Y, full_matrices=False)  # G W = U S Vyᵀ, (n, k)
    V = W @ Vyt[:r].T
    U = U[:, :r]
    U, V, _ = flip_signs(U, V)
    return U.contiguous(), to_numpy(s[:r]).astype(np.float64), V.contiguous()


class _CoreAccess:
    """The numpy-side view of a torch matrix the Nyström landmark and core code needs."""

    is_dask = False

    def __init__(self, G):
        self.G = G
        self.shape = tuple(G.shape)
        self.dtype = numpy_dtype(G.template() if hasattr(G, "template") else G)

    def block(self, rows, cols) -> np.ndarray:
        """G[rows, cols] on the host; ``rows``/``cols`` are index arrays or slices."""
        torch = require_torch()
        dev = self.G.device

        def index(ix):
            return ix if isinstance(ix, slice) else torch.as_tensor(np.asarray(ix), device=dev)

        I, J = index(rows), index(cols)
        if hasattr(self.G, "block"):
            return to_numpy(self.G.block(I, J))
        return to_numpy(self.G[I][:, J])

    def step(self, other: int) -> int:
        """Rows per block when a block has ``other`` columns (the leverage-score passes)."""
        if hasattr(self.G, "step"):
            return int(self.G.step(other))
        return int(max(1, 64 * 2**20 // (max(1, other) * 8 * 4)))

    def points(self, side: str):
        if hasattr(self.G, "X"):
            return to_numpy(self.G.X if side == "row" else self.G.Z)
        return to_numpy(self.G if side == "row" else self.G.T)


NYSTROM_OPTIONS = ("n_row_landmarks", "n_col_landmarks", "sampling", "row_sampling",
                   "col_sampling", "core_solver", "rcond", "normalize", "orthogonalize", "tol",
                   "estimate", "weights", "max_landmarks", "n_probes")


def nystrom_svd(G, r: int, random_state=None, **options):
    """Asymmetric Nyström SVD (paper 000 eq. 8–9) of a torch matrix.

    Parameters
    ----------
    G : TorchKernelMatrix or tensor (N, M)
    r : int
    random_state : None, int or RandomState
    **options
        The options of :func:`asymkern.linalg.asymmetric_nystrom` in :data:`NYSTROM_OPTIONS`
        (landmark counts, 'uniform', 'kmeans' or 'leverage' sampling or index arrays, core
        solver, rcond, normalize, orthogonalize, and growth to a tolerance: ``tol``,
        ``estimate``, ``weights``, ``max_landmarks``, ``n_probes``). The samplers and the
        growth rule are the numpy code's, on blocks of G formed on the device and read on the
        host, consuming the same random stream, so both paths choose the same landmarks.

    Returns
    -------
    NystromResult
        U, V as tensors on G's device (G's dtype); s, the landmarks and the core SVD as numpy.

    Raises
    ------
    NotImplementedError
        For an option of the numpy solver the torch path does not implement.
    """
    from .._validation import check_random_state
    from ..linalg.nystrom import _count, select_indices

    unknown = sorted(set(options) - set(NYSTROM_OPTIONS))
    if unknown:
        raise NotImplementedError(
            f"nystrom_params {', '.join(map(repr, unknown))} are not available on the torch "
            f"backend; supported: {', '.join(NYSTROM_OPTIONS)}")
    acc = _CoreAccess(G)
    N, M = acc.shape
    rs = check_random_state(random_state)
    sampling = options.get("sampling", "uniform")
    row_m = sampling if options.get("row_sampling") is None else options["row_sampling"]
    col_m = sampling if options.get("col_sampling") is None else options["col_sampling"]
    for side, m_ in (("row", row_m), ("col", col_m)):
        if isinstance(m_, str) and m_ not in ("uniform", "kmeans", "leverage"):
            raise NotImplementedError(f"{side} sampling {m_!r} is not available on the torch "
                                      "backend; use 'uniform', 'kmeans', 'leverage' or an "
                                      "index array")
    if options.get("tol") is not None:
        return _grow(G, acc, r, row_m, col_m, options, rs)
    sx, sz = options.get("n_row_landmarks"), options.get("n_col_landmarks")
    if not isinstance(row_m, str):
        sx = len(np.asarray(row_m))
    if not isinstance(col_m, str):
        sz = len(np.asarray(col_m))
    if sx is None and sz is None:
        sx, sz = min(N, max(10 * r, 100)), min(M, max(10 * r, 100))
    elif sx is None:
        sx = min(N, _count(sz, M, "n_col_landmarks"))
    elif sz is None:
        sz = min(M, _count(sx, N, "n_row_landmarks"))
    sx = _count(sx, N, "n_row_landmarks")
    sz = _count(sz, M, "n_col_landmarks")
    if sx < r or sz < r:
        raise ValueError(f"n_components={r} is larger than the number of landmarks (rows {sx}, "
                         f"columns {sz}); use at least {r} landmarks on each side")
    I = select_indices(acc, "row", sx, row_m, r, rs)
    J = select_indices(acc, "col", sz, col_m, r, rs)
    return _once(G, acc, r, I, J, options, rs)


def _once(G, acc, r: int, I, J, options: dict, rs, warn: bool = True):
    """The Nyström SVD with the landmark rows I and columns J (eq. 8–9): the core G[I, J] on
    the host, the extensions G[:, J]·(…) and G[I, :]ᵀ·(…) on the device."""
    from ..linalg.nystrom import NystromResult, _core_solve

    torch = require_torch()
    N, M = acc.shape
    sx, sz = len(I), len(J)
    Uw, swk, Vw, n_keep, s_next, c = _core_solve(acc, r, I, J, options.get("core_solver", "auto"),
                                                 options.get("rcond"), rs, warn=warn)
    like = G.template() if hasattr(G, "template") else G
    dev = like.device
    It = torch.as_tensor(I, device=dev)
    Jt = torch.as_tensor(J, device=dev)
    if hasattr(G, "matmat"):
        U = G.matmat(from_numpy((Vw / swk) * c, like), cols=Jt)
        V = G.rmatmat(from_numpy((Uw / swk) * c, like), rows=It)
    else:
        U = G[:, Jt] @ from_numpy((Vw / swk) * c, like)
        V = G[It].T @ from_numpy((Uw / swk) * c, like)
    s = swk * np.sqrt(N * M / (sx * sz))
    mix_u = mix_v = None
    if options.get("orthogonalize", False):
        import scipy.linalg as sla

        Qu, Ru = torch.linalg.qr(U)
        Qv, Rv = torch.linalg.qr(V)
        Ru, Rv = to_numpy(Ru).astype(np.float64), to_numpy(Rv).astype(np.float64)
        A, s, Bt = np.linalg.svd((Ru * s) @ Rv.T)
        U = Qu @ from_numpy(A, Qu)
        V = Qv @ from_numpy(Bt.T, Qv)
        mix_u, mix_v = sla.solve_triangular(Ru, A), sla.solve_triangular(Rv, Bt.T)
    elif options.get("normalize", False):
        tiny = float(np.finfo(float).tiny)
        nu = np.maximum(to_numpy(torch.linalg.norm(U, dim=0)).astype(np.float64), tiny)
        nv = np.maximum(to_numpy(torch.linalg.norm(V, dim=0)).astype(np.float64), tiny)
        U = U / from_numpy(nu, U)
        V = V / from_numpy(nv, V)
        mix_u, mix_v = np.diag(1 / nu), np.diag(1 / nv)
    U, V, signs = flip_signs(U, V)
    signs = to_numpy(signs).astype(np.float64)
    if mix_u is not None:
        mix_u, mix_v = mix_u * signs, mix_v * signs
    else:
        Uw, Vw = Uw * signs, Vw * signs
    info = {"mix_u": mix_u, "mix_v": mix_v, "n_dropped": r - n_keep,
            "next_singular_value": s_next * np.sqrt(N * M / (sx * sz)),
            "n_row_landmarks": sx, "n_col_landmarks": sz}
    return NystromResult(U.contiguous(), s, V.contiguous(), np.asarray(I), np.asarray(J), Uw,
                         swk, Vw, float(c), "asymmetric", info)


def _grow(G, acc, r: int, row_m, col_m, options: dict, rs):
    """Landmark counts doubled until the a-posteriori η estimate is ≤ ``tol``: the growth
    rule of :func:`asymkern.linalg.asymmetric_nystrom` (same random stream, same estimates),
    each step an :func:`_once` on the device."""
    from ..linalg.metrics import eta
    from ..linalg.nystrom import _growth_result, _growth_start, _growth_step, select_indices

    N, M = acc.shape
    estimate = options.get("estimate", "change")
    weights = options.get("weights", "uniform")
    n_probes = options.get("n_probes")
    fixed_r, fixed_c = not isinstance(row_m, str), not isinstance(col_m, str)
    n_row = len(np.asarray(row_m)) if fixed_r else options.get("n_row_landmarks")
    n_col = len(np.asarray(col_m)) if fixed_c else options.get("n_col_landmarks")
    tol, (sx, sz), (cap_r, cap_c), (perm_r, perm_c) = _growth_start(
        (N, M), r, (row_m, col_m), (n_row, n_col), options["tol"], estimate, weights,
        options.get("max_landmarks"), rs)
    history: list[dict] = []
    prev = None
    while True:
        I = (np.sort(perm_r[:sx]) if perm_r is not None
             else select_indices(acc, "row", sx, row_m, r, rs))
        J = (np.sort(perm_c[:sz]) if perm_c is not None
             else select_indices(acc, "col", sz, col_m, r, rs))
        res = _once(G, acc, r, I, J, options, rs, warn=False)
        exact = sx == N and sz == M
        if estimate == "change":
            if prev is None:
                est = np.inf
            else:
                k = min(prev.n_components, res.n_components)
                est = eta(to_numpy(res.U[:, :k]), to_numpy(res.V[:, :k]),
                          to_numpy(prev.U[:, :k]), to_numpy(prev.V[:, :k]),
                          singular_values=res.s[:k], weights=weights)
        else:
            est = _residual_estimate(G, res, n_probes, rs, weights)
        grow = _growth_step(history, est, exact, (sx, sz), (fixed_r, fixed_c), (cap_r, cap_c),
                            tol)
        if grow is None:
            break
        prev, (sx, sz) = res, grow
    return _growth_result(res, history, tol, estimate, (sx, sz), r, stacklevel=4)


def _residual_estimate(G, res, n_probes, rs, weights: str) -> float:
    """:func:`asymkern.linalg.nystrom.residual_estimate` with G's probe rows and columns formed
    on the device: residuals ‖G v̂ − λ̃ û‖ and ‖Gᵀ û − λ̃ v̂‖ on uniform probes (same draws)."""
    from ..linalg.nystrom import _residual_eta

    torch = require_torch()
    N, M = (int(k) for k in G.shape)
    like = G.template() if hasattr(G, "template") else G
    U = res.U.to(torch.float64)
    V = res.V.to(torch.float64)
    nu, nv = torch.linalg.norm(U, dim=0), torch.linalg.norm(V, dim=0)
    U = U / torch.where(nu == 0, torch.ones_like(nu), nu)
    V = V / torch.where(nv == 0, torch.ones_like(nv), nv)
    s = np.asarray(res.s, dtype=np.float64)
    p = min(N, n_probes or max(256, 2 * len(res.row_landmarks)))
    q = min(M, n_probes or max(256, 2 * len(res.col_landmarks)))
    P = np.sort(rs.choice(N, p, replace=False))
    Q = np.sort(rs.choice(M, q, replace=False))
    Pt = torch.as_tensor(P, device=like.device)
    Qt = torch.as_tensor(Q, device=like.device)
    if hasattr(G, "block"):  # lazy G: probe rows over column blocks, probe columns over rows
        f64 = torch.float64
        GPV = torch.zeros((p, V.shape[1]), dtype=f64, device=like.device)
        step = G.step(p)
        for a in range(0, M, step):
            cb = slice(a, min(a + step, M))
            GPV += G.block(Pt, cb).to(f64) @ V[cb]
        GQU = torch.zeros((q, U.shape[1]), dtype=f64, device=like.device)
        step = G.step(q)
        for a in range(0, N, step):
            rb = slice(a, min(a + step, N))
            GQU += G.block(rb, Qt).to(f64).T @ U[rb]
    else:
        GPV = G[Pt].to(torch.float64) @ V
        GQU = G[:, Qt].to(torch.float64).T @ U
    Ru = to_numpy(GPV) - to_numpy(U[Pt]) * s
    Rv = to_numpy(GQU) - to_numpy(V[Qt]) * s
    return _residual_eta(Ru, Rv, N, M, s, res.info.get("next_singular_value", 0.0), weights)


def nystrom_extension_map(res, left: bool):
    """The (s, r) numpy matrix M of eq. 8: u(x) = K_rows @ M (left) or v(z) = K_cols @ M."""
    core = res.core_V if left else res.core_U
    M = (core / res.core_s) * res.scale
    mix = res.info.get("mix_u" if left else "mix_v")
    return M @ mix if mix is not None else M
