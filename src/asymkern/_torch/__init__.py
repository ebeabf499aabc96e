"""PyTorch execution of the kernel layer, KernelSVD, NystromKernelRidge, NystromKernelPCA,
NystromSVC (its kernel work; the SVM itself stays scikit-learn's, on the host) and the operator
estimators (covariance, cross-covariance, kernel CCA, conditional mean embedding, Koopman and
Perron–Frobenius) (private).

The library imports without torch: :func:`asymkern._dispatch.is_torch_tensor` looks at
``sys.modules`` and never imports torch, and nothing in this package imports torch at module
level (every module here imports it through :func:`asymkern._dispatch.require_torch` when a
function runs), so ``import asymkern._torch`` is free.

Layering: this package holds the torch executor's *primitives* only — the array table
(:mod:`.primitives`, registered in :mod:`asymkern._backend` when this package is imported), the
lazy kernel matrix on the device (:mod:`.kernels`: kernel blocks, streaming row normalisers,
products; :mod:`.fused`: the products of the RBF, SNE and softmax kernels through PyTorch's fused
attention kernels; :mod:`.sparse`: a sparse precomputed G as CSR tensors), input conversion and
the tensors-in/tensors-out bookkeeping (:mod:`.device`, :mod:`.ksvd`), and the estimators'
inputs and outputs on the device (:mod:`.machines`: the Nyström machines' training input and
new points on the fit's device; :mod:`.operators`, :mod:`.transfer`: the validated samples and
new points of the operator estimators). The algorithms themselves — the SVD solvers, the
asymmetric Nyström method, KernelSVD's fit and transforms, the Nyström machines' landmark step
and per-mode algebra, the operator estimators' Gram matrices, landmark sums, evaluations, solves
and eigenproblems — are written once, in :mod:`asymkern.linalg`, :mod:`asymkern._shared` and the
estimator packages, against :class:`asymkern._backend.ArrayOps` (its ``kernel_matrix`` factory
gives the kernel matrices) and :class:`asymkern._backend.LazyMatrix`;
the estimators ask :func:`use_torch` at the top of ``fit`` / ``transform`` / ``predict``.
Small problems (r×r, s×s, m×m) and scipy-only steps (ARPACK, whose products run on the device)
stay on the host. No CUDA is written here. A fitted model never shares the caller's memory.

Semantics: a torch tensor in gives fitted arrays and outputs as torch tensors on the compute
device, in the input dtype (float32 stays float32); numpy in with the estimator parameter
``device`` set runs on that device and returns numpy arrays; numpy in with ``device=None`` is
the unchanged numpy path. Random test matrices and landmarks are drawn with numpy from the
same :func:`~asymkern._validation.check_random_state` stream as the numpy path and moved to the
device, so with the same ``random_state`` both paths agree to rounding.
"""

from __future__ import annotations

from .._backend import register_ops
from .._dispatch import TORCH_EXTRA_HINT, any_dask, any_torch, is_torch_tensor, require_torch


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


def check_device(est, *arrays) -> None:
    """Refuse a bad ``device`` parameter before a fit goes to an executor, with the same error
    for numpy, torch and dask inputs.

    Parameters
    ----------
    est : estimator
        An estimator with a ``device`` parameter (None: nothing to check).
    *arrays : array-like or None
        The inputs of the fit.

    Raises
    ------
    ValueError
        For a device that is not valid or not available
        (:func:`asymkern._torch.device.resolve_device`), and for a set ``device`` with dask
        inputs, which run on the Dask executor.
    TypeError
        When ``device`` is neither None, a string nor a ``torch.device``.
    ImportError
        When ``device`` is set and PyTorch is not installed.
    """
    device = getattr(est, "device", None)
    if device is None:
        return
    from .device import resolve_device

    resolve_device(device)
    if any_dask(*arrays):
        raise ValueError(
            f"device={device!r} runs the fit on the torch executor, but the inputs are dask "
            "arrays, which run on the Dask executor; leave device=None for dask inputs, or "
            "pass numpy arrays or torch tensors")


__all__ = ["TORCH_EXTRA_HINT", "any_torch", "check_device", "is_torch_tensor", "require_torch",
           "use_torch"]
