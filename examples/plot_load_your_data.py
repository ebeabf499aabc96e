"""
Loading your own data: an edge list, a sparse matrix, a CSV file
================================================================

asymkern works on NumPy arrays and SciPy sparse matrices, so your data only need to reach one
of those. This example writes three files to a temporary folder — a directed edge list with
named nodes, a SciPy sparse adjacency matrix (``.npz``) and a CSV table of features — and
reads each back: with the reader of the ``asymkern`` command (:mod:`asymkern.cli`), with
SciPy, and with pandas. It then embeds the graph with kernel SVD twice, once from Python and
once by running the command itself, and checks that both give the same embedding.
"""

# %%
# Three files in a temporary folder
# ---------------------------------
# The graph is a directed stochastic block model (3 classes; class :math:`c` cites class
# :math:`c + 1` far more often than back) whose nodes we name ``paper_<k>``.
import shutil
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import scipy.sparse as sp

from asymkern.cli import main as asymkern_cli
from asymkern.cli import read_graph_or_matrix
from asymkern.datasets.graphs import directed_sbm, row_normalized_adjacency
from asymkern.decomposition import KernelSVD

A0, classes = directed_sbm(n_per_class=100, n_classes=3, p_forward=0.06, p_backward=0.005,
                           p_within=0.02, random_state=0)
folder = Path(tempfile.mkdtemp(prefix="asymkern_example_"))
src, dst = A0.nonzero()
edges = folder / "citations.csv"
with open(edges, "w", encoding="utf-8") as fh:
    fh.write("source,target\n")                         # one header line is allowed
    for i, j in zip(src, dst):
        fh.write(f"paper_{i},paper_{j}\n")
sp.save_npz(folder / "adjacency.npz", A0)                # a SciPy sparse matrix
rng = np.random.RandomState(0)
table = pd.DataFrame(rng.normal(size=(300, 4)) + classes[:, None],
                     columns=["f1", "f2", "f3", "f4"])
table.insert(0, "node", [f"paper_{k}" for k in range(300)])
table.to_csv(folder / "features.csv", index=False)       # a table with an id column
print(sorted(p.name for p in folder.iterdir()))
print("".join(open(edges, encoding="utf-8").readlines()[:3]), "...")

# %%
# Read them back
# --------------
# The edge-list reader of the command returns the adjacency (CSR, ``A[i, j]`` = weight of the
# edge i → j) and the node names in the order of its rows. The ``.npz`` file is read with
# SciPy and the CSV table with pandas.
A, ids = read_graph_or_matrix(edges)
print(f"edge list: {A.shape[0]} nodes, {A.nnz} edges; first ids {[str(i) for i in ids[:3]]}")
B = sp.load_npz(folder / "adjacency.npz")
order = np.array([int(s.removeprefix("paper_")) for s in ids])   # row k of A is node order[k]
print("edge list and .npz hold the same graph:", (abs(B[order][:, order] - A)).nnz == 0)
features = pd.read_csv(folder / "features.csv", index_col="node")
print(f"CSV: {features.shape[0]} rows × {features.shape[1]} feature columns")

# %%
# Embed the graph from Python ...
# -------------------------------
# KSVD of the row-normalised adjacency :math:`D^{-1}(A + I)` with the SNE kernel, both
# feature maps centred: the recipe of Tao et al. (2024) §4.1 and the defaults of ``asymkern embed``
# (bandwidth ``'auto'``).
An = row_normalized_adjacency(A)
ksvd = KernelSVD(4, kernel="sne", kernel_params={"bandwidth": "auto"}, center=True,
                 random_state=0).fit(An)
left, right = ksvd.embeddings()

# %%
# ... and with the command
# ------------------------
# In a terminal this is ``asymkern embed citations.csv --out emb.npz -r 4``; here we call
# the command's ``main`` with the same arguments (``python -m asymkern.cli embed ...`` works
# too). The output holds ``left``, ``right``, ``singular_values`` and the node ids.
status = asymkern_cli(["embed", str(edges), "--out", str(folder / "emb.npz"), "-r", "4"])
out = np.load(folder / "emb.npz")
print("exit status", status, "| same node order:", bool((out["row_ids"] == ids).all()),
      "| largest difference to the Python embedding:",
      f"{np.abs(np.abs(out['left']) - np.abs(left)).max():.1e}")

# %%
# The embedding of the loaded graph
# ---------------------------------
# Each node at its first two scores, coloured by its class in the generator. Left scores say
# where a node's edges go, right scores where they come from.
cls = classes[order]
fig, axes = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
for ax, E, title in ((axes[0], out["left"], "left scores (out-edges)"),
                     (axes[1], out["right"], "right scores (in-edges)")):
    for c in range(3):
        ax.scatter(E[cls == c, 0], E[cls == c, 1], s=10, alpha=0.7, label=f"class {c}")
    ax.set_xlabel("component 1")
    ax.set_ylabel("component 2")
    ax.set_title(title)
axes[0].legend()
fig.suptitle("asymkern embed citations.csv -r 4: the first two of 4 components")
plt.show()

# %%
# The same reader takes ``.npy``, ``.npz`` (SciPy sparse), Matrix Market ``.mtx`` and dense
# CSV matrices (``--format matrix``); a non-square data matrix needs ``--normalize none``.
# Numeric tables such as ``features`` go straight into any estimator:
# ``KernelSVD(2).fit(features.to_numpy())``.
shutil.rmtree(folder)  # remove the temporary folder
