"""Estimators of RKHS operators from data (Mollenhauer et al. (2020), §4), each exposing its
operator's SVD/EVD.

Every estimator builds an :class:`~asymkern.operators.EmpiricalOperator` ``operator_`` = Ψ B Φᵀ in
``fit`` and offers ``svd``/``eig`` (delegated to it) plus what a user of that operator expects:

============================  ==================================================================
estimator                     B (S = Ψ B Φᵀ), Mollenhauer et al. (2020)
============================  ==================================================================
CovarianceOperator            I/n, Ψ = Φ (§4.2) — eigenvalues/Mercer eigenfunctions (Ex. 3.10)
CrossCovarianceOperator       I/n (§4.2) — singular values/functions (Ex. 3.16)
ConditionalMeanEmbedding      (G_Φ + nεI)⁻¹ (§4.3, Tikhonov) — E[g(Y) | X = x]
KoopmanOperator               (G_Φ + nεI)⁻¹ with the roles of X_t, X_{t+τ} swapped (§4.4);
                              PCR/RRR: rank-r U Vᵀ (Kostic et al. 2022), see the class
PerronFrobeniusOperator       G_ΦΨ⁻¹ (G_Φ + nεI)⁻¹ G_ΦΨ (§4.4);
                              PCR/RRR: V Uᵀ, the adjoint of the Koopman U Vᵀ, see the class
KernelCCA                     (G_Ψ + nεI)^{-1/2} (G_Φ + nεI)^{-1/2} (App. A.2, regularised)
============================  ==================================================================

The Tikhonov parameter ε (``alpha``; ``regularization`` is its deprecated former name)
regularises the covariance operator, C + εI; on the
Gram matrices it appears as G + nεI. Inverses are never formed: B is a LinearOperator backed by a
Cholesky (or LU) factorisation, or by the eigendecomposition the matrix square roots need.

Conventions (scikit-learn)
--------------------------
* **The second data set is** ``y``. For :class:`CrossCovarianceOperator` and :class:`KernelCCA`
  it is the *paired second view* (samples (x_i, y_i), as scikit-learn's ``CCA``/``PLSSVD``):
  ``fit(X, y)``; ``transform(X)`` gives the X scores, ``transform(X, y)`` the pair
  ``(x_scores, y_scores)``. For :class:`ConditionalMeanEmbedding` it is the output sample
  (any number of columns, or 1-D: a regressor's target). For :class:`KoopmanOperator` and
  :class:`PerronFrobeniusOperator` it is the *time-shifted snapshots* y_i = Ξ^τ(x_i):
  ``fit(X)`` (y=None) takes X as one trajectory and pairs (x_t, x_{t+lag}); ``fit(X, y)``
  requires y of X's shape (n, d) — a 1-D y only when d = 1 — and refuses anything else (e.g.
  class labels) with a ``ValueError`` naming y and the expected shape, never fitting a
  different model silently. The former keyword ``Y=`` is a deprecated alias (FutureWarning).
* ``n_components`` (``n_landmarks``) larger than the numerical rank (the number of samples) is
  clipped with a :class:`~asymkern.exceptions.ClippedParameterWarning`; the value used is
  ``n_components_`` (``n_landmarks_``), and the transformers' outputs have ``n_components_``
  columns (``get_feature_names_out``).
* ``random_state``: None, an int or a ``numpy.random.RandomState`` (a ``Generator`` is refused).
* Sparse (CSR) X, and y, are accepted where the kernel accepts them (``kernel.accepts_sparse``;
  exact estimators only — the landmark paths and ConditionalMeanEmbedding's X are dense); the
  ``input_tags.sparse`` tag says so.
* Pickles hold the samples and the O(n·k) coefficients only: the n×n Gram matrices and
  factorisations are recomputed from the samples on first use after unpickling.

Modules
-------
The estimators live in topic modules, re-exported here and by :mod:`asymkern.operators`:
``covariance`` (:class:`CovarianceOperator`, :class:`CrossCovarianceOperator`), ``cca``
(:class:`KernelCCA`), ``embedding`` (:class:`ConditionalMeanEmbedding`), ``koopman``
(:class:`KoopmanOperator`), ``perron_frobenius`` (:class:`PerronFrobeniusOperator`),
``transfer`` (what the two transfer operators share) and ``_common`` (what every estimator
shares).
"""

from __future__ import annotations

from .cca import KernelCCA
from .covariance import CovarianceOperator, CrossCovarianceOperator
from .embedding import ConditionalMeanEmbedding
from .koopman import KoopmanOperator
from .perron_frobenius import PerronFrobeniusOperator
from .transfer import IllConditionedLaggedGramWarning

__all__ = ["ConditionalMeanEmbedding", "CovarianceOperator", "CrossCovarianceOperator",
           "IllConditionedLaggedGramWarning", "KernelCCA", "KoopmanOperator",
           "PerronFrobeniusOperator"]
