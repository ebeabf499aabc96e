import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score
from asymkern import KernelSVD

rng = np.random.default_rng(0)
y = np.repeat([0, 1, 2], 200)                       # 3 groups of 200 nodes
# edges i → j (A[i, j] = 1), mostly from group 0 to 1, from 1 to 2 and from 2 to 0
p = np.where(y[None, :] == (y[:, None] + 1) % 3, 0.05, 0.02)
A = (rng.random((600, 600)) < p).astype(float)
for name, G in [("directed", A), ("symmetrised", A + A.T)]:
    ksvd = KernelSVD(n_components=8, kernel="sne", gamma=0.05, center=True).fit(G)
    F = np.hstack(ksvd.embeddings())                # each node as source and target
    print(name, cross_val_score(LogisticRegression(), F, y, cv=5).mean().round(2))
