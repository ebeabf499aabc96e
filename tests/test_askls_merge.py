"""AsK-LS merge rules against a hand-written dense reference of paper 001.

The reference builds the (2n + 2) matrix of eq. (6) with H_ij = y_i κ(x_i, x_j) y_j, solves it
by a dense LU (or, for the paper's ill-conditioning rule, by the ridge-regularised normal
equations (AᵀA + λI)⁻¹Aᵀb of the authors' MATLAB), evaluates eq. (7)

    f_s(x) = Σ_i β_i y_i κ(x, x_i) + b1,    f_t(x) = Σ_i α_i y_i κ(x_i, x) + b2

and applies the decision rule by hand: sign for two classes (+1 = the second sorted class),
arg max over the one-vs-rest problems of the sorted classes otherwise. Nothing of the
package's solvers or label encoding is used.

Background (report of a below-chance ``merge='sum'`` on a directed SBM): the estimator
equals this reference there too; the low score is the method's on that heterophilous graph
(see ``test_sum_below_chance_on_heterophilous_sbm_is_the_papers_rule``).
"""

import warnings

import numpy as np
import pytest

from asymkern.datasets.graphs import directed_sbm
from asymkern.kernels import DirectedGraphKernel
from asymkern.lssvm import AsKLSClassifier, IllConditionedWarning, KernelPair


def _paper_solve(K, y, C, ridge=None):
    """(b1, b2, α, β) of eq. (6); ``ridge``: the normal-equation fallback instead of LU."""
    n = K.shape[0]
    H = y[:, None] * K * y[None, :]
    A = np.zeros((2 * n + 2, 2 * n + 2))
    A[0, 2:n + 2] = y
    A[1, n + 2:] = y
    A[2:n + 2, 0] = y
    A[n + 2:, 1] = y
    A[2:n + 2, 2:n + 2] = np.eye(n) / C
    A[2:n + 2, n + 2:] = H
    A[n + 2:, 2:n + 2] = H.T
    A[n + 2:, n + 2:] = np.eye(n) / C
    rhs = np.concatenate([[0.0, 0.0], np.ones(n), np.ones(n)])
    if ridge is None:
        x = np.linalg.solve(A, rhs)
    else:
        x = np.linalg.solve(A.T @ A + ridge * np.eye(2 * n + 2), A.T @ rhs)
    return x[0], x[1], x[2:n + 2], x[n + 2:]


def _paper_predict(K, K_test_train, K_train_test, labels, C, merge, ridge=None):
    """Merged decision values (m,) or (m, k) and predicted labels, by hand."""
    classes = np.unique(labels)
    if classes.size == 2:
        problems = [classes[1]]
    else:
        problems = list(classes)
    cols = []
    for c in problems:
        y = np.where(labels == c, 1.0, -1.0)
        b1, b2, al, be = _paper_solve(K, y, C, ridge)
        fs = K_test_train @ (be * y) + b1
        ft = K_train_test.T @ (al * y) + b2
        cols.append({"sum": fs + ft, "source": fs, "target": ft}[merge])
    F = np.column_stack(cols)
    if classes.size == 2:
        return F[:, 0], np.where(F[:, 0] > 0, classes[1], classes[0])
    return F, classes[np.argmax(F, axis=1)]


def _asym_data(n, m, rng):
    """An asymmetric kernel κ(i, j) = exp(-|x_i - z_j|²) · (1 + tanh(x_i·w − z_j·w)) on R²."""
    w = np.array([1.0, -0.5])
    X = rng.normal(size=(n + m, 2))

    def kern(P, Q):
        d = ((P[:, None, :] - Q[None, :, :]) ** 2).sum(-1)
        return np.exp(-d) * (1.0 + np.tanh((P @ w)[:, None] - (Q @ w)[None, :]))

    G = kern(X, X)
    tr, te = np.arange(n), np.arange(n, n + m)
    return X, G[np.ix_(tr, tr)], G[np.ix_(te, tr)], G[np.ix_(tr, te)]


LABELSETS = {
    "binary-int": np.array([3, 7]),
    "binary-str": np.array(["yes", "no"]),
    "multi-int": np.array([9, 3, 7]),
    "multi-str": np.array(["b", "c", "a", "d"]),
}


