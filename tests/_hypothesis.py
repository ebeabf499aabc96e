"""Shared hypothesis set-up of the property suite (``tests/test_properties_*.py``, issue 12).

Profiles
--------
``ci`` (default): a fixed, small number of examples per property, ``derandomize=True`` (the same
examples on every run, so CI is deterministic), no deadline, no example database and no
shrinking (a failure is reported as found; re-run under ``long`` or ``debug`` for a minimal
example). ``long``: many more random examples, with shrinking. ``debug``: like ``ci`` but shrinks
and prints every example. Select one with an environment variable::

    HYPOTHESIS_PROFILE=long  PYTHONPATH=src python -m pytest -q tests/test_properties_*.py
    HYPOTHESIS_PROFILE=debug PYTHONPATH=src python -m pytest -q tests/test_properties_kernels.py

Input classes
-------------
Every drawn input is tagged with its class (``valid``, ``invalid-shape``, ``non-finite``,
``extreme-magnitude``, ``offset``, ``sparse``, ``dtype``, ``layout``, ``dataframe``,
``invalid-param``): the tag is a hypothesis ``event`` (shown by ``--hypothesis-show-statistics``)
and is counted; with ``ASYMKERN_PROP_COUNTS=path.json`` set, the counts per class (and per test)
are written to that file when the test process exits.
"""

from __future__ import annotations

import atexit
import json
import os
import traceback
from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, Phase, Verbosity, event, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis.extra import numpy as hnp

