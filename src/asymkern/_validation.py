"""Input validation shared by every public entry point.

Every check raises an error that names the offending argument and what was expected. No function
here modifies its input: arrays are converted (and copied only when a conversion needs it).
"""

from __future__ import annotations

import functools
import numbers
import os
import sys
import types
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state as _sk_check_random_state

from ._dispatch import host_copy, is_dask_array, is_torch_tensor, refuse_meta

FLOAT_DTYPES = (np.float64, np.float32)

#: bytes of the boolean mask :func:`all_finite` forms at once
_FINITE_CHUNK = 2**20


def _check_conversion(arr: np.ndarray, target, name: str) -> None:
    """Refuse, before it is made, a float copy of ``arr`` (integer, boolean or float16 data
    become float64) larger than the ``max_dense_memory`` budget: an int8 matrix grows 8×."""
    from .config import check_memory

    nbytes = arr.size * np.dtype(target).itemsize
    check_memory(nbytes, f"converting {name} from {arr.dtype} to {np.dtype(target)}",
                 f"float32 or float64 data for {name}",
                 detail=f"a copy of {arr.size} values")


def all_finite(values) -> bool:
    """Whether every entry of a numeric array is finite, without a mask of its size.

    ``np.all(np.isfinite(a))`` forms a boolean array as large as ``a`` (an eighth of a float64
    kernel matrix), which no memory budget counts. Here the test runs on chunks of rows
    whose mask takes about 1 MiB (as fast: the chunks stay in cache).

    Parameters
    ----------
    values : array-like
        Any numpy array (integer, boolean and other non-float dtypes are finite).

    Returns
    -------
    bool
    """
    a = np.asarray(values)
    if a.dtype.kind not in "fc" or a.size == 0:
        return a.dtype.kind != "O" or bool(np.all(np.isfinite(a.astype(np.float64))))
    if a.ndim == 0:
        return bool(np.isfinite(a))
    step = max(1, _FINITE_CHUNK // max(1, a[0].size))
    return all(bool(np.isfinite(a[i:i + step]).all()) for i in range(0, a.shape[0], step))


def as_data(
    X,
    name: str = "X",
    *,
    allow_sparse: bool = False,
    min_samples: int = 1,
    dtype=FLOAT_DTYPES,
    ensure_2d: bool = True,
):
    """Validate a data matrix (samples are rows) and return it as a float array.

    float32 input stays float32; any other numeric type becomes float64. A dense matrix up to
    ``working_memory`` MiB comes back C-contiguous (a Fortran-ordered or strided one is copied
    once), so that results do not depend on the caller's memory layout: BLAS takes other code
    paths for other layouts, whose rounding an ill-conditioned problem amplifies. A larger one
    (e.g. the transpose of a big precomputed kernel matrix) is not copied. Sparse input is
    accepted
    (as CSR) only when ``allow_sparse``. Raises ``ValueError`` naming ``name`` on NaN/inf, wrong
    dimensionality or too few samples, ``TypeError`` on non-numeric input.
    """
    if X is None:
        raise ValueError(f"{name} is None; expected an array of shape (n_samples, n_features)")
    refuse_meta(X, name)
    if sp.issparse(X):
        if not allow_sparse:
            raise TypeError(
                f"{name} is a sparse matrix, which this operation does not accept; "
                "pass a dense array (e.g. X.toarray())"
            )
        X = sp.csr_matrix(X)
        if X.dtype not in FLOAT_DTYPES:
            _check_conversion(X.data, np.float64, name)
            X = X.astype(np.float64)
        values = X.data
    else:
        if is_dask_array(X):  # an in-memory path: the array is gathered, within the budget
            _check_gather(X, name)
        arr = _as_real(X, name, f"Complex data not supported: {name} is complex-valued; "
                       "expected real numbers", f"{name} must be numeric")
        target = dtype if isinstance(dtype, type) else np.float64
        if arr.dtype not in FLOAT_DTYPES or (isinstance(dtype, type) and arr.dtype != target):
            _check_conversion(arr, target, name)
            arr = arr.astype(target)
        if ensure_2d:
            if arr.ndim == 1:
                raise ValueError(
                    f"{name} must be 2-D (n_samples, n_features), got a 1-D array of shape "
                    f"{arr.shape}; reshape with {name}.reshape(-1, 1) for one feature or "
                    f"{name}.reshape(1, -1) for one sample (Reshape your data)"
                )
            if arr.ndim != 2:
                raise ValueError(f"{name} must be 2-D, got an array with {arr.ndim} dimensions")
        if arr.ndim == 2 and not arr.flags.c_contiguous:
            from .config import get_config

            if arr.nbytes <= get_config()["working_memory"] * 2**20:
                arr = np.ascontiguousarray(arr)  # one layout, so one order of the arithmetic
        X = values = arr
    if not all_finite(values):
        raise ValueError(f"{name} contains NaN or infinity; expected finite values")
    n = X.shape[0] if X.ndim else 0
    if ensure_2d and X.shape[1] == 0:
        raise ValueError(f"{name} has 0 feature(s) (shape={X.shape}) while a minimum of 1 is "
                         "required.")
    if n < min_samples:
        raise ValueError(
            f"{name} has {n} sample(s) (shape={X.shape}) while a minimum of {min_samples} "
            "is required."
        )
    return X


def check_input(estimator, X, *, reset: bool, name: str = "X", **as_data_kwargs):
    """Validate estimator input: scikit-learn's bookkeeping, then :func:`as_data`.

    ``sklearn.utils.validation.validate_data`` records (``reset=True``, in ``fit``) or checks
    (``reset=False``) ``n_features_in_`` and ``feature_names_in_`` — a DataFrame whose columns
    are reordered or renamed after fitting is refused, one fitted without names warns —
    and :func:`as_data` converts (float32 stays float32, sparse only where allowed) with
    errors that name ``name``. Dask collections are left to the Dask executor.
    """
    from sklearn.utils.validation import validate_data

    converted = as_data(X, name, **as_data_kwargs)  # its errors first ("Reshape your data")
    validate_data(estimator, X, reset=reset, skip_check_array=True)
    return converted


def check_tensor_shape(X, owner: str, name: str = "X", min_samples: int = 1) -> None:
    """The shape rules :func:`as_data` applies to arrays, for an array it does not convert (a
    torch tensor): 2-D, at least ``min_samples`` rows and one column; the ``ValueError``
    names ``name`` and ``owner`` (scikit-learn's words)."""
    shape = tuple(int(k) for k in X.shape)
    if len(shape) != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features), got shape {shape}")
    if shape[0] < min_samples:
        raise ValueError(f"{name} has {shape[0]} sample(s) (shape={shape}) while a minimum of "
                         f"{min_samples} is required by {owner}.")
    if shape[1] < 1:
        raise ValueError(f"{name} has 0 feature(s) (shape={shape}) while a minimum of 1 is "
                         f"required by {owner}.")


