"""KernelSVD and KernelPCA as scikit-learn citizens (issue 15).

scikit-learn's common checks at default parameters, clone/grid search with Kernel instances,
set_output, the random_state policy, estimator-level gamma, input bookkeeping, KernelPCA's
precomputed kernel and pre-image map, and KernelSVD's sample weights (weighted CCE of paper
000 against the dense repeated-rows reference).
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.decomposition import KernelPCA as SkKernelPCA
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

from asymkern import KernelPCA, KernelSVD, get_kernel
from asymkern.exceptions import ClippedParameterWarning
from asymkern.kernels import RBFKernel

pd = pytest.importorskip("pandas")

@parametrize_with_checks(
    # beyond the defaults (tests/test_sklearn_api.py): a precomputed G (n×m, rows split by CV,
    # weights = repetition), a precomputed symmetric K (pairwise), the pre-image map
    [KernelSVD(kernel="precomputed"), KernelPCA(kernel="precomputed"),
     KernelPCA(fit_inverse_transform=True)],
)
def test_sklearn_common_checks(estimator, check):
    check(estimator)


def match_signs(A, B):
    """B with its columns' signs flipped to best match A."""
    s = np.sign(np.sum(A * B, axis=0))
    s[s == 0] = 1
    return B * s


@pytest.fixture
def data(rng):
    X = rng.standard_normal((40, 4))
    Z = rng.standard_normal((30, 4)) * 1.2 + 0.3
    return X, Z


# ------------------------------------------------------------------------ clone / grid search
@pytest.mark.parametrize("Est", [KernelPCA, KernelSVD])
def test_clone_and_set_params_with_kernel_instance(data, Est):
    X, Z = data
    k = RBFKernel(gamma=0.5)
    est = Est(n_components=3, kernel=k)
    c = clone(est)
    assert c.kernel is not k and c.kernel.get_params() == k.get_params()
    c.set_params(kernel__gamma=0.2)
    assert k.gamma == 0.5 and c.kernel.gamma == 0.2
    fit = (lambda e: e.fit(X, Z=Z)) if Est is KernelSVD else (lambda e: e.fit(X))
    ref = fit(Est(n_components=3, kernel="rbf", kernel_params={"gamma": 0.2}))
    out = fit(c)
    np.testing.assert_allclose(out.transform(X), ref.transform(X), atol=1e-10)
    # estimator-level gamma with an instance: a new kernel, the instance untouched
    g = fit(Est(n_components=3, kernel=k, gamma=0.2))
    assert k.gamma == 0.5 and g.kernel_.gamma == 0.2 and g.kernel_ is not k
    np.testing.assert_allclose(g.transform(X), ref.transform(X), atol=1e-10)


@pytest.mark.filterwarnings("ignore:KernelPCA.*only 2 eigenvalues:RuntimeWarning")  # linear: rank 2
def test_grid_search_pipeline_kernel_list_and_gamma_grid(rng):
    n = 120
    X = rng.standard_normal((n, 2))
    y = (np.linalg.norm(X, axis=1) > 1.1).astype(int)  # circles: linear fails, rbf works
    pipe = Pipeline([("kpca", KernelPCA(n_components=4, random_state=0)),
                     ("clf", LogisticRegression())])
    grid = [{"kpca__kernel": ["rbf", "laplacian"], "kpca__gamma": [0.1, 1.0]},
            {"kpca__kernel": ["linear"]}]
    gs = GridSearchCV(pipe, grid, cv=3).fit(X, y)
    assert len(gs.cv_results_["params"]) == 5
    assert gs.best_params_["kpca__kernel"] != "linear"
    assert gs.best_score_ > 0.85
    lin = gs.cv_results_["mean_test_score"][
        [p["kpca__kernel"] == "linear" for p in gs.cv_results_["params"]]]
    assert lin.max() < gs.best_score_
    # a kernel instance in the grid, tuned through kernel__gamma
    pipe2 = Pipeline([("kpca", KernelPCA(n_components=4, kernel=RBFKernel())),
                      ("clf", LogisticRegression())])
    gs2 = GridSearchCV(pipe2, {"kpca__kernel__gamma": [0.1, 1.0]}, cv=3).fit(X, y)
    assert gs2.best_params_["kpca__kernel__gamma"] in (0.1, 1.0)
    assert pipe2.named_steps["kpca"].kernel.gamma is None  # the original is never modified


