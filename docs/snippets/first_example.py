import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score
from asymkern import KernelSVD

rng = np.random.default_rng(0)
y = np.repeat([0, 1, 2], 200)                              # 3 groups of 200 nodes
p = np.where(y[None, :] == (y[:, None] + 1) % 3, 0.05, 0.02)   # mostly 0 → 1 → 2 → 0
A = (rng.random((600, 600)) < p).astype(float)             # A[i, j] = 1: edge i → j
for name, G in [("directed", A), ("symmetrised", A + A.T)]:
    ksvd = KernelSVD(n_components=8, kernel="sne", gamma=0.05, center=True).fit(G)
    F = np.hstack(ksvd.embeddings())                       # as source and as target
    print(name, cross_val_score(LogisticRegression(), F, y, cv=5).mean().round(2))