def ndim_of(x) -> int:
    """The number of dimensions of an array-like, read without converting an array or a tensor
    (``np.ndim`` would convert a tensor that requires grad, and refuses objects that forbid
    ``__array_function__``)."""
    nd = getattr(x, "ndim", None)
    return nd if isinstance(nd, int) else np.asarray(x).ndim


def n_rows(X, name: str = "X") -> int:
    """The number of rows of an array not yet validated (numpy or tensor); a 0-d array is
    refused naming ``name`` (``len`` would raise the array library's own TypeError)."""
    shape = getattr(X, "shape", None)
    if shape is None:
        shape = np.shape(X)
    if len(shape) == 0:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features), got a 0-d array")
    return int(shape[0])


def check_tensor_input(estimator, X, min_samples: int = 2) -> None:
    """scikit-learn's bookkeeping for an array that :func:`check_input` does not convert (a
    torch tensor): :func:`check_tensor_shape` (at least ``min_samples`` rows),
    ``n_features_in_`` recorded, no ``feature_names_in_`` (a tensor has no column names)."""
    check_tensor_shape(X, type(estimator).__name__, min_samples=min_samples)
    estimator.n_features_in_ = int(X.shape[1])
    estimator.__dict__.pop("feature_names_in_", None)


def check_n_components(n_components, limit: float, name: str = "n_components", what: str = ""):
    """Check 1 <= n_components <= limit and return it as int."""
    if isinstance(n_components, bool) or not isinstance(n_components, numbers.Integral):
        raise TypeError(f"{name} must be a positive integer, got {n_components!r}")
    n_components = int(n_components)
    if n_components < 1:
        raise ValueError(f"{name} must be >= 1, got {n_components}")
    if n_components > limit:
        extra = f" ({what})" if what else ""
        raise ValueError(f"{name}={n_components} is larger than the maximum {limit}{extra}")
    return n_components