# -------------------------------------------------------------------------------- set_output
def test_set_output_pandas(data):
    X, Z = data
    dfx = pd.DataFrame(X, columns=list("abcd"), index=np.arange(100, 140))
    dfz = pd.DataFrame(Z, columns=list("abcd"))
    kp = KernelPCA(n_components=3).set_output(transform="pandas")
    out = kp.fit_transform(dfx)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == ["kernelpca0", "kernelpca1", "kernelpca2"]
    assert list(out.index) == list(dfx.index)
    assert list(kp.get_feature_names_out()) == list(out.columns)
    np.testing.assert_array_equal(kp.feature_names_in_, list("abcd"))
    np.testing.assert_allclose(kp.transform(dfx).to_numpy(), out.to_numpy(), atol=1e-10)
    ks = KernelSVD(n_components=2).set_output(transform="pandas")
    out = ks.fit_transform(dfx, Z=dfz)
    assert list(out.columns) == ["kernelsvd0", "kernelsvd1"]
    assert isinstance(ks.transform(dfx), pd.DataFrame)
    np.testing.assert_allclose(ks.transform(dfx).to_numpy(), out.to_numpy(), atol=1e-10)
    assert ks.transform_right(dfz).shape == (30, 2)
    # reordered columns are refused (X through scikit-learn's bookkeeping, Z by name)
    with pytest.raises(ValueError, match="feature names"):
        ks.transform(dfx[list("badc")])
    with pytest.raises(ValueError, match="feature names of Z"):
        ks.transform_right(dfz[list("badc")])
    with pytest.raises(ValueError, match="feature names"):
        kp.transform(dfx[list("dcba")])


def test_n_features_in_and_wrong_feature_count(data):
    X, Z = data
    ks = KernelSVD(n_components=2).fit(X, Z=Z)
    kp = KernelPCA().fit(X)
    assert ks.n_features_in_ == kp.n_features_in_ == 4
    for est in (ks, kp):
        with pytest.raises(ValueError, match="X has 3 features, but .* is expecting 4"):
            est.transform(X[:, :3])
        with pytest.raises(ValueError, match="Reshape your data"):
            est.transform(X[0])


# ------------------------------------------------------------------------------ random_state
def test_random_state_none_is_fresh_int_reproducible_generator_refused(data):
    X, Z = data
    # unconverged randomized solvers expose the starting randomness
    kp = dict(n_components=3, solver="randomized", iterated_power=0, n_oversamples=0)
    ks = dict(n_components=3, solver="randomized", n_iter=0, n_oversamples=0)
    fits = [
        lambda rs: KernelPCA(**kp, random_state=rs).fit(X).eigenvalues_,
        lambda rs: KernelSVD(**ks, random_state=rs).fit(X, Z=Z).singular_values_,
    ]
    for f in fits:
        np.testing.assert_array_equal(f(7), f(7))
        a, b = f(None), f(None)
        assert not np.array_equal(a, b)  # fresh entropy on each call
        assert not np.array_equal(a, f(0)) or not np.array_equal(b, f(0))  # not seed 0
    gen = np.random.default_rng(0)
    for est in (KernelPCA(random_state=gen), KernelSVD(random_state=gen)):
        with pytest.raises(TypeError, match="Generator is not accepted"):
            est.fit(X) if isinstance(est, KernelPCA) else est.fit(X, Z=Z)


def test_arpack_v0_with_none_draws_from_global_random_state(data):
    """scikit-learn's _init_arpack_v0: random_state=None takes v0 from np.random's state."""
    X, _ = data
    kw = dict(n_components=3, solver="arpack")
    np.random.seed(11)  # noqa: NPY002 - the global state is what None means
    a = KernelPCA(**kw, random_state=None).fit(X)
    b = KernelPCA(**kw, random_state=np.random.RandomState(11)).fit(X)
    np.testing.assert_array_equal(a.eigenvalues_, b.eigenvalues_)
    ref = KernelPCA(n_components=3, solver="dense").fit(X)
    np.testing.assert_allclose(a.eigenvalues_, ref.eigenvalues_, rtol=1e-10)


