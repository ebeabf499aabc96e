"""Warnings and errors raised by asymkern that users may want to filter or catch.

Mirrors :mod:`sklearn.exceptions`: the classes live here so that ``warnings.filterwarnings``
and ``except`` clauses have one import path.
"""

from __future__ import annotations

from .config import MemoryBudgetError

__all__ = ["ClippedParameterWarning", "MemoryBudgetError"]


class ClippedParameterWarning(UserWarning):
    """A count parameter (``n_components``, ``n_landmarks``, …) exceeded what the data allow
    and was reduced to the largest valid value, as scikit-learn's ``Nystroem`` does.

    The fitted estimator records the value it used in a trailing-underscore attribute (for
    example ``n_landmarks_``); raise the warning to an error with
    ``warnings.simplefilter("error", ClippedParameterWarning)`` to refuse clipping.

    See Also
    --------
    MemoryBudgetError : Raised when a dense result would exceed the memory budget.

    Examples
    --------
    >>> import warnings
    >>> from asymkern.exceptions import ClippedParameterWarning
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", ClippedParameterWarning)
    ...     try:
    ...         warnings.warn("n_landmarks clipped", ClippedParameterWarning)
    ...     except ClippedParameterWarning as w:
    ...         print(type(w).__name__)
    ClippedParameterWarning
    """
