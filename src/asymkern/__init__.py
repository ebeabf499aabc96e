"""asymkern: learning with asymmetric kernels and the SVD in feature spaces, scaled by Nystrom.

Subpackages: ``kernels`` (kernel layer), ``linalg`` (SVD solvers, Nystrom), ``decomposition``
(KernelSVD), ``lssvm`` (LS-SVM, AsK-LS), ``operators`` (empirical RKHS operators), ``nystrom``
(Nystrom kernel machines), ``datasets``, ``experiments`` (paper reproductions).
"""

from . import (
    _dask,  # noqa: F401 - registers the Dask executor hooks (asymkern._dispatch)
    _torch,  # noqa: F401 - registers the torch array primitives (asymkern._backend)
)
from .config import config_context, get_config, set_config
from .decomposition import KernelPCA, KernelSVD
from .kernels import KernelMatrix, get_kernel

# The one source of the version: pyproject.toml reads it (``[tool.setuptools.dynamic]``) and
# ``asymkern --version`` prints it.
__version__ = "0.2.0.dev0"

__all__ = [
    "KernelSVD",
    "KernelPCA",
    "KernelMatrix",
    "get_kernel",
    "get_config",
    "set_config",
    "config_context",
]
