"""Koopman estimators (issue 19, issue 16 gap 4): asymkern vs kooplearn on the same data.

Ornstein–Uhlenbeck process x_{t+1} = a x_t + √(1 − a²) ξ_t, a = e^{−θ}, θ = 0.2231 (unit
stationary variance): Koopman eigenvalues e^{−kθ} = 1, 0.80, 0.64, …; eigenfunctions Hermite
polynomials; k-step conditional mean E[x_{t+k} | x_t = x] = aᵏ x. Noisy linear system
x_{t+1} = A x_t + 0.05 ξ_t (A = 0.9·rotation(0.3)): eigenvalues 0.9 e^{±0.3i}, k-step mean Aᵏx.

For each n: our 'full', 'pcr', 'rrr' (exact) and their Nyström versions, kooplearn's
``KernelRidge`` (reduced_rank=True: RRR, False: PCR) and ``NystroemKernelRidge``, with the same
Gaussian kernel exp(−γ‖x − x'‖²), γ = 0.5, ε = 1e-6, rank 5. Time = fit + eigenvalues
(kooplearn's ``fit`` computes no eigenvalues; its ``eig()`` is included), median of interleaved
repeats. Accuracy: |λ̂_k − e^{−kθ}| for k = 1, 2 and the RMSE of the 5-step forecast against
a⁵x on 200 test points in [−2, 2] (kooplearn 2.0.3's ``predict(n_steps=k)`` propagates the
*input* snapshots, so its 5-step forecast is ``predict(n_steps=6)``). kooplearn is skipped when
it is not installed; a kooplearn fit that raises (ARPACK not converging) is reported.

Usage: ``python benchmarks/bench_operators_koopman.py [--quick] [--out docs/results/...md]``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import interleaved  # noqa: E402

from asymkern.operators import KoopmanOperator  # noqa: E402

THETA = 0.2231
GAMMA, ALPHA, RANK, K_STEPS = 0.5, 1e-6, 5, 5


def ou(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.RandomState(seed)
    a = np.exp(-THETA)
    noise = np.sqrt(1 - a * a) * rng.randn(n)
    x = np.empty(n)
    x[0] = rng.randn()
    for t in range(n - 1):
        x[t + 1] = a * x[t] + noise[t]
    return x[:, None]


def linear_system(n: int, seed: int = 0):
    rng = np.random.RandomState(seed)
    c, s = np.cos(0.3), np.sin(0.3)
    A = 0.9 * np.array([[c, -s], [s, c]])
    x = np.zeros((n, 2))
    x[0] = [1.0, 0.0]
    for t in range(n - 1):
        x[t + 1] = A @ x[t] + 0.05 * rng.randn(2)
    return x, A


def _ours(kind: str, m: int | None):
    return lambda: KoopmanOperator(kernel_params={"gamma": GAMMA}, alpha=ALPHA, n_components=3,
                                   estimator=kind, rank=RANK, n_landmarks=m, random_state=0)


def _peer(kind: str, m: int | None):
    from kooplearn.kernel import KernelRidge, NystroemKernelRidge

    common = dict(n_components=RANK, reduced_rank=(kind == "rrr"), kernel="rbf", gamma=GAMMA,
                  alpha=ALPHA, random_state=0)
    if m is None:
        return lambda: KernelRidge(**common)
    return lambda: NystroemKernelRidge(n_centers=m, **common)


def _eigs(lam) -> np.ndarray:
    lam = np.asarray(lam)
    lam = lam[np.argsort(-np.abs(lam))]
    return np.real(lam[:3])


def _run(makers: dict, X, Xtest, repeats: int) -> dict:
    """Fit every maker (ours: key 'ours', the peer: key 'peer') interleaved ``repeats`` times;
    a peer that raises (e.g. ARPACK not converging) is reported as failed."""
    box, failed = {}, {}

    def fitter(key, make):
        def fit():
            if key in failed:
                return
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    est = make().fit(X)
                    box[key] = (est, est.eigenvalues_ if key == "ours" else est.eig())
                except Exception as exc:  # noqa: BLE001 - the peer's failure is a result
                    if key == "ours":
                        raise
                    failed[key] = type(exc).__name__
        return fit

    times = interleaved({k: fitter(k, m) for k, m in makers.items()}, repeats)
    truth = np.exp(-THETA * np.arange(3))
    out = {}
    for key in makers:
        if key in failed:
            out[key] = {"failed": failed[key]}
            continue
        est, lam = box[key]
        # kooplearn 2.0.3's predict propagates the *input* snapshots (its observable_fit is
        # X_fit, not the shifted ones), so its n_steps = k + 1 is the k-step forecast
        steps = K_STEPS if key == "ours" else K_STEPS + 1
        pred = np.asarray(est.predict(Xtest, n_steps=steps)).ravel()
        lam = _eigs(lam)
        rmse = float(np.sqrt(np.mean((pred - np.exp(-THETA * K_STEPS) * Xtest.ravel()) ** 2)))
        out[key] = {"t": times[key], "err": np.abs(lam - truth), "rmse": rmse, "lam": lam}
    return out


def run(quick: bool = False) -> str:
    try:
        import kooplearn  # noqa: F401
        have_peer = True
    except ImportError:
        have_peer = False
    if quick:
        plan = [(300, ["full", "pcr", "rrr"], [None, 50], 1)]
    else:
        plan = [(1000, ["full", "pcr", "rrr"], [None, 300], 5),
                (4000, ["full", "pcr", "rrr"], [None, 500], 2),
                (16000, ["pcr"], [None, 1000], 1),
                (100000, ["pcr", "rrr"], [1000], 1)]
    Xtest = np.linspace(-2, 2, 200)[:, None]
    rows = []
    for n, kinds, ms, repeats in plan:
        X = ou(n)
        for m in ms:
            for kind in kinds + (["rrr"] if m is not None and "rrr" not in kinds else []):
                if m is None and n >= 16000 and kind != "pcr":
                    continue
                makers = {"ours": _ours(kind, m)}
                if have_peer:  # 'full' has no kooplearn twin: compare with its RRR
                    makers["peer"] = _peer("rrr" if kind == "full" else kind, m)
                res = _run(makers, X, Xtest, repeats)
                row = {"n": n, "m": m, "kind": kind, **res["ours"]}
                if have_peer:
                    pr = res["peer"]
                    row["peer_failed"] = pr.get("failed")
                    if "t" in pr:
                        row.update(tp=pr["t"], errp=pr["err"], rmsep=pr["rmse"],
                                   lamp=pr["lam"])
                    if kind == "full":
                        row["peer"] = "RRR"
                rows.append(row)
                print(_fmt(row), flush=True)
    lin = _linear_check(quick)
    return _table(rows, have_peer, quick, lin)


def _linear_check(quick: bool) -> list[str]:
    n = 400 if quick else 2000
    X, A = linear_system(n)
    out = []
    x0 = X[50:250]
    for kind in ("full", "pcr", "rrr"):
        for m in (None, 100):
            est = KoopmanOperator(kernel="linear", alpha=1e-8, estimator=kind, rank=2,
                                  n_components=2, n_landmarks=m, random_state=0).fit(X)
            lam = np.sort_complex(est.eigenvalues_)
            err_l = float(np.max(np.abs(lam - np.sort_complex(np.linalg.eigvals(A)))))
            errs = [float(np.sqrt(np.mean((est.predict(x0, n_steps=k)
                                           - x0 @ np.linalg.matrix_power(A, k).T) ** 2)))
                    for k in (1, 5, 10)]
            out.append(f"| {kind} | {'exact' if m is None else f'Nyström m={m}'} | "
                       f"{err_l:.2e} | " + " | ".join(f"{e:.2e}" for e in errs) + " |")
    return out


def _fmt(row) -> str:
    s = (f"n={row['n']:>6} m={str(row['m']):>5} {row['kind']:>4}: ours {row['t']:.3f}s "
         f"err λ1,λ2={row['err'][1]:.3f},{row['err'][2]:.3f} rmse5={row['rmse']:.4f}")
    if row.get("peer_failed"):
        s += f" | kooplearn failed: {row['peer_failed']}"
    if "tp" in row:
        s += (f" | kooplearn {row['tp']:.3f}s err={row['errp'][1]:.3f},{row['errp'][2]:.3f} "
              f"rmse5={row['rmsep']:.4f} ratio={row['t'] / row['tp']:.2f}")
    return s


def _table(rows, have_peer: bool, quick: bool, lin: list[str]) -> str:
    head = ("| n | estimator | time ratio ours / kooplearn | ours: error of λ̂₁, λ̂₂ | "
            "kooplearn: error of λ̂₁, λ̂₂ | 5-step RMSE ours / kooplearn | "
            "max difference of λ̂ ours vs kooplearn |")
    lines = [head, "|" + "---|" * 7]
    for r in rows:
        name = {"full": "full (KRR)", "pcr": "PCR", "rrr": "RRR"}[r["kind"]]
        name += "" if r["m"] is None else f", Nyström m={r['m']}"
        if "tp" in r:
            ratio = f"{r['t'] / r['tp']:.2f}" + (" (vs its RRR)" if r.get("peer") else "")
            perr = f"{r['errp'][1]:.3f}, {r['errp'][2]:.3f}"
            rm = f"{r['rmse']:.4f} / {r['rmsep']:.4f}"
            dl = "—" if r.get("peer") else f"{np.max(np.abs(r['lam'] - r['lamp'])):.1e}"
        else:
            why = f"kooplearn failed ({r['peer_failed']})" if r.get("peer_failed") else "—"
            ratio, perr, rm, dl = why, "—", f"{r['rmse']:.4f}", "—"
        lines.append(f"| {r['n']} | {name} | {ratio} | {r['err'][1]:.3f}, {r['err'][2]:.3f} | "
                     f"{perr} | {rm} | {dl} |")
    lines += ["", "Noisy linear system (linear kernel, rank 2, ε = 1e-8): eigenvalue error and "
              "RMSE of the k-step forecast against Aᵏx.", "",
              "| estimator | fit | max error of λ̂ | RMSE k=1 | k=5 | k=10 |",
              "|---|---|---|---|---|---|"]
    lines += lin
    note = ("quick mode" if quick else "full run") + (
        "" if have_peer else "; kooplearn not installed (peer columns empty)")
    return "\n".join(lines) + f"\n\n({note}; shared 2-core machine, ratios of medians of " \
        "interleaved repeats; absolute times are not results.)\n"


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    table = run(quick=args.quick)
    print(table)
    print(f"total {time.perf_counter() - t0:.1f}s")
    if args.out:
        Path(args.out).write_text(
            "# Koopman estimators vs kooplearn (benchmark table)\n\nWritten by "
            "`benchmarks/bench_operators_koopman.py`; see [operators.md](operators.md) for the "
            "protocol and the discussion. The machine was shared with other work: only the "
            "ratios are meaningful.\n\n" + table)
    return table


if __name__ == "__main__":
    main()
