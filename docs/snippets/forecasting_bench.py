"""Speed and accuracy of the KoopmanOperator estimators, for docs/user_guide/forecasting.md.

Two systems, n = 1000 time-lagged pairs each, RBF kernel, the same ``alpha`` for every
estimator, rank 10 for 'pcr'/'rrr', 200 uniform landmarks for the Nyström versions:

* Van der Pol (mu = 1, time step 0.1, on its limit cycle): forecast error = RMSE of
  ``predict(x_t, n_steps=k)`` against the true x_{t+k} on the 500 steps that follow the training
  trajectory;
* a noisy linear system x_{t+1} = A x_t + 0.1 e_t (A = 0.9 × a rotation by 0.4 rad): forecast
  error = RMSE against the exact conditional mean A^k x on 500 states of an independent
  trajectory.

Fit times: median of ``--repeats`` fits, the estimators interleaved in a rotating order. Times
and errors are printed as ratios against 'pcr' (and pcr's own values). A last table compares
the default ``alpha=1e-6`` with ``alpha=1e-4`` on the Van der Pol trajectory (fit time and
the R² of ``score(test, n_steps=k)``). Run from the repository
root: ``PYTHONPATH=src python docs/snippets/forecasting_bench.py``.
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
from scipy.integrate import solve_ivp

from asymkern.operators import KoopmanOperator

ESTIMATORS = {
    "full": dict(estimator="full"),
    "pcr": dict(estimator="pcr", rank=10),
    "rrr": dict(estimator="rrr", rank=10),
    "full, Nyström m=200": dict(estimator="full", n_landmarks=200, random_state=0),
    "pcr, Nyström m=200": dict(estimator="pcr", rank=10, n_landmarks=200, random_state=0),
    "rrr, Nyström m=200": dict(estimator="rrr", rank=10, n_landmarks=200, random_state=0),
}
STEPS = (1, 10, 30)


def van_der_pol(n: int = 1000, n_test: int = 500, dt: float = 0.1, mu: float = 1.0):
    def f(t, s):
        return [s[1], mu * (1 - s[0] ** 2) * s[1] - s[0]]

    t = np.arange(n + n_test + 1) * dt
    traj = solve_ivp(f, (0, t[-1]), [2.0, 0.0], t_eval=t, rtol=1e-9, atol=1e-9).y.T
    train, test = traj[: n + 1], traj[n:]

    def error(est, k):
        return float(np.sqrt(np.mean((est.predict(test[:-k], n_steps=k) - test[k:]) ** 2)))

    error.test = test
    return train, error, dict(gamma=0.5, alpha=1e-4)


def noisy_linear(n: int = 1000, n_test: int = 500, seed: int = 0):
    rng = np.random.default_rng(seed)
    c, s = np.cos(0.4), np.sin(0.4)
    A = 0.9 * np.array([[c, -s], [s, c]])

    def run(m):
        x = np.zeros((m, 2))
        for t in range(m - 1):
            x[t + 1] = A @ x[t] + 0.1 * rng.normal(size=2)
        return x

    train, test = run(n + 1), run(n_test + 100)[100:]

    def error(est, k):
        exact = test @ np.linalg.matrix_power(A, k).T
        return float(np.sqrt(np.mean((est.predict(test, n_steps=k) - exact) ** 2)))

    return train, error, dict(gamma=2.0, alpha=1e-4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, numpy {np.__version__}; repeats {args.repeats}")
    for name, system in (("Van der Pol", van_der_pol), ("noisy linear", noisy_linear)):
        train, error, p = system()
        times = {k: [] for k in ESTIMATORS}
        fitted = {}
        keys = list(ESTIMATORS)
        for rep in range(args.repeats):
            for key in keys[rep % len(keys):] + keys[: rep % len(keys)]:
                est = KoopmanOperator(kernel="rbf", kernel_params={"gamma": p["gamma"]},
                                      alpha=p["alpha"], n_components=5, **ESTIMATORS[key])
                t0 = time.perf_counter()
                est.fit(train)
                times[key].append(time.perf_counter() - t0)
                fitted[key] = est
        med = {k: float(np.median(v)) for k, v in times.items()}
        err = {k: [error(fitted[k], s) for s in STEPS] for k in ESTIMATORS}
        print(f"\n{name}: n = {len(train) - 1} pairs, gamma = {p['gamma']}, "
              f"alpha = {p['alpha']}; pcr: fit {med['pcr']:.2f} s, RMSE "
              + ", ".join(f"k={s}: {e:.3g}" for s, e in zip(STEPS, err["pcr"])))
        print("| estimator | fit time / pcr | " + " | ".join(
            f"RMSE k={s} / pcr" for s in STEPS) + " |")
        print("|---|---|" + "---|" * len(STEPS))
        for k in ESTIMATORS:
            print(f"| {k} | {med[k] / med['pcr']:.2f} | " + " | ".join(
                f"{e / e0:.2f}" for e, e0 in zip(err[k], err["pcr"])) + " |")
    alpha_table(args.repeats)


def alpha_table(repeats: int) -> None:
    train, error, p = van_der_pol()
    test = error.test  # the 500 steps after the training trajectory
    cases = {
        "full, alpha=1e-4": dict(estimator="full", alpha=1e-4),
        "full, alpha=1e-6": dict(estimator="full", alpha=1e-6),
        "full, Nyström m=200, alpha=1e-6": dict(estimator="full", alpha=1e-6, n_landmarks=200,
                                                random_state=0),
        "pcr, alpha=1e-6": dict(estimator="pcr", rank=10, alpha=1e-6),
    }
    print("\nVan der Pol, the default alpha=1e-6 against 1e-4 (median fit time, test R²)")
    print("| estimator | fit s | R² k=1 | k=10 | k=30 |\n|---|---|---|---|---|")
    for key, kw in cases.items():
        times = []
        for _ in range(repeats):
            est = KoopmanOperator(kernel="rbf", kernel_params={"gamma": p["gamma"]},
                                  n_components=5, **kw)
            t0 = time.perf_counter()
            est.fit(train)
            times.append(time.perf_counter() - t0)
        r2 = [est.score(test, n_steps=k, multioutput="variance_weighted") for k in STEPS]
        print(f"| {key} | {np.median(times):.2f} | " + " | ".join(f"{v:.4f}" for v in r2) + " |")


if __name__ == "__main__":
    main()