def check_indices(indices, n: int, name: str, *, unique: bool = True) -> np.ndarray:
    """Validate an array of row indices into ``n`` rows and return it as a new intp array.

    Shared by every option that takes landmark or row indices (the Nyström machines and feature
    map, the operator estimators, :func:`~asymkern.landmarks.select_landmarks`,
    :func:`~asymkern.linalg.asymmetric_nystrom`). The indices must form a non-empty 1-D array of
    integers (a boolean mask or floats are refused) in [0, n): negative indices are *not*
    wrapped around as numpy indexing would, since −1 is far more likely a mistake than "the
    last row". With ``unique`` (the default) repeated indices are refused as well. Every
    ``ValueError`` names ``name``.
    """
    if isinstance(indices, (str, bytes)):
        raise ValueError(f"{name} must be a 1-D array of integer indices in [0, {n}), got "
                         f"{indices!r}")
    idx = np.asarray(indices)
    if idx.ndim != 1 or idx.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of integer indices in [0, {n}), "
                         f"got an array of shape {idx.shape}")
    if idx.dtype == bool or not np.issubdtype(idx.dtype, np.integer):
        raise ValueError(f"{name} must hold integer indices in [0, {n}), got dtype {idx.dtype} "
                         "(boolean masks and non-integer values are not accepted)")
    lo, hi = idx.min(), idx.max()
    if lo < 0 or hi >= n:
        wrap = "; negative indices are not wrapped around" if lo < 0 else ""
        raise ValueError(f"{name} must lie in [0, {n}) (there are {n} rows), got min {lo}, "
                         f"max {hi}{wrap}")
    if unique and np.unique(idx).size != idx.size:
        raise ValueError(f"{name} contains duplicates (repeated indices); landmark indices "
                         "must be unique")
    return idx.astype(np.intp)  # a copy: the caller's array is never aliased


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes a warning point at the first frame outside asymkern.

    Call it in the function that calls ``warnings.warn``: the warning is then reported at the
    user's line (their ``fit(...)`` call), however deep inside the library it was raised.
    """
    frame: types.FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    return level


def clip_count(value, limit: int, name: str, what: str, *, owner: str = "") -> int:
    """Validate a positive integer count and clip it to ``limit`` with a warning.

    The scikit-learn convention for ``n_components``/``n_landmarks`` larger than the data allow
    (``Nystroem``, ``TruncatedSVD``): warn with
    :class:`~asymkern.exceptions.ClippedParameterWarning` naming the parameter, the limit and
    why, and use the limit. Non-integers and values < 1 raise as :func:`check_n_components`.
    """
    from .exceptions import ClippedParameterWarning

    value = check_n_components(value, np.iinfo(np.int64).max, name)
    limit = int(limit)
    if value > limit:
        prefix = f"{owner}: " if owner else ""
        warnings.warn(f"{prefix}{name}={value} is larger than {what} ({limit}); using "
                      f"{name}={limit}", ClippedParameterWarning, stacklevel=user_stacklevel())
        return limit
    return value


def check_random_state(random_state, name: str = "random_state") -> np.random.RandomState:
    """scikit-learn's ``check_random_state`` with errors that name the argument.

    The library-wide convention (scikit-learn's): ``None`` (numpy's global RandomState), an int in
    [0, 2**32 − 1] or a :class:`numpy.random.RandomState`. A :class:`numpy.random.Generator`
    is refused everywhere with a ``TypeError`` saying how to pass its seed instead, so that
    no estimator accepts what another rejects.
    """
    if random_state is None or isinstance(random_state, np.random.RandomState):
        return _sk_check_random_state(random_state)
    if isinstance(random_state, np.random.Generator):
        raise TypeError(
            f"{name} must be None, an int in [0, 2**32 - 1] or a numpy.random.RandomState "
            "(scikit-learn's convention); a numpy.random.Generator is not accepted: pass an "
            f"int seed, e.g. {name}=int(rng.integers(2**32))"
        )
    if isinstance(random_state, bool) or not isinstance(random_state, numbers.Integral):
        raise TypeError(
            f"{name} must be None, an int in [0, 2**32 - 1] or a numpy RandomState, got "
            f"{random_state!r}"
        )
    if not 0 <= int(random_state) <= 2**32 - 1:
        raise ValueError(f"{name} must be an int in [0, 2**32 - 1], got {random_state}")
    return _sk_check_random_state(int(random_state))


#: sentinel default of a renamed estimator parameter (scikit-learn's deprecation pattern)
DEPRECATED = "deprecated"


def check_not_both(estimator, new: str, old: str) -> None:
    """Refuse an estimator whose deprecated parameter ``old`` is set while ``new`` (its new
    name) differs from the constructor's default: ``ValueError`` naming both."""
    import inspect

    default = inspect.signature(type(estimator).__init__).parameters[new].default
    value = getattr(estimator, new)
    same = value is default
    if not same:
        try:
            same = bool(value == default)
        except (TypeError, ValueError):  # an array or another object without a truth value
            same = False
    if not same:
        raise ValueError(f"{type(estimator).__name__}: both {new}={value!r} and its deprecated "
                         f"name {old}={getattr(estimator, old)!r} are set; set {new} only")


