"""Kullback–Leibler kernels between distributions estimated per sample (He et al., 2023, §4.1, eq.
14):

    κ(s_i, s_j) = exp(−a · KL(P_i ‖ P_j)),

asymmetric because KL is. Two estimators of P_i:

* :class:`KLHistogramKernel` — each sample is a histogram / categorical distribution (a row of
  non-negative counts or probabilities); KL has the closed form Σ_k p_k log(p_k / q_k). A small
  ``eps`` is added to every bin before normalising so empty bins of Q give a finite KL.
* :class:`GMMKLKernel` — each sample is a *set* of vectors summarised by a diagonal Gaussian
  mixture (scikit-learn ``GaussianMixture``, as the paper's 256-component GMMs on DCT features);
  :func:`fit_gmm_features` fits one mixture per set and packs its parameters into a row, and the
  kernel estimates KL(P‖Q) by Monte Carlo, (1/N) Σ_{s∼P} [log p(s) − log q(s)], with N draws
  from P that depend only on P (so κ is a deterministic function of its two arguments).

``symmetric=True`` gives the symmetrised kernel exp(−a·(KL(P‖Q) + KL(Q‖P))) of Moreno et al.,
the baseline that SVM / LS-SVM need.
"""

from __future__ import annotations

import hashlib

import numpy as np
from scipy.special import logsumexp

from .base import Kernel, check_bool, check_int, check_real


class _ExpDivergenceKernel(Kernel):
    """κ(x, z) = exp(−a·D(x, z)) of a divergence D (``divergence``), symmetrised when
    ``symmetric``.

    Subclasses define ``divergence(X, Z)``, ``_check_params`` and the attributes ``a`` and
    ``symmetric``.
    """

    a: float
    symmetric: bool

    @property
    def is_symmetric(self) -> bool:  # type: ignore[override]
        return bool(self.symmetric)

    def divergence(self, X, Z) -> np.ndarray:
        raise NotImplementedError

    def _raw(self, X, Z):
        self._check_params()
        K = self.divergence(X, Z)
        K *= -float(self.a)
        return np.exp(K, out=K)


class KLHistogramKernel(_ExpDivergenceKernel):
    """KL kernel exp(−a·KL(p_x ‖ p_z)) between histogram rows (closed form).

    He et al. (2023), Eq. (14): κ(s_i, s_j) = exp(−a·KL(P_i ‖ P_j)), with
    KL(p ‖ q) = Σ_k p_k log(p_k / q_k). Rows must be non-negative; each is normalised to sum
    1 after adding ``eps`` to every bin. Asymmetric (unless ``symmetric``) and not PSD.

    Parameters
    ----------
    a : float, default 1.0
        Positive finite factor of the divergence.
    eps : float, default 1e-6
        Positive value added to every bin before normalising (finite KL for empty bins).
    symmetric : bool, default False
        Use exp(−a·(KL(P‖Q) + KL(Q‖P))), the symmetrised baseline.

    Raises
    ------
    ValueError
        If a parameter is out of range, or the data hold negative values.

    See Also
    --------
    GMMKLKernel : The same kernel between Gaussian mixtures.

    References
    ----------
    .. [1] M. He, F. He, L. Shi, X. Huang and J. A. K. Suykens, "Learning with Asymmetric
       Kernels: Least Squares and Feature Interpretation", IEEE TPAMI 2023, §4.1, Eq. (14).

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels import KLHistogramKernel
    >>> P = np.array([[1.0, 1.0], [3.0, 1.0]])
    >>> k = KLHistogramKernel(a=1.0)
    >>> K = k(P)
    >>> [round(float(v), 4) for v in np.diag(K)], bool(np.allclose(K, K.T))
    ([1.0, 1.0], False)
    """

    name = "kl_histogram"
    is_psd = False

    def __init__(self, a: float = 1.0, eps: float = 1e-6, symmetric: bool = False):
        self.a = a
        self.eps = eps
        self.symmetric = symmetric
        self._check_params()

    def _check_params(self):
        check_real(self.a, "a", self.name, low=0.0)
        check_real(self.eps, "eps", self.name, low=0.0)
        check_bool(self.symmetric, "symmetric", self.name)

    def _probs(self, X, name):
        X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)
        if np.any(X < 0):
            raise ValueError(f"{name} must hold non-negative histogram counts or probabilities")
        eps = check_real(self.eps, "eps", self.name, low=0.0)
        with np.errstate(over="ignore", divide="ignore"):
            P = X + eps
            s = P.sum(axis=1, keepdims=True)
            # rows whose sum is finite and whose smallest probability eps/s is a normal
            # number: the plain normalisation (P > 0, log P finite and accurate)
            ok = (np.isfinite(s) & (eps / s >= _TINY))[:, 0]
        if ok.all():
            P /= s
            return P, np.log(P)
        return _normalize_log(X, P, s, ok, eps)

    def divergence(self, X, Z) -> np.ndarray:
        """The matrix [KL(p_{x_i} ‖ p_{z_j})].

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n, k)
            Non-negative histograms, one per row.
        Z : array-like or sparse matrix of shape (m, k)
            Non-negative histograms, one per row.

        Returns
        -------
        ndarray of shape (n, m)
            The divergences (plus the reverse ones when ``symmetric``), float64, clipped
            at 0.

        Raises
        ------
        ValueError
            If ``X`` or ``Z`` holds negative values.
        """
        P, logP = self._probs(X, "X")
        Q, logQ = self._probs(Z, "Z")
        D = (P * logP).sum(axis=1)[:, None] - P @ logQ.T
        if self.symmetric:
            D = D + ((Q * logQ).sum(axis=1)[None, :] - logP @ Q.T)
        return np.maximum(D, 0.0)


