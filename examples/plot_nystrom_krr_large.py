"""
Nyström kernel ridge regression on 100 000 rows: GSA against LLA
================================================================

:class:`~asymkern.nystrom.NystromKernelRidge` fits kernel ridge regression through
:math:`m` landmarks (Li, Liu and Zhang). ``mode='lla'`` (low-rank linearisation) maps every point to
:math:`s \\le m` Nyström features and solves a linear ridge problem; its predictions need
only the kernel against the landmarks. ``mode='gsa'`` (Gram-matrix substitution) is computed
through the same training (Li, Liu and Zhang, Algorithm 1, eq. 20) plus one more :math:`n \\times m`
product, and its predictions use the kernel against *all* :math:`n` training points. This
example grows :math:`m` on a synthetic regression problem with :math:`n = 10^5` rows and plots
the test error and the fit and predict times of the two modes.
"""

# %%
# A smooth function plus noise
# ----------------------------
import time

import matplotlib.pyplot as plt
import numpy as np

from asymkern.nystrom import NystromKernelRidge


def f(X):
    return np.sin(3 * X[:, 0]) * np.cos(2 * X[:, 1]) + 0.5 * X[:, 2] ** 2


rng = np.random.RandomState(0)
n, n_test, noise = 100_000, 500, 0.1
X = rng.uniform(-1, 1, size=(n, 3))
y = f(X) + noise * rng.normal(size=n)
X_test = rng.uniform(-1, 1, size=(n_test, 3))
y_test = f(X_test)                      # noise-free targets: the error is the estimation error


# %%
# Grow the number of landmarks
# ----------------------------
# RBF kernel :math:`\exp(-\gamma\|x - z\|^2)` with :math:`\gamma = 2`, ridge ``alpha = 1``
# (:math:`\lambda_0` of Li, Liu and Zhang's problem (1)), uniformly sampled landmarks, the same seed
# (hence the same landmarks) for both modes.
landmarks = (10, 20, 40, 80, 160)
rows = {"lla": [], "gsa": []}
for m in landmarks:
    for mode in rows:
        model = NystromKernelRidge(mode=mode, n_landmarks=m, alpha=1.0, kernel="rbf", gamma=2.0,
                                   random_state=0)
        t0 = time.perf_counter()
        model.fit(X, y)
        t_fit = time.perf_counter() - t0
        t0 = time.perf_counter()
        pred = model.predict(X_test)
        t_pred = time.perf_counter() - t0
        rmse = float(np.sqrt(np.mean((pred - y_test) ** 2)))
        rows[mode].append((m, rmse, t_fit, t_pred))
        print(f"m = {m:3d}  {mode}: test RMSE {rmse:.4f}, fit {t_fit:.2f} s, "
              f"predict ({n_test} points) {t_pred:.2f} s")

# %%
# Error and time against the number of landmarks
# ----------------------------------------------
fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), constrained_layout=True)
style = {"lla": ("LLA", "o", "tab:blue"), "gsa": ("GSA", "s", "tab:orange")}
for mode, vals in rows.items():
    label, marker, color = style[mode]
    a = np.array(vals)
    axes[0].loglog(a[:, 0], a[:, 1], marker=marker, color=color, label=label)
    axes[1].loglog(a[:, 0], a[:, 2], marker=marker, color=color, label=label)
    axes[2].loglog(a[:, 0], a[:, 3] * 1e3, marker=marker, color=color, label=label)
axes[0].axhline(noise, color="0.5", ls=":", label=f"noise level {noise}")
axes[0].set_ylabel("test RMSE (against noise-free $f$)")
axes[1].set_ylabel("fit time (s)")
axes[2].set_ylabel(f"predict time, {n_test} points (ms)")
for ax in axes:
    ax.set_xlabel("number of landmarks $m$")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
fig.suptitle(f"Nyström kernel ridge, n = {n:,} training rows, RBF kernel")
plt.show()

# %%
# In this run GSA's test error is larger than LLA's at every :math:`m` (same landmarks, same
# ``alpha``); both fall well below the noise level as :math:`m` grows. The fit costs of the
# two modes differ by the one extra :math:`n \times m` product of GSA; their predictions
# differ in kind: LLA evaluates :math:`m` kernel values per test point, GSA :math:`n`, so at
# :math:`n = 10^5` GSA's predict time is set by the training set size and hardly depends on
# :math:`m`. Timings are single-run wall times on a shared machine; only their ratios mean
# anything.