def renamed_param(estimator, new: str, old: str, *, since: str = "0.2",
                  removed: str = "0.3") -> object:
    """The value of parameter ``new``, honouring its deprecated former name ``old``.

    ``old`` is a constructor parameter whose default is :data:`DEPRECATED`; when a user set it,
    a ``FutureWarning`` says it was renamed and its value is used. Setting both (``new`` away
    from its default) raises ``ValueError``: which one was meant cannot be known, and a grid
    search over ``new`` would otherwise silently fit ``old``'s value for every candidate.
    """
    old_value = getattr(estimator, old)
    if isinstance(old_value, str) and old_value == DEPRECATED:
        return getattr(estimator, new)
    check_not_both(estimator, new, old)
    warnings.warn(f"{type(estimator).__name__}: the parameter {old!r} was renamed {new!r} in "
                  f"{since} and will be removed in {removed}; use {new}={old_value!r}",
                  FutureWarning, stacklevel=user_stacklevel())
    return old_value


def renamed_argument(value, old_value, new: str, old: str, where: str, *,
                     since: str = "0.2", removed: str = "0.3"):
    """A method argument renamed from ``old`` to ``new`` (``FutureWarning`` when ``old`` is
    used; ``TypeError`` when both are given)."""
    if old_value is None:
        return value
    if value is not None:
        raise TypeError(f"{where}: pass {new} only ({old} is its deprecated name)")
    warnings.warn(f"{where}: the argument {old!r} was renamed {new!r} in {since} and will be "
                  f"removed in {removed}; pass it as {new}", FutureWarning,
                  stacklevel=user_stacklevel())
    return old_value


def check_regression_targets(y, n: int | None, name: str = "y") -> np.ndarray:
    """Regression targets as float64 of shape (n,) or (n, k), finite, real and numeric.

    Shared by the in-memory and torch paths of the Nyström machines and the LS-SVM solvers;
    errors name ``name``. ``n=None`` accepts any number of rows.
    """
    y = _as_real(y, name, f"Complex data not supported: {name} is complex-valued; expected "
                 "real targets", f"{name} must be numeric (Unknown label type for regression)")
    y = y.astype(np.float64)
    if y.ndim not in (1, 2):
        raise ValueError(f"{name} must be 1-D or 2-D, got shape {y.shape}")
    if n is not None and y.shape[0] != n:
        raise ValueError(f"{name} has {y.shape[0]} entries but X has {n} samples")
    check_target_columns(y.shape, name)
    if not np.all(np.isfinite(y)):
        raise ValueError(f"{name} contains NaN or infinity; expected finite values")
    return y


