"""Platt scaling: class probabilities from the decision values of a margin classifier.

Used by the classifiers whose natural output is a decision value (LS-SVM, AsK-LS, Nyström SVC)
to provide ``predict_proba``, as scikit-learn's ``SVC(probability=True)`` does: a sigmoid
P(y = 1 | f) = 1 / (1 + exp(A f + B)) is fitted by maximum likelihood to *out-of-sample*
decision values (from an internal cross-validation, so that the sigmoid is not fitted to
optimistic training-set values), with Platt's smoothed targets (Platt 1999; the Newton method
with backtracking of Lin, Lin & Weng 2007, "A note on Platt's probabilistic outputs for support
vector machines"). Several classes: one sigmoid per one-vs-rest decision value, rows normalised
to sum to one.
"""

from __future__ import annotations

import numpy as np


def fit_sigmoid(f: np.ndarray, positive: np.ndarray, max_iter: int = 100) -> tuple[float, float]:
    """Platt's sigmoid parameters (A, B) for decision values ``f`` and boolean labels.

    Minimises the cross-entropy of p_i = 1/(1 + exp(A f_i + B)) against the smoothed targets
    t₊ = (N₊ + 1)/(N₊ + 2), t₋ = 1/(N₋ + 2) by Newton's method with a backtracking line search
    (Lin, Lin & Weng 2007, Algorithm 1), written in the overflow-free form of that paper.
    """
    f = np.asarray(f, dtype=np.float64).ravel()
    positive = np.asarray(positive, dtype=bool).ravel()
    n_pos = int(positive.sum())
    n_neg = positive.size - n_pos
    t = np.where(positive, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    A, B = 0.0, float(np.log((n_neg + 1.0) / (n_pos + 1.0)))

    def objective(a: float, b: float) -> float:
        z = f * a + b
        return float(np.sum(np.where(z >= 0, t * z + np.log1p(np.exp(-z)),
                                     (t - 1.0) * z + np.log1p(np.exp(z)))))

    value = objective(A, B)
    sigma = 1e-12  # Levenberg-style shift keeping the Hessian positive definite
    for _ in range(max_iter):
        z = f * A + B
        ez = np.exp(-np.abs(z))
        p = np.where(z >= 0, ez / (1.0 + ez), 1.0 / (1.0 + ez))  # 1/(1 + exp(z))
        q = 1.0 - p
        d2 = p * q
        h11 = float(np.dot(f * f, d2)) + sigma
        h22 = float(d2.sum()) + sigma
        h21 = float(np.dot(f, d2))
        d1 = t - p
        g1 = float(np.dot(f, d1))
        g2 = float(d1.sum())
        if abs(g1) < 1e-5 and abs(g2) < 1e-5:
            break
        det = h11 * h22 - h21 * h21
        dA = -(h22 * g1 - h21 * g2) / det
        dB = -(-h21 * g1 + h11 * g2) / det
        gd = g1 * dA + g2 * dB
        step = 1.0
        while step >= 1e-10:
            new = objective(A + step * dA, B + step * dB)
            if new < value + 1e-4 * step * gd:
                A, B, value = A + step * dA, B + step * dB, new
                break
            step /= 2.0
        else:
            break
    return A, B


class PlattCalibration:
    """Sigmoids fitted to decision values; ``predict_proba`` maps new decision values.

    Parameters
    ----------
    decision : (n,) or (n, n_classes) array
        Out-of-sample decision values (one column per class for more than two classes, the
        positive class's value for two).
    y_index : (n,) int array
        Class index of each sample in ``classes_``.
    n_classes : int
    """

    def __init__(self, decision, y_index, n_classes: int):
        decision = np.asarray(decision, dtype=np.float64)
        y_index = np.asarray(y_index)
        if n_classes == 2:
            self.coef_ = np.array([fit_sigmoid(decision.ravel(), y_index == 1)])
        else:
            self.coef_ = np.array([fit_sigmoid(decision[:, k], y_index == k)
                                   for k in range(n_classes)])
        self.n_classes = n_classes

    def predict_proba(self, decision) -> np.ndarray:
        """Class probabilities (rows sum to one) for decision values shaped as in fitting."""
        decision = np.asarray(decision, dtype=np.float64)
        if self.n_classes == 2:
            A, B = self.coef_[0]
            p1 = _sigmoid(decision.ravel(), A, B)
            return np.column_stack([1.0 - p1, p1])
        P = np.column_stack([_sigmoid(decision[:, k], *self.coef_[k])
                             for k in range(self.n_classes)])
        s = P.sum(axis=1, keepdims=True)
        P = np.divide(P, s, out=np.full_like(P, 1.0 / self.n_classes), where=s > 0)
        return P


def _sigmoid(f: np.ndarray, A: float, B: float) -> np.ndarray:
    """1 / (1 + exp(A f + B)) without overflow."""
    z = A * f + B
    ez = np.exp(-np.abs(z))
    return np.where(z >= 0, ez / (1.0 + ez), 1.0 / (1.0 + ez))
