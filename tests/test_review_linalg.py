"""Independent review of the public linear algebra (asymkern.linalg) used directly.

Every result is compared with numpy's dense SVD / eigh or with the explicit formulas of the
papers on small matrices: Tao et al. (2024), eq. (8)-(9) and App. A.2.1 eq. (13) for the
Nyström methods and App. C.2 for η; Mollenhauer et al. (2020), Prop. 3.4-3.17 for the
operator SVD. Subspaces are compared through residuals A v = σ u, orthonormality and
projectors, never through signs (except where a sign convention is documented). Then the input
checks (each bad input must raise ValueError/TypeError naming the argument) and the memory
budget (tracemalloc). Tolerances are far above the rounding floor (1e-8 and looser in float64).
"""

from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import aslinearoperator

import asymkern
from asymkern.kernels import KernelMatrix
from asymkern.linalg import (
    arpack_svd,
    asymmetric_nystrom,
    dense_svd,
    eig_auxiliary,
    eig_qr,
    eta,
    eta_strict,
    gram_eigh,
    kernel_qr,
    operator_svd,
    randomized_svd,
    svd_auxiliary,
    svd_block,
    svd_qr,
    symmetric_nystrom,
    top_svd,
)
from asymkern.linalg.operator_svd import as_representation

SOLVERS = ("dense", "arpack", "randomized", "block_krylov", "nystrom", "auto")
ITERATIVE = ("arpack", "randomized", "block_krylov")
TOL = 1e-8


def _rng(seed=0):
    return np.random.default_rng(seed)


def _dense(A):
    return np.asarray(A.toarray() if sp.issparse(A) else A, dtype=np.float64)


def _check_svd(A, res, r, tol=TOL):
    """s against numpy, A V = U S, Aᵀ U = V S, orthonormal columns, decreasing s, and the
    documented paired sign convention (largest-magnitude entry of each u_i positive)."""
    A = _dense(A)
    s_ref = np.linalg.svd(A, compute_uv=False)[:r]
    scale = max(float(s_ref[0]), 1.0)
    U, s, V = (np.asarray(x, dtype=np.float64) for x in (res.U, res.s, res.V))
    assert U.shape == (A.shape[0], r) and s.shape == (r,) and V.shape == (A.shape[1], r)
    np.testing.assert_allclose(s, s_ref, atol=tol * scale, rtol=0)
    assert np.all(np.diff(s) <= tol * scale)
    np.testing.assert_allclose(A @ V, U * s, atol=tol * scale, rtol=0)
    np.testing.assert_allclose(A.T @ U, V * s, atol=tol * scale, rtol=0)
    np.testing.assert_allclose(U.T @ U, np.eye(r), atol=tol, rtol=0)
    np.testing.assert_allclose(V.T @ V, np.eye(r), atol=tol, rtol=0)
    top = U[np.argmax(np.abs(U), axis=0), np.arange(r)]
    assert np.all(top > 0)