def check_target_columns(shape: tuple, name: str = "y") -> None:
    """Refuse 2-D targets of shape (n, 0): there is nothing to fit (scikit-learn refuses
    them too), and a fit would otherwise return empty predictions."""
    if len(shape) == 2 and shape[1] == 0:
        raise ValueError(f"{name} has shape {tuple(shape)}: 2-D targets need at least one "
                         "column")


def real_numeric(arr: np.ndarray, *, complex_message: str, nonnumeric_message: str
                 ) -> np.ndarray:
    """``arr`` as a real numeric array (bool kept), or an error: complex values (also inside an
    object array) raise ``ValueError(complex_message)``, never cast to real (numpy's cast drops
    the imaginary part with only a ``ComplexWarning``); non-numeric values raise
    ``TypeError(nonnumeric_message + detail)``. An object array of numbers becomes float64."""
    if arr.dtype == object:
        if any(isinstance(v, (complex, np.complexfloating)) for v in arr.ravel()):
            raise ValueError(complex_message)
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{nonnumeric_message}: {exc}") from exc
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise TypeError(f"{nonnumeric_message}; got dtype {arr.dtype}")
    if np.iscomplexobj(arr):
        raise ValueError(complex_message)
    return arr


def _nullable_as_float(x):
    """A pandas DataFrame or Series whose columns are all numeric and some of a nullable
    extension dtype (``Int64``, ``Float64``, ``boolean``) as float64 with ``pd.NA`` → NaN (the
    finiteness check then names the missing value, as scikit-learn's); anything else as is
    (numpy would give an object array, refused as non-numeric)."""
    if not type(x).__module__.startswith("pandas"):
        return x
    from pandas.api.types import is_bool_dtype, is_extension_array_dtype, is_numeric_dtype

    dtypes = list(x.dtypes) if hasattr(x, "columns") else [getattr(x, "dtype", None)]
    if any(is_extension_array_dtype(d) for d in dtypes) and all(
            is_numeric_dtype(d) or is_bool_dtype(d) for d in dtypes):
        return x.to_numpy(dtype=np.float64, na_value=np.nan)
    return x


def _as_real(x, name: str, complex_message: str, nonnumeric_message: str) -> np.ndarray:
    """``np.asarray(x)`` checked by :func:`real_numeric`; a failed conversion names ``name``."""
    refuse_meta(x, name)  # a shape without data: no copy can help
    if is_torch_tensor(x) and x.device.type == "cpu":
        x = host_copy(x, name)  # without its graph; bfloat16 as float32; sparse refused
    try:
        arr = np.asarray(_nullable_as_float(x))
    except Exception as exc:  # a tensor on a device, exotic objects
        device = getattr(x, "device", None)
        if getattr(device, "type", "cpu") != "cpu":
            raise TypeError(f"{name} is a tensor on {device}, which this estimator reads on the "
                            f"host (it has no torch executor): pass {name}.cpu()") from exc
        raise TypeError(f"{name} could not be converted to a numeric array: {exc}") from exc
    return real_numeric(arr, complex_message=complex_message,
                        nonnumeric_message=nonnumeric_message)


def as_weights(weights, n: int, name: str = "sample_weight", what: str = "sample"):
    """``sample_weight``-style weights as float64 (n,): real, finite, >= 0, not all zero.

    The one validation of every weight argument (the estimators' ``fit``/``score``
    ``sample_weight``, ``KernelSVD``'s ``sample_weight_Z``, the LS-SVM solvers); errors name
    ``name`` and say there is one weight per ``what``. None stays None; a scalar is broadcast.
    Complex weights are refused (``ValueError``), never cast to real (numpy's cast would drop
    the imaginary part with only a ``ComplexWarning``); non-numeric ones are a ``TypeError``.
    """
    if weights is None:
        return None
    w = _as_real(weights, name, f"Complex data not supported: {name} is complex-valued; "
                 f"expected real weights >= 0, one per {what}",
                 f"{name} must be numeric, one weight per {what}")
    w = np.full(n, float(w)) if w.ndim == 0 else np.array(w, dtype=np.float64)
    if w.ndim != 1 or w.shape[0] != n:
        raise ValueError(f"{name} must be a 1-D array with one weight per {what} (shape "
                         f"({n},)), got shape {w.shape}")
    if not np.all(np.isfinite(w)):
        raise ValueError(f"{name} contains NaN or infinity; expected finite weights")
    if np.any(w < 0):
        raise ValueError(f"{name} has negative values; expected weights >= 0")
    if not np.any(w > 0):
        raise ValueError(f"{name} is all zero; at least one weight must be non-zero")
    return w


