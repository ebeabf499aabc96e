"""Library-wide settings: memory budgets for blocked and dense computation, progress bars.

Settings
--------
``working_memory`` (MiB, default 512)
    What one kernel block (with its temporaries) may use in blocked computations.
``max_dense_memory`` (MiB, default 8192)
    The budget of an operation that forms dense n×n or n×m matrices (a dense kernel matrix,
    a dense SVD and its LAPACK workspace, the dense systems of LS-SVM, landmark blocks of
    Nyström machines). Such an operation estimates its *whole* peak and raises
    :class:`MemoryBudgetError` before allocating when the estimate exceeds the budget.
``cache_memory`` (MiB, default 1024; 0 turns it off)
    What a lazy kernel matrix may keep of the blocks it evaluates during one solver call
    (the passes of power iteration, block Krylov and ARPACK), so that the later passes read
    them instead of evaluating the kernel again; within what the solver leaves of
    ``max_dense_memory``. Released when the call returns.
``show_progress`` (bool, default False)
    Show tqdm progress bars on long computations. tqdm is an optional dependency
    (``pip install tqdm``), imported only when a bar is shown; setting ``show_progress=True``
    without it raises ``ImportError`` at once.

Scope
-----
:func:`set_config` changes the process-wide defaults. :func:`config_context` changes the
settings of the *current thread* only, until the ``with`` block ends; :func:`set_config`
called inside such a block changes that thread-local layer (and is undone with it). Other
threads keep seeing the process-wide defaults. To carry the caller's settings into joblib
workers (threads or processes), use :class:`Parallel` and :func:`delayed` from this module
instead of joblib's (as scikit-learn does with ``sklearn.utils.parallel``).
"""

from __future__ import annotations

import functools
import math
import numbers
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import joblib

_DEFAULTS: dict[str, Any] = {
    "working_memory": 512,
    "max_dense_memory": 8192,
    "cache_memory": 1024,
    "show_progress": False,
}
# process-wide settings (changed by set_config outside any config_context)
_GLOBAL: dict[str, Any] = dict(_DEFAULTS)
# per-thread layer over _GLOBAL, present only inside config_context
_LOCAL = threading.local()


class MemoryBudgetError(MemoryError):
    """An operation would need more memory than the ``max_dense_memory`` budget allows.

    Raised *before* anything large is allocated (by :func:`check_memory`). A subclass of
    :class:`MemoryError`, so ``except MemoryError`` catches it too.

    Parameters
    ----------
    message : str
        The error message (bytes needed, the budget, the setting to change).
    nbytes : int, optional
        The estimated peak of the operation in bytes (kept as the attribute ``nbytes``).
    budget : float, optional
        The bytes allowed (attribute ``budget``).
    what : str, optional
        The operation (attribute ``what``).

    See Also
    --------
    check_memory : Raises this error.
    set_config : Changes the ``max_dense_memory`` budget.

    Examples
    --------
    >>> from asymkern.config import MemoryBudgetError, check_memory
    >>> try:
    ...     check_memory(2 * 2**20, "a demo operation", limit=1)
    ... except MemoryBudgetError as err:
    ...     print(err.nbytes, err.what)
    2097152 a demo operation
    """

    def __init__(self, message: str, nbytes: int | None = None, budget: float | None = None,
                 what: str | None = None):
        super().__init__(message)
        self.nbytes = nbytes
        self.budget = budget
        self.what = what


