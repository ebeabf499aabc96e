"""Helpers shared by the in-memory estimators and their Dask executors (private).

Layering (every package imports only those below it)::

    _validation, config, _random, _dispatch, exceptions  <  kernels  <  linalg  <  landmarks
        <  _shared  <  _dask (executors)  <  decomposition, lssvm, operators, nystrom
        <  experiments, cli

The Dask executors (:mod:`asymkern._dask`) need a few pieces of the estimator packages (label
encoding, bandwidth rules, landmark requests, the low-rank AsK-LS solve, the landmark
statistics of the operator estimators). They live here, not in the estimator packages: importing
``asymkern.lssvm._anything`` runs ``asymkern/lssvm/__init__.py``, which imports the estimators,
which import ``asymkern._dask`` — a package-level cycle. One module per estimator family; each
imports only the lower layers. The estimator modules import (and so still expose) these names.
"""
