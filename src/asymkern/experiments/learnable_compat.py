"""Learnable compatibility matrix a3 (Tao et al., 2024, Remark 2.3, App. C.3), trained end to end.

Data X (N samples × M features, N > M): rows x_i ∈ R^M and columns z_j ∈ R^N are the two sets;
the columns are mapped by a learnable C ∈ R^{N×M}, Z := XᵀC (M × M, rows z_j). Each step
(App. C.3): (i) G = [κ(x_i, z_j)] (N × M) and its SVD G = U Λ Vᵀ give V (top r right singular
vectors), **detached** — no gradient flows through the SVD; (ii) with V fixed, G is formed
again from C, the sample features G V go to a linear head, and the loss (cross-entropy or MSE)
is back-propagated to C and the head. V is re-computed at every step, with its signs aligned to
the previous step so that the head sees a consistent basis.

PyTorch is an optional dependency (``pip install asymkern[torch]``), imported only here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


def _torch():
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - exercised only without torch
        raise ImportError(
            "the learnable compatibility matrix (a3) needs PyTorch: install the optional extra "
            "with `pip install asymkern[torch]`"
        ) from exc
    return torch


def _kernel(torch, X, Z, kind: str, bandwidth: float):
    """κ(X, Z) for 'rbf' exp(−‖x − z‖²/γ²) or 'sne' (rbf normalised over the rows of Z).

    The squared distances are expanded about the mean c of Z, ‖x − c‖² + ‖z − c‖² −
    2(x − c)ᵀ(z − c), not about the origin: the expansion about the origin rounds away every
    digit of ‖x − z‖² for data far from it (RBF values 0.98 off at an offset of 1e8). The
    distances do not depend on c, so c is detached: the gradients with respect to X and Z
    are those of ‖x − z‖².
    """
    c = Z.detach().mean(0, keepdim=True)
    X = X - c
    Z = Z - c
    d2 = (X * X).sum(1, keepdim=True) + (Z * Z).sum(1)[None, :] - 2.0 * X @ Z.T
    d2 = d2.clamp_min(0.0)
    logits = -d2 / bandwidth**2
    if kind == "rbf":
        return torch.exp(logits)
    if kind == "sne":
        return torch.softmax(logits, dim=1)
    raise ValueError(f"kernel must be 'rbf' or 'sne', got {kind!r}")


@dataclass
class LearnableCompatResult:
    """Trained a3 model: C (N × M), Z = XᵀC, V (M × r), head weights, feature scaling, losses."""

    C: np.ndarray
    Z: np.ndarray
    V: np.ndarray
    W: np.ndarray
    b: np.ndarray
    feat_mean: np.ndarray
    feat_std: np.ndarray
    task: str
    kernel: str
    bandwidth: float
    classes: np.ndarray | None
    y_mean: float = 0.0
    y_std: float = 1.0
    losses: list = field(default_factory=list)

    def features(self, X) -> np.ndarray:
        """Standardised projection scores G(x) V of new samples (Z, V fixed)."""
        torch = _torch()
        with torch.no_grad():
            Xt = torch.as_tensor(np.asarray(X, dtype=np.float64))
            G = _kernel(torch, Xt, torch.as_tensor(self.Z), self.kernel, self.bandwidth)
            F = (G @ torch.as_tensor(self.V)).numpy()
        return (F - self.feat_mean) / self.feat_std

    def decision_function(self, X) -> np.ndarray:
        return self.features(X) @ self.W + self.b

    def predict(self, X) -> np.ndarray:
        s = self.decision_function(X)
        if self.task == "classification":
            return self.classes[np.argmax(s, axis=1)]
        return s[:, 0] * self.y_std + self.y_mean


def fit_learnable_compat(X, y, task: str = "classification", kernel: str = "rbf",
                         bandwidth: float = 1.0, n_components: int = 4, C_init=None,
                         n_iter: int = 2000, lr: float = 1e-2, optimizer: str = "adam",
                         batch_size: int | None = None, seed: int = 0) -> LearnableCompatResult:
    """Train C (a3) and a linear head end to end (Tao et al., 2024, App. C.3).

    ``C_init``: (N, M) start for C, default the a1 matrix (leading left singular vectors of X,
    i.e. the PCA compatibility for the column side). ``batch_size``: mini-batches of samples
    for the loss (the SVD of G is always taken on all N rows).
    """
    torch = _torch()
    n_threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: threads only add overhead
    try:
        # the head's initialisation draws from torch's global generator, seeded below: its
        # state is restored afterwards (the caller's torch random stream is not reseeded)
        with torch.random.fork_rng(devices=[]):
            return _fit(torch, X, y, task, kernel, bandwidth, n_components, C_init, n_iter,
                        lr, optimizer, batch_size, seed)
    finally:
        torch.set_num_threads(n_threads)


def _fit(torch, X, y, task, kernel, bandwidth, n_components, C_init, n_iter, lr, optimizer,
         batch_size, seed) -> LearnableCompatResult:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or not np.all(np.isfinite(X)):
        raise ValueError("X must be a finite 2-D array")
    N, M = X.shape
    if N < M:
        raise ValueError(f"X has {N} samples and {M} features; a3 here maps the columns (N ≥ M)")
    r = int(n_components)
    if not 1 <= r <= M:
        raise ValueError(f"n_components must lie in [1, {M}], got {n_components!r}")
    y = np.asarray(y)
    if y.shape[0] != N:
        raise ValueError(f"y has {y.shape[0]} entries; expected {N}")
    if task not in ("classification", "regression"):
        raise ValueError(f"task must be 'classification' or 'regression', got {task!r}")
    if kernel not in ("rbf", "sne"):
        raise ValueError(f"kernel must be 'rbf' or 'sne', got {kernel!r}")
    if optimizer not in ("adam", "sgd"):
        raise ValueError(f"optimizer must be 'adam' or 'sgd', got {optimizer!r}")
    if not bandwidth > 0:
        raise ValueError(f"bandwidth must be > 0, got {bandwidth!r}")
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    if C_init is None:
        Uc, _, _ = np.linalg.svd(X, full_matrices=False)
        C_init = Uc[:, :M]
    C_init = np.asarray(C_init, dtype=np.float64)
    if C_init.shape != (N, M):
        raise ValueError(f"C_init has shape {C_init.shape}; expected ({N}, {M})")

    Xt = torch.as_tensor(X)
    C = torch.nn.Parameter(torch.as_tensor(C_init.copy()))
    if task == "classification":
        classes, y_idx = np.unique(y, return_inverse=True)
        n_out = len(classes)
        yt = torch.as_tensor(y_idx, dtype=torch.long)
        y_mean, y_std = 0.0, 1.0
        loss_fn = torch.nn.functional.cross_entropy
    else:
        classes = None
        yf = y.astype(np.float64)
        y_mean, y_std = float(yf.mean()), float(yf.std() or 1.0)
        yt = torch.as_tensor((yf - y_mean) / y_std)[:, None]
        n_out = 1

        def loss_fn(out, target):
            return torch.mean((out - target) ** 2)

    head = torch.nn.Linear(r, n_out, dtype=torch.float64)
    params = [C, *head.parameters()]
    opt = (torch.optim.Adam(params, lr=lr) if optimizer == "adam"
           else torch.optim.SGD(params, lr=lr))

    def right_vectors(G, V_prev):
        _, _, Vh = torch.linalg.svd(G.detach(), full_matrices=False)
        V = Vh[:r].T
        if V_prev is not None:  # keep a consistent sign per component across steps
            s = torch.sign((V * V_prev).sum(0))
            s[s == 0] = 1.0
            V = V * s
        return V

    with torch.no_grad():
        G0 = _kernel(torch, Xt, Xt.T @ C, kernel, bandwidth)
        V = right_vectors(G0, None)
        F0 = G0 @ V
        mu = F0.mean(0)
        sd = F0.std(0).clamp_min(1e-12)  # fixed feature scaling (part of the head)
    losses = []
    for _ in range(int(n_iter)):
        Z = Xt.T @ C
        G = _kernel(torch, Xt, Z, kernel, bandwidth)
        V = right_vectors(G, V)  # step (i): SVD of G, V detached
        if batch_size is not None and batch_size < N:
            idx = torch.as_tensor(rng.choice(N, size=batch_size, replace=False))
        else:
            idx = slice(None)
        F = (G[idx] @ V - mu) / sd  # step (ii): G from C, features G V, V fixed
        loss = loss_fn(head(F), yt[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    with torch.no_grad():
        Z = Xt.T @ C
        G = _kernel(torch, Xt, Z, kernel, bandwidth)
        V = right_vectors(G, V)
    return LearnableCompatResult(
        C=C.detach().numpy().copy(), Z=Z.numpy().copy(), V=V.numpy().copy(),
        W=head.weight.detach().numpy().T.copy(), b=head.bias.detach().numpy().copy(),
        feat_mean=mu.numpy().copy(), feat_std=sd.numpy().copy(), task=task, kernel=kernel,
        bandwidth=float(bandwidth), classes=classes, y_mean=y_mean, y_std=y_std, losses=losses,
    )