def host_score(metric, est, X, y, sample_weight=None) -> float:
    """``metric(y, est.predict(X), sample_weight=w)`` on the host, for the estimators' ``score``.

    scikit-learn's metrics cannot read CUDA (or bfloat16, or sparse) tensors: the targets,
    the weights and the predictions are read on the host by :func:`host_copy`, which names the
    argument it refuses; the weights are validated as every ``sample_weight``
    (:func:`as_weights`: one finite weight >= 0 per sample, not all zero).
    """
    from sklearn.utils.validation import _num_samples

    y = host_copy(y, "y")
    w = as_weights(host_copy(sample_weight, "sample_weight"), _num_samples(y))
    return float(metric(y, host_copy(est.predict(X)), sample_weight=w))


def check_nonnegative_weights(sample_weight, n: int, name: str = "sample_weight") -> np.ndarray:
    """``sample_weight`` as float64 (n,): finite, non-negative, with a positive sum.

    None means all ones; otherwise :func:`as_weights`. Shared by the in-memory and torch paths
    of the Nyström machines.
    """
    w = as_weights(sample_weight, n, name)
    return np.ones(n) if w is None else w


#: instance attributes scikit-learn itself sets on an estimator (set_output, metadata
#: requests, callbacks): never a result of our fits
_SKLEARN_OWNED = ("_sklearn", "_skl_", "_metadata_request", "_parent_callback", "_callback")


def _check_gather(X, name: str) -> None:
    """Refuse to gather a dask array ``X`` into memory past ``max_dense_memory`` (a function
    or estimator without a Dask executor reads it as numpy)."""
    from .config import check_memory

    shape = tuple(float(k) for k in X.shape)
    if all(np.isfinite(shape)):
        check_memory(float(np.prod(shape)) * np.dtype(X.dtype).itemsize,
                     f"gathering the dask array {name} of shape {X.shape} into memory (this "
                     "estimator or function runs in memory)",
                     "an estimator with a Dask executor (the Scaling out page lists them) or "
                     "a sample of the rows")


def reset_fitted(est) -> None:
    """Forget every result of a previous fit of ``est``: its fitted attributes (names ending
    in ``_``) and the private state that fit set (recorded by :func:`forgets_previous_fit`);
    the constructor parameters and scikit-learn's own settings stay. A refit with other
    parameters then leaves nothing stale, e.g. the centring means of a centred fit or an
    n-sized cache."""
    params = set(est.get_params(deep=False))
    state = vars(est)
    for name in list(state):
        fitted = name.endswith("_") and not name.startswith("_")
        if (fitted or name in state.get("_fit_state", ())) and name not in params:
            del state[name]
    state.pop("_fit_state", None)


def forgets_previous_fit(fit):
    """Decorator of an estimator's fit method: :func:`reset_fitted` before it runs, and the
    names of the private state it sets recorded for the next reset."""

    @functools.wraps(fit)
    def fresh(self, *args, **kwargs):
        reset_fitted(self)
        before = set(vars(self))
        try:
            return fit(self, *args, **kwargs)
        finally:
            vars(self)["_fit_state"] = tuple(sorted(
                name for name in set(vars(self)) - before
                if name.startswith("_") and not name.startswith(_SKLEARN_OWNED)))

    return fresh


def narrowed(values, dtype, whose: str = "the training",
             advice: str = "fit on float64 data or rescale the targets"):
    """Finite float64 (complex128) ``values`` in ``dtype`` (float32 gives complex64 for
    complex values), refused with an ``OverflowError`` naming the dtype when one lies beyond
    its range (float32: 3.4e38) rather than returned as infinity. ``values`` is a numpy
    array (or array-like) or another executor's array (a torch tensor), cast where it lives."""
    from ._backend import NUMPY, ops_of

    dtype = np.dtype(dtype)
    ops = ops_of(values)
    if ops is NUMPY:
        values = np.asarray(values)
        if np.iscomplexobj(values) and dtype.kind == "f":
            dtype = np.result_type(dtype, np.complex64)
    if np.dtype(ops.dtype(values)) == dtype:
        return values
    with np.errstate(over="ignore"):
        out = ops.astype(values, dtype)
    if not (all_finite(out) if ops is NUMPY else ops.all_finite(out)):
        raise OverflowError(f"the outputs exceed the range of {whose} dtype {dtype} (finite "
                            f"in float64); {advice}")
    return out