# ------------------------------------------------------------------------------------ gamma
def test_gamma_equals_kernel_params_and_sklearn(data):
    X, Z = data
    a = KernelPCA(n_components=3, gamma=0.3).fit(X)
    b = KernelPCA(n_components=3, kernel_params={"gamma": 0.3}).fit(X)
    np.testing.assert_array_equal(a.eigenvalues_, b.eigenvalues_)
    sk = SkKernelPCA(n_components=3, kernel="rbf", gamma=0.3).fit(X)
    np.testing.assert_allclose(a.eigenvalues_, sk.eigenvalues_, rtol=1e-9)
    s1 = KernelSVD(n_components=3, gamma=0.3, solver="dense").fit(X, Z=Z)
    s2 = KernelSVD(n_components=3, kernel_params={"gamma": 0.3}, solver="dense").fit(X, Z=Z)
    np.testing.assert_array_equal(s1.singular_values_, s2.singular_values_)
    G = get_kernel("rbf", gamma=0.3)(X, Z)
    np.testing.assert_allclose(s1.singular_values_, np.linalg.svd(G, compute_uv=False)[:3],
                               rtol=1e-10)


def test_gamma_refusals(data):
    X, Z = data
    with pytest.raises(ValueError, match="gamma=0.5 is a kernel width, but kernel 'linear'"):
        KernelPCA(kernel="linear", gamma=0.5).fit(X)
    with pytest.raises(ValueError, match="set the kernel width once"):
        KernelPCA(gamma=0.5, kernel_params={"gamma": 1.0}).fit(X)
    with pytest.raises(ValueError, match=r"kernel_params\['bandwidth'\]='auto'"):
        KernelSVD(gamma=0.5, kernel_params={"bandwidth": "auto"}).fit(X, Z=Z)
    with pytest.raises(ValueError, match="set the kernel width once"):
        KernelSVD(gamma=0.5, kernel_params={"bandwidth": 2.0}).fit(X, Z=Z)
    with pytest.raises(ValueError, match="precomputed"):
        KernelSVD(kernel="precomputed", gamma=0.5).fit(np.ones((4, 3)))
    with pytest.raises(ValueError, match="callable"):
        KernelSVD(kernel=lambda A, B: A @ B.T, gamma=0.5).fit(X, Z=Z)
    # 'auto' bandwidth without gamma still works and records the value
    m = KernelSVD(n_components=2, kernel_params={"bandwidth": "auto"}).fit(X, Z=Z)
    assert m.bandwidth_ > 0


# ------------------------------------------------------------------------ n_components clip
def test_n_components_clipped_with_warning(data):
    X, Z = data
    with pytest.warns(ClippedParameterWarning, match="KernelPCA: n_components=50"):
        kp = KernelPCA(n_components=50, kernel="rbf", center=False).fit(X[:10])
    assert kp.n_components_ == 10 and kp.transform(X).shape == (40, 10)
    with pytest.warns(ClippedParameterWarning, match="KernelSVD: n_components=99"):
        ks = KernelSVD(n_components=99, solver="dense").fit(X[:8], Z=Z)
    assert ks.n_components_ == 8 and ks.transform(X).shape == (40, 8)


# --------------------------------------------------------------------------- KSVD signature
def test_ksvd_z_keyword_only_positional_deprecated(data):
    X, Z = data
    ref = KernelSVD(n_components=2, solver="dense").fit(X, Z=Z)
    with pytest.warns(FutureWarning, match="passing Z positionally is deprecated"):
        old = KernelSVD(n_components=2, solver="dense").fit(X, None, Z)
    np.testing.assert_array_equal(old.singular_values_, ref.singular_values_)
    with pytest.raises(TypeError, match="keyword Z="):
        KernelSVD(n_components=2).fit(X, None, Z, Z=Z)
    with pytest.raises(TypeError, match="Z=Z"):
        KernelSVD(n_components=2).fit(X, Z)  # a 2-D y: the old mistake still named
    assert not hasattr(KernelSVD(), "inverse_transform")


