"""The kernel registry: ``KERNELS`` (name → class), :func:`get_kernel` and :func:`resolve_kernel`.

Imported by :mod:`.matrix` (a :class:`~asymkern.kernels.KernelMatrix` accepts a kernel name) and
re-exported by :mod:`asymkern.kernels`; it sits above the kernel classes and below the matrix,
so the kernel modules form no import cycle.
"""

from __future__ import annotations

import inspect

from .base import Kernel
from .divergence import GMMKLKernel, KLHistogramKernel
from .graph import DirectedGraphKernel
from .pairwise import (
    CallableKernel,
    CauchyKernel,
    LaplacianKernel,
    LinearKernel,
    PolynomialKernel,
    RBFKernel,
    SNEKernel,
    SoftmaxKernel,
    TKernel,
)

KERNELS: dict[str, type[Kernel]] = {
    "linear": LinearKernel,
    "poly": PolynomialKernel,
    "polynomial": PolynomialKernel,
    "rbf": RBFKernel,
    "gaussian": RBFKernel,
    "laplacian": LaplacianKernel,
    "cauchy": CauchyKernel,
    "sne": SNEKernel,
    "softmax": SoftmaxKernel,
    "t": TKernel,
    # He et al. (2023) kernels (AsK-LS): KL-divergence kernels and the directed-graph kernel
    "kl_histogram": KLHistogramKernel,
    "kl": KLHistogramKernel,
    "kl_gmm": GMMKLKernel,
    "directed_graph": DirectedGraphKernel,
}


