"""
Koopman eigenfunctions of a double-well system
==============================================

The Koopman operator :math:`\\mathcal K^\\tau f(x) = \\mathbb E[f(x_{t+\\tau}) \\mid x_t = x]`
of a stochastic dynamical system has eigenvalues :math:`\\lambda_i` and eigenfunctions
:math:`\\varphi_i`; slow processes show up as eigenvalues close to one, with implied time
scales :math:`t_i = -\\tau/\\ln|\\lambda_i|`. :class:`asymkern.operators.KoopmanOperator`
estimates it from one trajectory as
:math:`\\hat{\\mathcal K} = \\Phi (G_\\Phi + n\\varepsilon I)^{-1}\\Psi^\\top`
(Mollenhauer et al., 2020,
§4.4) and returns eigenfunctions that can be evaluated anywhere.

The system here is overdamped Langevin dynamics in the double-well potential
:math:`V(x) = (x^2 - 1)^2`: the slowest process is the hopping between the wells at
:math:`x = \\pm 1`, so the second eigenfunction should be a smoothed step that changes sign
at the barrier.
"""

# %%
# Simulate a trajectory
# ---------------------
import matplotlib.pyplot as plt
import numpy as np

from asymkern.operators import KoopmanOperator

rng = np.random.RandomState(0)
dt, n_steps, beta = 1e-3, 200_000, 3.0
noise = rng.normal(size=n_steps) * np.sqrt(2 * dt / beta)
x = np.empty(n_steps)
x[0] = -1.0
for t in range(n_steps - 1):
    x[t + 1] = x[t] - 4 * x[t] * (x[t] ** 2 - 1) * dt + noise[t]

stride = 100                      # keep every 100th step: 2000 samples, 0.1 time units apart
traj = x[::stride, None]
tau = dt * stride
print(f"{traj.shape[0]} samples, time step {tau:g}")

# %%
# Estimate the Koopman operator
# -----------------------------
koop = KoopmanOperator(kernel="rbf", kernel_params={"gamma": 2.0}, alpha=1e-4, lag=1,
                       timestep=tau, n_components=4)
koop.fit(traj)
lam = koop.eigenvalues_
print("eigenvalues:", np.round(lam.real, 4))
print("implied time scales:", np.round(koop.implied_timescales(), 3))

# %%
# Eigenfunctions, potential and time scales
# -----------------------------------------
grid = np.linspace(-1.8, 1.8, 300)[:, None]
phi = np.real(koop.eigenfunctions_(grid))
phi /= np.abs(phi).max(axis=0)            # eigenfunctions are defined up to scale
phi *= np.sign(phi[-1])                   # … and sign: positive in the right well

fig, (ax0, ax1, ax2) = plt.subplots(1, 3, figsize=(12, 3.8), constrained_layout=True)
ax0.plot(grid[:, 0], (grid[:, 0] ** 2 - 1) ** 2, color="k")
ax0.hist(traj[:, 0], bins=60, density=True, color="tab:gray", alpha=0.5,
         label="samples (density)")
ax0.set_xlabel("position $x$")
ax0.set_ylabel("potential $V(x)$ / density")
ax0.set_title("double-well potential")
ax0.legend(fontsize=8)
for i in range(3):
    ax1.plot(grid[:, 0], phi[:, i], lw=2,
             label=f"$\\varphi_{i + 1}$, $\\lambda_{i + 1} = {lam[i].real:.3f}$")
ax1.axhline(0, color="0.6", lw=0.8)
ax1.set_xlabel("position $x$")
ax1.set_ylabel("eigenfunction (scaled to max 1)")
ax1.set_title("Koopman eigenfunctions")
ax1.legend(fontsize=8)
ts = koop.implied_timescales()
finite = np.isfinite(ts)
ax2.bar(np.arange(1, ts.size + 1)[finite], ts[finite], color="tab:blue")
ax2.set_yscale("log")
ax2.set_xlabel("eigenvalue index $i$")
ax2.set_ylabel("implied time scale $t_i$ (time units)")
ax2.set_title(r"$t_i = -\tau / \ln|\lambda_i|$")
ax2.set_xticks(np.arange(1, ts.size + 1))
plt.show()

# %%
# :math:`\varphi_1` is (nearly) constant with :math:`\lambda_1 \approx 1` (its long time
# scale only says that :math:`\hat\lambda_1` is slightly below one); :math:`\varphi_2`
# changes sign at the barrier :math:`x = 0` and its time scale is the slow hopping between
# the wells. Eigenvalues of the estimate depend on ``alpha`` (Tikhonov ε) and on the kernel
# width; the user guide's operators page says which estimator to use for which question.
