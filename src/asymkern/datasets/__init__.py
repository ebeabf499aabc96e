"""Dataset loaders (real data read from the data directory, never shipped) and generators.

The data directory is resolved by :func:`get_data_dir`: an explicit ``data_dir``, the
``ASYMKERN_DATA`` environment variable, or ``../shared/data``.
"""

from ._paths import DataNotFoundError, data_available, data_path, get_data_dir

__all__ = ["DataNotFoundError", "data_available", "data_path", "get_data_dir"]
