"""
Choosing a kernel and its width with GridSearchCV
=================================================

asymkern's estimators are scikit-learn estimators and its kernels are objects with
parameters, so one :class:`~sklearn.model_selection.GridSearchCV` can search over the kernel
*and* its width: ``clf__kernel`` takes kernel instances and ``clf__kernel__gamma`` sets the
``gamma`` of whichever kernel is in place (a kernel instance passed to an estimator is cloned,
never modified). This example tunes an LS-SVM classifier
(:class:`~asymkern.lssvm.LSSVMClassifier`) on scikit-learn's breast-cancer data with the RBF
kernel :math:`\\exp(-\\gamma\\|x - z\\|^2)` and the Laplacian kernel
:math:`\\exp(-\\gamma\\|x - z\\|_1)`.
"""

# %%
# Pipeline and grid
# -----------------
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from asymkern.kernels import LaplacianKernel, RBFKernel
from asymkern.lssvm import LSSVMClassifier

X, y = load_breast_cancer(return_X_y=True)
print(f"{X.shape[0]} samples, {X.shape[1]} features, classes {np.bincount(y)}")

pipe = Pipeline([("scale", StandardScaler()), ("clf", LSSVMClassifier(C=10.0))])
gammas = np.logspace(-4, 0, 9)
grid = [
    {"clf__kernel": [RBFKernel()], "clf__kernel__gamma": gammas},
    {"clf__kernel": [LaplacianKernel()], "clf__kernel__gamma": gammas},
]
search = GridSearchCV(pipe, grid, cv=StratifiedKFold(5, shuffle=True, random_state=0),
                      scoring="accuracy")
search.fit(X, y)
best = search.best_params_
print(f"best: {type(best['clf__kernel']).__name__} with gamma = {best['clf__kernel__gamma']:.3g}, "
      f"CV accuracy {search.best_score_:.3f}")

# %%
# Cross-validated accuracy per kernel against gamma
# -------------------------------------------------
res = pd.DataFrame(search.cv_results_)
res["kernel"] = [type(k).__name__ for k in res["param_clf__kernel"]]
fig, ax = plt.subplots(figsize=(6.5, 4), constrained_layout=True)
for (name, part), marker in zip(res.groupby("kernel"), ("o", "s")):
    g = part["param_clf__kernel__gamma"].astype(float).to_numpy()
    mean, std = part["mean_test_score"].to_numpy(), part["std_test_score"].to_numpy()
    ax.semilogx(g, mean, marker=marker, label=name)
    ax.fill_between(g, mean - std, mean + std, alpha=0.2)
best_g = best["clf__kernel__gamma"]
best_k = type(best["clf__kernel"]).__name__
ax.axvline(best_g, color="0.5", ls=":", label=f"best: {best_k}, gamma = {best_g:.2g}")
ax.set_xlabel(r"kernel parameter $\gamma$ (per unit of squared / absolute distance)")
ax.set_ylabel("5-fold CV accuracy (mean ± std)")
ax.set_title("LS-SVM (C = 10) on breast cancer, standardised features")
ax.grid(True, which="both", alpha=0.3)
ax.legend(loc="lower left")
plt.show()

# %%
# ``search.best_estimator_`` is the pipeline refitted on all samples with the best kernel. The
# same pattern works for any asymkern estimator that takes ``kernel=``, e.g.
# :class:`~asymkern.decomposition.KernelSVD` or the Nyström machines, and for the kernels'
# other parameters (``clf__kernel__degree`` of a polynomial kernel, …).
