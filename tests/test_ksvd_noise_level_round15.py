"""The noise level of a centred KernelSVD fit (round 15: the full Cora reproduction, float32
SNE kernel at the bandwidth its CV picks, warned that "only 0 of the 1000 singular values
exceed the numerical noise level 0.000323 ... components 1..1000 carry no information",
although all 1000 agree with a float64 fit to 4e-7 relative and give the best Micro-F1).

The previous rule multiplied max(n, m)·eps by the uncentred scale |mean(G)|·√(nm): the SVD's
error factor max(n, m) applied to G's entry errors, which centring keeps only up to
eps·‖G‖_F. The rule now bounds the two separately. It must stay conservative: every
component it calls informative agrees with the float64 fit."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from asymkern.datasets.graphs import directed_sbm, row_normalized_adjacency
from asymkern.decomposition import KernelSVD
from asymkern.experiments.ksvd_graphs import reference_bandwidth

A, _ = directed_sbm(n_per_class=100, n_classes=3, random_state=0)
P = row_normalized_adjacency(A)
G0 = reference_bandwidth(P)


def _fit(dtype, c, r=50):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        est = KernelSVD(r, kernel="sne", kernel_params={"bandwidth": c * G0}, center=True,
                        solver="dense").fit(P.astype(dtype))
    noise = [str(w.message) for w in rec if "noise level" in str(w.message)]
    return est, noise


def test_informative_float32_components_are_not_called_noise():
    """Bandwidth 32·γ0: the old rule called all 50 components noise; they agree with the
    float64 fit to 3e-5 relative."""
    e32, noise = _fit(np.float32, 32)
    e64, _ = _fit(np.float64, 32)
    assert noise == []
    assert e32.n_informative_ == 50
    np.testing.assert_allclose(e32.singular_values_, e64.singular_values_, rtol=1e-3)


@pytest.mark.parametrize("c", [8, 32, 64, 1e3, 1e5])
def test_the_rule_stays_conservative(c):
    """Whatever it calls informative matches float64 to 1 %; a huge bandwidth is still
    flagged, with the bandwidth named."""
    e32, noise = _fit(np.float32, c)
    e64, _ = _fit(np.float64, c)
    k = e32.n_informative_
    np.testing.assert_allclose(e32.singular_values_[:k], e64.singular_values_[:k], rtol=1e-2)
    if c >= 1e3:
        assert k < 5 and len(noise) == 1 and "bandwidth" in noise[0]


@pytest.mark.parametrize("c", [2.0**-400, 1.0, 2.0**400])
def test_weighted_fit_noise_level_scales_with_the_weights(c):
    """A weighted fit's σ_k are those of W^{1/2} G̃ W_z^{1/2}: a common weight c scales them by
    √c, and the noise level scales with them. Both the previous rule and the first version of
    the new one compared the unweighted means with the weighted σ, and called all three
    components of a well-conditioned fit noise under weights 2⁻⁴⁰⁰."""
    rng = np.random.default_rng(3)
    X, Z = rng.standard_normal((10, 3)), rng.standard_normal((8, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        base = KernelSVD(3, kernel="rbf", center=True, solver="dense").fit(X, Z=Z)
        est = KernelSVD(3, kernel="rbf", center=True, solver="dense").fit(
            X, Z=Z, sample_weight=np.full(10, c))
    assert est.n_informative_ == base.n_informative_ == 3
    np.testing.assert_allclose(est.singular_values_, np.sqrt(c) * base.singular_values_,
                               rtol=1e-12)
