"""
The spectrum of an attention matrix: KernelSVD and asymmetric Nyström
=====================================================================

Scaled dot-product attention (Vaswani et al., 2017) forms the matrix
:math:`A = \\operatorname{softmax}(\\gamma Q K^\\top)`, the softmax taken over each row, with
:math:`\\gamma = 1/\\sqrt{d}`. Its entries are the values of the asymmetric,
row-normalised kernel :math:`\\kappa(q, k) = e^{\\gamma \\langle q, k\\rangle} /
\\sum_{r} e^{\\gamma \\langle q, r\\rangle}` (``kernel='softmax'``), so the asymmetric kernel
SVD of Tao et al. (2024) applies to it, the view of attention taken by Chen et al. (2023).

This example builds queries and keys with a few latent directions plus noise, looks at the
singular values of :math:`A`, computes its top singular triplets with
``KernelSVD(kernel='softmax')``, and measures how fast the asymmetric Nyström method
(Tao et al., 2024) approaches the exact top-:math:`r` SVD as the number of landmarks grows.
"""

# %%
# Queries and keys with low-rank structure
# ----------------------------------------
# Each query and key is a combination of ``n_latent`` shared directions plus a little
# isotropic noise, so the logits γQKᵀ are close to a rank-``n_latent`` matrix; the softmax
# (an entrywise exponential, then a row scaling) raises the rank, more so at low temperature.
# Besides the default γ = 1/√d we look at γ/4 (softer attention) and 4γ (sharper).
import matplotlib.pyplot as plt
import numpy as np

from asymkern import KernelSVD
from asymkern.kernels import SoftmaxKernel
from asymkern.linalg import asymmetric_nystrom

rng = np.random.default_rng(0)
n_queries, n_keys, d, n_latent = 600, 500, 32, 4
directions = rng.standard_normal((n_latent, d)) / d ** 0.25


def tokens(n):
    """n points: a random combination of the latent directions, plus noise."""
    return rng.standard_normal((n, n_latent)) @ directions + 0.3 * rng.standard_normal((n, d))


Q, K = tokens(n_queries), tokens(n_keys)
gamma = 1 / np.sqrt(d)
kernel = SoftmaxKernel()             # gamma = 1/sqrt(d), the default
A = kernel(Q, K)                     # the 600 × 500 attention matrix; each row sums to 1
print("rows sum to 1:", bool(np.allclose(A.sum(axis=1), 1.0)),
      "| asymmetric:", not kernel.is_symmetric,
      f"| std of the logits: {np.std(gamma * Q @ K.T):.2f}")
spectra = {f: np.linalg.svd(SoftmaxKernel(gamma=f * gamma)(Q, K), compute_uv=False)
           for f in (0.25, 1.0, 4.0)}
s_full = spectra[1.0]

# %%
# Top singular triplets with KernelSVD
# ------------------------------------
# ``KernelSVD`` evaluates the kernel in memory-bounded blocks and never needs the dense
# matrix; here its singular values agree with the dense SVD of A to rounding.
r = 8
ksvd = KernelSVD(n_components=r, kernel="softmax", solver="arpack", random_state=0)
ksvd.fit(Q, Z=K)
print("top singular values (KernelSVD):", np.round(ksvd.singular_values_, 5))
print("largest relative difference to the dense SVD:",
      f"{np.max(np.abs(ksvd.singular_values_ - s_full[:r]) / s_full[:r]):.1e}")

# %%
# Asymmetric Nyström against the number of landmarks
# --------------------------------------------------
# The Nyström approximation :math:`A \\approx \\tilde U \\operatorname{diag}(\\tilde s)
# \\tilde V^\\top` uses only the sampled rows :math:`A[I, :]` and columns :math:`A[:, J]`.
# For each landmark count s (rows and columns alike) it is drawn with 5 seeds, on the
# attention matrix at γ = 1/√d and at the softer γ/4; we plot the median and the range of
# the relative errors of the top-r singular values and of the rank-r reconstruction, the
# latter divided by that of the exact top-r SVD (the best rank-r approximation,
# Eckart–Young), so that 1 is the optimum.
landmarks = np.array([20, 40, 80, 160, 320])
seeds = range(5)
errors = {}
for f in (1.0, 0.25):
    Af = A if f == 1.0 else SoftmaxKernel(gamma=f * gamma)(Q, K)
    sv = spectra[f]
    top = KernelSVD(n_components=r, kernel="softmax", kernel_params={"gamma": f * gamma},
                    solver="arpack", random_state=0).fit(Q, Z=K)
    Ut, st, Vt = top.left_singular_vectors_, top.singular_values_, top.right_singular_vectors_
    optimum = np.linalg.norm(Af - (Ut * st) @ Vt.T)
    sv_err = np.empty((len(landmarks), len(seeds)))
    rec_err = np.empty((len(landmarks), len(seeds)))
    for i, n_land in enumerate(landmarks):
        for j, seed in enumerate(seeds):
            res = asymmetric_nystrom(Af, r, n_row_landmarks=int(n_land),
                                     n_col_landmarks=int(n_land), random_state=seed)
            sv_err[i, j] = np.max(np.abs(res.s - sv[:r]) / sv[:r])
            rec_err[i, j] = np.linalg.norm(Af - (res.U * res.s) @ res.V.T) / optimum
    errors[f] = (sv_err, rec_err)