_TINY = float(np.finfo(np.float64).tiny)
_LN2 = float(np.log(2.0))


def _normalize_log(X: np.ndarray, P: np.ndarray, s: np.ndarray, ok: np.ndarray, eps: float):
    """(P, log P) of the rows of X + eps normalised to sum 1, for rows where the plain
    normalisation fails (``~ok``): the row sum overflows (finite counts near the float
    range) or a probability underflows (log P = −inf would give NaN in Σ p log p).

    Those rows are normalised in the log domain, log p_k = log(x_k + eps) − logsumexp_k
    log(x_k + eps), with x + eps = 2·(x/2 + eps/2) where the sum itself overflows; p_k =
    exp(log p_k) may then underflow to 0, but log p_k stays finite (0·log p = 0, and the KL
    terms p·log q stay finite). The other rows get the plain normalisation (bitwise).
    """
    P = P.copy()
    logP = np.empty_like(P)
    P[ok] /= s[ok]
    logP[ok] = np.log(P[ok])
    bad = ~ok
    Xb = X[bad]
    with np.errstate(over="ignore"):
        A = Xb + eps
    inf = np.isinf(A)
    logA = np.log(A, where=~inf, out=np.zeros_like(A))
    logA[inf] = np.log(Xb[inf] * 0.5 + eps * 0.5) + _LN2
    logPb = logA - logsumexp(logA, axis=1, keepdims=True)
    logP[bad] = logPb
    with np.errstate(under="ignore"):
        P[bad] = np.exp(logPb)
    return P, logP


# ------------------------------------------------------------------------------ GMMs
def fit_gmm_features(sets, n_components: int = 4, *, reg_covar: float = 1e-4,
                     random_state=0, max_iter: int = 100) -> np.ndarray:
    """Fit one diagonal ``GaussianMixture`` per sample set and pack it into a row.

    ``sets``: sequence of (l_i, d) arrays (l_i ≥ n_components). Row layout:
    [weights (m), means (m·d), variances (m·d)] — the input of :class:`GMMKLKernel`.
    """
    from sklearn.mixture import GaussianMixture

    rows = []
    d = None
    for k, S in enumerate(sets):
        S = np.asarray(S, dtype=np.float64)
        if S.ndim != 2 or not np.all(np.isfinite(S)):
            raise ValueError(f"sets[{k}] must be a finite 2-D array (l, d), got shape {S.shape}")
        if d is None:
            d = S.shape[1]
        elif S.shape[1] != d:
            raise ValueError(f"sets[{k}] has {S.shape[1]} features, expected {d}")
        if S.shape[0] < n_components:
            raise ValueError(
                f"sets[{k}] has {S.shape[0]} vectors, fewer than n_components={n_components}"
            )
        gm = GaussianMixture(n_components, covariance_type="diag", reg_covar=reg_covar,
                             random_state=random_state, max_iter=max_iter).fit(S)
        rows.append(np.concatenate([gm.weights_, gm.means_.ravel(), gm.covariances_.ravel()]))
    if not rows:
        raise ValueError("sets is empty")
    return np.vstack(rows)


