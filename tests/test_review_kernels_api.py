"""Review of the public kernel API as a user meets it: every kernel class against its formula
written out with numpy, the parameter protocol (get/set_params, clone, ==, hash, pickle, repr,
bad values at construction and at use), KernelMatrix's public methods against the dense (centred)
matrix, the compatibility matrices a0/a1/a1c/a2 of Tao et al. (2024), App. D (Algorithm 1) in
both orientations, and the landmark selectors and ``nearest_rows`` against brute force.

Only what the other kernel, compat and landmark test files do not already pin.
"""

import math
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from asymkern.kernels import (
    KERNELS,
    CallableKernel,
    CauchyKernel,
    CompatibilityTransform,
    DirectedGraphKernel,
    GMMKLKernel,
    KernelMatrix,
    KLHistogramKernel,
    LaplacianKernel,
    LinearKernel,
    PolynomialKernel,
    RBFKernel,
    SNEKernel,
    SoftmaxKernel,
    TKernel,
    get_kernel,
    resolve_kernel,
)
from asymkern.kernels.divergence import fit_gmm_features
from asymkern.kernels.graph import node_ids
from asymkern.landmarks import (
    gaussian_sketch,
    kmeans_landmarks,
    leverage_scores,
    nearest_rows,
    select_landmarks,
)


