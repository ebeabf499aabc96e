"""Three edges of the Dask kernel matrix, each pinned to the in-memory ``KernelMatrix``.

* The budget of ``top_svd`` on a ``DaskKernelMatrix`` is the matrix's own ``max_dense_memory``
  (fixed when it is built, as in memory), also for ARPACK's Lanczos arrays on the client when
  ARPACK iterates with the products in the cluster, for the 'auto' rule and for the LAPACK
  workspace of a gathered G; before, those three read the ``max_dense_memory`` setting.
* Empty index sets select nothing: ``block``/``rows``/``cols``/``left``/``right`` (and
  ``matmat(cols=)``/``rmatmat(rows=)``) return the empty (or zero) result of the in-memory
  matrix, with its shape and dtype; before, they raised a ValueError about 0 samples.
* ``working_memory`` (and ``max_dense_memory``) are read when the matrix is built, the
  in-memory convention; before, a matrix without its own ``working_memory`` took the setting
  in effect when each computation was built.

No cluster is needed: dask's synchronous scheduler (the threaded one once).
"""

from __future__ import annotations

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

from _dask_helpers import synchronous_scheduler, watch_client  # noqa: E402, F401

import asymkern._dask.kernel as dask_kernel  # noqa: E402
from asymkern import config_context, get_config  # noqa: E402
from asymkern._dask.kernel import DaskKernelMatrix  # noqa: E402
from asymkern.config import MemoryBudgetError  # noqa: E402
from asymkern.kernels import KernelMatrix, get_kernel  # noqa: E402
from asymkern.linalg import top_svd  # noqa: E402
from asymkern.linalg._svd_core import arpack_svd_bytes  # noqa: E402

RNG = np.random.default_rng(11)
X = RNG.standard_normal((900, 4))
Z = RNG.standard_normal((800, 4)) + 0.2
NEED = arpack_svd_bytes(900, 800, 4) / 2**20  # 0.32 MiB of ARPACK arrays; G itself is 5.5


def _rbf():
    return get_kernel("rbf", gamma=0.5)


def _dask_matrix(**kw) -> DaskKernelMatrix:
    return DaskKernelMatrix(_rbf(), da.from_array(X, chunks=300), da.from_array(Z, chunks=300),
                            **kw)


def _close(a, b, rtol):
    a, b = np.asarray(a), np.asarray(b)
    assert np.abs(a - b).max() <= rtol * np.abs(b).max()


def _same_svd(got, ref):
    np.testing.assert_allclose(got.s, ref.s, rtol=1e-10)
    _close(got.U, ref.U, 1e-8)
    _close(got.V, ref.V, 1e-8)


# ----------------------------------------------------------------------------- (a) budgets
def test_arpack_past_the_matrix_budget_is_refused_before_any_pass(monkeypatch):
    """G's own budget (0.2 MiB) is below ARPACK's arrays (0.32 MiB) while the setting is
    8 GiB: refused with a MemoryError naming the request, G's budget and what to change, and
    nothing computed (before: ARPACK ran against the setting)."""
    assert NEED > 0.2 and get_config()["max_dense_memory"] > 100
    G = _dask_matrix(max_dense_memory=0.2)
    seen = watch_client(monkeypatch, lambda o: np.shape(o))
    with pytest.raises(MemoryBudgetError, match=r"solver='arpack' on the 900×800 dask kernel "
                       r"matrix G.*max_dense_memory of G is 0\.2 MiB.*build G with a larger"
                       ) as err:
        top_svd(G, 4, solver="arpack", random_state=0)
    assert isinstance(err.value, MemoryError) and err.value.nbytes == int(NEED * 2**20)
    assert seen == []
    with pytest.raises(MemoryBudgetError, match="max_dense_memory of G is 0.2 MiB"):
        with config_context(max_dense_memory=64):  # a later setting does not change G's
            top_svd(G, 4, solver="arpack", random_state=0)


def test_arpack_within_the_matrix_budget_under_a_smaller_setting_equals_numpy():
    """G's budget (2 MiB) holds ARPACK's arrays but not G (5.5 MiB); the setting (0.2 MiB)
    holds neither: ARPACK iterates with the products in the cluster and gives the in-memory
    matrix's result with the same budget (before: refused by the setting). A dask array has
    no budget of its own: the setting refuses it."""
    K = KernelMatrix(_rbf(), X, Z, max_dense_memory=2)
    G = _dask_matrix(max_dense_memory=2)
    with config_context(max_dense_memory=0.2):
        ref = top_svd(K, 4, solver="arpack", random_state=0)
        got = top_svd(G, 4, solver="arpack", random_state=0)
        with pytest.raises(MemoryBudgetError, match=r"solver='arpack' on the 900×800 dask "
                           r"matrix G.*max_dense_memory is 0\.2 MiB"):
            top_svd(da.from_array(K.to_array(max_dense_memory=8), chunks=300), 4,
                    solver="arpack", random_state=0)
    assert got.solver == ref.solver == "arpack" and got.info["executor"] == "dask"
    _same_svd(got, ref)