def _init_params(cls) -> list[str]:
    """The names of the constructor parameters of ``cls``."""
    return [p.name for p in inspect.signature(cls.__init__).parameters.values()
            if p.name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def check_callable_params(params, name: str = "kernel") -> None:
    """Refuse parameters of a callable kernel other than the :class:`CallableKernel` flags.

    asymkern calls a kernel function as ``f(X, Z)`` and passes it no keyword arguments (unlike
    scikit-learn, whose ``kernel_params`` go to the callable); the parameters of a callable
    kernel are the flags of :class:`CallableKernel` (``is_symmetric``, ``is_psd``,
    ``accepts_sparse``, ``checks_features``). A width such as ``gamma`` would otherwise end in
    a bare ``TypeError`` from ``CallableKernel.__init__``.

    Parameters
    ----------
    params : dict
        The kernel parameters given with the callable.
    name : str, default 'kernel'
        The estimator parameter's name, for the message (``'kernel'``, ``'kernel_x'``).

    Raises
    ------
    ValueError
        Naming the parameters that are not flags and how to pass them to the function.
    """
    flags = [p for p in _init_params(CallableKernel) if p != "func"]
    unknown = sorted(set(params) - set(flags))
    if unknown:
        raise ValueError(
            f"{name}_params {unknown} cannot be given with a callable {name}: asymkern calls "
            f"the function as f(X, Z) and does not pass it keyword arguments (scikit-learn "
            f"does). Bind them in the function, with a closure or functools.partial (e.g. "
            f"{name}=functools.partial(f, {unknown[0]}=...)); the {name}_params of a callable "
            f"are the CallableKernel flags {flags}"
        )


def _refuse_class(kernel, name: str = "kernel") -> None:
    """Refuse a :class:`Kernel` subclass given where an instance is expected: a class is
    callable, and wrapping it as ``f(X, Z)`` would pass the data as its parameters."""
    if isinstance(kernel, type) and issubclass(kernel, Kernel):
        raise TypeError(
            f"{name}={kernel.__name__} is a kernel class; pass an instance "
            f"({kernel.__name__}(...)) or its name"
        )


def get_kernel(kernel="rbf", **params) -> Kernel:
    """Build a kernel from a name (see ``KERNELS``), a :class:`Kernel` instance or a callable.

    ``params`` go to the kernel's constructor (a name or callable) and must be empty for an
    instance; every kernel validates its parameters (finite, in range) at construction and
    again when used. ``'precomputed'`` is handled by the estimators, not here.

    A callable is wrapped in :class:`CallableKernel` and treated as **asymmetric and not PSD**
    unless flagged (``is_symmetric=True``, ``is_psd=True`` in ``params``): no symmetric
    solver, Cholesky or symmetrisation is used on it. Its ``params`` are only these flags:
    the function is called as ``f(X, Z)`` without keyword arguments (unlike scikit-learn,
    which passes ``kernel_params`` to a callable), so a width or other parameter of the
    function is bound in it (a closure or ``functools.partial``); any other key raises
    ``ValueError``.

    Parameters
    ----------
    kernel : str, Kernel or callable, default 'rbf'
        A name in ``KERNELS`` (case-insensitive: ``'linear'``, ``'poly'``, ``'rbf'``,
        ``'laplacian'``, ``'cauchy'``, ``'sne'``, ``'t'``, ``'kl_histogram'``, ``'kl_gmm'``,
        ``'directed_graph'`` and aliases), a :class:`Kernel` instance (a copy is returned:
        a later ``set_params`` on the instance does not change it; arrays it holds are
        shared) or a callable ``f(X, Z) -> (n, m) array`` (wrapped in
        :class:`CallableKernel`).
    **params
        Constructor parameters of the kernel (e.g. ``gamma=0.5``, ``bandwidth=2.0``); for a
        callable, the :class:`CallableKernel` flags only.

    Returns
    -------
    Kernel
        The kernel.

    Raises
    ------
    ValueError
        If the name is unknown or ``'precomputed'``, a parameter is not one of the kernel's
        (for a callable: not a :class:`CallableKernel` flag, e.g. ``gamma``), a parameter
        value is invalid, or ``params`` are given with a :class:`Kernel` instance.
    TypeError
        If ``kernel`` is neither a string, a :class:`Kernel` nor a callable, or is a
        :class:`Kernel` class rather than an instance.

    See Also
    --------
    resolve_kernel : The same, with an estimator-level ``gamma``.
    KERNELS : The registry of kernel names.
    Kernel : The base class of all kernels.

    Examples
    --------
    >>> from asymkern.kernels import get_kernel
    >>> get_kernel("rbf", gamma=0.5)
    RBFKernel(bandwidth=None, gamma=0.5)
    >>> get_kernel("sne", bandwidth=2.0).is_symmetric
    False
    >>> get_kernel(lambda X, Z: X @ Z.T).name
    'callable'
    """
    if isinstance(kernel, Kernel):
        if params:
            raise ValueError(
                "kernel_params cannot be combined with a Kernel instance; set them on the instance"
            )
        return kernel._copy()  # a fit keeps the parameters it was given (set_params later)
    if isinstance(kernel, str):
        key = kernel.lower()
        if key == "precomputed":
            raise ValueError("kernel='precomputed' has no kernel function; pass the matrix itself")
        if key not in KERNELS:
            raise ValueError(
                f"unknown kernel {kernel!r}; expected one of {sorted(KERNELS)}, "
                "'precomputed', a Kernel instance or a callable f(X, Z) -> (n, m) array"
            )
        valid = _init_params(KERNELS[key])
        unknown = sorted(set(params) - set(valid))
        if unknown:
            raise ValueError(
                f"unknown kernel_params {unknown} for kernel {kernel!r}; its parameters are "
                f"{valid}"
            )
        return KERNELS[key](**params)
    _refuse_class(kernel)
    if callable(kernel):
        check_callable_params(params)
        return CallableKernel(kernel, **params)
    raise TypeError(f"kernel must be a name, a Kernel or a callable, got {type(kernel).__name__}")


#: estimator parameter → kernel parameter it sets (scikit-learn's name for the kernel width)
WIDTH_PARAMS = ("gamma", "bandwidth")


def resolve_kernel(kernel="rbf", kernel_params=None, *, gamma=None, name: str = "kernel") -> Kernel:
    """The kernel an estimator uses: ``get_kernel(kernel, **kernel_params)`` with its width set.

    ``gamma`` is the estimator-level kernel width, as in scikit-learn's ``KernelRidge``,
    ``SVC``, ``KernelPCA`` and ``Nystroem``: it multiplies the squared distance,
    κ(x, z) = exp(−gamma‖x − z‖²) for ``'rbf'`` (and ``'sne'``, ``'laplacian'``, ``'poly'``,
    ``'cauchy'``, ``'t'``). The papers' bandwidth σ of exp(−‖x − z‖²/σ²) is ``gamma = 1/σ²``
    (``kernel_params={'bandwidth': σ}``). ``None`` keeps the kernel's own default.

    A :class:`Kernel` instance is never modified: with ``gamma`` set, a new kernel with the
    same parameters and that width is returned. Raises ``ValueError`` naming ``gamma`` when the
    width is also given in ``kernel_params`` or the kernel has no width parameter.

    A callable kernel has no width to set: ``gamma`` (or ``kernel_params={'gamma': ...}``)
    with a callable raises ``ValueError``; bind the width in the function (a closure or
    ``functools.partial``). An unflagged callable is treated as asymmetric and not PSD
    (:func:`get_kernel`).

    Parameters
    ----------
    kernel : str, Kernel or callable, default 'rbf'
        As for :func:`get_kernel`.
    kernel_params : dict or None
        Constructor parameters of a kernel given by name.
    gamma : float or None
        The estimator-level kernel width (None: leave the kernel as it is).
    name : str
        The estimator parameter's name, for error messages (``'kernel'``, ``'kernel_x'``).

    Returns
    -------
    Kernel
        The kernel, with its ``gamma`` set when ``gamma`` is given.

    Raises
    ------
    ValueError
        If ``gamma`` is also given (as ``gamma`` or ``bandwidth``) in ``kernel_params`` or
        by the instance, the kernel has no ``gamma`` parameter, or ``kernel`` is a callable.
    TypeError
        If ``kernel`` is a :class:`Kernel` class rather than an instance.

    See Also
    --------
    get_kernel : Build a kernel from a name, an instance or a callable.
    WIDTH_PARAMS : The kernel parameters that set the width.

    Examples
    --------
    >>> from asymkern.kernels import RBFKernel, resolve_kernel
    >>> resolve_kernel("rbf", None, gamma=0.5)
    RBFKernel(bandwidth=None, gamma=0.5)
    >>> k = RBFKernel(gamma=2.0)
    >>> resolve_kernel(k, gamma=0.5), k.gamma   # a new kernel; k is unchanged
    (RBFKernel(bandwidth=None, gamma=0.5), 2.0)
    """
    _refuse_class(kernel, name)
    if callable(kernel) and not isinstance(kernel, (Kernel, str)):
        check_callable_params(kernel_params or {}, name)
    if gamma is None:
        return get_kernel(kernel, **(kernel_params or {}))
    params = dict(kernel_params or {})
    clash = [p for p in WIDTH_PARAMS if params.get(p) is not None]
    if clash:
        raise ValueError(
            f"gamma={gamma!r} is given both as an estimator parameter and as "
            f"{name}_params[{clash[0]!r}]; set the kernel width once"
        )
    if isinstance(kernel, Kernel):
        own = kernel.get_params(deep=False)
        if "gamma" not in own:
            raise ValueError(
                f"gamma={gamma!r} is a kernel width, but {type(kernel).__name__} has no gamma "
                f"parameter (its parameters: {sorted(own)}); leave gamma=None"
            )
        if own.get("bandwidth") is not None:
            raise ValueError(
                f"gamma={gamma!r} is given while the {name} instance sets bandwidth="
                f"{own['bandwidth']!r}; set the kernel width once"
            )
        return type(kernel)(**{**own, "gamma": gamma})
    if callable(kernel) and not isinstance(kernel, str):
        raise ValueError(
            f"gamma={gamma!r} cannot be applied to a callable {name}: asymkern calls it as "
            f"f(X, Z) without keyword arguments. Bind the width in the function, with a "
            f"closure or functools.partial (e.g. {name}=functools.partial(f, gamma={gamma!r})), "
            f"and leave gamma=None"
        )
    if isinstance(kernel, str) and kernel.lower() in KERNELS:
        valid = _init_params(KERNELS[kernel.lower()])
        if "gamma" not in valid:
            raise ValueError(
                f"gamma={gamma!r} is a kernel width, but kernel {kernel!r} has no gamma "
                f"parameter (its parameters: {valid}); leave gamma=None"
            )
    return get_kernel(kernel, **params, gamma=gamma)


def fix_default_width(kernel: Kernel, n_features: int) -> tuple[Kernel, float | None]:
    """The kernel with a data-dependent default width fixed for ``n_features``, and the width.

    With neither ``gamma`` nor ``bandwidth`` the RBF, Laplacian and polynomial kernels use
    gamma = 1/n_features of the data they are *called on* (scikit-learn's default). An
    estimator that applies its kernel to data of another dimension than X — scikit-learn's
    ``KernelPCA`` pre-image map works on the scores — must resolve the width once at fit
    (scikit-learn's ``gamma_``, fixed there in scikit-learn PR #26280), or its two uses
    silently disagree.

    Parameters
    ----------
    kernel : Kernel
        The kernel (never modified).
    n_features : int
        The dimension of the training data.

    Returns
    -------
    kernel : Kernel
        ``kernel`` itself when its width does not depend on the dimension (given explicitly,
        as ``bandwidth``, a fixed default such as Cauchy's gamma = 1, or no width parameter),
        else a new kernel of the same class and parameters with ``gamma = 1/n_features``.
    gamma : float or None
        The width gamma the kernel uses on ``n_features``-dimensional data (1/bandwidth² for a
        bandwidth); None for a kernel without a ``gamma`` parameter.

    Examples
    --------
    >>> from asymkern.kernels import RBFKernel
    >>> from asymkern.kernels._registry import fix_default_width
    >>> fix_default_width(RBFKernel(), 4)
    (RBFKernel(bandwidth=None, gamma=0.25), 0.25)
    >>> fix_default_width(RBFKernel(bandwidth=2.0), 4)
    (RBFKernel(bandwidth=2.0, gamma=None), 0.25)
    """
    from .pairwise import SoftmaxKernel, _resolve_gamma, _SqDistKernel

    params = kernel.get_params(deep=False)
    if "gamma" not in params:
        return kernel, None

    def width(d: int) -> float:
        if isinstance(kernel, _SqDistKernel):
            return float(kernel._sq_scale(d))
        if isinstance(kernel, SoftmaxKernel):  # 1/√d, attention's default
            return kernel._scale(d)
        return float(_resolve_gamma(params["gamma"], params.get("bandwidth"), d, kernel.name))

    gamma = width(n_features)
    if params["gamma"] is None and gamma != width(n_features + 1):  # the 1/n_features default
        return type(kernel)(**{**params, "gamma": gamma}), gamma
    return kernel, gamma
