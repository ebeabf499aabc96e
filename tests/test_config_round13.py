"""Configuration values checked where they enter (round 13 audit): a per-call budget of
``KernelMatrix.to_array`` and ``check_memory(limit=...)`` (a string, a bool, NaN or a
non-positive value was accepted, or refused with a misleading ``MemoryBudgetError``),
``show_progress=np.True_`` without tqdm (accepted, failing later inside a kernel pass), and
integers beyond the float range (an ``OverflowError`` that did not name the setting)."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from asymkern import config_context, get_config, set_config
from asymkern.config import MemoryBudgetError, check_memory
from asymkern.kernels import KernelMatrix

BAD_LIMITS = [("64", TypeError), (True, TypeError), (float("nan"), ValueError),
              (-1, ValueError), (0, ValueError), (0.0, ValueError)]


@pytest.mark.parametrize("limit, error", BAD_LIMITS)
def test_to_array_refuses_a_bad_limit_naming_it(limit, error):
    G = KernelMatrix("rbf", np.random.default_rng(0).standard_normal((6, 2)))
    with pytest.raises(error, match="max_dense_memory"):
        G.to_array(max_dense_memory=limit)
    with pytest.raises(error, match="max_dense_memory"):  # also where out= is given
        G.to_array(max_dense_memory=limit, out=np.empty(G.shape))
    with pytest.raises(error, match="max_dense_memory"):
        check_memory(10, "an operation", limit=limit)


def test_an_infinite_limit_means_none():
    with config_context(max_dense_memory=1e-6):
        G = KernelMatrix("rbf", np.random.default_rng(0).standard_normal((6, 2)))
        with pytest.raises(MemoryBudgetError):
            G.to_array()
        np.testing.assert_array_equal(G.to_array(max_dense_memory=math.inf),
                                      G.to_array(max_dense_memory=1.0))
        check_memory(2.0**60, "a huge operation", limit=math.inf)


@pytest.mark.parametrize("key", ["working_memory", "max_dense_memory", "cache_memory"])
def test_integers_beyond_the_float_range_are_refused_naming_the_setting(key):
    with pytest.raises(ValueError, match=key):
        set_config(**{key: 10**400})


def test_numpy_true_for_show_progress_needs_tqdm_at_once(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # as if tqdm were not installed
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    with pytest.raises(ImportError, match="show_progress=True needs .* tqdm"):
        set_config(show_progress=np.True_)
    assert get_config()["show_progress"] is False
    with pytest.raises(ImportError, match="tqdm"):
        with config_context(show_progress=np.True_):
            pass
    set_config(show_progress=np.False_)  # off needs nothing
    assert get_config()["show_progress"] is False