@pytest.fixture(autouse=True, scope="module")
def _one_blas_thread():
    """One BLAS thread: the problems are tiny."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield


RNG = np.random.default_rng(20240611)
X = RNG.standard_normal((9, 3))
Z = RNG.standard_normal((7, 3)) + 0.2
R = RNG.standard_normal((5, 3)) - 0.1
HX = RNG.random((6, 4)) * 3  # histograms (non-negative rows)
HZ = RNG.random((5, 4)) * 2
HZ[0, 1] = 0.0  # an empty bin
ADJ = np.array([[0, 1, 0, 1], [0, 0, 1, 0], [1, 0, 0, 0], [0, 0, 1, 0]], dtype=float)
ADJ[0, 3] = 2.5  # a weighted edge


def _gmm_rows():
    rng = np.random.default_rng(3)
    return fit_gmm_features([rng.standard_normal((24, 2)) + c for c in (0.0, 0.7, 2.5)],
                            n_components=2)


GMM_F = _gmm_rows()


def poly_dot(A, B):
    """A module-level (picklable) kernel function for CallableKernel."""
    return (A @ B.T + 1.0) ** 2


# ------------------------------------------------------------------------ numpy formulas
def sqd(A, B):
    return ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)


def l1(A, B):
    return np.abs(A[:, None, :] - B[None, :, :]).sum(-1)


def row_norm(K, Kref):
    return K / Kref.sum(axis=1, keepdims=True)


def kl_ref(P, Q, a, eps, symmetric):
    P = (P + eps) / (P + eps).sum(1, keepdims=True)
    Q = (Q + eps) / (Q + eps).sum(1, keepdims=True)
    D = (P[:, None, :] * np.log(P[:, None, :] / Q[None, :, :])).sum(-1)
    if symmetric:
        D = D + (Q[None, :, :] * np.log(Q[None, :, :] / P[:, None, :])).sum(-1)
    return np.exp(-a * np.maximum(D, 0))


def graph_ref(A, symmetrize=False):
    """He et al. (2023) §4.2: G = D⁻¹(𝒜 + I), 𝒜 = adjacencyᵀ, D = diag(in-degree + 1)."""
    M = A.T + np.eye(A.shape[0])
    G = M / M.sum(1, keepdims=True)
    return (G + G.T) / 2 if symmetrize else G


# (kernel, data (X, Z, R), formula f(X, Z, R)); R is used by the row-normalised kernels only
CASES = {
    "linear": (LinearKernel(), (X, Z, R), lambda a, b, r: a @ b.T),
    "poly": (PolynomialKernel(degree=2, gamma=0.3, coef0=0.7), (X, Z, R),
             lambda a, b, r: (0.3 * a @ b.T + 0.7) ** 2),
    "poly_real_degree": (PolynomialKernel(degree=2.5, gamma=0.3, coef0=20.0), (X, Z, R),
                         lambda a, b, r: (0.3 * a @ b.T + 20.0) ** 2.5),
    "rbf": (RBFKernel(gamma=0.4), (X, Z, R), lambda a, b, r: np.exp(-0.4 * sqd(a, b))),
    "rbf_bandwidth": (RBFKernel(bandwidth=2.0), (X, Z, R),
                      lambda a, b, r: np.exp(-sqd(a, b) / 4.0)),
    "rbf_default": (RBFKernel(), (X, Z, R), lambda a, b, r: np.exp(-sqd(a, b) / 3.0)),
    "laplacian": (LaplacianKernel(gamma=0.3), (X, Z, R), lambda a, b, r: np.exp(-0.3 * l1(a, b))),
    "cauchy": (CauchyKernel(gamma=0.5), (X, Z, R), lambda a, b, r: 1 / (1 + 0.5 * sqd(a, b))),
    "cauchy_default": (CauchyKernel(), (X, Z, R), lambda a, b, r: 1 / (1 + sqd(a, b))),
    "sne": (SNEKernel(gamma=0.4), (X, Z, R),
            lambda a, b, r: row_norm(np.exp(-0.4 * sqd(a, b)), np.exp(-0.4 * sqd(a, r)))),
    "t": (TKernel(bandwidth=2.0), (X, Z, R),
          lambda a, b, r: row_norm(1 / (1 + sqd(a, b) / 4), 1 / (1 + sqd(a, r) / 4))),
    "softmax": (SoftmaxKernel(gamma=0.6), (X, Z, R),
                lambda a, b, r: row_norm(np.exp(0.6 * a @ b.T), np.exp(0.6 * a @ r.T))),
    "softmax_default": (SoftmaxKernel(), (X, Z, R),
                        lambda a, b, r: row_norm(np.exp(a @ b.T / math.sqrt(3)),
                                                 np.exp(a @ r.T / math.sqrt(3)))),
    "kl_histogram": (KLHistogramKernel(a=0.7, eps=1e-3), (HX, HZ, None),
                     lambda a, b, r: kl_ref(a, b, 0.7, 1e-3, False)),
    "kl_symmetric": (KLHistogramKernel(a=0.7, eps=1e-3, symmetric=True), (HX, HZ, None),
                     lambda a, b, r: kl_ref(a, b, 0.7, 1e-3, True)),
    "directed_graph": (DirectedGraphKernel(ADJ), (node_ids(4), node_ids(4)[[3, 1, 0]], None),
                       lambda a, b, r: graph_ref(ADJ)[np.ix_(a[:, 0].astype(int),
                                                             b[:, 0].astype(int))]),
    "graph_symmetrize": (DirectedGraphKernel(ADJ, symmetrize=True),
                         (node_ids(4), node_ids(4)[[2, 0]], None),
                         lambda a, b, r: graph_ref(ADJ, True)[np.ix_(a[:, 0].astype(int),
                                                                     b[:, 0].astype(int))]),
    "callable": (CallableKernel(poly_dot, is_symmetric=True, is_psd=True), (X, Z, R),
                 lambda a, b, r: (a @ b.T + 1.0) ** 2),
}


def _tol(K):
    return dict(rtol=1e-11, atol=1e-13 * max(1.0, float(np.abs(K).max())))


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_kernel_matches_its_formula_in_every_call_form(case):
    k, (A, B, Rr), f = CASES[case]
    tol = _tol(f(A, B, B))
    # kernel(X): Z = X (and the reference set X for row-normalised kernels)
    np.testing.assert_allclose(k(A), f(A, A, A), **_tol(f(A, A, A)))
    np.testing.assert_allclose(k(A, B), f(A, B, B), **tol)
    # one row, one column
    np.testing.assert_allclose(k(A[:1], B), f(A[:1], B, B), **tol)
    np.testing.assert_allclose(k(A, B[-1:]), f(A, B[-1:], B[-1:]), **_tol(f(A, B[-1:], B[-1:])))
    if k.row_normalized:
        np.testing.assert_allclose(k(A, B, reference=Rr), f(A, B, Rr), **_tol(f(A, B, Rr)))
        np.testing.assert_allclose(k(A, B[:1], reference=Rr), f(A, B[:1], Rr),
                                   **_tol(f(A, B[:1], Rr)))
        # rows sum to one over the reference set itself
        np.testing.assert_allclose(k(A, Rr, reference=Rr).sum(1), 1.0, rtol=1e-13)


def test_one_feature_data():
    a, b = X[:, :1], Z[:, :1]
    np.testing.assert_allclose(RBFKernel(gamma=0.4)(a, b), np.exp(-0.4 * sqd(a, b)), rtol=1e-12)
    np.testing.assert_allclose(SoftmaxKernel()(a, b),
                               row_norm(np.exp(a @ b.T), np.exp(a @ b.T)), rtol=1e-12)


def test_gmm_kernel_is_a_deterministic_function_of_its_two_arguments():
    """κ(x, z) depends on x and z alone (draws seeded from P): the (i, j) entry of a block is
    the 1×1 kernel of row i and row j, and a row's order in X does not matter."""
    k = GMMKLKernel(n_components=2, n_samples=32, a=0.5)
    K = k(GMM_F)
    for i, j in [(0, 1), (2, 0), (1, 1)]:
        np.testing.assert_allclose(K[i, j], k(GMM_F[[i]], GMM_F[[j]])[0, 0], rtol=1e-12)
    np.testing.assert_allclose(k(GMM_F[::-1], GMM_F), K[::-1], rtol=1e-12)
    assert np.all((K > 0) & (K <= 1))
    np.testing.assert_allclose(np.diag(K), 1.0, atol=1e-12)  # KL(P‖P) = 0
    assert not k.is_symmetric and not np.allclose(K, K.T)
    Ks = GMMKLKernel(n_components=2, n_samples=32, a=0.5, symmetric=True)(GMM_F)
    assert np.array_equal(Ks, Ks.T)  # exp(−a(KL(P‖Q) + KL(Q‖P)))