# ------------------------------------------------------------------- KernelPCA precomputed
def test_kpca_precomputed_equals_kernel_path_and_sklearn(data, rng):
    X, _ = data
    Xt = rng.standard_normal((7, 4))
    k = get_kernel("rbf", gamma=0.4)
    K, Kt = k(X, X), k(Xt, X)
    Kc = K.copy()
    pre = KernelPCA(n_components=4, kernel="precomputed").fit(K)
    np.testing.assert_array_equal(K, Kc)  # input not modified
    ker = KernelPCA(n_components=4, gamma=0.4).fit(X)
    sk = SkKernelPCA(n_components=4, kernel="precomputed").fit(K)
    np.testing.assert_allclose(pre.eigenvalues_, ker.eigenvalues_, rtol=1e-10)
    np.testing.assert_allclose(pre.eigenvalues_, sk.eigenvalues_, rtol=1e-9)
    np.testing.assert_allclose(pre.transform(Kt), ker.transform(Xt), atol=1e-9)
    np.testing.assert_allclose(match_signs(pre.transform(Kt), sk.transform(Kt)),
                               pre.transform(Kt), atol=1e-8)
    np.testing.assert_allclose(match_signs(pre.fit_transform(K), sk.transform(K)),
                               pre.fit_transform(K), atol=1e-8)
    assert pre.__sklearn_tags__().input_tags.pairwise
    # KernelSVD's precomputed G is n×m (columns: the unpaired Z): not pairwise, CV splits rows
    assert not KernelSVD(kernel="precomputed").__sklearn_tags__().input_tags.pairwise
    # sparse K, float32 K
    sp_pre = KernelPCA(n_components=4, kernel="precomputed").fit(sp.csr_matrix(K))
    np.testing.assert_allclose(sp_pre.eigenvalues_, pre.eigenvalues_, rtol=1e-12)
    p32 = KernelPCA(n_components=4, kernel="precomputed").fit(K.astype(np.float32))
    assert p32.eigenvalues_.dtype == np.float32
    with pytest.raises(ValueError, match="must be square"):
        KernelPCA(kernel="precomputed").fit(K[:, :10])
    bad = K.copy()
    bad[0, 1] += 0.5
    with pytest.raises(ValueError, match="not symmetric"):
        KernelPCA(kernel="precomputed").fit(bad)
    with pytest.raises(ValueError, match="X has 39 features, but KernelPCA is expecting 40"):
        pre.transform(Kt[:, :39])
    with pytest.raises(ValueError, match="fit_inverse_transform=True needs the data"):
        KernelPCA(kernel="precomputed", fit_inverse_transform=True).fit(K)


# --------------------------------------------------------------- KernelPCA inverse_transform
@pytest.mark.parametrize("alpha", [1.0, 0.1])
def test_kpca_inverse_transform_matches_sklearn(data, rng, alpha):
    X, _ = data
    Xt = rng.standard_normal((6, 4))
    kw = dict(n_components=3, kernel="rbf", gamma=0.3, fit_inverse_transform=True, alpha=alpha)
    ours = KernelPCA(**kw).fit(X)
    sk = SkKernelPCA(**kw).fit(X)
    np.testing.assert_allclose(ours.inverse_transform(ours.transform(X)),
                               sk.inverse_transform(sk.transform(X)), atol=1e-8)
    np.testing.assert_allclose(ours.inverse_transform(ours.transform(Xt)),
                               sk.inverse_transform(sk.transform(Xt)), atol=1e-8)
    # float32 stays float32
    o32 = KernelPCA(**kw).fit(X.astype(np.float32))
    rec = o32.inverse_transform(o32.transform(X.astype(np.float32)))
    assert rec.dtype == np.float32
    np.testing.assert_allclose(rec, ours.inverse_transform(ours.transform(X)), atol=1e-3)


def test_kpca_inverse_transform_not_available(data):
    X, _ = data
    with pytest.raises(NotFittedError):
        KernelPCA(fit_inverse_transform=True).inverse_transform(X[:, :2])
    m = KernelPCA().fit(X)
    with pytest.raises(NotFittedError, match="fit_inverse_transform=True"):
        m.inverse_transform(m.transform(X))
    inv = KernelPCA(fit_inverse_transform=True).fit(X)
    with pytest.raises(ValueError, match="expected n_components_=2"):
        inv.inverse_transform(X)
    # sparse X: the pre-image map regresses the densified training data
    dense = KernelPCA(fit_inverse_transform=True).fit(X)
    sparse = KernelPCA(fit_inverse_transform=True).fit(sp.csr_matrix(X))
    np.testing.assert_allclose(sparse.inverse_transform(sparse.transform(X)),
                               dense.inverse_transform(dense.transform(X)), atol=1e-10)


# ------------------------------------------------------------------ KernelSVD sample_weight
def dense_ksvd(G, r):
    """Obviously correct reference: LAPACK SVD of the dense matrix."""
    U, s, Vt = np.linalg.svd(G, full_matrices=False)
    return U[:, :r], s[:r], Vt[:r].T


