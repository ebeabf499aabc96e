"""PyTorch execution of the kernel layer, KernelSVD, NystromKernelRidge, NystromKernelPCA,
NystromSVC (its kernel work; the SVM itself stays scikit-learn's, on the host) and the operator
estimators (covariance, cross-covariance, kernel CCA, conditional mean embedding, Koopman and
Perron–Frobenius) (private).

The library imports without torch: :func:`asymkern._dispatch.is_torch_tensor` looks at
``sys.modules`` and never imports torch, and nothing in this package imports torch at module
level (every module here imports it through :func:`asymkern._dispatch.require_torch` when a
function runs), so ``import asymkern._torch`` is free.

Layering (mirrors :mod:`asymkern._dask`): the estimators (:class:`~asymkern.KernelSVD`,
:class:`~asymkern.nystrom.NystromKernelRidge`, :class:`~asymkern.nystrom.NystromKernelPCA`,
:class:`~asymkern.nystrom.NystromSVC`, :class:`~asymkern.operators.CovarianceOperator`,
:class:`~asymkern.operators.CrossCovarianceOperator`, :class:`~asymkern.operators.KernelCCA`,
:class:`~asymkern.operators.ConditionalMeanEmbedding`,
:class:`~asymkern.operators.KoopmanOperator`, :class:`~asymkern.operators.PerronFrobeniusOperator`)
ask :func:`use_torch` at the top of ``fit`` / ``transform`` / ``predict`` and hand the work to the
executors here (:mod:`.ksvd`, :mod:`.krr`, :mod:`.kpca`, :mod:`.svc`, :mod:`.operators`,
:mod:`.embedding`, :mod:`.transfer`); the kernel layer and :mod:`asymkern.linalg` stay numpy-only
and never import this package. The executors reuse the small, device-independent steps of the numpy
path (landmark draws, the core SVD of the Nyström landmarks, the eigen-decomposition of K_mm, the
ridge solves, the ARPACK iterations of ``KernelSVD(solver='arpack')`` and of the exact transfer
operators, which get only vectors from the device) and run the O(n) work — kernel blocks, row
normalisers, products with G and Gᵀ (sparse CSR products for a sparse precomputed G,
:mod:`.sparse`), landmark blocks — on the device with PyTorch's own kernels (GEMM expansions of
squared distances, ``torch.cdist`` for the L1 distances, ``torch.linalg`` QR/SVD, a streaming
log-sum-exp for the normalisers); no CUDA is written here. The operator estimators form their n×n
Gram matrices on the device in float64 (as the numpy path forms them) and decompose them there
(``eigh``, ``cholesky``, ``eig``, ``svd``); only r×r matrices go to the host, and their fitted
numpy ``operator_`` is lazy (:meth:`asymkern.operators.estimators._Recomputable.lazy`), so a torch
fit does no n³ work on the host. NystromKernelPCA likewise takes the thin SVD of its n×s features
(and, in modes 'spa' and 'exact', the ``eigh`` of an n×n matrix) on the device. A fitted model
never shares the caller's memory.

Semantics: a torch tensor in gives fitted arrays and outputs as torch tensors on the compute
device, in the input dtype (float32 stays float32); numpy in with the estimator parameter
``device`` set runs on that device and returns numpy arrays; numpy in with ``device=None`` is
the unchanged numpy path. Random test matrices and landmarks are drawn with numpy from the
same :func:`~asymkern._validation.check_random_state` stream as the numpy path and moved to the
device, so with the same ``random_state`` both paths agree to rounding.
"""

from __future__ import annotations

from .._backend import register_ops
from .._dispatch import TORCH_EXTRA_HINT, any_torch, is_torch_tensor, require_torch


def _torch_ops():
    from .primitives import TorchOps

    return TorchOps()


register_ops(is_torch_tensor, _torch_ops)


def use_torch(est, *arrays) -> bool:
    """Whether ``est`` runs on the torch backend for these inputs.

    Parameters
    ----------
    est : estimator
        An estimator with a ``device`` parameter (``None`` keeps numpy for numpy input).
    *arrays : array-like or None
        The inputs of the call.

    Returns
    -------
    bool
        True for a torch tensor input, a set ``device``, or a model fitted on torch.
    """
    return (any_torch(*arrays) or getattr(est, "device", None) is not None
            or getattr(est, "torch_fit_", False))


__all__ = ["TORCH_EXTRA_HINT", "any_torch", "is_torch_tensor", "require_torch", "use_torch"]
