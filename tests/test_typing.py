"""The package type-checks: ``mypy`` with the project's configuration reports no error.

The configuration is ``[tool.mypy]`` in pyproject.toml (src/asymkern without the experiments
scripts). mypy's verdict depends on the version of numpy's (and scipy's) stubs, so CI runs this
test in one job only, on the newest releases (``pip install -e ".[typing]"``); it skips where
mypy is not installed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # about 20 s: a full check, no cache carried between runs
def test_mypy_clean(tmp_path, monkeypatch):
    api = pytest.importorskip("mypy.api", reason="mypy is not installed (the 'typing' extra)")
    # from the repository root, as `mypy` is run by hand: the config's paths are relative to it;
    # a fresh cache under tmp_path (as in CI's fresh clone) keeps the run self-contained
    monkeypatch.chdir(ROOT)
    stdout, stderr, status = api.run([
        "--config-file", str(ROOT / "pyproject.toml"),
        "--cache-dir", str(tmp_path / "mypy_cache"),
        "--no-pretty",
    ])
    assert status == 0, f"mypy reported errors (exit status {status}):\n{stdout}{stderr}"
