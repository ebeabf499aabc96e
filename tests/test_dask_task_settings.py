"""Dask tasks run under the asymkern settings of the caller that built them: a budget set
by ``config_context`` is checked inside the tasks whatever the scheduler (the threaded
scheduler's pool threads see only the process-wide settings)."""

from __future__ import annotations

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

from asymkern import config_context, get_config  # noqa: E402
from asymkern._dask.kernel import task  # noqa: E402
from asymkern.config import MemoryBudgetError  # noqa: E402
from asymkern.operators import ConditionalMeanEmbedding, KoopmanOperator  # noqa: E402


def _settings():
    return get_config()


@pytest.mark.parametrize("scheduler", ["synchronous", "threads"])
def test_task_sees_the_callers_context(scheduler):
    with dask.config.set(scheduler=scheduler):
        with config_context(max_dense_memory=3.5, working_memory=7):
            t = task(_settings)
        got = t.compute()
    assert got["max_dense_memory"] == 3.5 and got["working_memory"] == 7
    assert get_config()["max_dense_memory"] != 3.5  # the caller's context ended


@pytest.mark.parametrize("scheduler", ["synchronous", "threads"])
@pytest.mark.parametrize("make", [
    lambda: ConditionalMeanEmbedding(n_landmarks=200, random_state=0),
    lambda: KoopmanOperator(n_components=3, n_landmarks=200, random_state=0),
], ids=["cme", "koopman"])
def test_landmark_fits_refuse_alike_on_every_scheduler(scheduler, make):
    """A 6000-row chunk's 6000 × 200 kernel block (9.2 MiB) under an 8 MiB budget: refused
    inside the task on both schedulers (the threaded one ran it before)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((6000, 5))
    Xd = da.from_array(X, chunks=(6000, 5))
    args = (Xd, da.from_array(np.sin(X[:, :1]), chunks=(6000, 1)))
    est = make()
    with dask.config.set(scheduler=scheduler), config_context(max_dense_memory=8):
        with pytest.raises(MemoryBudgetError, match=r"(6000|5999)×200"):
            est.fit(*(args if isinstance(est, ConditionalMeanEmbedding) else args[:1]))
