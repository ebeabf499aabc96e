"""User-facing text cites papers by authors and year and names no internal issue.

Docstrings, gallery examples, the documentation pages, the results pages and the changelog's
headings are read by users: "paper 000" (the file name of a paper in the project's shared
folder) and "issue 16, gap 2" (a work item of the developers) mean nothing to them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAPER = re.compile(r"\b[Pp]aper 00\d\b")
ISSUE = re.compile(r"\b[Ii]ssues? \d+\b")
GENERATED = ("_build", "auto_examples", "api/generated", "api/modules", "_static")


def _files():
    yield from sorted((ROOT / "src" / "asymkern").rglob("*.py"))
    yield from sorted((ROOT / "examples").glob("*.py"))
    for path in sorted((ROOT / "docs").rglob("*")):
        rel = path.relative_to(ROOT / "docs").as_posix()
        if path.suffix in (".md", ".rst") and not any(g in rel for g in GENERATED):
            yield path


@pytest.mark.parametrize("path", list(_files()), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_paper_file_names_or_issue_numbers(path):
    bad = [f"{path.name}:{i}: {line.strip()}"
           for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
           if PAPER.search(line) or ISSUE.search(line)]
    assert not bad, "\n".join(bad)


def test_changelog_headings_name_no_issue():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    bad = [h for h in re.findall(r"^#+ .*$", text, flags=re.M)
           if PAPER.search(h) or ISSUE.search(h)]
    assert not bad, bad


def test_the_patterns_catch_what_they_are_for():
    assert PAPER.search("as in paper 002, §4.3") and ISSUE.search("(issue 16, gap 2)")
    assert not PAPER.search("Mollenhauer et al. (2020)") and not ISSUE.search("tissue 3")