def _unpack(X, m: int, name: str = "X"):
    """Split GMM rows into weights (n, m), means and variances (n, m, d), validated;
    ``name`` is the argument named in the errors."""
    n, w = X.shape
    if (w - m) % (2 * m) != 0 or w <= m:
        raise ValueError(
            f"GMM rows have {w} columns, which is not m + 2·m·d for n_components m={m}; "
            "build them with fit_gmm_features"
        )
    d = (w - m) // (2 * m)
    W = X[:, :m]
    Mu = X[:, m:m + m * d].reshape(n, m, d)
    Var = X[:, m + m * d:].reshape(n, m, d)
    if np.any(W < 0) or np.any(Var <= 0):
        raise ValueError(
            f"{name}: GMM rows need non-negative weights and positive variances"
        )
    zero = np.flatnonzero(~np.any(W > 0, axis=1))
    if zero.size:
        raise ValueError(
            f"{name}: row {int(zero[0])} has all-zero mixture weights (its first {m} "
            "columns); a mixture needs a positive weight (build the rows with "
            "fit_gmm_features)"
        )
    return W, Mu, Var


def _mixture_weights(W: np.ndarray) -> np.ndarray:
    """The rows of non-negative weights ``W`` (each with a positive entry) scaled to sum 1.

    Divided by the row maximum first, so that weights near the float range do not overflow
    the sum.
    """
    P = W / W.max(axis=1, keepdims=True)
    P /= P.sum(axis=1, keepdims=True)
    return P


def _gmm_logpdf(S, W, Mu, Var):
    """log densities of points S (N, d) under mixtures (n_mix, m, d): returns (n_mix, N).

    The quadratic form Σ (s − mu)²/var is expanded into three products (one GEMM each); to
    avoid cancellation for data far from the origin the points and the means are
    first shifted by the same centre (the mean of S), which leaves (s − mu) unchanged.
    """
    # log N(s | mu, diag var) = −½[d log 2π + Σ log var + Σ (s − mu)²/var]
    c = S.mean(axis=0)
    S = S - c
    Mu = Mu - c
    inv = 1.0 / Var  # (q, m, d)
    const = -0.5 * (Mu.shape[2] * np.log(2 * np.pi) + np.log(Var).sum(axis=2))  # (q, m)
    quad = (
        np.einsum("nd,qmd->qmn", S * S, inv)
        - 2.0 * np.einsum("nd,qmd->qmn", S, Mu * inv)
        + (Mu * Mu * inv).sum(axis=2)[:, :, None]
    )
    with np.errstate(divide="ignore"):  # a component of weight 0 adds nothing: log 0 = −inf
        logw = np.log(W)
    logc = logw[:, :, None] + const[:, :, None] - 0.5 * quad
    return logsumexp(logc, axis=1)