# ------------------------------------------------------------------ dtypes, sparse, inputs
@pytest.mark.parametrize("case", sorted(CASES))
def test_float32_in_float32_out_and_mixed_float64(case):
    k, (A, B, _), f = CASES[case]
    A32, B32 = A.astype(np.float32), B.astype(np.float32)
    K32 = k(A32, B32)
    assert K32.dtype == np.float32
    ref = f(A32.astype(np.float64), B32.astype(np.float64), B32.astype(np.float64))
    np.testing.assert_allclose(K32, ref, rtol=2e-5, atol=2e-6 * max(1.0, np.abs(ref).max()))
    assert k(A32, B).dtype == np.float64


@pytest.mark.parametrize("case", sorted(CASES))
def test_sparse_input_where_accepted_else_refused_naming_x(case):
    k, (A, B, _), f = CASES[case]
    As, Bs = sp.csr_matrix(A), sp.csr_matrix(B)
    if k.accepts_sparse:
        np.testing.assert_allclose(k(As, Bs), f(A, B, B), **_tol(f(A, B, B)))
        np.testing.assert_allclose(k(As, B), f(A, B, B), **_tol(f(A, B, B)))
    else:
        with pytest.raises(TypeError, match="X is a sparse matrix"):
            k(As, B)


@pytest.mark.parametrize("case", sorted(CASES))
def test_inputs_are_never_modified(case):
    k, (A, B, Rr), _ = CASES[case]
    A, B = A.copy(), B.copy()
    A0, B0 = A.copy(), B.copy()
    kw = {"reference": Rr.copy()} if k.row_normalized else {}
    R0 = kw["reference"].copy() if kw else None
    k(A, B, **kw)
    KernelMatrix(k, A, B, center=True, working_memory=1e-9, **kw).to_array()
    assert np.array_equal(A, A0) and np.array_equal(B, B0)
    if kw:
        assert np.array_equal(kw["reference"], R0)
    if k.accepts_sparse:
        As = sp.csr_matrix(A)
        data = As.data.copy()
        k(As, B)
        assert np.array_equal(As.data, data)


@pytest.mark.parametrize("case", sorted(CASES))
def test_symmetry_and_psd_flags_are_truthful(case):
    k, (A, _, _), _ = CASES[case]
    K = k(A)
    scale = max(1.0, float(np.abs(K).max()))
    if k.is_symmetric:
        np.testing.assert_allclose(K, K.T, rtol=0, atol=1e-14 * scale)
    else:  # the flag is False only for kernels that are asymmetric on these data
        assert np.abs(K - K.T).max() > 1e-6 * scale
    if k.is_psd:
        assert k.is_symmetric
        assert np.linalg.eigvalsh((K + K.T) / 2).min() >= -1e-12 * scale * K.shape[0]


def test_polynomial_psd_flag_follows_its_parameters():
    assert PolynomialKernel(degree=2, coef0=1.0).is_psd
    assert not PolynomialKernel(degree=2.5, coef0=1.0).is_psd
    assert not PolynomialKernel(degree=2, coef0=-1.0).is_psd
    k = PolynomialKernel(degree=2, coef0=1.0)
    k.coef0 = -1.0
    assert not k.is_psd
    # the flag is conservative: coef0 < 0 gives an indefinite Gram matrix here
    K = PolynomialKernel(degree=2, gamma=1.0, coef0=-1.0)(X)
    assert np.linalg.eigvalsh(K).min() < -1e-6


# ------------------------------------------------------------------- parameter protocol
INSTANCES = {c: CASES[c][0] for c in CASES}
INSTANCES["gmm"] = GMMKLKernel(n_components=2, a=0.5, n_samples=16, random_state=3)


@pytest.mark.parametrize("case", sorted(INSTANCES))
def test_params_round_trip_clone_pickle_eq_and_hash(case):
    k = INSTANCES[case]
    params = k.get_params(deep=False)
    c = clone(k)
    assert c == k and hash(c) == hash(k) and c is not k
    assert type(k)(**params) == k
    again = clone(k).set_params(**params)
    assert again == k and hash(again) == hash(k)
    p = pickle.loads(pickle.dumps(k))
    assert p == k and hash(p) == hash(k) and p.get_params(deep=False).keys() == params.keys()
    assert repr(p) == repr(k)
    assert k != object() and k != 1


@pytest.mark.parametrize("case", ["rbf", "poly", "sne", "softmax", "kl_histogram", "laplacian"])
def test_a_parameter_changed_after_construction_makes_kernels_unequal(case):
    k = clone(INSTANCES[case])
    other = clone(k)
    name = {"kl_histogram": "a"}.get(case, "gamma")
    setattr(other, name, 0.123)
    assert other != k
    assert not np.allclose(other(CASES[case][1][0]), k(CASES[case][1][0]))


def test_repr_shows_the_non_default_parameters():
    for k, shown in [(RBFKernel(gamma=0.4), "gamma=0.4"), (RBFKernel(bandwidth=2.0),
                     "bandwidth=2.0"), (PolynomialKernel(degree=2, coef0=0.7), "coef0=0.7"),
                     (SoftmaxKernel(gamma=0.6), "gamma=0.6"), (TKernel(gamma=0.5), "gamma=0.5"),
                     (KLHistogramKernel(eps=1e-3, symmetric=True), "symmetric=True"),
                     (GMMKLKernel(n_samples=16), "n_samples=16"),
                     (DirectedGraphKernel(ADJ, symmetrize=True), "symmetrize=True"),
                     (DirectedGraphKernel(ADJ, preprocess="none"), "preprocess='none'")]:
        assert shown in repr(k), (k, shown)
    assert "4-node" in repr(DirectedGraphKernel(ADJ))