def _as_float(value) -> float:
    """``float(value)``, or infinity for an integer beyond the float range (10**400), so that
    the caller's finiteness check refuses it naming the setting."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


#: the largest memory setting, in MiB (1 EiB): its bytes are exact in float64 and int64 (a
#: larger finite setting overflowed to infinity in the byte counts, then to NaN row counts)
MAX_SETTING_MIB = 2**40


def _check_at_most(key: str, value) -> None:
    if _as_float(value) > MAX_SETTING_MIB:
        raise ValueError(f"{key} must be at most 2**40 MiB (1 EiB), got {value!r}")


def _check_value(key: str, value):
    """Validate one setting; return the value to store."""
    if key in ("working_memory", "max_dense_memory"):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(
                f"{key} must be a positive finite real number of MiB, got {value!r} "
                f"(type {type(value).__name__})"
            )
        if not (math.isfinite(_as_float(value)) and _as_float(value) > 0):
            raise ValueError(f"{key} must be a positive finite number of MiB, got {value!r}")
        _check_at_most(key, value)
        return value
    if key == "cache_memory":
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"cache_memory must be a finite real number of MiB ≥ 0, got "
                            f"{value!r} (type {type(value).__name__})")
        if not (math.isfinite(_as_float(value)) and _as_float(value) >= 0):
            raise ValueError(f"cache_memory must be a finite number of MiB ≥ 0, got {value!r}")
        _check_at_most(key, value)
        return value
    if key == "show_progress":
        if not isinstance(value, bool):
            import numpy as np

            if not isinstance(value, np.bool_):
                raise TypeError(f"show_progress must be True or False, got {value!r}")
            value = bool(value)
        if value:
            _require_tqdm()
        return value
    raise TypeError(f"unknown setting {key!r}")  # pragma: no cover


_TQDM_MISSING = ("show_progress=True needs the optional dependency tqdm (pip install tqdm); "
                 "install it or leave show_progress=False")


def _require_tqdm() -> None:
    """Raise ImportError (naming the setting) when tqdm cannot be imported."""
    try:
        import tqdm.auto  # noqa: F401
    except ImportError as exc:
        raise ImportError(_TQDM_MISSING) from exc


def progress_bar(iterable, *, desc: str | None = None, total: int | None = None,
                 enabled: bool | None = None, **tqdm_kwargs):
    """``iterable`` with a tqdm progress bar when progress is on, else ``iterable`` itself.

    Parameters
    ----------
    iterable : iterable
        What to iterate over.
    desc : str, optional
        The bar's label.
    total : int, optional
        The number of items, when ``len(iterable)`` does not give it.
    enabled : bool, optional
        Show the bar; default: the ``show_progress`` setting of the current thread.
    **tqdm_kwargs
        Passed to ``tqdm.auto.tqdm`` (``unit``, ``leave``, ...).

    Returns
    -------
    iterable
        The same items, in the same order.

    Raises
    ------
    ImportError
        When a bar is to be shown and tqdm (optional) is not installed.

    See Also
    --------
    set_config : The ``show_progress`` setting.

    Examples
    --------
    >>> from asymkern.config import progress_bar
    >>> list(progress_bar(range(3), enabled=False))
    [0, 1, 2]
    """
    if enabled is None:
        enabled = bool(get_config()["show_progress"])
    if not enabled:
        return iterable
    _require_tqdm()
    from tqdm.auto import tqdm

    return tqdm(iterable, desc=desc, total=total, **tqdm_kwargs)


def _validated(kwargs: dict) -> dict:
    """Check every key and value before anything changes (all or nothing)."""
    unknown = [k for k in kwargs if k not in _DEFAULTS]
    if unknown:
        raise TypeError(
            f"unknown setting(s) {', '.join(map(repr, unknown))}; valid settings: "
            f"{', '.join(sorted(_DEFAULTS))}"
        )
    return {k: _check_value(k, v) for k, v in kwargs.items() if v is not None}


def _local_layer() -> dict | None:
    return getattr(_LOCAL, "overrides", None)


def get_config() -> dict:
    """Return a copy of the settings seen by the current thread.

    Returns
    -------
    config : dict
        ``{'working_memory': MiB, 'max_dense_memory': MiB, 'cache_memory': MiB,
        'show_progress': bool}``: the
        process-wide settings (:func:`set_config`) overlaid with those of any enclosing
        :func:`config_context` of this thread. Changing the returned dict changes nothing.

    See Also
    --------
    set_config, config_context

    Examples
    --------
    >>> import asymkern
    >>> asymkern.get_config()["working_memory"]
    512
    """
    layer = _local_layer()
    return dict(_GLOBAL) if layer is None else {**_GLOBAL, **layer}


def set_config(**settings) -> None:
    """Change settings (a setting not given, or given as None, is not changed).

    All values are validated first: when one is invalid an error is raised and *no* setting
    changes.

    Parameters
    ----------
    **settings
        Keyword settings, any of:

        - ``working_memory`` (float): MiB that one kernel block and its temporaries may use
          (positive, at most 2**40 (1 EiB); not bool).
        - ``max_dense_memory`` (float): MiB that an operation forming dense n×n or n×m
          matrices may use in total (positive, at most 2**40; not bool); past it the operation
          raises :class:`MemoryBudgetError` before allocating.
        - ``cache_memory`` (float): MiB of evaluated kernel blocks a lazy kernel matrix may
          keep during one solver call (≥ 0, at most 2**40; 0: none), within
          ``max_dense_memory``.
        - ``show_progress`` (bool): show tqdm progress bars on long computations.

    Raises
    ------
    TypeError
        An unknown setting, or a value of the wrong type (e.g. ``show_progress='no'``,
        ``working_memory=True``).
    ValueError
        A memory size that is not finite, or not positive (negative for ``cache_memory``).

    See Also
    --------
    get_config : The current settings.
    config_context : Thread-local settings inside a ``with`` block.

    Notes
    -----
    Outside any :func:`config_context`, this changes the process-wide settings that every
    thread sees. Inside one, it changes only the current thread's context layer, which the end
    of the ``with`` block undoes.

    Examples
    --------
    >>> import asymkern
    >>> asymkern.set_config(working_memory=256)
    >>> asymkern.get_config()["working_memory"]
    256
    >>> asymkern.set_config(working_memory=512)
    """
    new = _validated(settings)
    layer = _local_layer()
    (_GLOBAL if layer is None else layer).update(new)


@contextmanager
def config_context(**settings) -> Iterator[None]:
    """Change settings for the current thread inside a ``with`` block.

    Values are validated before anything changes (an invalid one raises and leaves the
    settings untouched). The change is thread-local: other threads keep the process-wide
    settings, and the previous settings come back when the block ends, also on an exception.
    Use :class:`Parallel` / :func:`delayed` of this module to hand the settings to joblib
    workers.

    Parameters
    ----------
    **settings
        ``working_memory``, ``max_dense_memory``, ``cache_memory``, ``show_progress``: as in
        :func:`set_config`; None keeps the current value.

    Yields
    ------
    None
        The block runs with the changed settings.

    Raises
    ------
    TypeError
        An unknown setting or a value of the wrong type.
    ValueError
        A memory size that is not finite, or not positive (negative for ``cache_memory``).

    See Also
    --------
    set_config : Change the settings.
    get_config : The current settings.

    Examples
    --------
    >>> import asymkern
    >>> with asymkern.config_context(max_dense_memory=1024):
    ...     asymkern.get_config()["max_dense_memory"]
    1024
    >>> asymkern.get_config()["max_dense_memory"]
    8192
    """
    new = _validated(settings)
    old = _local_layer()
    _LOCAL.overrides = {**(old or {}), **new}
    try:
        yield
    finally:
        _LOCAL.overrides = old


# ------------------------------------------------------------------------------ memory budget
def format_bytes(nbytes: float) -> str:
    """Human-readable size: '512.0 KiB', '3.2 GiB'.

    Parameters
    ----------
    nbytes : float
        A size in bytes.

    Returns
    -------
    str
        The size in B (whole bytes), KiB, MiB, GiB or TiB with one decimal.

    See Also
    --------
    check_memory : Uses it in its error message.

    Examples
    --------
    >>> from asymkern.config import format_bytes
    >>> format_bytes(512), format_bytes(3 * 2**30)
    ('512 B', '3.0 GiB')
    """
    size = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"  # pragma: no cover


def _check_limit(limit, name: str = "max_dense_memory"):
    """A per-call budget in MiB, checked: a real number > 0 (``math.inf``: no limit), not a
    bool, a string or NaN; returned unchanged.

    Parameters
    ----------
    limit : float
        The budget in MiB.
    name : str, default 'max_dense_memory'
        The argument's name in the error messages.

    Returns
    -------
    float
        ``limit``.

    Raises
    ------
    TypeError
        If ``limit`` is not a real number (a bool counts as none).
    ValueError
        If ``limit`` is NaN or not > 0.
    """
    if isinstance(limit, bool) or not isinstance(limit, numbers.Real):
        raise TypeError(f"{name} must be a positive real number of MiB, got {limit!r} "
                        f"(type {type(limit).__name__})")
    if not _as_float(limit) > 0:  # NaN fails this too
        raise ValueError(f"{name} must be a positive number of MiB (math.inf: no limit), got "
                         f"{limit!r}")
    return limit


def check_memory(nbytes: float, what: str, alternatives: str | None = None, *,
                 detail: str | None = None, limit: float | None = None) -> None:
    """Refuse, before allocating, an operation whose estimated peak exceeds the budget.

    Parameters
    ----------
    nbytes : float
        Estimated peak of the whole operation in bytes (all the large arrays it holds at once,
        LAPACK workspace included), not just its output.
    what : str
        The operation, e.g. ``"KernelSVD(solver='dense')"``.
    alternatives : str, optional
        What to use instead, e.g. ``"solver='randomized' or 'nystrom'"``.
    detail : str, optional
        How the estimate was made, e.g. ``"4 copies of a 20000×20000 float64 matrix"``.
    limit : float, optional
        Budget in MiB (default: the ``max_dense_memory`` setting): a positive real number,
        ``math.inf`` for no limit.

    Raises
    ------
    MemoryBudgetError
        When ``nbytes`` exceeds the budget; the message gives the bytes needed, the budget and
        the setting to change.
    TypeError, ValueError
        If ``limit`` is not a positive real number (the message names ``max_dense_memory``,
        the setting it stands for).

    See Also
    --------
    MemoryBudgetError : The error raised.
    config_context : Raise the budget for a block of code.

    Examples
    --------
    >>> from asymkern.config import check_memory
    >>> check_memory(2**20, "a small operation")  # within the default budget: returns None
    """
    limit_mib = get_config()["max_dense_memory"] if limit is None else _check_limit(limit)
    budget = float(limit_mib) * 2**20
    if nbytes <= budget:
        return
    msg = f"{what} needs ~{format_bytes(nbytes)}"
    if detail:
        msg += f" ({detail})"
    msg += (f" but max_dense_memory is {limit_mib:g} MiB; raise it with "
            "asymkern.set_config(max_dense_memory=...) or asymkern.config_context(...)")
    if alternatives:
        msg += f", or use {alternatives}"
    raise MemoryBudgetError(msg, nbytes=int(nbytes), budget=budget, what=what)


# ------------------------------------------------------------------------- joblib propagation
class _WithConfig:
    """Call ``function`` inside ``config_context(**config)`` (in a joblib worker)."""

    def __init__(self, function, config: dict):
        self.function = function
        self.config = config
        functools.update_wrapper(self, function)

    def __call__(self, *args, **kwargs):
        with config_context(**self.config):
            return self.function(*args, **kwargs)


def delayed(function):
    """Like :func:`joblib.delayed`, for use with :class:`Parallel` of this module.

    Parameters
    ----------
    function : callable
        The function to run in a worker.

    Returns
    -------
    callable
        A function that packs its call as ``(function, args, kwargs)`` for :class:`Parallel`.

    See Also
    --------
    Parallel : Runs the packed calls with the caller's settings.

    Examples
    --------
    >>> from asymkern.config import delayed
    >>> function, args, kwargs = delayed(pow)(2, 3)
    >>> function is pow, args, kwargs
    (True, (2, 3), {})
    """
    return joblib.delayed(function)


class Parallel(joblib.Parallel):
    """:class:`joblib.Parallel` that hands the caller's asymkern settings to every worker.

    The settings the calling thread sees when the ``Parallel`` object is called (including
    those of an enclosing :func:`config_context`) are captured once and applied in each worker
    task, threads and processes (loky) alike.

    Parameters
    ----------
    n_jobs : int, optional
        Number of workers (joblib's meaning).
    backend : str, optional
        Joblib backend ('loky', 'threading', ...).
    return_as : str, default 'list'
        Joblib's output form.
    verbose : int, optional
        Joblib's verbosity.
    timeout : float, optional
        Joblib's per-task timeout.
    pre_dispatch : str or int, default '2 * n_jobs'
        Joblib's pre-dispatch count.
    batch_size : int or 'auto', default 'auto'
        Joblib's batch size.
    temp_folder : str, optional
        Joblib's memmapping folder.
    max_nbytes : int or str, optional
        Joblib's memmapping threshold.
    mmap_mode : str, optional
        Joblib's memmapping mode.
    prefer : str, optional
        Joblib's soft backend hint ('processes' or 'threads').
    require : str, optional
        Joblib's hard backend constraint ('sharedmem').
    **backend_kwargs
        Passed to the backend, as in :class:`joblib.Parallel`.

    See Also
    --------
    delayed : Packs a call for this class.
    config_context : Settings that the workers inherit.
    joblib.Parallel : The base class.

    Examples
    --------
    >>> import asymkern
    >>> from asymkern.config import Parallel, delayed
    >>> def budget(_):
    ...     return asymkern.get_config()["working_memory"]
    >>> with asymkern.config_context(working_memory=64):
    ...     Parallel(n_jobs=2, backend="threading")(delayed(budget)(i) for i in range(2))
    [64, 64]
    """

    def __call__(self, iterable):
        config = get_config()

        def wrapped():
            for function, args, kwargs in iterable:
                yield _WithConfig(function, config), args, kwargs

        return super().__call__(wrapped())


__all__ = [
    "MemoryBudgetError",
    "Parallel",
    "check_memory",
    "config_context",
    "delayed",
    "format_bytes",
    "get_config",
    "progress_bar",
    "set_config",
]