# %%
# The figure
# ----------
fig, axes = plt.subplots(1, 3, figsize=(13, 4), constrained_layout=True)
ax = axes[0]
k = np.arange(1, 61)
for f, marker in zip(spectra, "o^s"):
    sv = spectra[f]
    ax.semilogy(k, sv[:60] / sv[0], marker=marker, ms=3,
                label=r"$\gamma = 1/\sqrt{d}$" if f == 1 else rf"$\gamma = {f:g}/\sqrt{{d}}$")
ax.axvline(r + 0.5, color="0.5", ls=":", lw=1, label=f"r = {r}")
ax.set_xlabel("index i")
ax.set_ylabel(r"$\sigma_i / \sigma_1$ (log scale)")
ax.set_title(f"singular values of the {n_queries}×{n_keys} attention matrix", fontsize=10)
ax.legend(fontsize=8)
ax.grid(True, which="both", alpha=0.3)

labels = ((1, r"max$_{i \leq r}$ $|\tilde\sigma_i - \sigma_i| / \sigma_i$",
           f"Nyström: top-{r} singular values"),
          (2, r"$\|A - \tilde U \tilde S \tilde V^\top\|_F \;/\; \|A - U_r S_r V_r^\top\|_F$",
           f"Nyström: rank-{r} reconstruction"))
for panel, what, title in labels:
    ax = axes[panel]
    for f, marker in ((0.25, "o"), (1.0, "^")):
        err = errors[f][panel - 1]
        name = r"$\gamma = 1/\sqrt{d}$" if f == 1 else r"$\gamma = 0.25/\sqrt{d}$"
        ax.fill_between(landmarks, err.min(axis=1), err.max(axis=1), alpha=0.2)
        ax.loglog(landmarks, np.median(err, axis=1), marker=marker, label=name + " (median)")
    ax.set_xticks(landmarks, [str(v) for v in landmarks])
    ax.minorticks_off()
    ax.set_xlabel("landmarks s (rows = columns, log scale)")
    ax.set_ylabel(what + " (log scale)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, title="shaded: range over 5 seeds", title_fontsize=8)
axes[2].axhline(1.0, color="k", ls="--", lw=1, label="exact top-r SVD")
axes[2].set_yticks([1, 1.5, 2, 3, 5], ["1", "1.5", "2", "3", "5"])
axes[2].legend(fontsize=8, title="shaded: range over 5 seeds", title_fontsize=8)
plt.show()

# %%
# The leading singular value is that of the row-stochastic structure (every row sums to 1);
# the next few carry the latent directions, and the tail decays more slowly the sharper
# the attention: at 4γ the matrix is far from low rank, although the logits are nearly
# rank 4. The Nyström errors fall as the landmark count grows, and they are smaller where
# the spectrum decays fast (the softer attention): with 320 of the 600 rows and 500 columns
# its rank-r error is within about 10 % of the optimum, while at γ = 1/√d, whose spectrum
# has a heavy tail beyond r, the sampled core still misses a good part of it.
#
# References: A. Vaswani et al., "Attention Is All You Need", NeurIPS 2017. Y. Chen, Q. Tao,
# F. Tonin and J. A. K. Suykens, "Primal-Attention: Self-attention through Asymmetric Kernel
# SVD in Primal Representation", NeurIPS 2023. Q. Tao, F. Tonin, A. Lambert, Y. Chen,
# P. Patrinos and J. A. K. Suykens, "Learning in Feature Spaces via Coupled Covariances:
# Asymmetric Kernel SVD and Nyström method", ICML 2024.