def test_equal_kernels_hash_equal():
    for a, b in [(RBFKernel(gamma=1), RBFKernel(gamma=1.0)),
                 (RBFKernel(gamma=np.float64(0.5)), RBFKernel(gamma=0.5)),
                 (PolynomialKernel(degree=np.int64(2)), PolynomialKernel(degree=2.0))]:
        assert a == b
        assert hash(a) == hash(b)
    assert len({RBFKernel(gamma=1), RBFKernel(gamma=1.0)}) == 1


def test_nested_set_params_on_a_plain_parameter_names_it():
    with pytest.raises(ValueError, match="gamma"):
        RBFKernel().set_params(gamma__x=1)


# bad values of every real/int parameter: at construction, by set_params, and by attribute
# assignment caught at the next use (by the kernel call and by KernelMatrix)
REAL_BAD = [(-1.0, ValueError), (np.nan, ValueError), (np.inf, ValueError), (0.0, ValueError),
            (True, TypeError), ("1", TypeError)]
INT_BAD = [(-1, ValueError), (np.nan, ValueError), (np.inf, ValueError), (2.5, ValueError),
           (True, TypeError), ("1", TypeError)]
PARAMS = [("rbf", "gamma", REAL_BAD), ("rbf", "bandwidth", REAL_BAD),
          ("poly", "degree", [(-1.0, ValueError), (np.nan, ValueError), (True, TypeError)]),
          ("poly", "gamma", REAL_BAD),
          ("poly", "coef0", [(np.nan, ValueError), (np.inf, ValueError), (True, TypeError),
                             ("1", TypeError)]),
          ("laplacian", "gamma", REAL_BAD), ("cauchy", "gamma", REAL_BAD),
          ("cauchy", "bandwidth", REAL_BAD), ("sne", "gamma", REAL_BAD),
          ("sne", "bandwidth", REAL_BAD), ("t", "gamma", REAL_BAD), ("t", "bandwidth", REAL_BAD),
          ("softmax", "gamma", REAL_BAD), ("kl_histogram", "a", REAL_BAD),
          ("kl_histogram", "eps", REAL_BAD), ("kl_gmm", "a", REAL_BAD),
          ("kl_gmm", "n_components", INT_BAD), ("kl_gmm", "n_samples", INT_BAD),
          ("kl_gmm", "random_state", [(-1, ValueError), (2.5, ValueError), (None, TypeError),
                                      (True, TypeError)])]
PARAM_CASES = [(n, p, v, e) for n, p, bad in PARAMS for v, e in bad]


def _good(name):
    if name == "kl_gmm":
        return GMMKLKernel(n_components=2, n_samples=8), GMM_F
    if name == "kl_histogram":
        return KLHistogramKernel(), HX
    return get_kernel(name), X


@pytest.mark.parametrize("name,param,value,exc", PARAM_CASES,
                         ids=[f"{n}-{p}-{v!r}" for n, p, v, _ in PARAM_CASES])
def test_bad_parameter_refused_at_construction_set_params_and_use(name, param, value, exc):
    word = rf"\b{param} must"
    with pytest.raises(exc, match=word):
        get_kernel(name, **{param: value})
    k, data = _good(name)
    with pytest.raises(exc, match=word):
        k.set_params(**{param: value})
    k, data = _good(name)
    setattr(k, param, value)
    with pytest.raises(exc, match=word):
        k(data)
    with pytest.raises(exc, match=word):
        KernelMatrix(k, data)


@pytest.mark.parametrize("param,value,exc,word", [
    ("preprocess", "bogus", ValueError, "preprocess"),
    ("symmetrize", "yes", TypeError, "symmetrize"),
    ("symmetrize", 1, TypeError, "symmetrize"),
    ("adjacency", np.array([[0.0, np.nan], [0.0, 0.0]]), ValueError, "adjacency"),
    ("adjacency", np.array([[0.0, -1.0], [0.0, 0.0]]), ValueError, "adjacency"),
    ("adjacency", np.ones((2, 3)), ValueError, "adjacency"),
])
def test_directed_graph_parameters_refused_at_construction_set_params_and_use(param, value,
                                                                              exc, word):
    with pytest.raises(exc, match=word):
        DirectedGraphKernel(**{"adjacency": ADJ, param: value})
    with pytest.raises(exc, match=word):
        DirectedGraphKernel(ADJ).set_params(**{param: value})
    k = DirectedGraphKernel(ADJ)
    setattr(k, param, value)  # assigned after construction: caught at the next use
    with pytest.raises(exc, match=word):
        k(node_ids(2))
    with pytest.raises(exc, match=word):
        KernelMatrix(k, node_ids(2))


