"""Where the real datasets live: an explicit argument, ``ASYMKERN_DATA``, or ``../shared/data``."""

from __future__ import annotations

import os
from pathlib import Path


class DataNotFoundError(FileNotFoundError):
    """A dataset file is not where the data directory says it should be."""


def _candidates() -> list[Path]:
    here = Path(__file__).resolve()
    out = []
    env = os.environ.get("ASYMKERN_DATA")
    if env:
        out.append(Path(env))
    out.append(Path.cwd() / ".." / "shared" / "data")
    out.append(Path.cwd() / "shared" / "data")
    # a source checkout: <repo>/src/asymkern/datasets/_paths.py -> <repo>/../shared/data
    for parent in here.parents:
        out.append(parent / ".." / "shared" / "data")
        if len(out) > 10:
            break
    return out


def get_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """Resolve the data directory: ``data_dir`` if given, else ``$ASYMKERN_DATA``, else the first
    existing ``../shared/data`` next to the working directory or the source checkout.

    Raises :class:`DataNotFoundError` when ``data_dir`` or a set ``$ASYMKERN_DATA`` is not a
    directory (no silent fallback to another folder), or, with neither given, with every place
    that was tried.
    """
    if data_dir is not None:
        p = Path(data_dir).expanduser()
        if not p.is_dir():
            raise DataNotFoundError(f"data_dir {str(p)!r} is not a directory")
        return p.resolve()
    env = os.environ.get("ASYMKERN_DATA")
    if env:
        p = Path(env).expanduser()
        if not p.is_dir():
            raise DataNotFoundError(
                f"ASYMKERN_DATA={env!r} is not a directory; set it to the datasets folder or "
                "unset it"
            )
        return p.resolve()
    tried = _candidates()
    for p in tried:
        if p.is_dir():
            return p.resolve()
    raise DataNotFoundError(
        "no data directory found; pass data_dir=... (CLI: --data-dir) or set ASYMKERN_DATA. "
        "Tried: " + ", ".join(str(p) for p in tried)
    )


def data_path(relpath: str, data_dir: str | os.PathLike | None = None) -> Path:
    """Path of one file inside the data directory; :class:`DataNotFoundError` if it is missing."""
    p = get_data_dir(data_dir) / relpath
    if not p.exists():
        raise DataNotFoundError(f"dataset file {relpath!r} not found under {p.parent.parent}")
    return p


def data_available(relpath: str = "", data_dir=None) -> bool:
    """True when the data directory (and ``relpath`` inside it) exists."""
    try:
        p = get_data_dir(data_dir)
    except DataNotFoundError:
        return False
    return (p / relpath).exists()
