"""The operator estimators as scikit-learn citizens (issue 15): common checks at default
parameters, clone/GridSearchCV/Pipeline, renamed parameters, clipping, small pickles, sparse
input equal to dense, KoopmanOperator.score against a dense hand computation."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from asymkern.exceptions import ClippedParameterWarning
from asymkern.kernels import RBFKernel, get_kernel
from asymkern.operators import (
    ConditionalMeanEmbedding,
    CovarianceOperator,
    CrossCovarianceOperator,
    KernelCCA,
    KoopmanOperator,
    PerronFrobeniusOperator,
)

# scikit-learn common checks at defaults (and the transfer operators' declared failures):
# tests/test_sklearn_api.py


def _ou(n=300, seed=0):
    rng = np.random.RandomState(seed)
    x = np.zeros((n, 2))
    for t in range(1, n):
        x[t] = 0.9 * x[t - 1] + 0.3 * rng.standard_normal(2)
    return x


def _paired(n=60, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, 3))
    y = np.column_stack([np.sin(X[:, 0]), X[:, 1] ** 2]) + 0.1 * rng.standard_normal((n, 2))
    return X, y


# ------------------------------------------------------------------------------------------------
# 1: clipping at default parameters
@pytest.mark.parametrize("est", [CrossCovarianceOperator(), KernelCCA()])
def test_n_components_clipped_to_numerical_rank(est):
    X, _ = _paired()
    y = np.arange(60) % 3  # three distinct values: rank(G_y) = 3 (rbf)
    with pytest.warns(ClippedParameterWarning, match="n_components="):
        est = clone(est).set_params(n_components=6).fit(X, y)
    assert est.n_components_ <= 3
    Z = est.transform(X)
    assert Z.shape == (60, est.n_components_)
    names = est.get_feature_names_out()
    assert len(names) == est.n_components_


# 2: renamed parameters / arguments
@pytest.mark.parametrize("cls, args", [
    (ConditionalMeanEmbedding, "paired"), (KernelCCA, "paired"), (KoopmanOperator, "traj"),
    (PerronFrobeniusOperator, "traj")])
def test_regularization_is_deprecated_alias_of_alpha(cls, args):
    X, y = _paired()
    data = (X, y) if args == "paired" else (_ou(80),)
    ref = cls(alpha=1e-2).fit(*data)
    with pytest.warns(FutureWarning, match="'regularization' was renamed 'alpha'"):
        old = cls(regularization=1e-2).fit(*data)
    attr = {"paired": None}.get(args)
    if cls is ConditionalMeanEmbedding:
        np.testing.assert_array_equal(old.predict(X), ref.predict(X))
    elif cls is KernelCCA:
        np.testing.assert_array_equal(old.canonical_correlations_, ref.canonical_correlations_)
    else:
        np.testing.assert_array_equal(old.eigenvalues_, ref.eigenvalues_)
    assert attr is None


@pytest.mark.parametrize("cls", [KoopmanOperator, PerronFrobeniusOperator])
def test_transfer_operator_y_is_time_shifted_snapshots(cls):
    T = _ou(50)
    traj = cls(n_components=3).fit(T)
    pairs = cls(n_components=3).fit(T[:-1], T[1:])
    np.testing.assert_allclose(pairs.eigenvalues_, traj.eigenvalues_, rtol=1e-10)
    with pytest.warns(FutureWarning, match="'Y' was renamed 'y'"):
        old = cls(n_components=3).fit(T[:-1], Y=T[1:])
    np.testing.assert_array_equal(old.eigenvalues_, pairs.eigenvalues_)
    # class labels / wrong shapes are refused, naming y and the expected shape
    with pytest.raises(ValueError, match=r"^y has shape \(49,\); expected the time-shifted"):
        cls().fit(T[:-1], np.arange(49) % 2)
    # one feature: a 1-D y is the snapshot column
    x = T[:, :1]
    one = cls(n_components=2).fit(x[:-1], x[1:, 0])
    two = cls(n_components=2).fit(x[:-1], x[1:])
    np.testing.assert_array_equal(one.eigenvalues_, two.eigenvalues_)
    with pytest.raises(TypeError, match="pass y only"):
        cls().fit(T[:-1], T[1:], Y=T[1:])


@pytest.mark.parametrize("cls", [CrossCovarianceOperator, KernelCCA])
def test_paired_transform_returns_x_and_y_scores(cls):
    X, y = _paired()
    est = cls(n_components=2).fit(X, y)
    xs, ys = est.transform(X, y)
    np.testing.assert_array_equal(xs, est.transform(X))
    assert ys.shape == (60, est.n_components_)
    if cls is KernelCCA:
        np.testing.assert_array_equal(ys, est.transform_y(y))
        # the canonical correlations are the correlations of the training variates (ε small)
    with pytest.warns(FutureWarning, match="'Y' was renamed 'y'"):
        old = cls(n_components=2).fit(X, Y=y)
    np.testing.assert_array_equal(old.transform(X), xs)


# 6: validation, random_state, kernel instances, clone, set_output
@pytest.mark.parametrize("est", [ConditionalMeanEmbedding(n_landmarks=20),
                                 KoopmanOperator(n_landmarks=20)])
def test_generator_random_state_refused_and_seeds_reproducible(est):
    X, y = _paired()
    args = (X, y) if isinstance(est, ConditionalMeanEmbedding) else (_ou(80),)
    with pytest.raises(TypeError, match="Generator is not accepted"):
        clone(est).set_params(random_state=np.random.default_rng(0)).fit(*args)
    a = clone(est).set_params(random_state=3).fit(*args)
    b = clone(est).set_params(random_state=3).fit(*args)
    np.testing.assert_array_equal(a.landmarks_, b.landmarks_)
    assert a.n_landmarks_ == 20
    with pytest.warns(ClippedParameterWarning, match="n_landmarks=500"):
        c = clone(est).set_params(n_landmarks=500).fit(*args)
    assert c.n_landmarks_ == args[0].shape[0] - (0 if len(args) == 2 else 1)


def test_kernel_instances_not_mutated_clone_and_nested_set_params():
    X, y = _paired()
    kx = RBFKernel(gamma=0.5)
    est = KernelCCA(kernel_x=kx, kernel_y=RBFKernel(gamma=0.5), n_components=2)
    before = kx.get_params()
    est.fit(X, y)
    assert kx.get_params() == before
    c = clone(est).set_params(kernel_x__gamma=0.1)
    assert c.kernel_x.gamma == 0.1 and kx.gamma == 0.5
    k = KoopmanOperator(kernel=RBFKernel(gamma=1.0), n_components=2)
    k.fit(_ou(60))
    assert k.kernel.gamma == 1.0
    g = GridSearchCV(KoopmanOperator(kernel=RBFKernel(gamma=1.0), n_components=2),
                     {"kernel__gamma": [0.1, 1.0], "alpha": [1e-4, 1e-2]}, cv=2)
    T = _ou(200)
    g.fit(T[:-1], T[1:])  # default score: the R² of the one-step prediction
    assert np.isfinite(g.best_score_)
    p = make_pipeline(StandardScaler(), ConditionalMeanEmbedding(alpha=1e-2)).fit(X, y)
    assert p.predict(X).shape == y.shape


@pytest.mark.parametrize("est", [CovarianceOperator(), CrossCovarianceOperator(n_components=2),
                                 KernelCCA(n_components=2)])
def test_set_output_pandas(est):
    pd = pytest.importorskip("pandas")
    X, y = _paired()
    Xdf = pd.DataFrame(X, columns=["a", "b", "c"])
    est = clone(est).set_output(transform="pandas")
    fitted = est.fit(Xdf) if isinstance(est, CovarianceOperator) else est.fit(Xdf, y)
    out = fitted.transform(Xdf)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == list(fitted.get_feature_names_out())
    assert list(fitted.feature_names_in_) == ["a", "b", "c"]
    with pytest.raises(ValueError, match="feature names"):
        fitted.transform(Xdf[["b", "a", "c"]])


# 4: pickles stay small and predict identically
def test_pickles_small_and_identical():
    T = _ou(401)  # KoopmanOperator at n=1500: 51.7 MiB before issue 15, 0.18 MiB after
    n = 400
    data_bytes = T.nbytes
    k = KoopmanOperator(n_components=5).fit(T)
    blob = pickle.dumps(k)
    assert len(blob) < 4 * data_bytes + 8 * n * 5 * 4 + 200_000, len(blob)
    back = pickle.loads(blob)
    Xt = T[:50] + 0.01
    np.testing.assert_array_equal(back.predict(Xt), k.predict(Xt))
    np.testing.assert_array_equal(back.eigenfunctions_(Xt), k.eigenfunctions_(Xt))
    # the dropped factors are recomputed on demand: svd/eig after unpickling agree
    np.testing.assert_allclose(np.abs(back.eig(3).eigenvalues), np.abs(k.eig(3).eigenvalues),
                               rtol=1e-8)
    X, y = _paired(300)
    for est in (ConditionalMeanEmbedding().fit(X, y), KernelCCA().fit(X, y),
                CrossCovarianceOperator(n_components=2).fit(X, y)):
        blob = pickle.dumps(est)
        assert len(blob) < 4 * (X.nbytes + y.nbytes) + 200_000, (type(est).__name__, len(blob))
        back = pickle.loads(blob)
        f = back.predict if hasattr(back, "predict") else back.transform
        g = est.predict if hasattr(est, "predict") else est.transform
        np.testing.assert_array_equal(f(X[:20]), g(X[:20]))
    kc = KernelCCA(n_components=2).fit(X[:200], y[:200])
    back = pickle.loads(pickle.dumps(kc))
    np.testing.assert_allclose(back.svd(2).singular_values, kc.svd(2).singular_values,
                               rtol=1e-8)
    pf = PerronFrobeniusOperator(n_components=3).fit(T[:200])
    back = pickle.loads(pickle.dumps(pf))
    assert len(pickle.dumps(pf)) < 4 * T[:200].nbytes + 100_000
    np.testing.assert_allclose(back.eig(3).eigenvalues, pf.eig(3).eigenvalues, rtol=1e-8)


# 3: sparse input equals dense
def test_sparse_equals_dense():
    rng = np.random.RandomState(0)
    X = rng.standard_normal((50, 4)) * (rng.rand(50, 4) < 0.5)
    y = rng.standard_normal((50, 2)) * (rng.rand(50, 2) < 0.5)
    Xs, ys = sp.csr_matrix(X), sp.csr_matrix(y)
    cov_d, cov_s = CovarianceOperator().fit(X), CovarianceOperator().fit(Xs)
    np.testing.assert_allclose(cov_s.transform(Xs), cov_d.transform(X), rtol=1e-8, atol=1e-10)
    for cls in (CrossCovarianceOperator, KernelCCA):
        d = cls(n_components=2).fit(X, y)
        s = cls(n_components=2).fit(Xs, ys)
        for a, b in zip(s.transform(Xs, ys), d.transform(X, y)):
            np.testing.assert_allclose(np.abs(a), np.abs(b), rtol=1e-6, atol=1e-8)
    cme_d = ConditionalMeanEmbedding().fit(X, y)
    cme_xs = ConditionalMeanEmbedding().fit(Xs, y)  # sparse X: supported (issue 29, item 5)
    np.testing.assert_allclose(cme_xs.predict(Xs), cme_d.predict(X), rtol=1e-8, atol=1e-10)
    cme_s = ConditionalMeanEmbedding().fit(X, ys)  # sparse y (no "array element" crash)
    np.testing.assert_allclose(cme_s.predict(X), cme_d.predict(X), rtol=1e-10)
    T = _ou(80)
    # alpha=1e-3: with the default 1e-6 the solve amplifies the last-bit differences between the
    # sparse and dense Gram computations by its condition number (1.4e-8 seen with numpy 2.5)
    kd = KoopmanOperator(n_components=3, alpha=1e-3).fit(T[:-1], T[1:])
    ks = KoopmanOperator(n_components=3, alpha=1e-3).fit(sp.csr_matrix(T[:-1]),
                                                         sp.csr_matrix(T[1:]))
    np.testing.assert_allclose(ks.eigenvalues_, kd.eigenvalues_, rtol=1e-8)
    np.testing.assert_allclose(ks.predict(sp.csr_matrix(T[:5])), kd.predict(T[:5]), rtol=1e-8)


# 5: KoopmanOperator.score = R² of the one-step prediction
def test_koopman_score_is_r2_of_one_step_prediction():
    T = _ou(200)
    k = KoopmanOperator(kernel=get_kernel("rbf", gamma=0.5), alpha=1e-3).fit(T[:150])
    X0, Y = T[150:-1], T[151:]
    # dense hand computation: ŷ = k(X0, X_fit) (G + nεI)⁻¹ Y_fit
    Xf, Yf = T[:149], T[1:150]
    K = np.exp(-0.5 * ((X0[:, None] - Xf[None]) ** 2).sum(-1))
    G = np.exp(-0.5 * ((Xf[:, None] - Xf[None]) ** 2).sum(-1))
    pred = K @ np.linalg.solve(G + 149 * 1e-3 * np.eye(149), Yf)
    r2 = 1 - ((Y - pred) ** 2).sum() / ((Y - Y.mean(axis=0)) ** 2).sum()
    assert k.score(X0, Y) == pytest.approx(r2, rel=1e-8)
    assert k.score(T[150:]) == pytest.approx(r2, rel=1e-8)  # trajectory form


def test_covariance_eigenfunction_signs_are_deterministic():
    """The eigenfunctions do not inherit the eigensolver's arbitrary signs: each has its
    largest-magnitude coefficient positive, so permuting the samples (which changes how the
    Gram matrix is factorised and rounded) gives the same functions, not merely up to sign."""
    rng = np.random.RandomState(3)
    X, Xn = rng.standard_normal((70, 3)), rng.standard_normal((9, 3))
    p = rng.permutation(70)
    for center in (False, True):
        a = CovarianceOperator(n_components=5, center=center, jitter=1e-8).fit(X)
        b = CovarianceOperator(n_components=5, center=center, jitter=1e-8).fit(X[p])
        np.testing.assert_allclose(b.transform(Xn), a.transform(Xn), rtol=1e-8, atol=1e-10)
        C = a.eigenfunctions_.coef if not center else None
        if C is not None:
            top = C[np.argmax(np.abs(C), axis=0), np.arange(C.shape[1])]
            assert np.all(top > 0)