def test_directed_graph_attribute_changes_reach_the_values_and_the_flags():
    k = DirectedGraphKernel(ADJ)
    k.symmetrize = True  # the flag now says symmetric: the values must be
    K = k(node_ids(4))
    assert k.is_symmetric
    np.testing.assert_allclose(K, graph_ref(ADJ, True), rtol=1e-14)
    assert np.array_equal(K, K.T)
    k.adjacency = ADJ.T.copy()  # a new graph
    np.testing.assert_allclose(k(node_ids(4)), graph_ref(ADJ.T, True), rtol=1e-14)
    assert k == DirectedGraphKernel(ADJ.T, symmetrize=True)
    assert k.matrix_.shape == (4, 4) and k.n_nodes == 4
    k.preprocess = "none"
    np.testing.assert_allclose(k(node_ids(4)), (ADJ + ADJ.T) / 2, rtol=1e-14)
    p = pickle.loads(pickle.dumps(k))
    assert p == k
    np.testing.assert_array_equal(p(node_ids(4)), k(node_ids(4)))


def test_get_kernel_refuses_a_kernel_class_and_resolve_keeps_instances():
    with pytest.raises(TypeError, match="kernel class"):
        get_kernel(RBFKernel)
    with pytest.raises(TypeError, match="kernel_x=SNEKernel is a kernel class"):
        resolve_kernel(SNEKernel, gamma=0.5, name="kernel_x")
    for key, cls in KERNELS.items():
        assert isinstance(get_kernel(key.upper()) if cls is not DirectedGraphKernel
                          else get_kernel(key, adjacency=ADJ), cls)
    k = SNEKernel(gamma=2.0)
    r = resolve_kernel(k, gamma=0.5)
    assert r == SNEKernel(gamma=0.5) and k.gamma == 2.0 and r is not k
    kept = resolve_kernel(k)  # a copy with the same parameters (a fit keeps its kernel)
    assert kept == k and kept is not k
    with pytest.raises(ValueError, match="gamma"):
        resolve_kernel("rbf", {"bandwidth": 1.0}, gamma=0.5)


# ----------------------------------------------------------------------- KernelMatrix
def _centred(G):
    return G - G.mean(1, keepdims=True) - G.mean(0, keepdims=True) + G.mean()


KM_CASES = ["rbf", "sne", "t", "softmax", "linear", "laplacian", "kl_histogram"]


@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("case", KM_CASES)
def test_kernel_matrix_public_methods_against_the_dense_matrix(case, center):
    k, (A, B, Rr), f = CASES[case]
    kw = {"reference": Rr} if k.row_normalized else {}
    G = f(A, B, Rr if k.row_normalized else B)
    Gc = _centred(G) if center else G
    n, m = G.shape
    rng = np.random.default_rng(1)
    V, U = rng.standard_normal((m, 3)), rng.standard_normal((n, 2))
    tol = dict(rtol=1e-11, atol=1e-12 * max(1.0, float(np.abs(G).max())))
    mask = np.arange(n) % 3 == 0
    for wm in (1e-9, 64.0):  # one-row blocks, one block
        km = KernelMatrix(k, A, B, center=center, working_memory=wm, **kw)
        assert km.block_rows() == (1 if wm < 1 else n)
        np.testing.assert_allclose(km.to_array(), Gc, **tol)
        np.testing.assert_allclose(km.block([4, 0], [m - 1, 1]), Gc[np.ix_([4, 0], [m - 1, 1])],
                                   **tol)
        np.testing.assert_allclose(km.block(mask, slice(None, None, -2)), Gc[mask][:, ::-2],
                                   **tol)
        np.testing.assert_allclose(km.block(np.array([-1]), slice(1, None)), Gc[[-1], 1:], **tol)
        np.testing.assert_allclose(km.rows([n - 1, 2]), Gc[[n - 1, 2]], **tol)
        np.testing.assert_allclose(km.cols(np.array([0, m - 1])), Gc[:, [0, m - 1]], **tol)
        np.testing.assert_allclose(km.cols(np.arange(m)), Gc, **tol)
        np.testing.assert_allclose(km.matmat(V), Gc @ V, **tol)
        np.testing.assert_allclose(km.matvec(V[:, 0]), Gc @ V[:, 0], **tol)
        np.testing.assert_allclose(km.rmatmat(U), Gc.T @ U, **tol)
        np.testing.assert_allclose(km @ V, Gc @ V, **tol)
        np.testing.assert_allclose(km.T @ U[:, 0], Gc.T @ U[:, 0], **tol)
        np.testing.assert_allclose(km.matmat(V[[1, 3]], cols=[1, 3]), Gc[:, [1, 3]] @ V[[1, 3]],
                                   **tol)
        np.testing.assert_allclose(km.rmatmat(U[[0, 2]], rows=[0, 2]),
                                   Gc[[0, 2]].T @ U[[0, 2]], **tol)
        np.testing.assert_allclose(np.vstack([b for _, b in km.iter_row_blocks()]), Gc, **tol)
        r, c, g = km.means()
        np.testing.assert_allclose(r, G.mean(1), **tol)
        np.testing.assert_allclose(c, G.mean(0), **tol)
        assert g == pytest.approx(G.mean(), rel=1e-11, abs=1e-13)
        np.testing.assert_allclose(km.row_sums(), Gc.sum(1), atol=1e-11 * max(1, n * m))
        buf = np.empty((n, m))
        assert km.to_array(out=buf) is buf
        np.testing.assert_allclose(buf, Gc, **tol)
        # the documented bitwise identity: a caching copy gives the products of the original
        H = km.cached(km.nbytes)
        for _ in range(2):  # the pass that fills the cache, then one that reads it
            assert np.array_equal(H.matmat(V), km.matmat(V))
            assert np.array_equal(H.rmatmat(U), km.rmatmat(U))
        if k.row_normalized:  # log Σ_{r∈R} k(x, r)
            lse = np.log(_raw(case, A, Rr).sum(1))
            np.testing.assert_allclose(km.row_lse(), lse, rtol=1e-12, atol=1e-12)
        else:
            assert km.row_lse() is None and km.row_normalizers() is None


