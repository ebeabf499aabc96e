"""Helpers for the test suite: skip markers for tests that need the real datasets."""

from __future__ import annotations

from .datasets import data_available


def requires_data(relpath: str = ""):
    """pytest skip marker: skip unless the data directory (and ``relpath`` in it) exists."""
    import pytest

    return pytest.mark.skipif(
        not data_available(relpath),
        reason=(
            f"real dataset {relpath or 'directory'!r} not found: set ASYMKERN_DATA or place "
            "../shared/data beside the checkout"
        ),
    )
