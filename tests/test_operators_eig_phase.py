"""The reduced-rank transfer operators fix each eigenvector's free sign (complex phase) by a
rule, so that their eigenfunctions do not depend on LAPACK's choice of it (which changed with
the number of BLAS threads and with the Dask chunking)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sla

from asymkern.operators import KoopmanOperator, PerronFrobeniusOperator, _koopman


@pytest.fixture(scope="module")
def trajectory():
    """A damped rotation: complex-conjugate eigenvalue pairs besides real ones."""
    rng = np.random.default_rng(3)
    R = np.array([[np.cos(0.3), -np.sin(0.3), 0], [np.sin(0.3), np.cos(0.3), 0], [0, 0, 0.9]])
    T = np.zeros((300, 3))
    T[0] = [1, 0, 0.5]
    for t in range(1, 300):
        T[t] = 0.97 * T[t - 1] @ R.T + 0.05 * rng.normal(size=3)
    return T, rng.normal(size=(20, 3))


_EIG = sla.eig


def _flipped_eig(M, **kwargs):
    lam, Z = _EIG(M, **kwargs)
    return lam, -Z  # another valid choice of every eigenvector's sign


CASES = [(KoopmanOperator, "rrr", None), (KoopmanOperator, "pcr", None),
         (KoopmanOperator, "rrr", 40), (KoopmanOperator, "pcr", 40),
         (PerronFrobeniusOperator, "rrr", None), (PerronFrobeniusOperator, "pcr", None)]


@pytest.mark.parametrize("cls, estimator, n_landmarks", CASES,
                         ids=[f"{c.__name__}-{e}-{m}" for c, e, m in CASES])
def test_eigenfunctions_do_not_depend_on_lapack_signs(cls, estimator, n_landmarks, trajectory,
                                                      monkeypatch):
    T, Xt = trajectory
    kw = dict(estimator=estimator, rank=6, n_components=5)
    if n_landmarks:
        kw.update(n_landmarks=n_landmarks, random_state=0)
    a = cls(**kw).fit(T)
    monkeypatch.setattr(_koopman.sla, "eig", _flipped_eig)
    b = cls(**kw).fit(T)
    assert np.iscomplexobj(a.eigenvalues_)  # the complex pair is among the components
    np.testing.assert_allclose(b.eigenvalues_, a.eigenvalues_, rtol=1e-12)
    fa, fb = a.eigenfunctions_(Xt), b.eigenfunctions_(Xt)
    scale = np.abs(fa).max(axis=0)
    assert np.all(np.abs(fb - fa).max(axis=0) <= 1e-10 * scale)
    if getattr(a, "left_eigenfunctions_", None) is not None:
        la, lb = a.left_eigenfunctions_(Xt), b.left_eigenfunctions_(Xt)
        assert np.all(np.abs(lb - la).max(axis=0) <= 1e-10 * np.abs(la).max(axis=0))
    if hasattr(a, "modes"):
        ma, mb = a.modes(), b.modes()
        np.testing.assert_allclose(mb, ma, rtol=0, atol=1e-10 * np.abs(ma).max())


def test_the_phase_rule():
    rng = np.random.default_rng(0)
    basis, Z = rng.normal(size=(30, 4)), rng.normal(size=(4, 3)) + 1j * rng.normal(size=(4, 3))
    Zinv = np.linalg.pinv(Z)
    Zf, Zinvf = _koopman.fix_phases(basis, Z, Zinv)
    C = basis @ Zf
    top = C[np.argmax(np.abs(C), axis=0), np.arange(3)]
    assert np.all(np.abs(top.imag) <= 1e-14 * np.abs(top)) and np.all(top.real > 0)
    np.testing.assert_allclose(Zinvf @ Zf, Zinv @ Z, atol=1e-12)  # still Z's inverse rows
    np.testing.assert_allclose(np.abs(Zf), np.abs(Z))  # a unit-modulus scaling
    Z2, _ = _koopman.fix_phases(-basis, -Z)  # the basis's own signs do not matter
    np.testing.assert_allclose(basis @ Zf, (-basis) @ Z2, atol=1e-12)