def _raw(case, A, B):
    """The unnormalised kernel k(x, z) of a row-normalised case."""
    k = CASES[case][0]
    if case == "sne":
        return np.exp(-k.gamma * sqd(A, B))
    if case == "t":
        return 1 / (1 + sqd(A, B) / k.bandwidth**2)
    return np.exp(k.gamma * A @ B.T)


def test_kernel_matrix_refuses_a_non_bool_center():
    with pytest.raises(TypeError, match="center"):
        KernelMatrix("rbf", X, Z, center="no")


def test_kernel_matrix_empty_selections():
    """An empty integer array selects nothing; ``[]`` (float64 to numpy) is refused with the
    error every executor gives (tests/test_dask_edges_round9.py pins the Dask side)."""
    km = KernelMatrix("rbf", X, Z)
    assert km.rows(np.array([], dtype=int)).shape == (0, Z.shape[0])
    with pytest.raises(ValueError, match="integer indices"):
        km.rows([])


def _svd(S):
    U, s, Vt = np.linalg.svd(S, full_matrices=False)
    return U, s, Vt.T


@pytest.mark.parametrize("shape", [(4, 9), (9, 4)], ids=["M>N", "N>M"])
def test_compatibility_matrices_follow_algorithm_1_in_both_orientations(shape):
    A = np.random.default_rng(5).standard_normal(shape)
    N, M = shape
    side = "x" if M > N else "z"
    S = A if side == "x" else A.T  # the mapped set, one sample per row (small × big)
    small, big = S.shape
    # a0: C = ((S Sᵀ)^† S)ᵀ
    ct = CompatibilityTransform("a0").fit(A)
    assert ct.side_ == side and ct.C_.shape == (big, small) and ct.dim_ == small
    np.testing.assert_allclose(ct.C_, (np.linalg.pinv(S @ S.T) @ S).T, rtol=1e-10, atol=1e-12)
    assert np.allclose(S @ ct.C_, np.eye(small))  # full row rank: S C = I
    # a1: C = argmin_C ‖S − S C Cᵀ‖_F over orthonormal C: the leading right singular vectors
    U, s, V = _svd(S)
    C1 = CompatibilityTransform("a1").fit(A).C_
    np.testing.assert_allclose(C1.T @ C1, np.eye(small), atol=1e-12)
    np.testing.assert_allclose(C1 @ C1.T, V @ V.T, atol=1e-12)
    np.testing.assert_allclose(np.abs(C1), np.abs(V), atol=1e-12)
    assert np.linalg.norm(S - S @ C1 @ C1.T) < 1e-12 * np.linalg.norm(S)
    # a1c: the polar factor C = V Uᵀ (a1 expressed in the other set's coordinates)
    C1c = CompatibilityTransform("a1c").fit(A).C_
    np.testing.assert_allclose(C1c, V @ U.T, atol=1e-12)
    np.testing.assert_allclose(S @ C1c, U @ np.diag(s) @ U.T, atol=1e-12)
    # a2: C = randn(big, small), reproducible from random_state
    C2 = CompatibilityTransform("a2", random_state=7).fit(A).C_
    assert C2.shape == (big, small)
    np.testing.assert_array_equal(C2, CompatibilityTransform("a2", random_state=7).fit(A).C_)
    np.testing.assert_array_equal(
        CompatibilityTransform("a2", random_state=np.random.RandomState(3)).fit(A).C_,
        CompatibilityTransform("a2", random_state=np.random.RandomState(3)).fit(A).C_)
    assert not np.array_equal(C2, CompatibilityTransform("a2", random_state=8).fit(A).C_)
    # a user-given matrix (a3: e.g. learned) is used as given
    Cu = np.random.default_rng(0).standard_normal((big, small))
    np.testing.assert_array_equal(CompatibilityTransform(Cu).fit(A).C_, Cu)
    # fit / transform / fit_transform agree; only the mapped side is mapped
    for method in ("a0", "a1", "a1c", "a2", Cu):
        ct = CompatibilityTransform(method, random_state=2)
        Xm, Zm = ct.fit_transform(A)
        assert Xm.shape == (N, small) and Zm.shape == (M, small)
        np.testing.assert_array_equal(Xm, ct.transform_x(A))
        np.testing.assert_array_equal(Zm, ct.transform_z(A.T))
        if side == "x":
            np.testing.assert_allclose(Xm, A @ ct.C_, rtol=1e-14)
            assert ct.transform_z(A.T) is not None and np.array_equal(Zm, A.T)
        else:
            np.testing.assert_allclose(Zm, A.T @ ct.C_, rtol=1e-14)
            assert np.array_equal(Xm, A)


