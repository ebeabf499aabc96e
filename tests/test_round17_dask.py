"""Round 17: Dask fits submit each TSQR graph once.

The Nyström solver's orthogonalisation persisted Q of ``da.linalg.tsqr`` and computed R in a
second call, and the randomized solver gathered (s, Rᵀ) of a TSQR-SVD and persisted
U = P[:, order] in another: the tsqr's shared keys reached the scheduler twice with other
task specs ("Detected different `run_spec` for key ..."), which under a distributed Client
can fail a scheduler assertion and leave the fit waiting forever (seen twice by an audit).
"""

from __future__ import annotations

import io
import logging
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from asymkern import KernelSVD


def test_tsqr_graphs_are_submitted_once_under_a_client():
    distributed = pytest.importorskip("distributed")
    da = pytest.importorskip("dask.array")
    import dask

    rng = np.random.RandomState(1)
    X, Z = rng.randn(300, 4), rng.randn(250, 4) + 0.3
    fits = (dict(solver="randomized"),
            dict(solver="nystrom", nystrom_params=dict(orthogonalize=True)))
    with dask.config.set(scheduler="synchronous"):
        refs = [KernelSVD(n_components=4, kernel_params={"gamma": 0.3}, random_state=3, **kw)
                .fit(da.from_array(X, chunks=100), Z=da.from_array(Z, chunks=125))
                .singular_values_ for kw in fits]
    log = io.StringIO()
    handler = logging.StreamHandler(log)
    logger = logging.getLogger("distributed")
    logger.addHandler(handler)
    try:  # an in-process cluster (no sockets), closed by the with block
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                      dashboard_address=None) as cluster, \
                distributed.Client(cluster, timeout=60), \
                dask.config.set(scheduler="dask.distributed"), warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)

            def run():
                return [KernelSVD(n_components=4, kernel_params={"gamma": 0.3}, random_state=3,
                                  **kw).fit(da.from_array(X, chunks=100),
                                            Z=da.from_array(Z, chunks=125)).singular_values_
                        for kw in fits]

            with ThreadPoolExecutor(1) as pool:  # bounded: a hung fit fails the test
                got = pool.submit(run).result(timeout=180)
    finally:
        logger.removeHandler(handler)
    assert "Detected different `run_spec`" not in log.getvalue()
    for a, b in zip(got, refs):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