def centred(G):
    return G - G.mean(1, keepdims=True) - G.mean(0, keepdims=True) + G.mean()


@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("side", ["x", "z", "both"])
def test_ksvd_integer_weights_equal_repeated_rows(data, rng, center, side):
    X, Z = data
    r = 4
    w = rng.integers(0, 4, size=len(X)) if side in ("x", "both") else np.ones(len(X), int)
    wz = rng.integers(0, 4, size=len(Z)) if side in ("z", "both") else np.ones(len(Z), int)
    if side != "z":
        w[0], w[1] = 0, 3  # a weight 0 removes the sample
    if side != "x":
        wz[0], wz[1] = 0, 2
    Xr, Zr = np.repeat(X, w, axis=0), np.repeat(Z, wz, axis=0)
    kw = dict(n_components=r, kernel="sne", center=center, solver="dense")
    ref = KernelSVD(**kw).fit(Xr, Z=Zr)
    weighted = KernelSVD(**kw).fit(
        X, Z=Z, sample_weight=w if side != "z" else None,
        sample_weight_Z=wz if side != "x" else None)
    # dense reference: the SVD of the repeated-rows kernel matrix
    G = get_kernel("sne")(Xr, Zr)
    U0, s0, V0 = dense_ksvd(centred(G) if center else G, r)
    np.testing.assert_allclose(weighted.singular_values_, s0, rtol=1e-10)
    np.testing.assert_allclose(ref.singular_values_, s0, rtol=1e-10)
    # left vectors: every copy of x_i has u_i / sqrt(w_i); right: v_j / sqrt(w^z_j)
    Uw = weighted.left_singular_vectors_
    Vw = weighted.right_singular_vectors_
    keep, keepz = w > 0, wz > 0
    U_rep = np.repeat(Uw[keep] / np.sqrt(w[keep])[:, None], w[keep], axis=0)
    V_rep = np.repeat(Vw[keepz] / np.sqrt(wz[keepz])[:, None], wz[keepz], axis=0)
    np.testing.assert_allclose(match_signs(U0, U_rep), U0, atol=1e-9)
    np.testing.assert_allclose(match_signs(V0, V_rep), V0, atol=1e-9)
    np.testing.assert_allclose(Uw.T @ Uw, np.eye(r), atol=1e-10)  # orthonormal in G_w
    # scores: transform / transform_right / embeddings equal the repeated-rows fit's
    Xn, Zn = rng.standard_normal((5, 4)), rng.standard_normal((6, 4))
    for a, b in [(weighted.transform(Xn), ref.transform(Xn)),
                 (weighted.transform(X), ref.transform(X)),
                 (weighted.transform_right(Zn), ref.transform_right(Zn)),
                 (weighted.transform_right(Z), ref.transform_right(Z))]:
        np.testing.assert_allclose(match_signs(b, a), b, atol=1e-9)
    emb_l, emb_r = weighted.embeddings()
    np.testing.assert_allclose(emb_l, weighted.transform(X), atol=1e-10)
    np.testing.assert_allclose(emb_r, weighted.transform_right(Z), atol=1e-10)
    np.testing.assert_allclose(weighted.fit_transform(X, Z=Z, sample_weight=w if side != "z"
                                                      else None,
                                                      sample_weight_Z=wz if side != "x"
                                                      else None), emb_l, atol=1e-10)


@pytest.mark.parametrize("solver", ["arpack", "randomized"])
def test_ksvd_weights_other_solvers_and_precomputed(data, rng, solver):
    X, Z = data
    w = rng.random(len(X)) * 2
    wz = rng.random(len(Z)) * 2
    G = get_kernel("rbf")(X, Z)
    Gw = np.sqrt(w)[:, None] * G * np.sqrt(wz)[None, :]
    _, s0, _ = dense_ksvd(Gw, 3)
    m = KernelSVD(n_components=3, solver=solver, random_state=0, n_iter=10).fit(
        X, Z=Z, sample_weight=w, sample_weight_Z=wz)
    np.testing.assert_allclose(m.singular_values_, s0, rtol=1e-8)
    p = KernelSVD(n_components=3, kernel="precomputed", solver="dense").fit(
        G, sample_weight=w, sample_weight_Z=wz)
    np.testing.assert_allclose(p.singular_values_, s0, rtol=1e-10)
    np.testing.assert_allclose(match_signs(m.transform(X), p.transform(G)), m.transform(X),
                               atol=1e-6)
    # unit weights are the unweighted fit; float32 stays float32
    u = KernelSVD(n_components=3, solver="dense").fit(X, Z=Z, sample_weight=np.ones(len(X)))
    ref = KernelSVD(n_components=3, solver="dense").fit(X, Z=Z)
    np.testing.assert_allclose(u.singular_values_, ref.singular_values_, rtol=1e-12)
    np.testing.assert_allclose(u.transform(X), ref.transform(X), atol=1e-10)
    f32 = KernelSVD(n_components=3, solver="dense").fit(
        X.astype(np.float32), Z=Z.astype(np.float32), sample_weight=w)
    assert f32.singular_values_.dtype == np.float32
    assert f32.transform(X.astype(np.float32)).dtype == np.float32


