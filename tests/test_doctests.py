"""The Examples sections of asymkern's docstrings run as doctests (issue 17).

One test per module (private ones too: public names are often defined there and re-exported);
each docstring is collected in the module that defines it, so it runs once. Options: ELLIPSIS
and NORMALIZE_WHITESPACE. A module whose examples import an optional package that is absent
(torch, matplotlib, dask, distributed, pandas) is skipped with the reason.

Expected outputs must read the same under numpy 1.24 and 2.x: no reprs of numpy scalars such as
``np.float64(0.5)`` (print ``float(x)`` or round instead); ``test_no_numpy_scalar_reprs`` checks.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil
import re

import pytest

import asymkern

OPTIONAL = ("torch", "matplotlib", "dask", "distributed", "pandas", "tqdm")
_OPTIONAL_IMPORT = re.compile(r"^\s*(?:import|from)\s+(" + "|".join(OPTIONAL) + r")\b", re.M)
_NUMPY_SCALAR_REPR = re.compile(r"\bnp\.(?:float|int|uint|complex|bool|str)_?\d*\(")
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def all_modules() -> list[str]:
    return ["asymkern"] + sorted(
        m.name for m in pkgutil.walk_packages(asymkern.__path__, "asymkern.",
                                              onerror=lambda name: None))


def _doctests(module) -> list[doctest.DocTest]:
    finder = doctest.DocTestFinder(exclude_empty=True)
    return [t for t in finder.find(module, module.__name__) if t.examples]


def _cases() -> list:
    """One case per module with examples; a module that cannot be imported without an
    optional package (e.g. asymkern._torch without torch) is a skipped case."""
    cases = []
    for name in all_modules():
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            missing = getattr(exc, "name", None) or ""
            if missing.split(".")[0] not in OPTIONAL:
                raise
            cases.append(pytest.param(name, marks=pytest.mark.skip(
                reason=f"{name} needs {missing}, which is not installed")))
            continue
        if _doctests(module):
            cases.append(name)
    return cases


MODULES = all_modules()
CASES = _cases()


def _source(tests: list[doctest.DocTest]) -> str:
    return "\n".join(ex.source for t in tests for ex in t.examples)


def test_collection_sees_the_package():
    assert "asymkern.decomposition.ksvd" in MODULES and "asymkern.linalg.svd" in MODULES
    # the doctest collection is live: modules with examples today are cases
    assert "asymkern.kernels._registry" in CASES


def test_a_wrong_example_fails():
    # the runner used below reports a wrong expected output
    test = doctest.DocTestParser().get_doctest(">>> 1 + 1\n3\n", {}, "probe", "probe", 0)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    runner.run(test, out=lambda s: None)
    assert runner.summarize(verbose=False).failed == 1


@pytest.mark.parametrize("name", CASES)
def test_module_doctests(name):
    tests = _doctests(importlib.import_module(name))
    needed = sorted({m for m in _OPTIONAL_IMPORT.findall(_source(tests))
                     if importlib.util.find_spec(m) is None})
    if needed:
        pytest.skip(f"examples of {name} need {', '.join(needed)}, which is not installed")
    report: list[str] = []
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    for test in tests:
        runner.run(test, out=report.append, clear_globs=True)
    failed = runner.summarize(verbose=False).failed
    assert failed == 0, f"{failed} doctest example(s) of {name} failed:\n" + "".join(report)


@pytest.mark.parametrize("name", CASES)
def test_no_numpy_scalar_reprs(name):
    # numpy 2 prints np.float64(0.5) where numpy 1.24 prints 0.5: such outputs cannot pass on both
    tests = _doctests(importlib.import_module(name))
    bad = [f"{t.name}: {ex.want.strip()}" for t in tests for ex in t.examples
           if _NUMPY_SCALAR_REPR.search(ex.want)]
    assert not bad, (f"expected outputs of {name} show numpy scalar reprs (write float(x), "
                     "int(x) or round): " + "; ".join(bad))