def array_nbytes(A) -> int:
    """Bytes of an array of any executor: a numpy array, a sparse matrix (its data, indices
    and index pointers, as CSR), a torch tensor or an array-like (as numpy would hold it);
    0 for None. The memory-budget estimates count held arrays with it."""
    if A is None:
        return 0
    if sp.issparse(A):
        A = A if hasattr(A, "indptr") else sp.csr_matrix(A)
        return int(A.data.nbytes + A.indices.nbytes + A.indptr.nbytes)
    nbytes = getattr(A, "nbytes", None)  # numpy arrays and torch tensors alike
    return int(np.asarray(A).nbytes if nbytes is None else nbytes)


def input_precision(X) -> np.dtype:
    """The dtype of what ``predict``, ``transform``, ``decision_function`` and
    ``predict_proba`` return for the input ``X`` (one rule for every estimator and executor):
    float32 when X holds float32 values (a numpy, dask or sparse array, a torch tensor, or a
    DataFrame whose columns are all float32), float64 otherwise, whatever the dtype of the
    training data. float32 input keeps float32 outputs, as the input check keeps float32
    data; float64 input is never answered in float32 (a float32 model's outputs are then
    float64 values of the float32 model). A named tuple of blocks (the ``KernelPair`` of a
    precomputed asymmetric model) is float32 when every block it holds is."""
    if isinstance(X, tuple) and hasattr(X, "_fields"):
        parts = [input_precision(p) for p in X if p is not None]
        single = bool(parts) and all(p == np.float32 for p in parts)
        return np.dtype(np.float32 if single else np.float64)
    dtype = getattr(X, "dtype", None)
    if dtype is None and hasattr(X, "dtypes"):  # a DataFrame (a Series has a dtype)
        kinds = [str(d) for d in X.dtypes]
        return np.dtype(np.float32 if kinds and set(kinds) == {"float32"} else np.float64)
    name = str(dtype).replace("torch.", "")
    return np.dtype(np.float32 if name == "float32" else np.float64)


def like_input(values, X, advice: str = "pass float64 input or rescale the targets"):
    """``values`` (real, on any executor: numpy or a torch tensor) in
    :func:`input_precision` of ``X`` through :func:`narrowed`: a narrowing to float32 is
    refused with an ``OverflowError`` when a value lies beyond float32's range (3.4e38),
    rather than returned as infinity."""
    return narrowed(values, input_precision(X), "the input's", advice)


def check_bool(value, name: str) -> bool:
    """Check a flag is True or False (numpy's bool too); return it as bool."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_positive(value, name: str, *, allow_zero: bool = False, allow_none: bool = False):
    """Check a real scalar is > 0 (or >= 0) and finite; return it as float."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    if not np.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be finite and {bound}, got {value}")
    return value


def check_finite_result(values: np.ndarray, name: str, shape: tuple | None = None) -> np.ndarray:
    """Validate what a user-supplied function (e.g. a callable kernel) returned.

    The values must be real numbers of the expected ``shape`` and finite. Complex values are
    refused (``ValueError`` naming ``name``), never cast to real: numpy's cast drops the
    imaginary part with only a ``ComplexWarning``. Non-numeric values are a ``TypeError``.
    """
    values = real_numeric(
        np.asarray(values),
        complex_message=f"{name} returned complex values; expected real numbers (return the "
                        "real part explicitly, e.g. np.real(...), if that is what is meant)",
        nonnumeric_message=f"{name} returned non-numeric values")
    if shape is not None and values.shape != tuple(shape):
        raise ValueError(f"{name} returned an array of shape {values.shape}; expected "
                         f"{tuple(shape)}")
    if not all_finite(values):
        raise ValueError(f"{name} returned non-finite values (NaN or infinity)")
    return values