def test_ksvd_weight_errors(data):
    X, Z = data
    wc = np.ones(len(X))
    with pytest.raises(ValueError, match="sample_weight must be a 1-D array"):
        KernelSVD().fit(X, Z=Z, sample_weight=np.ones(3))
    with pytest.raises(ValueError, match="sample_weight_Z must be a 1-D array"):
        KernelSVD().fit(X, Z=Z, sample_weight_Z=np.ones(len(X)))
    with pytest.raises(ValueError, match="negative"):
        KernelSVD().fit(X, Z=Z, sample_weight=-wc)
    with pytest.raises(ValueError, match="all zero"):
        KernelSVD().fit(X, Z=Z, sample_weight=0 * wc)
    with pytest.raises(ValueError, match="solver='nystrom'"):
        KernelSVD(solver="nystrom").fit(X, Z=Z, sample_weight=wc)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        KernelSVD().fit(X, Z=Z, sample_weight=list(wc))  # a list is fine
    np.testing.assert_array_equal(wc, np.ones(len(X)))  # not modified


def test_dask_ksvd_with_gamma_matches_in_memory(data):
    da = pytest.importorskip("dask.array")
    X, Z = data
    kw = dict(n_components=3, gamma=0.3, solver="dense")
    a = KernelSVD(**kw).fit(X, Z=Z)
    b = KernelSVD(**kw).fit(da.from_array(X, chunks=15), Z=da.from_array(Z, chunks=10))
    np.testing.assert_allclose(np.asarray(b.singular_values_), a.singular_values_, rtol=1e-10)
    with pytest.raises(NotImplementedError, match="dask"):
        KernelSVD(**kw).fit(da.from_array(X, chunks=15), Z=Z, sample_weight=np.ones(len(X)))


def test_ksvd_in_pipeline_z_and_weights_as_step_parameters(data, rng):
    """The unpaired set and the weights reach KernelSVD as step fit parameters; y is not Z."""
    from sklearn.preprocessing import StandardScaler

    X, Z = data
    y = rng.integers(0, 2, len(X))
    w = rng.integers(1, 3, len(X))
    pipe = Pipeline([("ksvd", KernelSVD(n_components=3, solver="dense")),
                     ("scale", StandardScaler())])
    out = pipe.fit_transform(X, y, ksvd__Z=Z, ksvd__sample_weight=w)
    ref = KernelSVD(n_components=3, solver="dense").fit(X, Z=Z, sample_weight=w)
    np.testing.assert_allclose(pipe.named_steps["ksvd"].singular_values_,
                               ref.singular_values_, rtol=1e-12)
    assert out.shape == (40, 3)


# ------------------------------------------------- issue 29: non-PSD kernels, default gamma
def _minkowski(X, Z):
    """An indefinite symmetric kernel: 3 positive and d − 3 negative directions."""
    return X[:, :3] @ Z[:, :3].T - X[:, 3:] @ Z[:, 3:].T


