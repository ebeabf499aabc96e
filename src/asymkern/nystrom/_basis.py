"""The Nyström basis, now :mod:`asymkern._shared.nystrom_basis` (shared with asymkern._dask).

Kept so that estimators pickled before the move (their ``basis_`` is an
``asymkern.nystrom._basis.NystromBasis``) still load.
"""

from .._shared.nystrom_basis import NystromBasis, build_basis

__all__ = ["NystromBasis", "build_basis"]
