"""Library-wide settings: memory budgets for blocked kernel computation."""

from __future__ import annotations

from contextlib import contextmanager

_CONFIG = {
    # MiB that one kernel block (plus its temporaries) may use.
    "working_memory": 512,
    # MiB above which KernelMatrix.to_array refuses to form a dense matrix.
    "max_dense_memory": 8192,
    # Show tqdm progress bars on long computations.
    "show_progress": False,
}


def get_config() -> dict:
    """Return a copy of the current settings."""
    return dict(_CONFIG)


def set_config(**kwargs) -> None:
    """Change settings: ``working_memory`` (MiB), ``max_dense_memory`` (MiB), ``show_progress``."""
    for key, value in kwargs.items():
        if key not in _CONFIG:
            raise KeyError(f"unknown setting {key!r}; known: {sorted(_CONFIG)}")
        if key in ("working_memory", "max_dense_memory") and not (value > 0):
            raise ValueError(f"{key} must be > 0 MiB, got {value}")
        _CONFIG[key] = value


@contextmanager
def config_context(**kwargs):
    """Temporarily change settings inside a ``with`` block."""
    old = get_config()
    set_config(**kwargs)
    try:
        yield
    finally:
        _CONFIG.clear()
        _CONFIG.update(old)
