"""Where the real datasets live: an explicit argument, ``ASYMKERN_DATA``, or ``../shared/data``."""

from __future__ import annotations

import os
from pathlib import Path


class DataNotFoundError(FileNotFoundError):
    """A dataset file is not where the data directory says it should be.

    A subclass of :class:`FileNotFoundError`, raised by the loaders and by
    :func:`get_data_dir` / :func:`data_path`.

    See Also
    --------
    data_available : Check for a file without raising.

    Examples
    --------
    >>> import tempfile
    >>> from asymkern.datasets import DataNotFoundError, data_path
    >>> try:
    ...     data_path("no/such/file.csv", data_dir=tempfile.gettempdir())
    ... except DataNotFoundError:
    ...     print("missing")
    missing
    """


def _candidates() -> list[Path]:
    """The places tried for ``shared/data`` when neither ``data_dir`` nor the variable is set."""
    # a source checkout: <repo>/src/asymkern/datasets/_paths.py -> <repo>/../shared/data
    return [Path.cwd() / ".." / "shared" / "data", Path.cwd() / "shared" / "data"] + [
        parent / ".." / "shared" / "data" for parent in Path(__file__).resolve().parents[:9]]


def get_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """Resolve the data directory.

    ``data_dir`` if given, else ``$ASYMKERN_DATA``, else the first existing ``../shared/data``
    next to the working directory or the source checkout.

    Parameters
    ----------
    data_dir : str or os.PathLike, optional
        An explicit data directory.

    Returns
    -------
    pathlib.Path
        The resolved (absolute) directory.

    Raises
    ------
    DataNotFoundError
        When ``data_dir`` or a set ``$ASYMKERN_DATA`` is not a directory (no silent fallback
        to another folder), or, with neither given, with every place that was tried.

    See Also
    --------
    data_path : A file inside the data directory.

    Examples
    --------
    >>> import tempfile
    >>> from asymkern.datasets import get_data_dir
    >>> get_data_dir(tempfile.gettempdir()).is_dir()
    True
    """
    env = os.environ.get("ASYMKERN_DATA")
    given = data_dir if data_dir is not None else env or None
    if given is not None:  # an explicit directory: no fallback to another folder
        p = Path(given).expanduser()
        if not p.is_dir():
            raise DataNotFoundError(
                f"data_dir {str(p)!r} is not a directory" if data_dir is not None else
                f"ASYMKERN_DATA={env!r} is not a directory; set it to the datasets folder or "
                "unset it")
        return p.resolve()
    tried = _candidates()
    for p in tried:
        if p.is_dir():
            return p.resolve()
    raise DataNotFoundError("no data directory found; pass data_dir=... (CLI: --data-dir) or set "
                            "ASYMKERN_DATA. Tried: " + ", ".join(str(p) for p in tried))


def data_path(relpath: str, data_dir: str | os.PathLike | None = None) -> Path:
    """Path of one file inside the data directory.

    Parameters
    ----------
    relpath : str
        The file's path relative to the data directory.
    data_dir : str or os.PathLike, optional
        An explicit data directory (see :func:`get_data_dir`).

    Returns
    -------
    pathlib.Path
        The file's path.

    Raises
    ------
    DataNotFoundError
        If the data directory or the file is missing.

    See Also
    --------
    get_data_dir : How the data directory is found.
    data_available : The same check without raising.

    Examples
    --------
    >>> from asymkern.datasets import data_path
    >>> data_path("libsvm/dna/dna.scale")  # doctest: +SKIP
    PosixPath('.../shared/data/libsvm/dna/dna.scale')
    """
    base = get_data_dir(data_dir)
    p = base / relpath
    if not p.exists():
        raise DataNotFoundError(f"dataset file {relpath!r} not found under {base}; pass "
                                "data_dir=... (CLI: --data-dir) or set ASYMKERN_DATA to the "
                                "folder that holds it")
    return p


def data_available(relpath: str = "", data_dir=None) -> bool:
    """True when the data directory (and ``relpath`` inside it) exists.

    Parameters
    ----------
    relpath : str, default ''
        A path relative to the data directory ('' checks the directory itself).
    data_dir : str or os.PathLike, optional
        An explicit data directory (see :func:`get_data_dir`).

    Returns
    -------
    bool
        Whether the path exists; never raises :class:`DataNotFoundError`.

    See Also
    --------
    data_path : The path itself (raises when missing).

    Examples
    --------
    >>> import tempfile
    >>> from asymkern.datasets import data_available
    >>> data_available("no/such/file.csv", data_dir=tempfile.gettempdir())
    False
    """
    try:
        p = get_data_dir(data_dir)
    except DataNotFoundError:
        return False
    return (p / relpath).exists()
