"""Parameter conventions: KernelSVD's Nyström landmark options as first-class parameters
(``nystrom_params`` keys deprecated), and kernel parameters (a callable kernel's parameters,
a real polynomial degree)."""

import re
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

import asymkern
from asymkern import KernelSVD
from asymkern.decomposition.ksvd import NYSTROM_PARAMS, NYSTROM_PARAMS_REMOVAL


@pytest.fixture
def sets():
    rng = np.random.RandomState(0)
    return rng.standard_normal((80, 3)), rng.standard_normal((60, 3)) + 0.2


def _fit(kw, X, Z):
    return KernelSVD(n_components=3, kernel="sne", gamma=0.5, solver="nystrom",
                     random_state=0, **kw).fit(X, Z=Z)


def _assert_same_fit(a, b):
    for attr in ("singular_values_", "left_singular_vectors_", "right_singular_vectors_",
                 "row_landmarks_", "col_landmarks_"):
        np.testing.assert_array_equal(np.asarray(getattr(a, attr)), np.asarray(getattr(b, attr)))


# ------------------------------------------------------------- KernelSVD Nyström parameters
def test_removal_release_is_two_minors_ahead():
    major, minor = (int(p) for p in asymkern.__version__.split(".")[:2])
    assert NYSTROM_PARAMS_REMOVAL == f"{major}.{minor + 2}"


@pytest.mark.parametrize("params", [
    {"n_row_landmarks": 30, "n_col_landmarks": 25},
    {"n_row_landmarks": 30},
    {"n_col_landmarks": 20, "sampling": "kmeans"},
    {"n_row_landmarks": 30, "n_col_landmarks": 25, "sampling": "leverage"},
], ids=["both", "rows", "cols-kmeans", "leverage"])
def test_parameter_form_is_bitwise_the_dict_form(sets, params):
    X, Z = sets
    with pytest.warns(FutureWarning):
        old = _fit({"nystrom_params": params}, X, Z)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new = _fit(params, X, Z)
    _assert_same_fit(old, new)
    np.testing.assert_array_equal(old.transform(X[:7]), new.transform(X[:7]))
    np.testing.assert_array_equal(old.transform_right(Z[:5]), new.transform_right(Z[:5]))


def test_parameter_form_mixes_with_other_nystrom_options(sets):
    """The options that stay in nystrom_params (orthogonalize, tol, …) warn nothing and combine
    with the parameters."""
    X, Z = sets
    with pytest.warns(FutureWarning):
        old = _fit({"nystrom_params": {"n_row_landmarks": 30, "orthogonalize": True}}, X, Z)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new = _fit({"n_row_landmarks": 30, "nystrom_params": {"orthogonalize": True}}, X, Z)
    _assert_same_fit(old, new)


def test_parameter_form_is_bitwise_the_dict_form_on_dask(sets):
    da = pytest.importorskip("dask.array")
    X, Z = sets
    Xd, Zd = da.from_array(X, chunks=30), da.from_array(Z, chunks=25)
    params = {"n_row_landmarks": 30, "n_col_landmarks": 25}
    with pytest.warns(FutureWarning):
        old = _fit({"nystrom_params": params}, Xd, Zd)
    new = _fit(params, Xd, Zd)
    for attr in ("singular_values_", "left_singular_vectors_", "right_singular_vectors_"):
        a, b = (da.asarray(getattr(e, attr)).compute() for e in (old, new))
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(old.row_landmarks_, new.row_landmarks_)


def test_deprecated_keys_warn_at_fit_naming_the_replacements(sets):
    X, Z = sets
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # __init__ stores, never warns (scikit-learn convention)
        est = KernelSVD(solver="nystrom", random_state=0,
                        nystrom_params={"n_row_landmarks": 30, "sampling": "uniform"})
    with pytest.warns(FutureWarning) as rec:
        est.fit(X, Z=Z)
    msg = str(rec[0].message)
    assert rec[0].filename == __file__  # points at the user's call
    assert f"error in {NYSTROM_PARAMS_REMOVAL}" in msg and "deprecated since 0.2" in msg
    assert "n_row_landmarks=30" in msg and "sampling='uniform'" in msg
    assert est.nystrom_params == {"n_row_landmarks": 30, "sampling": "uniform"}  # not modified