@pytest.mark.parametrize("solver", ["dense", "arpack", "randomized"])
@pytest.mark.parametrize("center", [True, False])
def test_kpca_refuses_significantly_negative_eigenvalues(rng, solver, center):
    """An indefinite kernel used to lose its negative eigenvalues with a warning calling them
    "numerically zero"; like scikit-learn, KernelPCA now raises, naming the argument."""
    X = rng.standard_normal((30, 40))  # full rank: the top 6 include negative ones
    K = _minkowski(X, X)
    kw = dict(n_components=6, solver=solver, center=center, random_state=0)
    with pytest.raises(ValueError, match=r"X \(precomputed kernel matrix K\) is not positive "
                                         r"semi-definite.*negative eigenvalue"):
        KernelPCA(kernel="precomputed", **kw).fit(K)
    with pytest.raises(ValueError, match="kernel=.*is not positive semi-definite"):
        KernelPCA(kernel=_minkowski, kernel_params={"is_symmetric": True}, **kw).fit(X)
    with pytest.raises(ValueError, match="not positive semi-definite"):
        KernelPCA(kernel="precomputed", **kw).fit(K.astype(np.float32))
    with pytest.raises(ValueError, match="negative"):  # the reference
        SkKernelPCA(kernel="precomputed", n_components=6,
                    eigen_solver="randomized" if solver == "randomized" else solver,
                    random_state=0).fit(K)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_kpca_rounding_level_negative_eigenvalues_count_as_zero(rng, dtype):
    """A PSD kernel of rank 2 has rounding-level (possibly negative) eigenvalues beyond the
    rank: those are zero, dropped with the RuntimeWarning, never an error."""
    X = (rng.standard_normal((30, 2)) @ rng.standard_normal((2, 5))).astype(dtype)
    K = X @ X.T
    for est, data in ((KernelPCA(n_components=6, kernel="linear"), X),
                      (KernelPCA(n_components=6, kernel="precomputed"), K)):
        with pytest.warns(RuntimeWarning, match="only 2 eigenvalues"):
            est.fit(data)
        assert est.n_components_ == 2 and np.all(est.eigenvalues_ > 0)
    # a numerically zero (centred constant) kernel matrix is no indefinite one
    with pytest.warns(RuntimeWarning, match="only 0 eigenvalues"):
        KernelPCA(n_components=2, kernel="precomputed").fit(np.full((10, 10), 3.0, dtype))


@pytest.mark.parametrize("kernel", ["rbf", "poly"])
def test_kpca_default_gamma_resolved_once_like_sklearn(data, rng, kernel):
    """gamma=None: inverse_transform's pre-image map (a kernel on the 3-D scores) used
    gamma = 1/3 where transform used 1/n_features = 1/4 (6 % off scikit-learn, which fixed
    the same defect in PR #26280); the width is now resolved once at fit as gamma_."""
    X, _ = data
    Xt = rng.standard_normal((6, 4))
    kw = dict(n_components=3, kernel=kernel, fit_inverse_transform=True, alpha=0.1)
    ours = KernelPCA(**kw).fit(X)
    sk = SkKernelPCA(**kw).fit(X)
    for A in (X, Xt):
        want = sk.inverse_transform(sk.transform(A))
        got = ours.inverse_transform(ours.transform(A))
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6 * np.abs(want).max())
    assert ours.gamma_ == pytest.approx(1 / X.shape[1], rel=1e-12) == sk.gamma_
    assert ours.kernel_.gamma == pytest.approx(0.25, rel=1e-12)


def test_kpca_gamma_attribute(data):
    X, _ = data
    assert KernelPCA(gamma=0.3).fit(X).gamma_ == 0.3
    inst = RBFKernel()
    est = KernelPCA(kernel=inst).fit(X)
    assert est.gamma_ == pytest.approx(0.25) and inst.gamma is None  # the instance unchanged
    assert KernelPCA(kernel=RBFKernel(bandwidth=2.0)).fit(X).gamma_ == pytest.approx(0.25)
    assert KernelPCA(kernel="laplacian").fit(X).gamma_ == pytest.approx(0.25)
    assert KernelPCA(kernel="cauchy").fit(X).gamma_ == 1.0  # its default does not depend on d
    assert KernelPCA(kernel="linear").fit(X).gamma_ is None
    assert KernelPCA(kernel="precomputed").fit(X @ X.T).gamma_ is None


@pytest.mark.parametrize("flag,value", [("center", "False"), ("fit_inverse_transform", "no"),
                                        ("copy_X", 1)])
def test_kernel_pca_refuses_non_boolean_flags(flag, value):
    """A truthy string such as center='False' centred the kernel matrix without a word."""
    from asymkern import KernelPCA

    X = np.random.RandomState(0).randn(40, 3)
    with pytest.raises(TypeError, match=rf"{flag} must be True or False, got {value!r}"):
        KernelPCA(2, **{flag: value}).fit(X)