@pytest.mark.parametrize("solver", ["auto", "dense"])
def test_auto_and_dense_follow_the_matrix_budget(solver):
    """G's budget (64 MiB) holds G and LAPACK's workspace, the setting (2 MiB) does not: 'auto'
    chooses the dense solver and 'dense' runs, as in memory (before: 'auto' chose the
    randomized SVD and 'dense' refused the workspace of the gathered G by the setting)."""
    K = KernelMatrix(_rbf(), X, Z, max_dense_memory=64)
    G = _dask_matrix(max_dense_memory=64)
    with config_context(max_dense_memory=2):
        ref = top_svd(K, 4, solver=solver, random_state=0)
        got = top_svd(G, 4, solver=solver, random_state=0)
    assert got.solver == ref.solver == "dense"
    _same_svd(got, ref)


# ----------------------------------------------------------------------------- (b) empty sets
XS, ZS = X[:50], Z[:40]
SELECTIONS = {
    "int64": lambda size: np.array([], dtype=np.int64),
    "int32": lambda size: np.array([], dtype=np.int32),
    "bool list": lambda size: [False] * size,
}


def _calls(e_rows, e_cols, dtype):
    """(name, numpy call, dask call) pairs over an empty row set e_rows and column set e_cols."""
    k = 3
    Bc, Br = np.ones((0, k), dtype), np.ones((0, k), dtype)
    return [
        ("block(∅, J)", lambda K: K.block(e_rows, [1, 2]), lambda G: G.block(e_rows, [1, 2])),
        ("block(I, ∅)", lambda K: K.block([1, 2], e_cols), lambda G: G.block([1, 2], e_cols)),
        ("block(∅, ∅)", lambda K: K.block(e_rows, e_cols), lambda G: G.block(e_rows, e_cols)),
        ("rows", lambda K: K.rows(e_rows), lambda G: G.rows(e_rows)),
        ("cols", lambda K: K.cols(e_cols), lambda G: G.cols(e_cols)),
        ("left", lambda K: K.matmat(Bc, cols=e_cols), lambda G: G.left(e_cols, Bc)),
        ("right", lambda K: K.rmatmat(Br, rows=e_rows), lambda G: G.right(e_rows, Br)),
        ("matmat(cols=)", lambda K: K.matmat(Bc, cols=e_cols),
         lambda G: G.matmat(Bc, cols=e_cols)),
        ("rmatmat(rows=)", lambda K: K.rmatmat(Br, rows=e_rows),
         lambda G: G.rmatmat(Br, rows=e_rows)),
    ]