@pytest.mark.parametrize("key", NYSTROM_PARAMS)
def test_parameter_and_dict_key_together_is_an_error(sets, key):
    X, Z = sets
    value = "uniform" if key == "sampling" else 30
    est = KernelSVD(solver="nystrom", nystrom_params={key: value}, **{key: value})
    with pytest.raises(ValueError, match=re.escape(f"{key}={value!r} is given both as a "
                                                   f"KernelSVD parameter and as "
                                                   f"nystrom_params[{key!r}]")):
        est.fit(X, Z=Z)


def test_other_nystrom_options_do_not_warn(sets):
    X, Z = sets
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = _fit({"n_row_landmarks": 30, "nystrom_params": {"normalize": True}}, X, Z)
    assert est.row_landmarks_.size == 30


def test_parameters_are_ignored_by_the_other_solvers(sets):
    X, Z = sets
    a = KernelSVD(3, solver="dense").fit(X, Z=Z)
    b = KernelSVD(3, solver="dense", n_row_landmarks=10, sampling="kmeans").fit(X, Z=Z)
    np.testing.assert_array_equal(a.singular_values_, b.singular_values_)


def test_parameters_clone_and_get_params():
    est = KernelSVD(solver="nystrom", n_row_landmarks=40, n_col_landmarks=30, sampling="kmeans")
    params = clone(est).get_params()
    assert (params["n_row_landmarks"], params["n_col_landmarks"], params["sampling"]) == \
        (40, 30, "kmeans")
    defaults = KernelSVD().get_params()
    assert all(defaults[k] is None for k in NYSTROM_PARAMS)


def test_grid_search_over_row_landmarks_in_a_pipeline():
    rng = np.random.RandomState(1)
    X = rng.standard_normal((90, 2))
    y = (np.linalg.norm(X, axis=1) > 1.1).astype(int)
    Z = rng.standard_normal((70, 2))  # not of X's length: passed whole to every fold
    pipe = Pipeline([("ksvd", KernelSVD(n_components=4, kernel="rbf", gamma=1.0,
                                        solver="nystrom", random_state=0)),
                     ("clf", LogisticRegression())])
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        search = GridSearchCV(pipe, {"ksvd__n_row_landmarks": [20, 40],
                                     "ksvd__n_col_landmarks": [30]}, cv=3,
                              error_score="raise").fit(X, y, ksvd__Z=Z)
    assert search.best_params_["ksvd__n_row_landmarks"] in (20, 40)
    fitted = search.best_estimator_.named_steps["ksvd"]
    assert fitted.row_landmarks_.size == search.best_params_["ksvd__n_row_landmarks"]
    assert fitted.col_landmarks_.size == 30
    assert len(search.cv_results_["params"]) == 2


# ------------------------------------------------------------------ callable kernel parameters
def _dot(X, Z):
    return X @ Z.T


@pytest.mark.parametrize("kw", [{"kernel_params": {"gamma": 0.5}}, {"gamma": 0.5}],
                         ids=["kernel_params", "estimator-gamma"])
def test_gamma_with_a_callable_kernel_is_a_clear_error(sets, kw):
    X, Z = sets
    with pytest.raises(ValueError, match=r"gamma.*callable kernel.*functools\.partial"):
        KernelSVD(kernel=_dot, **kw).fit(X, Z=Z)


def test_callable_kernel_params_error_names_the_flags():
    from asymkern.kernels import get_kernel

    with pytest.raises(ValueError, match=r"\['coef0', 'gamma'\].*is_symmetric"):
        get_kernel(_dot, gamma=0.5, coef0=1.0)
    with pytest.raises(ValueError, match=r"kernel_x_params \['gamma'\]"):
        from asymkern.kernels import resolve_kernel

        resolve_kernel(_dot, {"gamma": 0.5}, name="kernel_x")


def test_callable_kernel_flags_and_partial_are_accepted(sets):
    import functools

    from asymkern.kernels import get_kernel

    X, Z = sets
    k = get_kernel(_dot, is_symmetric=True, is_psd=True)
    assert k.is_symmetric and k.is_psd
    assert not get_kernel(_dot).is_symmetric and not get_kernel(_dot).is_psd  # unflagged

    def scaled(X, Z, gamma):
        return np.exp(gamma * (X @ Z.T))

    a = KernelSVD(3, kernel=functools.partial(scaled, gamma=0.5), solver="dense").fit(X, Z=Z)
    G = np.exp(0.5 * X @ Z.T)
    np.testing.assert_allclose(a.singular_values_, np.linalg.svd(G, compute_uv=False)[:3],
                               rtol=1e-10)