class GMMKLKernel(_ExpDivergenceKernel):
    """KL kernel exp(−a·KL(P_x ‖ P_z)) between diagonal Gaussian mixtures.

    Each sample is a row of :func:`~asymkern.kernels.divergence.fit_gmm_features`,
    [weights (m), means (m·d), variances (m·d)]; weights that do not sum to 1 are scaled to
    sum 1 (the mixture they describe). KL(P ‖ Q) is estimated by Monte Carlo,
    (1/N) Σ_{s∼P} [log p(s) − log q(s)], with N draws from P that depend only on P and
    ``random_state`` (so κ is a deterministic function of its two arguments); He et al.
    (2023), §4.1, Eq. (14).

    Parameters
    ----------
    n_components : int, default 4
        Number of mixture components m per row.
    a : float, default 1.0
        Positive finite factor of the divergence.
    n_samples : int, default 256
        Monte Carlo draws N per estimate.
    random_state : int, default 0
        Non-negative seed of the draws.
    symmetric : bool, default False
        Use exp(−a·(KL(P‖Q) + KL(Q‖P))), the symmetrised baseline.

    Raises
    ------
    ValueError
        If a parameter is out of range, or the rows do not have m + 2·m·d columns with
        non-negative weights and positive variances.

    See Also
    --------
    KLHistogramKernel : The closed-form kernel between histograms.

    References
    ----------
    .. [1] M. He, F. He, L. Shi, X. Huang and J. A. K. Suykens, "Learning with Asymmetric
       Kernels: Least Squares and Feature Interpretation", IEEE TPAMI 2023, §4.1, Eq. (14).

    Examples
    --------
    >>> import numpy as np
    >>> from asymkern.kernels import GMMKLKernel
    >>> from asymkern.kernels.divergence import fit_gmm_features
    >>> rng = np.random.default_rng(0)
    >>> sets = [rng.standard_normal((40, 2)) + c for c in (0.0, 0.5, 3.0)]
    >>> F = fit_gmm_features(sets, n_components=2)
    >>> K = GMMKLKernel(n_components=2, n_samples=64)(F)
    >>> K.shape, bool(K[0, 1] > K[0, 2])
    ((3, 3), True)
    """

    name = "kl_gmm"
    is_psd = False

    def __init__(self, n_components: int = 4, a: float = 1.0, n_samples: int = 256,
                 random_state: int = 0, symmetric: bool = False):
        self.n_components = n_components
        self.a = a
        self.n_samples = n_samples
        self.random_state = random_state
        self.symmetric = symmetric
        self._check_params()

    def _check_params(self):
        check_int(self.n_components, "n_components", self.name, low=1)
        check_real(self.a, "a", self.name, low=0.0)
        check_int(self.n_samples, "n_samples", self.name, low=1)
        check_int(self.random_state, "random_state", self.name, low=0)
        check_bool(self.symmetric, "symmetric", self.name)

    def validate_pair(self, X, Z=None, names=("X", "Z")):
        """Validate the two sets as :meth:`Kernel.validate_pair`, and their GMM rows (the
        layout, non-negative weights with a positive one per row, positive variances) on
        the whole sets, so that an error names the argument and its row.

        Parameters
        ----------
        X : array-like of shape (n, m + 2·m·d)
            Mixtures, one per row (rows of ``fit_gmm_features``).
        Z : array-like of shape (k, m + 2·m·d), optional
            Mixtures, one per row; None (default) returns ``X`` for both.
        names : tuple of str, default ("X", "Z")
            The names used in error messages.

        Returns
        -------
        X, Z : ndarray
            The validated sets.

        Raises
        ------
        ValueError
            If the data are not finite 2-D arrays or a row is not a valid mixture.
        """
        X, Z = super().validate_pair(X, Z, names)
        m = check_int(self.n_components, "n_components", self.name, low=1)
        _unpack(np.asarray(X, dtype=np.float64), m, names[0])
        if Z is not X:
            _unpack(np.asarray(Z, dtype=np.float64), m, names[1])
        return X, Z

    def _draws(self, w, mu, var):
        seed = hashlib.sha256(np.ascontiguousarray(np.concatenate(
            [w, mu.ravel(), var.ravel()])).tobytes()).digest()
        rng = np.random.default_rng([int(self.random_state), int.from_bytes(seed[:8], "little")])
        N = int(self.n_samples)
        with np.errstate(over="ignore"):
            total = w.sum()
        if not np.isfinite(total):  # weights near the float range: scale by 2^-e (exact)
            w = np.ldexp(w, -np.frexp(w.max())[1])
            total = w.sum()
        p = w / total
        comp = rng.choice(p.size, size=N, p=p)
        return mu[comp] + rng.standard_normal((N, mu.shape[1])) * np.sqrt(var[comp])

    def _kl_rows(self, X, Z, names=("X", "Z")):
        m = int(self.n_components)
        Wx, Mx, Vx = _unpack(np.asarray(X, dtype=np.float64), m, names[0])
        Wz, Mz, Vz = _unpack(np.asarray(Z, dtype=np.float64), m, names[1])
        # the densities use weights normalised to sum 1 (the draws already do): a row
        # whose weights sum to c ≠ 1 is the same mixture, not c times its density
        Px, Pz = _mixture_weights(Wx), _mixture_weights(Wz)
        D = np.empty((X.shape[0], Z.shape[0]))
        for i in range(X.shape[0]):
            S = self._draws(Wx[i], Mx[i], Vx[i])
            own = _gmm_logpdf(S, Px[i:i + 1], Mx[i:i + 1], Vx[i:i + 1])[0]
            other = _gmm_logpdf(S, Pz, Mz, Vz)
            D[i] = (own[None, :] - other).mean(axis=1)
        return D

    def divergence(self, X, Z) -> np.ndarray:
        """Monte-Carlo estimate of [KL(P_{x_i} ‖ P_{z_j})] (clipped at 0).

        Parameters
        ----------
        X : array-like of shape (n, m + 2·m·d)
            Mixtures, one per row (rows of ``fit_gmm_features``).
        Z : array-like of shape (k, m + 2·m·d)
            Mixtures, one per row.

        Returns
        -------
        ndarray of shape (n, k)
            The estimated divergences (plus the reverse ones when ``symmetric``).

        Raises
        ------
        ValueError
            If the rows do not have the layout of ``fit_gmm_features``.
        """
        D = self._kl_rows(X, Z)
        if self.symmetric:
            D = D + self._kl_rows(Z, X, ("Z", "X")).T
        return np.maximum(D, 0.0)
