"""Settings: all-or-nothing validation, thread-local contexts, propagation to joblib workers."""

import math
import threading

import numpy as np
import pytest

import asymkern
from asymkern.config import (
    MemoryBudgetError,
    Parallel,
    check_memory,
    config_context,
    delayed,
    get_config,
    set_config,
)


@pytest.fixture(autouse=True)
def _restore_config():
    before = get_config()
    yield
    set_config(**before)


def test_defaults_and_public_exports():
    cfg = asymkern.get_config()
    assert set(cfg) == {"working_memory", "max_dense_memory", "cache_memory", "show_progress"}
    assert asymkern.set_config is set_config and asymkern.config_context is config_context
    cfg["working_memory"] = 1  # a copy: changing it changes nothing
    assert get_config()["working_memory"] != 1


@pytest.mark.parametrize(
    "bad, err",
    [
        ({"show_progress": "no"}, TypeError),
        ({"show_progress": 1}, TypeError),
        ({"working_memory": True}, TypeError),
        ({"max_dense_memory": False}, TypeError),
        ({"working_memory": "512"}, TypeError),
        ({"working_memory": 0}, ValueError),
        ({"max_dense_memory": -1.0}, ValueError),
        ({"max_dense_memory": math.inf}, ValueError),
        ({"working_memory": math.nan}, ValueError),
        ({"max_dense_memorry": 10}, TypeError),
        ({"cache_memory": -1}, ValueError),
        ({"cache_memory": math.inf}, ValueError),
        ({"cache_memory": True}, TypeError),
        ({"cache_memory": "1"}, TypeError),
    ],
)
def test_invalid_values_change_nothing(bad, err):
    before = get_config()
    # the valid value comes first: it must not be applied when a later one is invalid
    kwargs = {"working_memory": 17.0, **bad} if "working_memory" not in bad else {
        "max_dense_memory": 17.0, **bad}
    with pytest.raises(err, match=next(iter(bad))):
        set_config(**kwargs)
    assert get_config() == before
    with pytest.raises(err):
        with config_context(**kwargs):
            pass  # pragma: no cover
    assert get_config() == before


def test_unknown_setting_lists_valid_ones():
    with pytest.raises(TypeError,
                       match="valid settings: cache_memory, max_dense_memory, show_progress"):
        set_config(memory=3)


def test_valid_values_and_context_restores_on_error():
    set_config(working_memory=64, show_progress=np.bool_(True))
    assert get_config()["working_memory"] == 64 and get_config()["show_progress"] is True
    with pytest.raises(RuntimeError):
        with config_context(working_memory=8, max_dense_memory=2.5):
            assert get_config()["working_memory"] == 8
            set_config(show_progress=False)  # inside a context: undone with it
            assert get_config()["show_progress"] is False
            raise RuntimeError("boom")
    assert get_config()["working_memory"] == 64
    assert get_config()["show_progress"] is True
    assert get_config()["max_dense_memory"] == 8192


def test_context_is_thread_local():
    seen = {}
    entered = threading.Event()
    release = threading.Event()

    def other():
        entered.wait(5)
        seen["other_during"] = get_config()["working_memory"]
        with config_context(working_memory=3):
            seen["other_own"] = get_config()["working_memory"]
            release.set()
        seen["other_after"] = get_config()["working_memory"]

    t = threading.Thread(target=other)
    t.start()
    with config_context(working_memory=11):
        entered.set()
        release.wait(5)
        seen["main_during"] = get_config()["working_memory"]
    t.join(5)
    default = get_config()["working_memory"]
    assert seen == {"other_during": default, "other_own": 3, "other_after": default,
                    "main_during": 11}


def _worker_setting(_):
    return get_config()["max_dense_memory"]


def test_joblib_thread_workers_see_the_callers_context():
    with config_context(max_dense_memory=123.5):
        out = Parallel(n_jobs=2, backend="threading")(delayed(_worker_setting)(i)
                                                      for i in range(6))
    assert out == [123.5] * 6
    # outside the context the workers see the defaults again
    out = Parallel(n_jobs=2, backend="threading")(delayed(_worker_setting)(i) for i in range(2))
    assert out == [get_config()["max_dense_memory"]] * 2


def test_joblib_process_workers_see_the_callers_context():
    with config_context(max_dense_memory=77.0):
        out = Parallel(n_jobs=2, backend="loky")(delayed(_worker_setting)(i) for i in range(2))
    assert out == [77.0, 77.0]


def test_check_memory_message_and_attributes():
    with config_context(max_dense_memory=1):
        check_memory(2**20, "tiny")  # exactly the budget is allowed
        with pytest.raises(MemoryBudgetError) as exc:
            check_memory(3 * 2**30, "KernelSVD(solver='dense')", "solver='randomized'",
                         detail="4 copies of a 20000×20000 float64 matrix")
    err = exc.value
    assert isinstance(err, MemoryError)
    assert err.nbytes == 3 * 2**30 and err.budget == 2**20
    msg = str(err)
    for part in ("KernelSVD(solver='dense') needs ~3.0 GiB", "4 copies of a 20000×20000",
                 "max_dense_memory is 1 MiB", "set_config(max_dense_memory=...)",
                 "solver='randomized'"):
        assert part in msg


# ------------------------------------------------------------------ progress bars (tqdm optional)
def test_progress_bar_off_returns_the_iterable_itself():
    from asymkern.config import progress_bar

    items = [3, 1, 2]
    assert progress_bar(items, desc="x") is items  # default: show_progress is False
    assert progress_bar(items, enabled=False) is items


def test_progress_bar_on_yields_the_same_items(capsys):
    pytest.importorskip("tqdm")
    from asymkern.config import progress_bar

    with config_context(show_progress=True):
        assert list(progress_bar(range(5), desc="demo", file=__import__("sys").stderr)) == list(
            range(5))
    assert "demo" in capsys.readouterr().err


def test_show_progress_without_tqdm_fails_at_once(monkeypatch):
    import sys

    from asymkern.config import progress_bar

    monkeypatch.setitem(sys.modules, "tqdm", None)  # as if tqdm were not installed
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    with pytest.raises(ImportError, match="show_progress=True needs .* tqdm"):
        set_config(show_progress=True)
    assert get_config()["show_progress"] is False  # all or nothing
    with pytest.raises(ImportError, match="tqdm"):
        with config_context(show_progress=True):
            pass
    with pytest.raises(ImportError, match="tqdm"):
        progress_bar([1], enabled=True)
    assert progress_bar([1]) == [1]  # off: tqdm is never needed
    set_config(show_progress=False)  # turning it off needs nothing


def test_cli_progress_flag_without_tqdm_is_a_one_line_error(monkeypatch, capsys):
    import sys

    from asymkern.cli import main

    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    assert main(["reproduce", "nystrom-machines", "--quick", "--progress"]) != 0
    err = capsys.readouterr().err
    assert "--progress" in err and "tqdm" in err