_COMMON = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)
settings.register_profile(
    "ci", max_examples=8, derandomize=True, database=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate], **_COMMON,
)
settings.register_profile("long", max_examples=200, **_COMMON)
settings.register_profile(
    "debug", max_examples=8, derandomize=True, database=None, verbosity=Verbosity.verbose, **_COMMON
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# ---------------------------------------------------------------------------- BLAS threads
@pytest.fixture(autouse=True, scope="module")
def one_blas_thread():
    """One BLAS thread: the property examples are tiny, and threads only thrash on a busy
    machine (imported by each property module, where it applies to every test)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield


# ------------------------------------------------------------------------------- counting
COUNTS: Counter = Counter()
PER_TEST: Counter = Counter()


def note(kind: str, test: str = "") -> None:
    """Tag the current example with its input class (hypothesis event + counter)."""
    try:
        event(f"input class: {kind}")
    except InvalidArgument:  # called from a plain (non-hypothesis) test
        pass
    COUNTS[kind] += 1
    if test:
        PER_TEST[f"{test} | {kind}"] += 1


def _dump_counts() -> None:  # pragma: no cover - only with the env var
    path = os.environ.get("ASYMKERN_PROP_COUNTS")
    if not path or not COUNTS:
        return
    old = {"by_class": {}, "by_test": {}}
    if os.path.exists(path):
        try:
            with open(path) as fh:
                old = json.load(fh)
        except (OSError, ValueError):
            pass
    by_class = Counter(old.get("by_class", {})) + COUNTS
    by_test = Counter(old.get("by_test", {})) + PER_TEST
    with open(path, "w") as fh:
        json.dump({"by_class": dict(sorted(by_class.items())),
                   "by_test": dict(sorted(by_test.items()))}, fh, indent=1)


atexit.register(_dump_counts)

# ------------------------------------------------------------------------------ strategies
UNIT = st.floats(-3.0, 3.0, allow_nan=False, allow_infinity=False, width=64)
OFFSETS = (1e4, 1e6, 1e8, 1e10, 1e12)
SCALES = (1e150, 1e-150)


_N_DEFAULT = st.integers(2, 12)
_D_DEFAULT = st.integers(1, 4)


def unit_matrix(n=_N_DEFAULT, d=_D_DEFAULT, dtype=np.float64):
    """A small (n, d) matrix of order-one values (``hypothesis.extra.numpy.arrays``).

    ``n``/``d`` are strategies or ints."""
    n = n if isinstance(n, st.SearchStrategy) else st.just(n)
    d = d if isinstance(d, st.SearchStrategy) else st.just(d)
    # half of the draws fill most entries with one repeated value (degenerate data: equal rows,
    # rank-one matrices), half draw every entry independently
    return st.tuples(n, d).flatmap(
        lambda nd: st.one_of(hnp.arrays(np.float64, nd, elements=UNIT),
                             hnp.arrays(np.float64, nd, elements=UNIT, fill=st.nothing()))
    ).map(lambda X: X.astype(dtype))


def with_offset(X: np.ndarray, offset: float) -> np.ndarray:
    """X + offset: large common offset plus the unit noise of X (data far from the origin)."""
    return X + offset


def poison(X: np.ndarray, value: float, i: int, j: int) -> np.ndarray:
    Y = np.array(X, dtype=np.float64, copy=True)
    Y[i % Y.shape[0], j % Y.shape[1]] = value
    return Y


def as_sparse(X: np.ndarray, fmt: str):
    return {"csr": sp.csr_matrix, "csc": sp.csc_matrix, "coo": sp.coo_matrix}[fmt](X)


def readonly(X: np.ndarray) -> np.ndarray:
    X = np.array(X, copy=True)
    X.flags.writeable = False
    return X


def fortran(X: np.ndarray) -> np.ndarray:
    return np.asfortranarray(X)


def snapshot(obj):
    """A deep copy of an input (dense or sparse), to check that nothing was modified."""
    if sp.issparse(obj):
        return obj.copy()
    if hasattr(obj, "copy") and not isinstance(obj, np.ndarray):
        return obj.copy()
    return np.array(obj, copy=True)


def same(a, b) -> bool:
    if sp.issparse(a) or sp.issparse(b):
        if not (sp.issparse(a) and sp.issparse(b)) or a.shape != b.shape:
            return False
        return (a != b).nnz == 0 and a.format == b.format
    if hasattr(a, "equals"):  # pandas
        return bool(a.equals(b))
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))


def reference_rbf(X, Z, gamma: float) -> np.ndarray:
    """exp(−gamma‖x − z‖²) from explicit pairwise differences in float64 (no norm expansion)."""
    X = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
    Z = np.asarray(Z.toarray() if sp.issparse(Z) else Z, dtype=np.float64)
    D = X[:, None, :] - Z[None, :, :]
    with np.errstate(over="ignore", under="ignore"):
        # scale first so that 1e150-sized differences do not overflow when squared
        s = np.max(np.abs(D), axis=2, keepdims=True)
        s[s == 0] = 1.0
        sq = (s[..., 0] ** 2) * np.sum((D / s) ** 2, axis=2)
        return np.exp(-gamma * sq)


def reference_sq_dists(X, Z) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    Z = np.asarray(Z, dtype=np.float64)
    D = X[:, None, :] - Z[None, :, :]
    with np.errstate(over="ignore", under="ignore"):
        return np.sum(D * D, axis=2)


def names_argument(exc: BaseException, *names: str) -> bool:
    """Whether the error message names one of the arguments (as a word, e.g. 'X' or "'X'")."""
    import re

    msg = str(exc)
    return any(re.search(rf"(?<![A-Za-z_]){re.escape(nm)}(?![A-Za-z_])", msg) for nm in names)


DOCUMENTED_ERRORS = (ValueError, TypeError, MemoryError, OverflowError)
FORBIDDEN_ERRORS = (IndexError, ZeroDivisionError, np.linalg.LinAlgError, KeyError,
                    AttributeError, FloatingPointError)


def check_error(exc: BaseException, *names: str) -> None:
    """An error is acceptable when it is of a documented type and names the argument.

    A violation is reported with the error's type, message and origin (file:line), without the
    chained traceback (long library tracebacks made every expected failure cost ~1 s)."""
    problem = None
    if not isinstance(exc, DOCUMENTED_ERRORS) or isinstance(exc, FORBIDDEN_ERRORS):
        problem = f"undocumented error type {type(exc).__name__}: {exc}"
    elif not names_argument(exc, *names):
        problem = f"{type(exc).__name__} message does not name any of {names}: {exc}"
    if problem is not None:
        tb = traceback.extract_tb(exc.__traceback__)
        where = f" (raised at {tb[-1].filename}:{tb[-1].lineno} in {tb[-1].name})" if tb else ""
        raise AssertionError(problem + where) from None


def dtype_matrix(X: np.ndarray, kind: str):
    """X converted to one of the dtype classes (values kept where the dtype allows)."""
    if kind == "float32":
        return X.astype(np.float32)
    if kind == "float64":
        return X.astype(np.float64)
    if kind == "int":
        return np.round(X * 3).astype(np.int64)
    if kind == "bool":
        return X > 0
    if kind == "object":
        return X.astype(object)
    if kind == "object-str":  # non-numeric strings
        return np.where(X > 0, "a", "b").astype(object)
    raise AssertionError(kind)


DTYPE_KINDS = ("float32", "int", "bool", "object", "object-str")

__all__ = [
    "COUNTS",
    "DOCUMENTED_ERRORS",
    "DTYPE_KINDS",
    "OFFSETS",
    "SCALES",
    "UNIT",
    "as_sparse",
    "check_error",
    "dtype_matrix",
    "fortran",
    "hnp",
    "names_argument",
    "note",
    "poison",
    "readonly",
    "reference_rbf",
    "reference_sq_dists",
    "same",
    "snapshot",
    "unit_matrix",
    "with_offset",
]


VERSION_DEPENDENT = "[depends on dependency versions]"


def xfail(what: str):
    # strict, so that a fix is noticed; not strict where the outcome depends on the installed
    # numpy/scipy/libsvm (the minimum-versions CI job differs from the newest releases)
    return pytest.mark.xfail(reason=f"issue 12: {what}", strict=VERSION_DEPENDENT not in what)