def test_rkhs_operator_callable_with_gamma_is_a_clear_error():
    from asymkern.operators import as_rkhs_kernel

    with pytest.raises(ValueError, match=r"\['gamma'\] cannot be given with a callable"):
        as_rkhs_kernel(_dot, {"gamma": 1.0})
    assert as_rkhs_kernel(_dot).is_symmetric  # operators take a callable as symmetric PSD


# ----------------------------------------------------------------- real polynomial degree
@pytest.mark.parametrize("degree", [3.1, 0.5, 2.0, 0, 1.5])
@pytest.mark.parametrize("coef0", [1.0, 2.5])
def test_real_degree_matches_scikit_learn(degree, coef0):
    from sklearn.metrics.pairwise import polynomial_kernel

    from asymkern.kernels import get_kernel

    rng = np.random.RandomState(3)
    X, Z = np.abs(rng.standard_normal((12, 4))), np.abs(rng.standard_normal((9, 4)))
    got = get_kernel("poly", degree=degree, gamma=0.3, coef0=coef0)(X, Z)
    if degree >= 1:  # scikit-learn's polynomial_kernel takes a real degree >= 1
        ref = polynomial_kernel(X, Z, degree=degree, gamma=0.3, coef0=coef0)
    else:
        ref = (0.3 * X @ Z.T + coef0) ** float(degree)
    np.testing.assert_allclose(got, ref, rtol=1e-13)
    assert np.isfinite(got).all()


def test_integral_degree_stays_an_exact_integer_power():
    from asymkern.kernels import PolynomialKernel

    rng = np.random.RandomState(4)
    X, Z = rng.standard_normal((10, 3)), rng.standard_normal((8, 3))  # negative bases
    a = PolynomialKernel(degree=3, gamma=1.0, coef0=-0.5)(X, Z)
    b = PolynomialKernel(degree=3.0, gamma=1.0, coef0=-0.5)(X, Z)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a, (X @ Z.T - 0.5) ** 3, rtol=1e-12, atol=1e-14)
    assert np.isfinite(a).all() and (a < 0).any()  # negative bases: defined for an int power
    assert PolynomialKernel(degree=2.0).is_psd and not PolynomialKernel(degree=2.5).is_psd


def test_non_integer_degree_with_negative_base_raises_naming_degree():
    from asymkern.kernels import KernelMatrix, PolynomialKernel

    rng = np.random.RandomState(5)
    X, Z = rng.standard_normal((10, 3)), rng.standard_normal((8, 3))
    k = PolynomialKernel(degree=2.5, gamma=1.0, coef0=0.0)
    with pytest.raises(ValueError, match=r"degree=2\.5 is not an integer.*negative"):
        k(X, Z)
    with pytest.raises(ValueError, match=r"degree=2\.5"):
        KernelMatrix(k, X, Z).to_array()
    with pytest.raises(ValueError, match=r"degree=2\.5"):
        KernelSVD(2, kernel="poly", kernel_params={"degree": 2.5, "coef0": 0.0}).fit(X, Z=Z)


def test_real_degree_on_torch_matches_numpy():
    torch = pytest.importorskip("torch")
    rng = np.random.RandomState(6)
    X, Z = np.abs(rng.standard_normal((30, 3))), np.abs(rng.standard_normal((25, 3)))
    kw = dict(n_components=2, kernel="poly", kernel_params={"degree": 2.5, "coef0": 1.0},
              solver="dense")
    a = KernelSVD(**kw).fit(X, Z=Z)
    b = KernelSVD(**kw).fit(torch.as_tensor(X), Z=torch.as_tensor(Z))
    np.testing.assert_allclose(b.singular_values_.cpu().numpy(), a.singular_values_,
                               rtol=1e-10)
    with pytest.raises(ValueError, match=r"degree=2\.5 is not an integer"):
        KernelSVD(2, kernel="poly", kernel_params={"degree": 2.5, "coef0": -5.0},
                  solver="dense").fit(torch.as_tensor(X), Z=torch.as_tensor(Z))