@pytest.mark.parametrize("labelset", sorted(LABELSETS))
@pytest.mark.parametrize("merge", ["sum", "source", "target"])
@pytest.mark.parametrize("fallback", [False, True])
def test_merge_matches_dense_paper_reference(labelset, merge, fallback):
    rng = np.random.RandomState(0)
    n, m = 48, 30
    X, K, Kte, Ktr_te = _asym_data(n, m, rng)
    values = LABELSETS[labelset]
    # labels from the data (so the problem is learnable), mapped onto the label set
    score = X[:n, 0] + 0.3 * X[:n, 1] + 0.3 * rng.normal(size=n)
    bins = np.quantile(score, np.linspace(0, 1, values.size + 1)[1:-1])
    labels = values[np.digitize(score, bins)]
    K0, labels0 = K.copy(), labels.copy()
    C = 2.0
    kw = {"rcond_tol": 1.0, "ridge": 0.5} if fallback else {"rcond_tol": 0.0}
    est = AsKLSClassifier(kernel="precomputed", C=C, merge=merge, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore" if fallback else "error", IllConditionedWarning)
        est.fit(K, labels)
    assert est.fallback_ is fallback
    pair = KernelPair(test_train=Kte, train_test=Ktr_te)
    F_ref, pred_ref = _paper_predict(K, Kte, Ktr_te, labels, C, merge,
                                     ridge=0.5 if fallback else None)
    F = est.decision_function(pair)
    assert F.shape == F_ref.shape
    np.testing.assert_allclose(F, F_ref, rtol=1e-7, atol=1e-9)
    pred = est.predict(pair)
    np.testing.assert_array_equal(pred, pred_ref)
    assert pred.dtype == labels.dtype
    np.testing.assert_array_equal(est.classes_, np.unique(values))
    # on training points too; and the rule learns something on this data (above chance)
    _, pred_tr = _paper_predict(K, K, K, labels, C, merge, ridge=0.5 if fallback else None)
    np.testing.assert_array_equal(est.predict(KernelPair(K, K)), pred_tr)
    assert np.mean(pred_tr == labels) > 1.2 / values.size
    np.testing.assert_array_equal(K, K0)  # inputs untouched
    np.testing.assert_array_equal(labels, labels0)


def _sbm():
    A, labels = directed_sbm(n_per_class=60, n_classes=3, p_forward=0.12, p_backward=0.01,
                             p_within=0.04, random_state=0)
    n = A.shape[0]
    rng = np.random.RandomState(0)
    perm = rng.permutation(n)
    train, test = np.sort(perm[:120]), np.sort(perm[120:])
    Ad = A.toarray()
    G = (Ad.T + np.eye(n)) / (Ad.sum(axis=0) + 1.0)[:, None]  # D⁻¹(Aᵀ + I), §4.2
    return A, G, labels, train, test


@pytest.mark.parametrize("C, fallback", [(0.1, False), (1.0, False), (1.0, True)])
@pytest.mark.parametrize("names", [None, np.array(["x", "y", "z"])])
def test_sum_below_chance_on_heterophilous_sbm_is_the_papers_rule(C, fallback, names):
    """Directed SBM whose class c links to class c+1: a node's kernel neighbours are mostly
    of another class, so the paper's f_s + f_t (and f_s, f_t alone) vote for the wrong class
    and score below chance; the estimator equals the hand-computed paper rule exactly (not a
    sign or class-order error), while stacking learns the per-class signs."""
    A, G, labels, train, test = _sbm()
    y = labels if names is None else names[labels]
    nodes = np.arange(A.shape[0])[:, None]
    K = G[np.ix_(train, train)]
    kw = {"rcond_tol": 1.0, "ridge": 1.0} if fallback else {"rcond_tol": 0.0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IllConditionedWarning)
        est = AsKLSClassifier(kernel=DirectedGraphKernel(A), C=C, merge="sum", **kw).fit(
            nodes[train], y[train])
        stack = AsKLSClassifier(kernel=DirectedGraphKernel(A), C=C, merge="stack", cv=5,
                                random_state=0, **kw).fit(nodes[train], y[train])
    assert est.fallback_ is fallback
    F_ref, pred_ref = _paper_predict(K, G[np.ix_(test, train)], G[np.ix_(train, test)],
                                     y[train], C, "sum", ridge=1.0 if fallback else None)
    # the sparse graph kernel's fallback is damped LSQR (tolerance 1e-13): not bit-exact
    np.testing.assert_allclose(est.decision_function(nodes[test]), F_ref,
                               rtol=1e-6 if fallback else 1e-7, atol=1e-8 if fallback else 1e-9)
    np.testing.assert_array_equal(est.predict(nodes[test]), pred_ref)
    acc_sum = np.mean(pred_ref == y[test])
    acc_stack = np.mean(stack.predict(nodes[test]) == y[test])
    assert acc_sum < 1 / 3 < acc_stack
