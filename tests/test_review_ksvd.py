"""Independent review of KernelSVD, its solvers and KernelPCA against dense numpy references.

Tao et al. (2024), ICML, "Asymmetric Kernel SVD and Nyström method": G_ij = κ(x_i, z_j) is
formed here with numpy from each kernel's definition (the row-normalised kernels normalise over
the training Z, also for new columns), its SVD taken with ``numpy.linalg.svd``, and compared
with what every solver and executor returns: the singular values, the CCE identities
G V = U Σ, Gᵀ U = V Σ (Prop. 2.4-2.5), the projection scores of new rows e(x) = [κ̃(x, z_j)]_j V
and of new columns e(z) = [κ̃(x_i, z)]_iᵀ U (§2.2), the double centring H G H, the asymmetric
Nyström method written out from eq. (8)-(9), and the compatibility matrices a0-a3 of
Remark 2.3 / Algorithm 1 (App. D). Where singular values repeat (or vanish) the comparison is
of subspaces (projectors) and of products G·v, never of vectors.

Tolerances are relative to σ_1 (or to the size of the compared quantity) and sit well above the
rounding floor: 1e-9 in float64 for the exact solvers on these well-separated spectra, 1e-4 in
float32.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from _backends import as_backend, to_np
from sklearn.base import clone

from asymkern import KernelPCA, KernelSVD, config_context

SOLVERS = ("dense", "arpack", "randomized", "block_krylov", "nystrom")


# ------------------------------------------------------------------------- numpy references
def sq_dists(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    return ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)


def kernel_ref(name: str, A, B, gamma: float, ref=None) -> np.ndarray:
    """[κ(a_i, b_j)] from the kernel's definition; row-normalised kernels normalise each row
    over the reference set ``ref`` (the training Z; default B)."""
    ref = B if ref is None else ref
    if name == "rbf":
        return np.exp(-gamma * sq_dists(A, B))
    if name == "laplacian":
        return np.exp(-gamma * np.abs(A[:, None] - B[None]).sum(-1))
    if name == "sne":
        return np.exp(-gamma * sq_dists(A, B)) / np.exp(-gamma * sq_dists(A, ref)).sum(
            1, keepdims=True)
    if name == "t":
        return (1 / (1 + gamma * sq_dists(A, B))) / (1 / (1 + gamma * sq_dists(A, ref))).sum(
            1, keepdims=True)
    raise KeyError(name)


def centred(G, rows=None, cols=None):
    """(H G H, new rows centred as §2 centres them, new columns centred likewise)."""
    rm, cm, g = G.mean(1), G.mean(0), G.mean()
    out = [G - rm[:, None] - cm[None] + g]
    if rows is not None:  # new x: its own mean over Z, the training column means
        out.append(rows - rows.mean(1, keepdims=True) - cm[None] + g)
    if cols is not None:  # κ(x_i, z), one column per new z: the training row means
        out.append(cols - rm[:, None] - cols.mean(0, keepdims=True) + g)
    return out


def projector(U: np.ndarray) -> np.ndarray:
    return U @ U.T


def fit_quiet(est, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(*args, **kwargs)


@pytest.fixture(scope="module")
def sets():
    rng = np.random.RandomState(11)
    X, Z = rng.randn(34, 3), rng.randn(21, 3) * 1.2 + 0.3
    return X, Z, rng.randn(5, 3), rng.randn(4, 3)


# ------------------------------------------------------ every solver against numpy's SVD
@pytest.mark.parametrize("r", [3, 21], ids=["r3", "r_min"])
@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("kernel", ["sne", "t", "laplacian"])
def test_solvers_match_numpy_svd_and_scores(sets, kernel, center, solver, r):
    """n ≠ m, k = 3 and k = min(n, m): σ, the CCE identities on numpy's G, the top subspaces,
    and the scores of new rows and new columns from the kernel's definition; 'nystrom' with
    every point as landmark is the exact SVD. Centred with k = min(n, m), G̃ has rank
    min(n, m) − 1: the zero component is compared through G V = U Σ only."""
    X, Z, Xn, Zn = sets
    g = 0.5
    G, Kx, Kz = kernel_ref(kernel, X, Z, g), kernel_ref(kernel, Xn, Z, g), \
        kernel_ref(kernel, X, Zn, g, ref=Z)
    if center:
        G, Kx, Kz = centred(G, Kx, Kz)
    U, s, Vt = np.linalg.svd(G)
    kw = {"n_row_landmarks": 34, "n_col_landmarks": 21} if solver == "nystrom" else {}
    m = fit_quiet(KernelSVD(r, kernel=kernel, gamma=g, center=center, solver=solver,
                            random_state=0, **kw), X, Z=Z)
    k = m.n_components_
    # the Nyström core of the centred G has one singular value at the rounding level: dropped
    assert k == (r - 1 if (solver == "nystrom" and center and r == 21) else r)
    Uo, so, Vo = m.left_singular_vectors_, m.singular_values_, m.right_singular_vectors_
    tol = 1e-9 * s[0]
    np.testing.assert_allclose(so, s[:k], rtol=0, atol=tol)
    np.testing.assert_allclose(G @ Vo, Uo * so, rtol=0, atol=tol)
    np.testing.assert_allclose(G.T @ Uo, Vo * so, rtol=0, atol=tol)
    np.testing.assert_allclose(Uo.T @ Uo, np.eye(k), rtol=0, atol=1e-9)
    q = 3  # a gapped top subspace (σ_3 − σ_4 ≥ 1e-2 σ_1 here)
    assert s[q - 1] - s[q] > 1e-2 * s[0]
    np.testing.assert_allclose(projector(Uo[:, :q]), projector(U[:, :q]), rtol=0, atol=1e-8)
    np.testing.assert_allclose(projector(Vo[:, :q]), projector(Vt[:q].T), rtol=0, atol=1e-8)
    # out-of-sample projections (§2.2): new rows against Z, new columns against X
    np.testing.assert_allclose(m.transform(Xn), Kx @ Vo, rtol=0, atol=tol)
    np.testing.assert_allclose(m.transform_right(Zn), Kz.T @ Uo, rtol=0, atol=tol)


# ----------------------------------------------------- asymmetric Nyström, eq. (8)-(9)
@pytest.mark.parametrize("option", [{}, {"normalize": True}], ids=["eq9", "normalize"])
@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("kernel", ["sne", "rbf"])
def test_nystrom_is_eq_8_and_9_written_out(kernel, center, option):
    """Landmarks I (rows) and J (columns) of an N×M G, N ≠ M, s_x ≠ s_z: with the SVD of
    W = G[I, J], eq. (9) with l_λ = 1/√(NM) reads λ̃ = √(NM/(s_x s_z)) λ_W,
    ũ = c/λ_W G[:, J] v_W, ṽ = c/λ_W G[I, :]ᵀ u_W, c = (s_x s_z/(NM))^{1/4}; eq. (8) is the
    same at new x (kernel values against the column landmarks) and new z (against the row
    landmarks). The scores are λ̃ times the extension (of the centred G and the centred new
    kernel values with ``center``)."""
    rng = np.random.RandomState(2)
    N, M, r = 70, 45, 3
    X, Z = rng.randn(N, 3), rng.randn(M, 3) * 1.2 + 0.3
    Xn, Zn = rng.randn(5, 3), rng.randn(4, 3)
    g = 0.5
    G, Kx, Kz = kernel_ref(kernel, X, Z, g), kernel_ref(kernel, Xn, Z, g), \
        kernel_ref(kernel, X, Zn, g, ref=Z)
    if center:
        G, Kx, Kz = centred(G, Kx, Kz)
    m = KernelSVD(r, kernel=kernel, gamma=g, center=center, solver="nystrom", random_state=3,
                  n_row_landmarks=20, n_col_landmarks=15, nystrom_params=option).fit(X, Z=Z)
    I, J = m.row_landmarks_, m.col_landmarks_
    assert len(I) == 20 and len(J) == 15 and len(set(I)) == 20 and len(set(J)) == 15
    Uw, sw, Vwt = np.linalg.svd(G[np.ix_(I, J)])
    Uw, sw, Vw = Uw[:, :r], sw[:r], Vwt[:r].T
    c = (20 * 15 / (N * M)) ** 0.25
    lam = np.sqrt(N * M / (20 * 15)) * sw
    U, V = c / sw * (G[:, J] @ Vw), c / sw * (G[I, :].T @ Uw)
    ux, vz = c / sw * (Kx[:, J] @ Vw), c / sw * (Kz[I, :].T @ Uw)
    if option:  # the paper's "scaling through normalization" (App. A.2.2)
        nu, nv = np.linalg.norm(U, axis=0), np.linalg.norm(V, axis=0)
        U, V, ux, vz = U / nu, V / nv, ux / nu, vz / nv
    sign = np.sign(np.sum(U * m.left_singular_vectors_, axis=0))  # paired: one sign per pair
    np.testing.assert_allclose(m.singular_values_, lam, rtol=1e-10)
    np.testing.assert_allclose(m.left_singular_vectors_, U * sign, rtol=0, atol=1e-10)
    np.testing.assert_allclose(m.right_singular_vectors_, V * sign, rtol=0, atol=1e-10)
    np.testing.assert_allclose(m.transform(Xn), ux * sign * lam, rtol=0, atol=1e-10 * lam[0])
    np.testing.assert_allclose(m.transform_right(Zn), vz * sign * lam, rtol=0,
                               atol=1e-10 * lam[0])


# ------------------------------------------------- repeated singular values, every executor
@pytest.fixture(scope="module")
def polygons():
    """Two sets with a 6-fold rotation symmetry: the SNE kernel matrix (24×12) has singular
    values in equal pairs: 1.414, 1.008 (×2), 0.590 (×2), 0.407, ..."""
    t1 = np.arange(12) * 2 * np.pi / 12
    t2 = np.arange(6) * 2 * np.pi / 6 + 0.2
    X = np.c_[np.cos(t1), np.sin(t1)]
    Z = 1.5 * np.c_[np.cos(t2), np.sin(t2)]
    return np.vstack([X, 2 * X]), np.vstack([Z, 0.5 * Z])


@pytest.mark.parametrize("backend", ["numpy", "torch", "dask"])
def test_repeated_singular_values_compared_as_subspaces(polygons, backend):
    pytest.importorskip({"numpy": "numpy", "torch": "torch", "dask": "dask.array"}[backend])
    X, Z = polygons
    Xn, Zn = np.random.RandomState(0).randn(4, 2), np.random.RandomState(1).randn(3, 2)
    G = kernel_ref("sne", X, Z, 0.7)
    Kx, Kz = kernel_ref("sne", Xn, Z, 0.7), kernel_ref("sne", X, Zn, 0.7, ref=Z)
    U, s, Vt = np.linalg.svd(G)
    assert abs(s[1] - s[2]) < 1e-12 and abs(s[3] - s[4]) < 1e-12  # the pairs
    for r in (3, 5):  # cuts between pairs
        P, Q = projector(U[:, :r]), projector(Vt[:r].T)
        for solver in SOLVERS:
            kw = {"n_row_landmarks": 24, "n_col_landmarks": 12} if solver == "nystrom" else {}
            m = KernelSVD(r, kernel="sne", gamma=0.7, solver=solver, random_state=0, **kw)
            m.fit(as_backend(X, backend), Z=as_backend(Z, backend))
            Uo, so, Vo = (to_np(getattr(m, a)) for a in (
                "left_singular_vectors_", "singular_values_", "right_singular_vectors_"))
            what = f"{backend} {solver} r={r}"
            np.testing.assert_allclose(so, s[:r], rtol=1e-9, err_msg=what)
            np.testing.assert_allclose(projector(Uo), P, rtol=0, atol=1e-9, err_msg=what)
            np.testing.assert_allclose(projector(Vo), Q, rtol=0, atol=1e-9, err_msg=what)
            np.testing.assert_allclose(G @ Vo, Uo * so, rtol=0, atol=1e-9, err_msg=what)
            # scores: invariant products (e(x) Vᵀ = K_x P_V), whatever basis of a pair
            el = to_np(m.transform(as_backend(Xn, backend)))
            er = to_np(m.transform_right(as_backend(Zn, backend)))
            np.testing.assert_allclose(el @ Vo.T, Kx @ Q, rtol=0, atol=1e-9, err_msg=what)
            np.testing.assert_allclose(er @ Uo.T, Kz.T @ P, rtol=0, atol=1e-9, err_msg=what)


# -------------------------------------------------------------------- rank-deficient G
@pytest.mark.parametrize("solver", SOLVERS)
def test_rank_deficient_precomputed_matrix(solver):
    """rank(G) = 3 < r = 5: the informative part is exact; the rest is flagged (σ at the
    noise level, ``n_informative_``), never silently returned as information. The Nyström
    solver drops the missing components (with its RuntimeWarning); orthogonalized, it is
    exact because the landmarks capture the rank."""
    rng = np.random.RandomState(4)
    G = rng.randn(40, 3) @ rng.randn(3, 30)
    U, s, _ = np.linalg.svd(G)
    kw = ({"n_row_landmarks": 12, "n_col_landmarks": 10,
           "nystrom_params": {"orthogonalize": True}} if solver == "nystrom" else {})
    est = KernelSVD(5, kernel="precomputed", solver=solver, random_state=0, **kw)
    with pytest.warns((UserWarning, RuntimeWarning), match="singular values"):
        est.fit(G)
    k = 3 if solver == "nystrom" else 5
    assert est.n_components_ == k and est.n_informative_ == 3
    np.testing.assert_allclose(est.singular_values_[:3], s[:3], rtol=1e-10)
    assert np.all(est.singular_values_[3:] < 1e-12 * s[0])
    Uo = est.left_singular_vectors_[:, :3]
    np.testing.assert_allclose(projector(Uo), projector(U[:, :3]), rtol=0, atol=1e-9)
    Gn = rng.randn(2, 40) @ G / 40  # new rows in the row space of G: exact scores
    np.testing.assert_allclose(est.transform(Gn)[:, :3],
                               Gn @ est.right_singular_vectors_[:, :3], rtol=0,
                               atol=1e-9 * s[0])


# -------------------------------------------------------------------------------- float32
@pytest.mark.parametrize("solver", SOLVERS)
def test_float32_against_the_float64_reference(sets, solver):
    X, Z, Xn, Zn = sets
    G = kernel_ref("sne", X, Z, 0.5)
    Kx = kernel_ref("sne", Xn, Z, 0.5)
    s = np.linalg.svd(G, compute_uv=False)
    kw = {"n_row_landmarks": 34, "n_col_landmarks": 21} if solver == "nystrom" else {}
    m = KernelSVD(3, kernel="sne", gamma=0.5, solver=solver, random_state=0, **kw).fit(
        X.astype(np.float32), Z=Z.astype(np.float32))
    assert m.left_singular_vectors_.dtype == m.right_singular_vectors_.dtype == np.float32
    # the Nyström σ = √(NM/(s_x s_z)) λ_W is kept in float64 (documented), the others float32
    assert m.singular_values_.dtype == (np.float64 if solver == "nystrom" else np.float32)
    el = m.transform(Xn.astype(np.float32))
    assert el.dtype == np.float32
    np.testing.assert_allclose(m.singular_values_, s[:3], rtol=1e-4)
    V = m.right_singular_vectors_.astype(np.float64)
    np.testing.assert_allclose(el @ V.T, Kx @ V @ V.T, rtol=0, atol=1e-4 * s[0])
    U, Vr = np.linalg.svd(G)[0][:, :3], np.linalg.svd(G)[2][:3].T
    np.testing.assert_allclose(projector(m.left_singular_vectors_.astype(float)), projector(U),
                               rtol=0, atol=1e-4)
    np.testing.assert_allclose(projector(V), projector(Vr), rtol=0, atol=1e-4)


# ----------------------------------------------------------------- data far from the origin
@pytest.mark.parametrize("kernel", ["rbf", "sne", "laplacian"])
def test_offset_1e6_against_the_exact_data(sets, kernel):
    """X + 1e6: the reference is formed from the data actually passed (x' − 1e6 is exact),
    so any loss is the library's."""
    X, Z, Xn, Zn = sets
    off = 1e6
    Xo, Zo, Xno, Zno = X + off, Z + off, Xn + off, Zn + off
    Xe, Ze, Xne, Zne = Xo - off, Zo - off, Xno - off, Zno - off
    G, Kx, Kz = centred(kernel_ref(kernel, Xe, Ze, 0.5), kernel_ref(kernel, Xne, Ze, 0.5),
                        kernel_ref(kernel, Xe, Zne, 0.5, ref=Ze))
    s = np.linalg.svd(G, compute_uv=False)
    for solver in ("dense", "randomized", "nystrom"):
        kw = {"n_row_landmarks": 34, "n_col_landmarks": 21} if solver == "nystrom" else {}
        m = KernelSVD(3, kernel=kernel, gamma=0.5, center=True, solver=solver, random_state=0,
                      **kw).fit(Xo, Z=Zo)
        np.testing.assert_allclose(m.singular_values_, s[:3], rtol=1e-9, err_msg=solver)
        np.testing.assert_allclose(m.transform(Xno), Kx @ m.right_singular_vectors_, rtol=0,
                                   atol=1e-9 * s[0], err_msg=solver)
        np.testing.assert_allclose(m.transform_right(Zno), Kz.T @ m.left_singular_vectors_,
                                   rtol=0, atol=1e-9 * s[0], err_msg=solver)


# ------------------------------------------------- inputs: never modified, never referenced
@pytest.mark.parametrize("case", ["two_sets", "square_A", "wide_A", "tall_A"])
def test_training_data_is_the_models_own(case):
    """The fit keeps its own copy of the training data: writing to the caller's arrays after
    fit leaves transform unchanged (KernelSVD held X, Z — and A or Aᵀ in ``fit(A)`` — by
    reference: a later change to them moved the scores by 0.26)."""
    rng = np.random.RandomState(5)
    if case == "two_sets":
        args, kw = (rng.randn(20, 3),), {"Z": rng.randn(15, 3)}
        new_rows, new_cols = rng.randn(4, 3), rng.randn(3, 3)
    else:
        N, M = {"square_A": (12, 12), "wide_A": (12, 20), "tall_A": (20, 12)}[case]
        args, kw = (rng.rand(N, M),), {}
        new_rows, new_cols = rng.rand(4, M), rng.rand(3, N)
    inputs = [*args, *kw.values()]
    for solver in ("dense", "nystrom"):
        opts = {"n_row_landmarks": 8, "n_col_landmarks": 8} if solver == "nystrom" else {}
        keep = [a.copy() for a in inputs]
        m = KernelSVD(2, kernel="sne", gamma=0.5, center=True, solver=solver, random_state=0,
                      **opts).fit(*args, **kw)
        for a, b in zip(inputs, keep):
            np.testing.assert_array_equal(a, b)  # not modified by the fit
        before = (m.transform(new_rows), m.transform_right(new_cols))
        for a in inputs:  # the caller reuses its buffers
            a *= 3.0
        after = (m.transform(new_rows), m.transform_right(new_cols))
        for a, b in zip(inputs, keep):
            a[...] = b
        for b, a in zip(before, after):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("backend", ["numpy", "torch", "dask"])
def test_inputs_never_modified(backend):
    pytest.importorskip({"numpy": "numpy", "torch": "torch", "dask": "dask.array"}[backend])
    rng = np.random.RandomState(6)
    X, Z, Xn, Zn = rng.randn(20, 3), rng.randn(15, 3), rng.randn(4, 3), rng.randn(3, 3)
    keep = [a.copy() for a in (X, Z, Xn, Zn)]
    conv = [as_backend(a, backend) for a in (X, Z, Xn, Zn)]
    for solver in ("dense", "randomized", "nystrom"):
        opts = {"n_row_landmarks": 8, "n_col_landmarks": 8} if solver == "nystrom" else {}
        m = KernelSVD(2, kernel="t", center=True, solver=solver, random_state=0, **opts)
        m.fit(conv[0], Z=conv[1])
        m.transform(conv[2])
        m.transform_right(conv[3])
    for got, want in zip(conv, keep):
        np.testing.assert_array_equal(to_np(got), want)


# --------------------------------------- one random_state: one result, executors and blocks
@pytest.mark.parametrize("solver", ["randomized", "block_krylov", "nystrom"])
@pytest.mark.parametrize("kernel", ["t", "laplacian"])
def test_same_random_state_same_result_everywhere(sets, kernel, solver):
    """numpy, torch and Dask, and working_memory from the default down to a few rows per
    block: the same landmarks and (to rounding) the same G ≈ U Σ Vᵀ and scores, k = min(n, m)
    (the randomized solvers) beside k = 3."""
    X, Z, Xn, Zn = sets
    runs = [("numpy", None), ("numpy", 0.0005), ("torch", None), ("dask", None)]
    for r in ((3, 21) if solver != "nystrom" else (3,)):
        kw = {"n_row_landmarks": 20, "n_col_landmarks": 15} if solver == "nystrom" else {}
        out = []
        for backend, wm in runs:
            pytest.importorskip({"numpy": "numpy", "torch": "torch",
                                 "dask": "dask.array"}[backend])
            m = KernelSVD(r, kernel=kernel, gamma=0.5, solver=solver, random_state=7,
                          working_memory=wm, **kw)
            m.fit(as_backend(X, backend), Z=as_backend(Z, backend))
            U, s, V = (to_np(getattr(m, a)) for a in (
                "left_singular_vectors_", "singular_values_", "right_singular_vectors_"))
            out.append(((U * s) @ V.T, to_np(m.transform(as_backend(Xn, backend))),
                        to_np(m.transform_right(as_backend(Zn, backend))),
                        getattr(m, "row_landmarks_", None), getattr(m, "col_landmarks_", None)))
        ref = out[0]
        for (backend, wm), got in zip(runs[1:], out[1:]):
            what = f"{backend} working_memory={wm} r={r}"
            for a, b in zip(got[:3], ref[:3]):
                np.testing.assert_allclose(a, b, rtol=0, atol=1e-10 * np.abs(b).max(),
                                           err_msg=what)
            if solver == "nystrom":
                np.testing.assert_array_equal(got[3], ref[3])
                np.testing.assert_array_equal(got[4], ref[4])


# ------------------------------------------------------------------- clone / pickle
@pytest.mark.parametrize("backend", ["numpy", "torch", "dask"])
def test_clone_and_pickle_round_trip(sets, backend):
    pytest.importorskip({"numpy": "numpy", "torch": "torch", "dask": "dask.array"}[backend])
    X, Z, Xn, Zn = (as_backend(a, backend) for a in sets)
    for solver in ("dense", "nystrom"):
        opts = {"n_row_landmarks": 20, "n_col_landmarks": 15} if solver == "nystrom" else {}
        est = KernelSVD(3, kernel="sne", gamma=0.5, center=True, solver=solver,
                        random_state=1, **opts)
        assert clone(est).get_params() == est.get_params()
        m = est.fit(X, Z=Z)
        back = pickle.loads(pickle.dumps(m))
        refit = clone(m).fit(X, Z=Z)
        for f in ("transform", "transform_right"):
            P = Xn if f == "transform" else Zn
            want = to_np(getattr(m, f)(P))
            np.testing.assert_allclose(to_np(getattr(back, f)(P)), want, rtol=0,
                                       atol=1e-12 * np.abs(want).max())
            np.testing.assert_array_equal(to_np(getattr(refit, f)(P)), want)


# ----------------------------------------------------- compatibility matrices a0 - a3
def _sign_fix(W: np.ndarray) -> np.ndarray:
    idx = np.argmax(np.abs(W), axis=0)
    return np.where(W[idx, np.arange(W.shape[1])] < 0, -1.0, 1.0)


@pytest.mark.parametrize("compat", ["a0", "a1", "a1c", "a2", "a3"])
@pytest.mark.parametrize("shape", [(12, 20), (20, 12)], ids=["M>N", "N>M"])
def test_compatibility_matrices_follow_the_paper(shape, compat):
    """fit(A), A ∈ R^{N×M}: rows x_i ∈ R^M, columns z_j ∈ R^N. M > N maps x ↦ C_xᵀ x,
    N > M maps z ↦ C_zᵀ z (App. D). a0: C_x = ((X Xᵀ)^† X)ᵀ; a1: the minimiser of
    ‖X − X C Cᵀ‖_F over orthonormal C (the leading right singular vectors, signs by the
    library's documented rule); a1c: the polar factor V Wᵀ; a2: C = randn (reproducible by
    random_state); a3: a given C. Then G = κ(mapped rows, mapped columns) and its scores."""
    rng = np.random.RandomState(4)
    N, M = shape
    A = rng.rand(N, M)
    S = A if M > N else A.T  # the mapped set, one sample per row (App. D's X, or Z)
    Us, ss, Vst = np.linalg.svd(S, full_matrices=False)
    if compat == "a0":
        C = (np.linalg.pinv(S @ S.T) @ S).T
    elif compat == "a1":
        C = Vst.T * _sign_fix(Us)
    elif compat == "a1c":
        C = Vst.T @ Us.T
    elif compat == "a3":
        C = rng.randn(max(N, M), min(N, M)) / np.sqrt(max(N, M))
    else:
        C = None
    gamma = 0.05 if compat == "a2" else 0.5
    m = KernelSVD(3, kernel="rbf", gamma=gamma, solver="dense", random_state=7,
                  compat=C if compat == "a3" else compat).fit(A)
    got = m.compat_.C_
    assert got.shape == (max(N, M), min(N, M))
    if compat == "a2":
        C = got
        assert abs(C.mean()) < 0.2 and 0.8 < C.std() < 1.2  # randn
        again = KernelSVD(3, kernel="rbf", gamma=gamma, compat="a2", random_state=7).fit(A)
        other = KernelSVD(3, kernel="rbf", gamma=gamma, compat="a2", random_state=8).fit(A)
        np.testing.assert_array_equal(again.compat_.C_, C)
        assert not np.allclose(other.compat_.C_, C)
    np.testing.assert_allclose(got, C, rtol=0, atol=1e-10 * np.abs(C).max())
    if compat in ("a1", "a1c"):  # orthonormal, and the a1 objective is zero (full rank)
        np.testing.assert_allclose(C.T @ C, np.eye(C.shape[1]), atol=1e-10)
        np.testing.assert_allclose(S @ C @ C.T, S, atol=1e-10)
    Xm, Zm = (A @ C, A.T) if M > N else (A, A.T @ C)
    G = kernel_ref("rbf", Xm, Zm, gamma)
    s = np.linalg.svd(G, compute_uv=False)
    np.testing.assert_allclose(m.singular_values_, s[:3], rtol=1e-9)
    Xn, Zn = rng.rand(2, M), rng.rand(2, N)  # a new row of A, a new column of A
    Kx = kernel_ref("rbf", Xn @ C if M > N else Xn, Zm, gamma)
    Kz = kernel_ref("rbf", Xm, Zn @ C if N > M else Zn, gamma)
    np.testing.assert_allclose(m.transform(Xn), Kx @ m.right_singular_vectors_, rtol=0,
                               atol=1e-9 * s[0])
    np.testing.assert_allclose(m.transform_right(Zn), Kz.T @ m.left_singular_vectors_, rtol=0,
                               atol=1e-9 * s[0])


# ------------------------------------------------- bad parameters, whatever the solver
BAD = [
    ({"n_row_landmarks": 0}, ValueError, "n_row_landmarks must be an integer >= 1"),
    ({"n_col_landmarks": -2}, ValueError, "n_col_landmarks must be an integer >= 1"),
    ({"n_row_landmarks": 2.5}, TypeError, "n_row_landmarks must be an integer"),
    ({"n_col_landmarks": True}, TypeError, "n_col_landmarks must be an integer"),
    ({"sampling": "bogus"}, ValueError, "sampling must be one of"),
    ({"nystrom_params": {"bogus": 1}}, TypeError, "nystrom_params has unknown option.*'bogus'"),
    ({"compat": "bogus"}, ValueError, "unknown compat 'bogus'"),
    ({"compat": 3}, TypeError, "compat must be one of"),
    ({"compat": "a3"}, ValueError, "compat='a3'"),
]


@pytest.mark.parametrize("backend", ["numpy", "torch", "dask"])
@pytest.mark.parametrize("kw,exc,match", BAD, ids=[str(k) for k, _, _ in BAD])
def test_bad_parameters_refused_whatever_the_solver(kw, exc, match, backend):
    """The Nyström options and ``compat`` were read only by the solver / the data-matrix
    mode that uses them: ``n_row_landmarks=0``, ``sampling='bogus'``, an unknown
    ``nystrom_params`` key with another solver, and ``compat='bogus'`` with Z given (or a
    square A), were accepted silently. Each is refused now, with one message for every
    solver, fit mode and executor (docs/ARCHITECTURE.md: every parameter is checked at the
    top of fit)."""
    pytest.importorskip({"numpy": "numpy", "torch": "torch", "dask": "dask.array"}[backend])
    rng = np.random.RandomState(0)
    X, Z, A = rng.randn(30, 3), rng.randn(20, 3), rng.rand(12, 12)
    messages = set()
    for solver in ("dense", "randomized", "nystrom"):
        for fit_args, fit_kw in (((X,), {"Z": Z}), ((A,), {})):
            args = [as_backend(a, backend) for a in fit_args]
            kws = {k: as_backend(v, backend) for k, v in fit_kw.items()}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                with pytest.raises(exc, match=match) as err:
                    KernelSVD(2, solver=solver, **kw).fit(*args, **kws)
            messages.add(str(err.value))
    assert len(messages) == 1


@pytest.mark.parametrize("kw,match", [
    ({"n_oversamples": -1}, "n_oversamples"), ({"n_oversamples": 2.5}, "n_oversamples"),
    ({"iterated_power": -1}, "iterated_power"), ({"iterated_power": "x"}, "iterated_power"),
    ({"iterated_power": 1.5}, "iterated_power")])
def test_kernel_pca_randomized_options_checked_whatever_the_solver(kw, match):
    X = np.random.RandomState(0).randn(30, 3)
    for solver in ("dense", "arpack", "randomized", "auto"):
        with pytest.raises(ValueError, match=match):
            KernelPCA(2, solver=solver, **kw).fit(X)


# ------------------------------------------------------------------- KernelPCA references
@pytest.mark.parametrize("solver", ["dense", "arpack", "randomized"])
@pytest.mark.parametrize("center", [False, True])
def test_kernel_pca_against_numpy_eigh(solver, center):
    """Eigenvalues of (H) K (H) and the scores k̃(x)ᵀ U Λ^{-1/2}; k = n with 'arpack' (ARPACK
    needs k < n: it raised scipy's TypeError 'Cannot use scipy.linalg.eigh for LinearOperator
    A with k >= N') runs the dense solver."""
    rng = np.random.RandomState(5)
    X, Xn = rng.randn(40, 3), rng.randn(5, 3)
    K, Kn = kernel_ref("rbf", X, X, 0.4), kernel_ref("rbf", Xn, X, 0.4)
    if center:
        K, Kn = centred(K, Kn)
    lam, U = np.linalg.eigh(K)
    lam, U = lam[::-1], U[:, ::-1]
    for r in (4, 40):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # centred: one zero eigenvalue
            m = KernelPCA(r, gamma=0.4, center=center, solver=solver, random_state=0).fit(X)
        k = m.n_components_
        assert k == (r - 1 if center and r == 40 else r)
        np.testing.assert_allclose(m.eigenvalues_, lam[:k], rtol=0, atol=1e-9 * lam[0])
        q = 4  # gapped
        np.testing.assert_allclose(projector(m.eigenvectors_[:, :q]), projector(U[:, :q]),
                                   rtol=0, atol=1e-8)
        # scores from the model's own eigenvectors (a basis of any near-degenerate cluster)
        want = Kn @ m.eigenvectors_ / np.sqrt(m.eigenvalues_)
        np.testing.assert_allclose(m.transform(Xn)[:, :q], want[:, :q], rtol=0, atol=1e-8)


def test_working_memory_config_and_parameter_agree(sets):
    """``working_memory=`` and ``config_context(working_memory=...)``: the same blocks, the
    same numbers as the default (every solver, centred)."""
    X, Z, Xn, Zn = sets
    for solver in SOLVERS:
        kw = {"n_row_landmarks": 20, "n_col_landmarks": 15} if solver == "nystrom" else {}
        ref = KernelSVD(3, kernel="sne", gamma=0.5, center=True, solver=solver,
                        random_state=2, **kw).fit(X, Z=Z)
        a = KernelSVD(3, kernel="sne", gamma=0.5, center=True, solver=solver, random_state=2,
                      working_memory=0.0005, **kw).fit(X, Z=Z)
        with config_context(working_memory=0.0005):
            b = KernelSVD(3, kernel="sne", gamma=0.5, center=True, solver=solver,
                          random_state=2, **kw).fit(X, Z=Z)
            tb = b.transform(Xn)
        for m, t in ((a, a.transform(Xn)), (b, tb)):
            np.testing.assert_allclose(m.singular_values_, ref.singular_values_, rtol=1e-12)
            np.testing.assert_allclose(t, ref.transform(Xn), rtol=0,
                                       atol=1e-12 * np.abs(t).max(), err_msg=solver)


@pytest.mark.parametrize("backend", ["numpy", "torch", "dask"])
def test_landmark_counts_above_the_matrix_are_clipped_with_a_warning(backend):
    """n_row_landmarks / n_col_landmarks above the rows / columns of G follow the counts
    convention (clipped with a ClippedParameterWarning, as n_components); they raised."""
    from asymkern.exceptions import ClippedParameterWarning

    rng = np.random.default_rng(3)
    X, Z = rng.standard_normal((40, 3)), rng.standard_normal((30, 3))
    if backend == "torch":
        torch = pytest.importorskip("torch")
        Xb, Zb = torch.as_tensor(X), torch.as_tensor(Z)
    elif backend == "dask":
        da = pytest.importorskip("dask.array")
        Xb, Zb = da.from_array(X, chunks=20), da.from_array(Z, chunks=15)
    else:
        Xb, Zb = X, Z
    ref = KernelSVD(3, kernel="sne", solver="nystrom", n_row_landmarks=40, n_col_landmarks=30,
                    random_state=0).fit(X, Z=Z)
    est = KernelSVD(3, kernel="sne", solver="nystrom", n_row_landmarks=500, n_col_landmarks=31,
                    random_state=0)
    with pytest.warns(ClippedParameterWarning) as rec:
        est.fit(Xb, Z=Zb)
    text = " ".join(str(w.message) for w in rec)
    assert "n_row_landmarks=500" in text and "n_col_landmarks=31" in text
    s = est.singular_values_
    s = s.cpu().numpy() if hasattr(s, "cpu") else np.asarray(s)
    np.testing.assert_allclose(s, ref.singular_values_, rtol=1e-10)


def test_noise_level_warning_does_not_suggest_the_bandwidth_in_use():
    """With bandwidth='auto' already in use, the low-rank warning suggests a multiple of it or
    fewer components (it suggested 'auto' itself)."""
    X = np.random.default_rng(0).standard_normal((60, 2))
    with pytest.warns(UserWarning, match="singular values exceed") as rec:
        KernelSVD(40, kernel_params={"bandwidth": "auto"}).fit(X, Z=X[:50])
    text = " ".join(str(w.message) for w in rec)
    assert "'bandwidth': 'auto'" not in text and "c * est.bandwidth_" in text
    with pytest.warns(UserWarning, match="singular values exceed") as rec:
        KernelSVD(40, kernel_params={"bandwidth": 100.0}).fit(X, Z=X[:50])
    assert "'bandwidth': 'auto'" in " ".join(str(w.message) for w in rec)


@pytest.mark.parametrize("solver", ["dense", "randomized", "nystrom"])
@pytest.mark.parametrize("params,exc", [({"tol": -1}, ValueError), ({"estimate": "x"}, ValueError),
                                        ({"max_landmarks": 0}, ValueError),
                                        ({"normalize": "yes"}, TypeError),
                                        ({"core_solver": "q"}, ValueError),
                                        ({"rcond": "a"}, TypeError),
                                        ({"n_probes": 1.5}, TypeError)])
def test_nystrom_params_values_checked_whatever_the_solver(solver, params, exc):
    """The values of nystrom_params are checked at the top of fit, whatever the solver (only
    the Nyström solve read them, so a bad value waited for solver='nystrom')."""
    X = np.random.default_rng(0).standard_normal((30, 3))
    key = next(iter(params))
    with pytest.raises(exc, match=key):
        KernelSVD(2, solver=solver, nystrom_params=params, random_state=0).fit(X)