def _host(x):
    """A numpy float64 copy of a numpy, torch or dask array."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    elif hasattr(x, "compute"):
        x = x.compute()
    return np.asarray(x, dtype=np.float64)


def _run(A, r, solver, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return top_svd(A, r, solver=solver, random_state=0, **kw)


# ------------------------------------------------------------------------ top_svd: accuracy
def _matrices():
    rng = _rng(0)
    Q1 = np.linalg.qr(rng.standard_normal((7, 6)))[0]
    Q2 = np.linalg.qr(rng.standard_normal((6, 6)))[0]
    return {
        "random 7x5": rng.standard_normal((7, 5)),
        "one row": rng.standard_normal((1, 6)),
        "one column": rng.standard_normal((6, 1)),
        "rank one": np.outer(rng.standard_normal(6), rng.standard_normal(5)),
        "repeated": Q1 @ np.diag([2.0, 2.0, 2.0, 1.0, 1.0, 0.5]) @ Q2.T,
        "orthogonal times 3": 3.0 * np.linalg.qr(rng.standard_normal((8, 5)))[0],
    }


@pytest.mark.parametrize("name", sorted(_matrices()))
@pytest.mark.parametrize("solver", SOLVERS)
def test_top_svd_matches_numpy_for_k_one_and_k_min(solver, name):
    """k = 1 and k = min(n, m) on wide, tall, rank-deficient and repeated spectra. The Nyström
    solver uses every row and column as landmark at this size (its default counts), where it
    is exact, but drops the components of a rank-deficient core (with a warning)."""
    A = _matrices()[name]
    k_max = min(A.shape)
    for r in sorted({1, k_max}):
        if solver == "nystrom" and r > np.linalg.matrix_rank(A):
            with pytest.warns(RuntimeWarning, match="rank-deficient"):
                res = top_svd(A, r, solver=solver, random_state=0)
            assert res.s.shape[0] == np.linalg.matrix_rank(A)
            continue
        _check_svd(A, _run(A, r, solver), r)


@pytest.mark.parametrize("solver", [s for s in SOLVERS if s != "nystrom"])
def test_zero_matrix_gives_zero_singular_values_and_orthonormal_vectors(solver):
    A = np.zeros((5, 4))
    for r in (1, 4):
        _check_svd(A, _run(A, r, solver), r)


def test_nystrom_refuses_a_zero_matrix_by_name():
    with pytest.raises(ValueError, match="core G\\[I, J\\].*zero"):
        top_svd(np.zeros((5, 4)), 2, solver="nystrom", random_state=0)


@pytest.mark.parametrize("solver", SOLVERS)
def test_float32_in_float32_factors_out(solver):
    A = _rng(1).standard_normal((9, 7)).astype(np.float32)
    for G in (A, sp.csr_matrix(A)):
        res = _run(G, 3, solver)
        assert res.U.dtype == np.float32 and res.V.dtype == np.float32
        if solver != "nystrom":  # nystrom's float64 s: pinned in test_properties_linalg
            assert res.s.dtype == np.float32
        _check_svd(A, res, 3, tol=1e-4)


@pytest.mark.parametrize("solver", SOLVERS)
def test_read_only_fortran_input_is_not_modified_and_gives_the_same_result(solver):
    A = np.asfortranarray(_rng(2).standard_normal((10, 8)))
    A.flags.writeable = False
    before = A.copy()
    a = _run(A, 3, solver)
    b = _run(np.ascontiguousarray(A), 3, solver)
    np.testing.assert_array_equal(A, before)
    for x, y in ((a.U, b.U), (a.s, b.s), (a.V, b.V)):
        np.testing.assert_allclose(x, y, atol=1e-10, rtol=0)
    _check_svd(A, a, 3)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "bsr", "lil", "dok", "dia"])
@pytest.mark.parametrize("solver", SOLVERS)
def test_every_sparse_format(solver, fmt):
    """LIL, DOK and DIA matrices have no max() (the scale rule of the iterative solvers used
    it: AttributeError before the fix)."""
    S = sp.random(12, 9, density=0.4, random_state=1, format="csr")
    G = S.asformat(fmt)
    res = _run(G, 3, solver)
    _check_svd(S, res, 3)
    assert G.format == fmt  # the caller's matrix is not converted in place


def test_dia_padding_is_not_read_as_an_entry():
    """A DIA matrix stores its diagonals padded to full length; the padding is not an entry
    of G, so a NaN there is not refused (and not used)."""
    G = sp.dia_matrix((np.array([[np.nan, 2.0, 3.0]]), [1]), shape=(3, 3))  # [0] unused
    assert np.isfinite(G.toarray()).all()
    for solver in ("dense", "arpack", "randomized"):
        _check_svd(G.toarray(), _run(G, 1, solver), 1)


@pytest.mark.parametrize("solver", ["dense", "arpack", "randomized", "block_krylov", "auto"])
def test_linear_operator_input(solver):
    A = _rng(3).standard_normal((11, 8))
    _check_svd(A, _run(aslinearoperator(A), 3, solver), 3)


# --------------------------------------------------------------------------- reproducibility
@pytest.mark.parametrize("solver", SOLVERS)
def test_same_random_state_same_result_across_settings_and_executors(solver):
    """One random_state gives one result whatever working_memory, the RandomState object or
    the executor (numpy, torch CPU tensors, dask arrays, a lazy KernelMatrix)."""
    rng = _rng(4)
    X, Z = rng.standard_normal((60, 3)), rng.standard_normal((45, 3))
    G = KernelMatrix("rbf", X, Z).to_array()
    base = top_svd(G, 4, solver=solver, random_state=5)
    _check_svd(G, base, 4, tol=1e-7)
    others = []
    for wm in (0.01, 1024):
        with asymkern.config_context(working_memory=wm):
            others.append(top_svd(G, 4, solver=solver, random_state=5))
            others.append(top_svd(KernelMatrix("rbf", X, Z), 4, solver=solver, random_state=5))
    others.append(top_svd(G, 4, solver=solver, random_state=np.random.RandomState(5)))
    torch = pytest.importorskip("torch")
    others.append(top_svd(torch.from_numpy(G), 4, solver=solver, random_state=5))
    da = pytest.importorskip("dask.array")
    others.append(top_svd(da.from_array(G, chunks=(25, 45)), 4, solver=solver, random_state=5))
    for res in others:
        for x, y in ((res.U, base.U), (res.s, base.s), (res.V, base.V)):
            np.testing.assert_allclose(_host(x), y, atol=1e-9, rtol=0)


# ---------------------------------------------------------------------------- input checking
@pytest.mark.parametrize("solver", SOLVERS)
def test_bad_ranks_and_solver_names(solver):
    G = _rng(5).standard_normal((6, 5))
    for r, err in ((0, ValueError), (-2, ValueError), (6, ValueError), (1.5, TypeError),
                   (np.float64(2.0), TypeError), (None, TypeError)):
        with pytest.raises(err, match="n_components"):
            top_svd(G, r, solver=solver)
    assert top_svd(G, np.int64(2), solver=solver, random_state=0).s.shape == (2,)
    for bad in ("svd", None, ["dense"], "DENSE"):
        with pytest.raises(ValueError, match="solver"):
            top_svd(G, 2, solver=bad)


@pytest.mark.parametrize("solver", ["randomized", "nystrom"])
def test_complex_dask_input_is_refused(solver):
    """A complex dask G was cast to float (a ComplexWarning per chunk) and decomposed:
    silently the SVD of its real part."""
    da = pytest.importorskip("dask.array")
    G = da.from_array(_rng(6).standard_normal((30, 25)) + 1j, chunks=10)
    with pytest.raises(ValueError, match="G is complex-valued"):
        top_svd(G, 2, solver=solver, random_state=0)
    with pytest.raises(ValueError, match="G is complex-valued"):
        asymmetric_nystrom(G, 2, random_state=0)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("solver", ["randomized", "block_krylov"])
def test_dask_randomized_svd_names_a_nan_in_g(bad, solver):
    """A non-finite entry of a dask G is refused naming G (it ended as LinAlgError('SVD did
    not converge'))."""
    da = pytest.importorskip("dask.array")
    A = _rng(1).standard_normal((30, 25))
    A[A > 2] = bad
    with pytest.raises(ValueError, match="G contains NaN"):
        top_svd(da.from_array(A, chunks=10), 2, solver=solver, random_state=0)


@pytest.mark.parametrize("where", [(3, 0), (12, 24)])  # outside the core; a landmark row
def test_dask_nystrom_names_a_nan_outside_the_core(where):
    """A NaN in the landmark columns or rows of a dask G is refused naming G (outside the
    core block it came back in U, silently)."""
    da = pytest.importorskip("dask.array")
    A = _rng(1).standard_normal((30, 25))
    A[where] = np.nan  # row 3 is not a landmark, column 0 is; row 12 is, column 24 is not
    with pytest.raises(ValueError, match="G contains NaN"):
        res = asymmetric_nystrom(da.from_array(A, chunks=10), 2, row_sampling=np.arange(10, 30),
                                 col_sampling=np.arange(20), random_state=0)
        assert np.isfinite(_host(res.U)).all()


# ------------------------------------------------------------------------------------ memory
def _peak(f):
    tracemalloc.start()
    try:
        f()
        err = None
    except MemoryError as exc:
        err = exc
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak, err


def test_dense_solver_refuses_before_allocating():
    rng = _rng(7)
    A = rng.standard_normal((600, 500))  # 2.3 MiB; the dense SVD needs about 12 MiB
    X, Z = rng.standard_normal((600, 3)), rng.standard_normal((500, 3))
    with asymkern.config_context(max_dense_memory=4):
        K = KernelMatrix("rbf", X, Z)  # a KernelMatrix keeps the budget it was built with
        for G in (A, sp.csr_matrix(A), aslinearoperator(A), K):
            for f in (lambda G=G: top_svd(G, 5, solver="dense"), lambda G=G: dense_svd(G, 5),
                      lambda G=G: arpack_svd(G, 500)):  # r = min(n, m): the dense solver
                peak, err = _peak(f)
                assert isinstance(err, MemoryError) and "max_dense_memory" in str(err)
                assert peak < 0.25 * 2**20, peak


def test_iterative_solvers_stay_within_the_budget_on_arrays_and_kernels():
    rng = _rng(8)
    A = rng.standard_normal((600, 500))
    X, Z = rng.standard_normal((600, 3)), rng.standard_normal((500, 3))
    budget = 2.0
    with asymkern.config_context(max_dense_memory=budget):
        K = KernelMatrix("rbf", X, Z)
        for G in (A, aslinearoperator(A), K):
            for solver in ("arpack", "randomized", "nystrom"):
                if solver == "nystrom" and not isinstance(G, (np.ndarray, KernelMatrix)):
                    continue
                peak, err = _peak(lambda G=G, s=solver: top_svd(G, 5, solver=s, random_state=0))
                assert err is None
                # (a user's aslinearoperator(A) is read as A: scipy 1.18 copies A for the
                # adjoint products of the operator, 2.7 MiB under this 2 MiB budget)
                assert peak <= budget * 2**20, (type(G).__name__, solver, peak / 2**20)


@pytest.mark.parametrize("solver", ["arpack", "randomized"])
@pytest.mark.parametrize("sparse", [False, True])
def test_aslinearoperator_of_a_matrix_is_the_matrix(solver, sparse):
    """aslinearoperator(A) gives A's singular values, and A's NaN is refused naming G (it used
    to reach the solver unseen, as a LinearOperator's entries cannot be checked)."""
    A = _rng(9).standard_normal((60, 40)) * 0.6 ** np.arange(40)  # a decaying spectrum
    M = sp.csr_matrix(A) if sparse else A
    want = np.linalg.svd(A, compute_uv=False)[:3]
    got = top_svd(aslinearoperator(M), 3, solver=solver, random_state=0).s
    np.testing.assert_allclose(got, want, rtol=1e-6)
    B = A.copy()
    B[3, 4] = np.nan
    M = sp.csr_matrix(B) if sparse else B
    with pytest.raises(ValueError, match="G contains NaN"):
        top_svd(aslinearoperator(M), 3, solver=solver, random_state=0)


def test_sparse_nystrom_blocks_do_not_copy_whole_rows():
    """The row blocks of G[:, J] were read as whole rows (all M columns) of a sparse G, then
    cut to J: 4.6 MiB for this dense-filled 600×500 CSR matrix under a 2 MiB budget."""
    S = sp.csr_matrix(_rng(9).standard_normal((600, 500)))
    ref = asymmetric_nystrom(S.toarray(), 5, 100, 100, random_state=0)
    with asymkern.config_context(max_dense_memory=2):
        out = []
        peak, err = _peak(lambda: out.append(asymmetric_nystrom(S, 5, 100, 100,
                                                                random_state=0)))
    assert err is None and peak <= 2 * 2**20, peak / 2**20
    for x, y in ((out[0].U, ref.U), (out[0].s, ref.s), (out[0].V, ref.V)):
        np.testing.assert_allclose(x, y, atol=1e-10, rtol=0)


def test_arpack_on_a_sparse_matrix_stays_within_the_budget():
    """scipy's svds formed the adjoint of a sparse G as a copy (G.T.conj(), 3.6 MiB here)
    that the budget did not count; the adjoint now reads the transposed view."""
    S = sp.csr_matrix(_rng(10).standard_normal((600, 500)))
    with asymkern.config_context(max_dense_memory=2):
        peak, err = _peak(lambda: top_svd(S, 5, solver="arpack", random_state=0))
    assert err is not None or peak <= 2 * 2**20, peak / 2**20


# ------------------------------------------------------------------- Nyström: the formulas
def _nystrom_problem():
    rng = _rng(11)
    G = rng.standard_normal((30, 20)) @ np.diag(0.7 ** np.arange(20)) @ rng.standard_normal(
        (20, 25))
    I = np.array([1, 4, 7, 9, 12, 15, 20, 22, 27])
    J = np.array([0, 3, 5, 8, 11, 14, 19, 24])
    return G, I, J


def test_asymmetric_nystrom_is_eq_9_and_eq_8():
    """λ̃ = √(NM/(s_x s_z)) λ^W, ũ = c/λ^W G[:, J] v^W, ṽ = c/λ^W G[I, :]ᵀ u^W with
    c = (s_x s_z/(NM))^{1/4} (Tao et al. 2024, eq. 9), paired signs; eq. 8 at the training
    points gives the same vectors."""
    G, I, J = _nystrom_problem()
    N, M = G.shape
    r = 3
    res = asymmetric_nystrom(G, r, row_sampling=I, col_sampling=J)
    Uw, sw, Vwt = np.linalg.svd(G[np.ix_(I, J)])
    Uw, sw, Vw = Uw[:, :r], sw[:r], Vwt[:r].T
    c = (len(I) * len(J) / (N * M)) ** 0.25
    U = c * G[:, J] @ Vw / sw
    V = c * G[I, :].T @ Uw / sw
    np.testing.assert_allclose(res.s, np.sqrt(N * M / (len(I) * len(J))) * sw, rtol=TOL)
    assert res.scale == pytest.approx(c, rel=1e-12)
    signs = np.sign(np.sum(U * res.U, axis=0))
    np.testing.assert_allclose(res.U, U * signs, atol=TOL)
    np.testing.assert_allclose(res.V, V * signs, atol=TOL)
    np.testing.assert_allclose(res.extend_rows(G[:, J]), res.U, atol=TOL)
    np.testing.assert_allclose(res.extend_cols(G[I, :].T), res.V, atol=TOL)
    assert np.all(res.U[np.argmax(np.abs(res.U), axis=0), np.arange(r)] > 0)


def test_orthogonalize_is_the_exact_svd_of_the_nystrom_approximation():
    G, I, J = _nystrom_problem()
    r = 3
    res = asymmetric_nystrom(G, r, row_sampling=I, col_sampling=J, orthogonalize=True)
    Uw, sw, Vwt = np.linalg.svd(G[np.ix_(I, J)])
    G_hat = G[:, J] @ (Vwt[:r].T / sw[:r]) @ Uw[:, :r].T @ G[I, :]
    _check_svd(G_hat, res, r)
    np.testing.assert_allclose(res.extend_rows(G[:, J]), res.U, atol=TOL)
    np.testing.assert_allclose(res.extend_cols(G[I, :].T), res.V, atol=TOL)
    nrm = asymmetric_nystrom(G, r, row_sampling=I, col_sampling=J, normalize=True)
    np.testing.assert_allclose(np.linalg.norm(nrm.U, axis=0), 1.0, rtol=TOL)
    np.testing.assert_allclose(nrm.extend_rows(G[:, J]), nrm.U, atol=TOL)


def test_symmetric_nystrom_is_eq_13_on_g_gt():
    G, I, J = _nystrom_problem()
    N, r = G.shape[0], 3
    res = symmetric_nystrom(G, r, row_sampling=I, col_sampling=J)
    GI = G[I, :]
    lam, W = np.linalg.eigh(GI @ GI.T)
    lam, W = lam[::-1][:r], W[:, ::-1][:, :r]
    np.testing.assert_allclose(res.s, np.sqrt(N * lam / len(I)), rtol=TOL)
    U = np.sqrt(len(I) / N) * G @ GI.T @ W / lam
    np.testing.assert_allclose(np.abs(res.U), np.abs(U), atol=TOL)


def test_eta_is_the_printed_formula():
    G, I, J = _nystrom_problem()
    r = 3
    res = asymmetric_nystrom(G, r, row_sampling=I, col_sampling=J)
    U, s, Vt = np.linalg.svd(G)
    U, V = U[:, :r], Vt[:r].T
    cu = np.abs(np.sum(U * res.U, 0)) / np.linalg.norm(res.U, axis=0)
    cv = np.abs(np.sum(V * res.V, 0)) / np.linalg.norm(res.V, axis=0)
    for w, kw in ((s[:r], {"singular_values": s}), (np.ones(r), {"weights": "uniform"}),
                  (r * s[:r] / s[:r].sum(), {"singular_values": s, "weights": "normalized"})):
        assert eta(U, V, res.U, res.V, **kw) == pytest.approx(
            (w @ (1 - cu) + w @ (1 - cv)) / r, abs=1e-12)
    assert eta_strict(U, V, res.U, res.V) == pytest.approx(eta(U, V, res.U, res.V,
                                                               weights="uniform"))


def test_eta_refuses_empty_reference_vectors():
    """r = 0 columns gave NaN (0/0) with a RuntimeWarning."""
    with pytest.raises(ValueError, match="U has shape"):
        eta_strict(np.zeros((5, 0)), np.zeros((4, 0)), np.zeros((5, 0)), np.zeros((4, 0)))
    with pytest.raises(ValueError, match="V has shape"):
        eta_strict(np.eye(3)[:, :1], np.zeros((0, 1)), np.eye(3)[:, :1], np.zeros((0, 1)))


# ------------------------------------------------------------------------ operator SVD
def _operator_problem(rank=None):
    """Linear kernels on explicit features: S = Ψ B Φᵀ is an ordinary 8×9 matrix."""
    rng = _rng(12)
    m, n = 7, 6
    Phi, Psi = rng.standard_normal((9, m)), rng.standard_normal((8, n))
    B = rng.standard_normal((n, m)) if rank is None else (
        rng.standard_normal((n, rank)) @ rng.standard_normal((rank, m)))
    return Phi, Psi, B


def _check_operator_svd(res, Phi, Psi, B, k, tol=1e-8):
    S = Psi @ B @ Phi.T
    s_ref = np.linalg.svd(S, compute_uv=False)[:k]
    assert res.s.shape == (k,)
    np.testing.assert_allclose(res.s, s_ref, rtol=tol, atol=tol * s_ref[0])
    Uf, Vf = Psi @ res.C_u, Phi @ res.C_v  # the singular functions as vectors
    np.testing.assert_allclose(S @ Vf, Uf * res.s, atol=tol * s_ref[0])
    np.testing.assert_allclose(Uf.T @ Uf, np.eye(k), atol=1e-7)
    np.testing.assert_allclose(Vf.T @ Vf, np.eye(k), atol=1e-7)


@pytest.mark.parametrize("method", ["qr", "auxiliary", "block"])
def test_operator_svd_routes_on_explicit_features(method):
    Phi, Psi, B = _operator_problem()
    Gin, Gout = Phi.T @ Phi, Psi.T @ Psi
    for k in (1, 3, 6):
        _check_operator_svd(operator_svd(Gin, Gout, B, k, method=method), Phi, Psi, B, k)
    for Bk in (sp.csr_matrix(B), aslinearoperator(B)):
        _check_operator_svd(operator_svd(Gin, Gout, Bk, 3, method=method), Phi, Psi, B, 3)
    # k=None keeps exactly the numerically nonzero singular values of a rank-2 operator
    Phi, Psi, B2 = _operator_problem(rank=2)
    Gin, Gout = Phi.T @ Phi, Psi.T @ Psi
    res = operator_svd(Gin, Gout, B2, None, method=method)
    _check_operator_svd(res, Phi, Psi, B2, 2)
    with pytest.raises(ValueError, match="numerical rank 2"):
        operator_svd(Gin, Gout, B2, 3, method=method)


def test_operator_inputs_are_not_modified():
    Phi, Psi, B = _operator_problem()
    arrays = [Phi.T @ Phi, Psi.T @ Psi, B]
    for a in arrays:
        a.flags.writeable = False
    before = [a.copy() for a in arrays]
    for method in ("qr", "auxiliary", "block"):
        operator_svd(*arrays, 3, method=method)
    for a, b in zip(arrays, before):
        np.testing.assert_array_equal(a, b)


def test_eigen_routes_of_a_self_adjoint_operator():
    Phi, _, _ = _operator_problem()
    Gin = Phi.T @ Phi
    Bs = _rng(13).standard_normal((7, 7))
    Bs = Bs + Bs.T
    S = Phi @ Bs @ Phi.T
    ev = np.linalg.eigvalsh(S)
    ev = ev[np.argsort(-np.abs(ev))][:3]
    for res in (eig_qr(kernel_qr(Gin), Bs, 3), eig_auxiliary(Gin, Gin, Bs, 3)):
        lam = np.real(res.eigenvalues)
        np.testing.assert_allclose(lam, ev, rtol=1e-8)
        F = Phi @ np.real(res.C)
        np.testing.assert_allclose(S @ F, F * lam, atol=1e-8 * abs(ev[0]))
        np.testing.assert_allclose(np.linalg.norm(F, axis=0), 1.0, rtol=1e-8)


def test_kernel_qr_and_gram_eigh_factor_the_gram_matrix():
    Phi, _, _ = _operator_problem()
    G = Phi.T @ Phi
    for method in ("auto", "pivoted", "cholesky", "eigh"):
        F = kernel_qr(G, method=method)
        np.testing.assert_allclose(F.R.T @ F.R, G, atol=1e-10 * np.abs(G).max())
        C = F.coefficients(np.eye(F.rank))
        np.testing.assert_allclose(C.T @ G @ C, np.eye(F.rank), atol=1e-8)
    F = gram_eigh(G)
    np.testing.assert_allclose(F.evals, np.linalg.eigvalsh(G)[::-1], rtol=1e-10)


# ---------------------------------------------------------------- operator SVD: input checks
def _gram_pair():
    Phi, Psi, B = _operator_problem()
    return Phi.T @ Phi, Psi.T @ Psi, B


def test_as_representation_refuses_complex_b():
    """A complex B was cast to float64 (only numpy's ComplexWarning): S = Ψ Re(B) Φᵀ."""
    B = _rng(14).standard_normal((4, 5))
    for Bc in (B + 1j, sp.csr_matrix(B + 1j)):
        with pytest.raises(ValueError, match="B is complex-valued"):
            as_representation(Bc)
    with pytest.raises(ValueError, match="B is a complex LinearOperator"):
        as_representation(aslinearoperator(B + 1j))
    with pytest.raises(TypeError, match="B must be a numeric"):
        as_representation(np.array([["a", "b"]]))
    Gin, Gout, B = _gram_pair()
    for method in ("qr", "auxiliary", "block"):
        with pytest.raises(ValueError, match="B is complex-valued"):
            operator_svd(Gin, Gout, B + 1e-3j, 2, method=method)


@pytest.mark.parametrize("fmt", ["lil", "dok"])
def test_as_representation_checks_lil_and_dok_entries(fmt):
    """LIL's data is an object array of lists: np.isfinite raised an unnamed TypeError."""
    B = np.ones((4, 5))
    B[1, 2] = np.nan
    with pytest.raises(ValueError, match="B contains NaN"):
        as_representation(sp.csr_matrix(B).asformat(fmt))
    assert as_representation(sp.lil_matrix(np.ones((4, 5)))).shape == (4, 5)


@pytest.mark.parametrize("bad", [-1.0, np.nan, np.inf, 1.0, 2.0])
def test_rtol_out_of_range_is_refused_by_every_route(bad):
    """A negative or NaN rtol kept numerically zero singular values (σ ≈ 1e-16, with noise
    for singular functions) with k=None; inf or ≥ 1 claimed the operator had rank 0."""
    Gin, Gout, B = _gram_pair()
    Fi, Fo = kernel_qr(Gin), kernel_qr(Gout)
    calls = [lambda: svd_qr(Fi, Fo, B, None, rtol=bad),
             lambda: svd_auxiliary(Gin, Gout, B, None, rtol=bad),
             lambda: svd_block(Gin, Gout, B, None, rtol=bad),
             lambda: operator_svd(Gin, Gout, B, 2, rtol=bad),
             lambda: eig_qr(Fi, Gin, None, rtol=bad),
             lambda: eig_auxiliary(Gin, Gin, np.eye(7), None, rtol=bad),
             lambda: kernel_qr(Gin, rtol=bad),
             lambda: gram_eigh(Gin, rtol=bad)]
    for call in calls:
        with pytest.raises(ValueError, match="rtol must be"):
            call()


def test_rtol_of_the_wrong_type_is_refused_by_name():
    Gin, Gout, B = _gram_pair()
    Fi, Fo = kernel_qr(Gin), kernel_qr(Gout)
    for bad in ("1e-8", True, [1e-8]):
        for call in (lambda t=bad: svd_qr(Fi, Fo, B, 2, rtol=t),
                     lambda t=bad: svd_auxiliary(Gin, Gout, B, 2, rtol=t),
                     lambda t=bad: svd_block(Gin, Gout, B, 2, rtol=t),
                     lambda t=bad: eig_qr(Fi, Gin, 2, rtol=t),
                     lambda t=bad: eig_auxiliary(Gin, Gin, np.eye(7), 2, rtol=t),
                     lambda t=bad: kernel_qr(Gin, rtol=t)):
            with pytest.raises(TypeError, match="rtol must be"):
                call()


def test_rank_deficient_operator_with_rtol_zero_keeps_what_is_above_zero():
    """rtol = 0 is valid (keep every positive σ); the default is the documented 1e-10."""
    Phi, Psi, B = _operator_problem(rank=2)
    Gin, Gout = Phi.T @ Phi, Psi.T @ Psi
    res = svd_qr(kernel_qr(Gin), kernel_qr(Gout), B, 2, rtol=0.0)
    _check_operator_svd(res, Phi, Psi, B, 2)


@pytest.mark.parametrize("route", [svd_auxiliary, svd_block])
def test_auxiliary_routes_check_the_gram_matrices_by_name(route):
    """NaN reached LAPACK's geev ('illegal value in argument 4', with stderr noise), a
    complex Gram matrix was cast to float, a non-square one failed in scipy."""
    Gin, Gout, B = _gram_pair()
    bad_in = Gin.copy()
    bad_in[0, 0] = np.nan
    cases = [((bad_in, Gout), ValueError, "G_in contains NaN"),
             ((Gin, np.full_like(Gout, np.inf)), ValueError, "G_out contains NaN"),
             ((Gin + 1e-3j, Gout), ValueError, "G_in is complex"),
             ((Gin, Gout + 0j), ValueError, "G_out is complex"),
             ((Gin[:, :5], Gout), ValueError, "G_in must be a square"),
             ((Gin + np.triu(np.ones_like(Gin), 1), Gout), ValueError, "G_in is not symmetric")]
    for (gi, go), err, match in cases:
        with pytest.raises(err, match=match):
            route(gi, go, B, 2)


def test_eig_auxiliary_checks_its_matrices_by_name():
    Gin, _, _ = _gram_pair()
    B = np.eye(7)
    bad = Gin.copy()
    bad[1, 2] = np.inf
    for args, match in (((bad, Gin, B), "G_cross contains NaN"),
                        ((Gin, bad, B), "G_out contains NaN"),
                        ((Gin + 1j, Gin, B), "G_cross is complex"),
                        ((Gin[0], Gin, B), "G_cross must be a 2-D"),
                        ((Gin[:, :5], Gin, B), "G_cross has shape")):
        with pytest.raises(ValueError, match=match):
            eig_auxiliary(*args, 2)


def test_kernel_qr_refuses_complex_grams_and_bad_jitter_by_name():
    Gin, _, _ = _gram_pair()
    for f in (kernel_qr, gram_eigh):
        with pytest.raises(ValueError, match="G is complex-valued"):
            f(Gin + 1e-3j * np.eye(7))
    for bad in ("1", None, True):
        with pytest.raises(TypeError, match="jitter"):
            kernel_qr(Gin, jitter=bad)
    for bad in (-1.0, np.nan, np.inf):
        with pytest.raises(ValueError, match="jitter"):
            kernel_qr(Gin, jitter=bad)
    with pytest.raises(ValueError, match="unknown method"):
        kernel_qr(Gin, method="qr")
    with pytest.raises(ValueError, match="unknown method"):
        operator_svd(Gin, Gin, np.eye(7), 2, method="svd")
    with pytest.raises(ValueError, match="unknown solver"):
        svd_auxiliary(Gin, Gin, np.eye(7), 2, solver="lapack")


def test_randomized_and_arpack_direct_options():
    G = _rng(15).standard_normal((20, 15))
    for kw, err, match in (({"method": "lanczos"}, ValueError, "method"),
                           ({"precision": "medium"}, ValueError, "precision"),
                           ({"precision": "low"}, ValueError, "precision='low'")):
        with pytest.raises(err, match=match):
            randomized_svd(G, 3, random_state=0, **kw)
    for tol in (np.inf, -1e-9):
        with pytest.raises(ValueError, match="tol"):
            top_svd(G, 3, solver="arpack", tol=tol)
    _check_svd(G, randomized_svd(G, 15, n_oversamples=0, n_iter=0, random_state=0), 15)