@pytest.mark.parametrize("method", ["a0", "a1", "a1c", "a2"])
def test_compatibility_sparse_float32_and_unchanged_input(method):
    A = np.random.default_rng(6).standard_normal((5, 8))
    A[A < 0.3] = 0.0
    A0 = A.copy()
    dense = CompatibilityTransform(method, random_state=1).fit(A).C_
    sparse = CompatibilityTransform(method, random_state=1).fit(sp.csr_matrix(A)).C_
    np.testing.assert_allclose(sparse, dense, rtol=1e-12, atol=1e-12)
    ct = CompatibilityTransform(method, random_state=1).fit(A.astype(np.float32))
    assert ct.C_.dtype == np.float32
    assert ct.transform_x(A.astype(np.float32)).dtype == np.float32
    np.testing.assert_allclose(ct.C_, dense, rtol=1e-4, atol=1e-4)
    Xs, Zs = CompatibilityTransform(method, random_state=1).fit_transform(sp.csr_matrix(A))
    np.testing.assert_allclose(Xs, A @ dense, rtol=1e-12, atol=1e-12)
    assert np.array_equal(A, A0)


def test_compatibility_square_matrix_maps_nothing():
    A = np.random.default_rng(2).standard_normal((4, 4))
    ct = CompatibilityTransform("a1").fit(A)
    assert ct.side_ == "none" and ct.C_ is None
    At = A.T
    assert ct.transform_x(A) is A and ct.transform_z(At) is At


def test_compatibility_a2_entries_are_standard_normal():
    C = CompatibilityTransform("a2", random_state=0).fit(np.ones((3, 4000))).C_
    assert C.shape == (4000, 3)
    assert abs(C.mean()) < 0.05 and abs(C.std() - 1.0) < 0.05


@pytest.mark.parametrize("shape", [(4, 9), (9, 4), (4, 4)])
def test_compatibility_transform_refuses_bad_rows_naming_the_argument(shape):
    A = np.random.default_rng(5).standard_normal(shape)
    N, M = shape
    ct = CompatibilityTransform("a1").fit(A)
    with pytest.raises(ValueError, match="Xrows contains NaN"):
        ct.transform_x(np.full((2, M), np.nan))
    with pytest.raises(ValueError, match="Zrows contains NaN"):
        ct.transform_z(np.full((2, N), np.nan))
    # the wrong width is refused on both sides (the unmapped one was passed through)
    with pytest.raises(ValueError, match=f"Xrows has {M + 1} features; expected {M}"):
        ct.transform_x(np.ones((2, M + 1)))
    with pytest.raises(ValueError, match=f"Zrows has {N + 2} features; expected {N}"):
        ct.transform_z(np.ones((2, N + 2)))
    with pytest.raises(ValueError, match="Xrows must be 2-D"):
        ct.transform_x(np.ones(M))
    # no samples: an empty result of the common width
    assert ct.transform_x(np.ones((0, M))).shape[1] == min(N, M)