def check_finite_output(values, what: str, hint: str = ""):
    """Raise ``OverflowError`` if a quantity computed from finite input is not finite.

    ``what`` names the quantity (e.g. "the kernel matrix of X"), ``hint`` says what to do
    (e.g. "rescale X"). Returns ``values`` unchanged, so it can wrap an expression.
    """
    arr = np.asarray(values)
    if arr.size and not all_finite(arr):
        kind = "NaN" if np.any(np.isnan(arr)) else "inf"
        msg = f"{what} overflowed ({kind}) although the input is finite"
        raise OverflowError(msg + (f"; {hint}" if hint else ""))
    return values


class _AvailableIfExplained:
    """Descriptor of :func:`available_if_explained` (see there)."""

    def __init__(self, fn, check):
        self.fn = fn
        self.check = check
        self.attribute_name = fn.__name__
        functools.update_wrapper(self, fn)

    def _check(self, obj, owner) -> None:
        prefix = f"This {owner.__name__!r} has no attribute {self.attribute_name!r}"
        try:
            reason = self.check(obj)
        except AttributeError as exc:  # a missing attribute of obj itself: no reason to add
            raise AttributeError(prefix) from exc
        if reason:
            raise AttributeError(f"{prefix}: {reason}")

    def __get__(self, obj, owner=None):
        if obj is None:  # class access: the plain function (docs, monkeypatching)
            @functools.wraps(self.fn)
            def unbound(*args, **kwargs):
                self._check(args[0], type(args[0]))
                return self.fn(*args, **kwargs)

            return unbound
        self._check(obj, owner if owner is not None else type(obj))
        return types.MethodType(self.fn, obj)


def why_no_probability(est) -> str | None:
    """Why ``predict_proba`` is unavailable on ``est`` (None when ``est.probability`` is set):
    the reason shared by the classifiers with a ``probability`` option, for
    :func:`available_if_explained`."""
    if not est.probability:
        return (f"predict_proba needs probability=True at fit (got probability="
                f"{est.probability!r}); set it and fit again")
    return None


def available_if_explained(why_not):
    """Like scikit-learn's ``available_if``, with the reason in the ``AttributeError``.

    Parameters
    ----------
    why_not : callable
        Called with the estimator; returns ``None`` (or an empty string) when the decorated
        method is available, else a sentence saying what to change, e.g.
        ``"predict_proba needs probability=True at fit"``.

    Returns
    -------
    callable
        The decorator. As with ``available_if``, ``hasattr(estimator, name)`` is ``False``
        while the method is unavailable (the scikit-learn convention), but calling it raises
        ``AttributeError("This 'Cls' has no attribute 'name': <reason>")`` instead of a message
        that leaves the cause out.
    """
    return lambda fn: _AvailableIfExplained(fn, why_not)


def as_square_csr(A, name: str, *, copy: bool = False, square: bool = True) -> sp.csr_matrix:
    """A square matrix (dense or sparse; an adjacency matrix) as float64 CSR, real and finite.

    Its dimensions are checked before the conversion, so that the error names ``name`` with
    the shape given (scipy would read a 1-D array as one row, and refuse a 3-D one with its own
    message); complex values are refused, never cut to their real part, and so are NaN and
    infinity (they would count as edges). ``copy=True`` returns a matrix that never shares the
    caller's memory; ``square=False`` accepts any 2-D matrix (a bipartite adjacency).
    """
    shape = A.shape if sp.issparse(A) else np.shape(A)
    if len(shape) != 2 or (square and shape[0] != shape[1]):
        what = "a square 2-D" if square else "a 2-D"
        raise ValueError(f"{name} must be {what} matrix, got shape {tuple(shape)}")
    complex_message = (f"Complex data not supported: {name} is complex-valued; expected a real "
                       "(adjacency) matrix")
    if sp.issparse(A):
        real_numeric(np.empty(0, dtype=A.dtype), complex_message=complex_message,
                     nonnumeric_message=f"{name} must be numeric")
    else:
        A = _as_real(A, name, complex_message, f"{name} must be numeric")
    A = sp.csr_matrix(A, dtype=np.float64, copy=copy)
    if not all_finite(A.data):
        raise ValueError(f"{name} contains NaN or infinity; expected finite values")
    return A
