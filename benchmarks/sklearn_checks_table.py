"""The table estimator × scikit-learn common checks at default parameters (issue 15).

Runs ``check_estimator(Est(), on_fail=None)`` for every public estimator (discovered as in
``tests/test_sklearn_api.py``) and writes docs/results/sklearn_checks.md: checks run, passed,
skipped, failed, and the declared expected failures with their reasons.

    python benchmarks/sklearn_checks_table.py [--out docs/results/sklearn_checks.md]
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import sklearn
from sklearn.utils.estimator_checks import check_estimator

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_sklearn_api import ESTIMATORS, EXPECTED_FAILED_CHECKS  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="docs/results/sklearn_checks.md")
    args = parser.parse_args()
    rows = ["| estimator | checks | passed | skipped | expected failures | failed |",
            "|---|---|---|---|---|---|"]
    notes = []
    for cls in ESTIMATORS:
        expected = EXPECTED_FAILED_CHECKS.get(cls.__name__, {})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results = check_estimator(cls(), on_fail=None, expected_failed_checks=expected)
        status = [r["status"] for r in results]
        failed = [r["check_name"] for r in results if r["status"] == "failed"]
        rows.append(f"| {cls.__name__} | {len(results)} | {status.count('passed')} | "
                    f"{status.count('skipped')} | {status.count('xfail')} | {len(failed)} |")
        by_reason: dict[str, list[str]] = {}
        for name, why in expected.items():
            by_reason.setdefault(why, []).append(f"`{name}`")
        notes += [f"- {cls.__name__}, {len(names)} check(s) ({', '.join(names)}): {why}"
                  for why, names in by_reason.items()]
        notes += [f"- {cls.__name__} `{name}`: FAILED" for name in failed]
        print(rows[-1], flush=True)
    text = (f"# scikit-learn common checks at default parameters\n\nscikit-learn "
            f"{sklearn.__version__}; `python benchmarks/sklearn_checks_table.py`.\n\n"
            + "\n".join(rows) + "\n\n" + ("Declared expected failures and failures:\n\n"
                                          + "\n".join(notes) + "\n" if notes else
                                          "No expected failures declared.\n"))
    Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