@pytest.mark.parametrize("selection", list(SELECTIONS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name, center", [("rbf", False), ("rbf", True), ("sne", True)])
def test_empty_index_sets_give_the_numpy_result(name, center, dtype, selection):
    """Every selecting method with an empty index set returns what the in-memory matrix does
    (shape, dtype, values: an empty block or the zero sum over no columns/rows); the lazy ones
    stay dask arrays chunked like X (resp. Z)."""
    k = get_kernel(name, gamma=0.5)
    Xs, Zs = XS.astype(dtype), ZS.astype(dtype)
    K = KernelMatrix(k, Xs, Zs, center=center)
    G = DaskKernelMatrix(k, da.from_array(Xs, chunks=20), da.from_array(Zs, chunks=15),
                         center=center)
    e_rows, e_cols = SELECTIONS[selection](50), SELECTIONS[selection](40)
    for what, on_numpy, on_dask in _calls(e_rows, e_cols, dtype):
        ref = on_numpy(K)
        got = on_dask(G)
        if isinstance(got, da.Array):
            assert got.chunks[0] == (G.row_chunks if got.shape[0] == 50 else G.col_chunks)
            got = got.compute()
        assert isinstance(got, np.ndarray), what
        assert (got.shape, got.dtype) == (ref.shape, ref.dtype), what
        np.testing.assert_array_equal(got, ref, err_msg=what)
    rows = G.gather_rows(G.X, e_rows)
    assert rows.shape == (0, 4) and rows.dtype == dtype


def test_an_empty_list_is_refused_alike_and_operands_are_checked():
    """``[]`` has no integer dtype: both executors refuse it with the same error naming the
    argument; a left/right operand whose rows do not match the index set is refused naming
    it (before: a shape error inside a task)."""
    K = KernelMatrix(_rbf(), XS, ZS)
    G = DaskKernelMatrix(_rbf(), da.from_array(XS, chunks=20), da.from_array(ZS, chunks=15))
    for call in (lambda M: M.cols([]), lambda M: M.rows([]), lambda M: M.block([], [1]),
                 lambda M: M.matmat(np.ones((0, 2)), cols=[])):
        with pytest.raises(ValueError) as ref:
            call(K)
        with pytest.raises(ValueError) as got:
            call(G)
        assert str(got.value) == str(ref.value)
    # gather_rows: a mask selects (before: read as the indices 0 and 1), [] is empty
    mask = np.zeros(50, dtype=bool)
    mask[[3, 7]] = True
    np.testing.assert_array_equal(G.gather_rows(G.X, mask), XS[mask])
    np.testing.assert_array_equal(G.gather_rows(G.X, [-1, 2]), XS[[-1, 2]])
    assert G.gather_rows(G.X, []).shape == (0, 4)
    with pytest.raises(IndexError, match="idx index out of range"):
        G.gather_rows(G.X, [50])
    with pytest.raises(ValueError, match=r"B has shape \(3, 2\); expected \(0, k\)"):
        G.left(np.array([], dtype=int), np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"A has shape \(2,\); expected \(2, k\)"):
        G.right([1, 2], np.ones(2))


# ----------------------------------------------------------------------------- (c) budgets read
def _recorded_budgets(monkeypatch) -> list[float]:
    """The working_memory of every local chunk-pair matrix the tasks build."""
    budgets: list[float] = []
    real = dask_kernel._local

    def recording(*args, **kwargs):
        km = real(*args, **kwargs)
        budgets.append(km.working_memory)
        return km

    monkeypatch.setattr(dask_kernel, "_local", recording)
    return budgets


def test_budgets_are_read_when_the_matrix_is_built(monkeypatch):
    """A matrix built under config_context keeps its budgets after the block, and one built
    outside ignores a later block — the numpy KernelMatrix's convention — and its tasks
    (products built anywhere, any scheduler) use that value."""
    budgets = _recorded_budgets(monkeypatch)
    V = np.ones((40, 2))
    Xd, Zd = da.from_array(XS, chunks=20), da.from_array(ZS, chunks=15)
    default = get_config()["working_memory"]
    assert default != 0.05
    with config_context(working_memory=0.05, max_dense_memory=3):
        K_in, G_in = KernelMatrix(_rbf(), XS, ZS), DaskKernelMatrix(_rbf(), Xd, Zd)
    K_out, G_out = KernelMatrix(_rbf(), XS, ZS), DaskKernelMatrix(_rbf(), Xd, Zd)
    with config_context(working_memory=0.01, max_dense_memory=1):
        assert G_out.working_memory == K_out.working_memory == default
        assert G_out.max_dense_memory == K_out.max_dense_memory != 1
        lazy_out = G_out.matmat(V)  # built inside the block: still G_out's budget
    assert G_in.working_memory == K_in.working_memory == 0.05
    assert G_in.max_dense_memory == K_in.max_dense_memory == 3
    lazy_in = G_in.matmat(V)  # built outside: G_in's budget
    with dask.config.set(scheduler="threads"):
        got_out = lazy_out.compute()
        assert budgets and set(budgets) == {default}
        budgets.clear()
        got_in = lazy_in.compute()
        assert budgets and set(budgets) == {0.05}
    np.testing.assert_allclose(got_out, K_out.matmat(V), rtol=1e-12)
    np.testing.assert_allclose(got_in, K_in.matmat(V), rtol=1e-12)
    G_out.working_memory = 0.5  # an assignment replaces it, validated
    assert G_out.working_memory == 0.5
    with config_context(working_memory=0.25):
        G_out.working_memory = None  # the setting in effect at the assignment
    assert G_out.working_memory == 0.25
    for bad in (0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="working_memory"):
            G_out.working_memory = bad
        with pytest.raises(ValueError, match="max_dense_memory"):
            DaskKernelMatrix(_rbf(), Xd, Zd, max_dense_memory=bad)