# --------------------------------------------------------------------------- landmarks
@pytest.mark.parametrize("method", ["uniform", "leverage", "kmeans"])
def test_landmark_methods_valid_unique_reproducible_and_degenerate_data(method):
    D = np.random.default_rng(7).standard_normal((25, 3))
    for rs in (4, np.random.RandomState(4)):
        idx = select_landmarks(D, 6, method, random_state=rs)
        assert idx.shape == (6,) and np.issubdtype(idx.dtype, np.integer)
        assert np.unique(idx).size == 6 and idx.min() >= 0 and idx.max() < 25
    np.testing.assert_array_equal(select_landmarks(D, 6, method, random_state=4),
                                  select_landmarks(D, 6, method, random_state=4))
    np.testing.assert_array_equal(
        select_landmarks(D, 6, method, random_state=np.random.RandomState(4)),
        select_landmarks(D, 6, method, random_state=4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # k-means: fewer distinct points than clusters
        # only two distinct points: still m distinct row indices
        dup = np.repeat(D[:2], 5, axis=0)
        idx = select_landmarks(dup, 4, method, random_state=0)
        assert np.unique(idx).size == 4 and idx.max() < 10
        # n = 1 and m = n
        assert select_landmarks(D[:1], 1, method, random_state=0).tolist() == [0]
        assert sorted(select_landmarks(D[:5], 5, method, random_state=0).tolist()) == [0, 1, 2,
                                                                                      3, 4]
    with pytest.raises(ValueError, match="n_landmarks=26 is larger than the number of samples"):
        select_landmarks(D, 26, method)
    with pytest.raises(TypeError, match="n_landmarks"):
        select_landmarks(D, 2.0, method)


@pytest.mark.parametrize("bad,word", [(np.random.default_rng(0), "Generator"),
                                      (True, "got True")])
@pytest.mark.parametrize("method", ["uniform", "leverage", "kmeans"])
def test_landmark_random_state_follows_the_library_convention(method, bad, word):
    """ARCHITECTURE 'Randomness': None, an int or a RandomState; a Generator is refused with a
    TypeError (and a bool is no seed)."""
    D = np.random.default_rng(7).standard_normal((25, 3))
    with pytest.raises(TypeError, match=f"random_state.*{word}"):
        select_landmarks(D, 4, method, random_state=bad)
    if method == "kmeans":
        with pytest.raises(TypeError, match="random_state"):
            kmeans_landmarks(D, 4, random_state=bad)


def test_gaussian_sketch_refuses_a_generator_and_a_non_float_dtype():
    with pytest.raises(TypeError, match="random_state"):
        gaussian_sketch(10, 3, random_state=np.random.default_rng(0))
    with pytest.raises(ValueError, match="dtype"):  # an int sketch truncates the draws
        gaussian_sketch(10, 3, random_state=0, dtype=np.int64)
    S = gaussian_sketch(4000, 4, random_state=0, dtype=np.float32)
    assert S.dtype == np.float32 and abs(float(S.var()) * 4 - 1) < 0.05


def test_kmeans_landmarks_return_centers_is_a_flag():
    D = np.random.default_rng(7).standard_normal((25, 3))
    with pytest.raises(TypeError, match="return_centers"):
        kmeans_landmarks(D, 3, return_centers="no", random_state=0)
    assert kmeans_landmarks(D, 3, return_centers=np.False_, random_state=0).shape == (3,)


def test_select_landmarks_counts_must_agree_and_be_integers():
    D = np.random.default_rng(7).standard_normal((25, 3))
    with pytest.raises(ValueError, match="n_samples=5 contradicts X"):
        select_landmarks(D, 2, "uniform", n_samples=5)
    np.testing.assert_array_equal(select_landmarks(D, 2, "uniform", n_samples=25, random_state=0),
                                  select_landmarks(D, 2, "uniform", random_state=0))
    with pytest.raises(TypeError, match="n_landmarks"):
        select_landmarks(D, 2.5, "fixed", indices=[1, 2])


def test_leverage_scores_of_an_asymmetric_kernel_are_those_of_its_symmetric_part():
    """Documented: the scores sample landmarks by the sketch's symmetric part (a sampling
    distribution; the Nyström solve that uses the landmarks does not symmetrise)."""
    D = np.random.default_rng(7).standard_normal((25, 3))
    idx = select_landmarks(D, 3, "leverage", kernel="sne", random_state=0)
    assert len(np.unique(idx)) == 3
    s = leverage_scores(D, 3, kernel=lambda a, b: SoftmaxKernel()(a, b), random_state=0)
    assert s.shape == (25,) and np.all(s >= 0) and s.sum() <= 3.0 + 1e-9
    for k in (poly_dot, CallableKernel(poly_dot, is_symmetric=True)):  # symmetric callables
        s = leverage_scores(D, 3, kernel=k, random_state=0)
        assert s.shape == (25,) and s.sum() == pytest.approx(3.0)


def _brute(Q, P, k, skip=None, exclude=None):
    D = sqd(Q, P)
    if skip is not None:
        D[np.arange(len(Q)), skip + np.arange(len(Q))] = np.inf
    if exclude is not None:
        D[:, exclude] = np.inf
    order = np.argsort(D, axis=1, kind="stable")[:, :k]  # ties: the lower index first
    return order, np.take_along_axis(D, order, 1)


@pytest.mark.parametrize("offset", [0.0, 1e6])
@pytest.mark.parametrize("k", [1, 3])
def test_nearest_rows_is_the_brute_force_argmin(k, offset):
    rng = np.random.default_rng(8)
    # integer coordinates: every squared distance is exact, so the many ties are exact too
    P = rng.integers(-3, 4, (40, 3)).astype(float) + offset
    P[10], P[30] = P[3], P[3]  # duplicates: the lower index first
    Q = np.vstack([P[3], rng.integers(-3, 4, (5, 3)) + offset])
    for kw in ({}, {"exclude": np.arange(40) % 4 == 1}):
        idx, d2 = nearest_rows(Q, P, k, **kw)
        ref, dref = _brute(Q, P, k, exclude=kw.get("exclude"))
        np.testing.assert_array_equal(idx, ref)
        np.testing.assert_allclose(d2, dref, rtol=1e-9, atol=1e-9)
    idx, _ = nearest_rows(P[5:9], P, k, skip=5)
    np.testing.assert_array_equal(idx, _brute(P[5:9], P, k, skip=5)[0])
    if offset == 0:
        idx, _ = nearest_rows(Q, sp.csr_matrix(P), k)
        np.testing.assert_array_equal(idx, _brute(Q, P, k)[0])


def test_nearest_rows_accepts_array_like_points():
    P = np.random.default_rng(9).integers(-3, 4, (12, 2)).astype(float)
    idx, _ = nearest_rows(P[:3] + 0.25, P.tolist(), 2)
    np.testing.assert_array_equal(idx, _brute(P[:3] + 0.25, P, 2)[0])


def test_nearest_rows_refuses_ambiguous_skip_and_exclude():
    P = np.random.default_rng(9).standard_normal((10, 2))
    with pytest.raises(ValueError, match="skip"):  # True is not row 1
        nearest_rows(P[:2], P, 1, skip=True)
    with pytest.raises(ValueError, match="exclude must be a mask"):
        nearest_rows(P[:2], P, 1, exclude=np.arange(10))  # indices are not a mask
    # a 0/1 integer mask is a mask
    np.testing.assert_array_equal(nearest_rows(P[:2], P, 1, exclude=np.arange(10) % 2)[0],
                                  nearest_rows(P[:2], P, 1, exclude=np.arange(10) % 2 == 1)[0])
    assert nearest_rows(P[:2], P, 1, skip=np.int64(0))[0].shape == (2, 1)
