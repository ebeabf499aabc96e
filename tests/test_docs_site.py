"""The documentation site's sources and the package's front door (issue 17).

Every ``__all__`` entry of every public module is listed in the API reference pages, documented
exactly once; the results pages are in the site; intersphinx never needs the network; one
version (``asymkern.__version__``) for pyproject, the installed metadata and ``asymkern
--version``; README, LICENSE, py.typed, CI. Building the site itself is CI's job (README's
third command with ``-W``).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import json
import pkgutil
import re
import sys
from pathlib import Path

import pytest

import asymkern

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
DOCS_COMMAND = "python -m sphinx -W -b html docs docs/_build/html"

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli", reason="reading pyproject.toml on Python 3.10")


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def apigen():
    return _load(DOCS / "_ext" / "asymkern_apigen.py", "asymkern_apigen")


@pytest.fixture(scope="module")
def pages(apigen, tmp_path_factory):
    out = tmp_path_factory.mktemp("api")
    return {p.stem: p.read_text(encoding="utf-8") for p in apigen.write_pages(out)}


def _public_all() -> dict[str, list[str]]:
    """Independently of the generator: module → __all__ for every public module."""
    names = ["asymkern"] + [m.name for m in pkgutil.walk_packages(asymkern.__path__, "asymkern.")
                            if not any(p.startswith("_") for p in m.name.split(".")[1:])]
    out = {}
    for n in names:
        entries = getattr(importlib.import_module(n), "__all__", None)
        if entries:
            out[n] = list(entries)
    return out


def _entries(page: str) -> tuple[list[str], list[str]]:
    """(names documented on the page, full names it links to) from its autosummary tables."""
    own, linked = [], []
    for block in re.split(r"\n\.\. autosummary::\n", page)[1:]:
        lines = [ln.strip() for ln in block.split("\n\n", 1)[1].splitlines()]
        names = []
        for ln in lines:
            if not ln:
                break
            names.append(ln)
        (own if ":toctree:" in block.split("\n\n", 1)[0] else linked).extend(names)
    own += re.findall(r"^\.\. autodata:: (\w+)$", page, re.M)  # constants, on the page itself
    return own, [n.lstrip("~") for n in linked]


def test_every_public_name_is_in_the_api_reference(pages):
    public = _public_all()
    assert set(pages) == set(public), "one API page per public module with __all__"
    documented: dict[str, str] = {}
    for mod, entries in public.items():
        own, linked = _entries(pages[mod])
        assert f".. automodule:: {mod}" in pages[mod]
        listed = own + [full.rsplit(".", 1)[1] for full in linked]
        missing = [n for n in entries if n not in listed]
        assert not missing, f"{mod}: __all__ names missing from its API page: {missing}"
        for n in own:
            documented[f"{mod}.{n}"] = mod
    # every link points at an object documented (with its own page) elsewhere
    for mod in public:
        for full in _entries(pages[mod])[1]:
            assert full in documented, f"{mod}'s page links {full}, which no page documents"


def test_each_object_is_documented_once(pages):
    seen: dict[tuple[int, str], str] = {}
    for mod, page in pages.items():
        m = importlib.import_module(mod)
        for n in _entries(page)[0]:
            key = (id(getattr(m, n)), n)
            assert key not in seen, f"{n} documented twice: under {seen[key]} and {mod}"
            seen[key] = mod


def test_canonical_location(apigen):
    c = apigen.canonical
    # the shortest public module that contains the defining module; the root package last
    assert c(["asymkern", "asymkern.decomposition"], "asymkern.decomposition.ksvd") == \
        "asymkern.decomposition"
    assert c(["asymkern.linalg", "asymkern.linalg.metrics", "asymkern.linalg.nystrom"],
             "asymkern.linalg.metrics") == "asymkern.linalg"
    assert c(["asymkern.config", "asymkern.exceptions", "asymkern.kernels"],
             "asymkern.config") == "asymkern.config"
    assert c(["asymkern.operators", "asymkern.linalg"], "asymkern._shared.x") == "asymkern.linalg"
    assert c(["asymkern"], None) == "asymkern"
    with pytest.raises(ValueError, match="exporters"):
        c([], None)


def test_a_new_public_name_gets_listed(apigen, monkeypatch):
    # the pages follow __all__: a function or constant added to a module's __all__ appears
    import asymkern.landmarks as mod

    def brand_new_function():
        """A new public function."""

    brand_new_function.__module__ = mod.__name__
    monkeypatch.setattr(mod, "brand_new_function", brand_new_function, raising=False)
    monkeypatch.setattr(mod, "BRAND_NEW_CONSTANT", ("a", "b"), raising=False)
    before = _entries(apigen.module_page(mod.__name__,
                                         apigen.api_table([mod.__name__])[mod.__name__]))[0]
    monkeypatch.setattr(mod, "__all__", [*mod.__all__, "brand_new_function",
                                         "BRAND_NEW_CONSTANT"])
    after = _entries(apigen.module_page(mod.__name__,
                                        apigen.api_table([mod.__name__])[mod.__name__]))[0]
    assert sorted(set(after) - set(before)) == ["BRAND_NEW_CONSTANT", "brand_new_function"]


def test_site_structure():
    index = (DOCS / "index.rst").read_text(encoding="utf-8")
    for entry in ("getting_started", "user_guide/index", "auto_examples/index", "api/index",
                  "results/index", "changelog"):
        assert re.search(rf"^\s+{re.escape(entry)}\s*$", index, re.M), f"index lacks {entry}"
    results = (DOCS / "results" / "index.md").read_text(encoding="utf-8")
    assert ":glob:" in results and re.search(r"^\*$", results, re.M), \
        "results/index.md must include every docs/results/*.md page (glob)"
    assert "/ARCHITECTURE" in results and "/scaling_out" in results
    assert "../CHANGELOG.md" in (DOCS / "changelog.md").read_text(encoding="utf-8")
    assert ".. include:: modules/by_task.inc" in (DOCS / "api" / "index.rst").read_text(
        encoding="utf-8"), "the API index includes the generated task tables"
    # the front page routes by task; the API's module pages are reached from the API index
    assert "modules/" not in index and "api/generated" not in index


def test_api_index_groups_every_module_by_task(apigen):
    table = apigen.api_table()
    placed = [mod for _, _, rows in apigen.TASKS for mod, _, _ in rows]
    assert sorted(placed) == sorted(set(placed)), "a module is listed under two tasks"
    assert set(placed) == set(table), \
        f"modules without a task: {sorted(set(table) - set(placed))}; unknown: " \
        f"{sorted(set(placed) - set(table))}"
    documented = {f"{home}.{n}" for rows in table.values() for n, home in rows}
    for title, _, rows in apigen.TASKS:
        for mod, summary, entries in rows:
            assert summary.endswith((".", ")")) and "paper 0" not in summary, (mod, summary)
            for full in entries:
                assert full in documented, f"{title}: {full} is not a documented name"
    text = apigen.index_include(table)
    toctree = re.findall(r"^   modules/(\S+)$", text, re.M)
    assert sorted(toctree) == sorted(table), "every module page is in the index's toctree once"
    assert apigen.OTHER_TASK not in text
    # a module that no task lists still gets a place, under OTHER_TASK
    extra = apigen.tasks_table([*table, "asymkern.testing"])
    assert extra[-1][0] == apigen.OTHER_TASK and extra[-1][2][0][0] == "asymkern.testing"


def _shown_output(page: Path, fence: str) -> str:
    """The output block that follows the first example of ``page`` ("Output:" then a text
    block)."""
    text = page.read_text(encoding="utf-8")
    block = text.split("Output:", 1)[1]
    if fence == "rst":
        body = block.split(".. code-block:: text", 1)[1].split("\n\n", 2)[1]
        return "\n".join(ln.strip() for ln in body.splitlines())
    return block.split("```text\n", 1)[1].split("```", 1)[0].strip()


def test_first_example_runs_and_prints_what_the_pages_show():
    import contextlib
    import io

    snippet = DOCS / "snippets" / "first_example.py"
    code = snippet.read_text(encoding="utf-8")
    lines = [ln for ln in code.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    assert len(lines) <= 12, "the first example stays short (imports and about eight lines)"
    for page in (DOCS / "index.rst", DOCS / "getting_started.md"):
        assert "snippets/first_example.py" in page.read_text(encoding="utf-8"), page
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(snippet), "exec"), {"__name__": "__main__"})
    printed = out.getvalue().strip()
    assert printed == _shown_output(DOCS / "index.rst", "rst")
    assert printed == _shown_output(DOCS / "getting_started.md", "md")


def test_conf_extensions_and_offline_intersphinx(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ASYMKERN_DOCS_OFFLINE", "1")  # loading conf.py downloads nothing
    monkeypatch.setattr(sys, "path", list(sys.path))
    conf = _load(DOCS / "conf.py", "asymkern_docs_conf")
    for ext in ("numpydoc", "sphinx.ext.autosummary", "sphinx_gallery.gen_gallery",
                "myst_parser", "sphinx.ext.intersphinx", "asymkern_apigen"):
        assert ext in conf.extensions
    assert conf.html_theme == "pydata_sphinx_theme"
    assert set(conf.myst_enable_extensions) >= {"dollarmath", "amsmath"}
    assert conf.sphinx_gallery_conf["examples_dirs"] == "../examples"
    assert conf.release == asymkern.__version__
    assert set(conf.INTERSPHINX_TARGETS) == {"python", "numpy", "scipy", "sklearn", "dask"}
    # intersphinx only ever reads local files: a present inventory is used, a missing one (no
    # network here: cache=None) is dropped with a printed note instead of failing the build
    (tmp_path / "numpy.inv").write_bytes(b"# Sphinx inventory version 2\n")
    mapping = conf.intersphinx_offline_safe(
        {"numpy": "https://numpy.org/doc/stable/", "scipy": "https://docs.scipy.org/doc/scipy/"},
        dirs=[tmp_path], cache=None)
    assert mapping == {"numpy": ("https://numpy.org/doc/stable/", str(tmp_path / "numpy.inv"))}
    assert "no intersphinx inventory for scipy" in capsys.readouterr().out


def test_one_version_everywhere(capsys):
    from asymkern.cli import main

    v = asymkern.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?(\.dev\d+)?", v), v
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in pyproject["project"] and "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "asymkern.__version__"}
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"asymkern {v}"
    try:
        dist = importlib.metadata.distribution("asymkern")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("asymkern is not installed (metadata version not checked)")
    direct = json.loads(dist.read_text("direct_url.json") or "{}")
    testing_this_checkout = Path(asymkern.__file__).resolve().is_relative_to(ROOT / "src")
    if testing_this_checkout and direct.get("url") != ROOT.as_uri():
        pytest.skip(f"the installed asymkern ({direct.get('url', 'unknown source')}) is not this "
                    "checkout (metadata version not checked)")
    assert dist.version == v, f"installed metadata says {dist.version}, asymkern.__version__ {v}"


def test_front_door():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    project = pyproject["project"]
    assert project["license"] == "BSD-3-Clause"
    assert "BSD 3-Clause License" in (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert set(project["urls"]) >= {"Documentation", "Source", "Issues", "Changelog"}
    assert all(u.startswith("https://") for u in project["urls"].values())
    assert "Typing :: Typed" in project["classifiers"]
    assert (ROOT / "src" / "asymkern" / "py.typed").is_file()
    docs_extra = " ".join(project["optional-dependencies"]["docs"])
    for pkg in ("sphinx", "pydata-sphinx-theme", "numpydoc", "sphinx-gallery", "myst-parser",
                "sphinx-mathjax-offline", "matplotlib"):
        assert pkg in docs_extra
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert DOCS_COMMAND in readme, "README must give the docs build command"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert DOCS_COMMAND.replace("python -m", '"$ci_tmp/docs/bin/python" -m') in ci, \
        "CI must run README's docs command"
    assert 'pip install --quiet -e ".[docs]"' in ci, \
        "CI must build the docs in an environment holding the [docs] extra alone"
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8")
    for path in ("/docs/_build/", "/docs/auto_examples/", "/docs/api/generated/",
                 "/docs/api/modules/"):
        assert path in ignored, f".gitignore lacks {path} (built HTML is never committed)"


# distribution names of the top-level modules the gallery and docs/conf.py may import
_DIST_OF = {"sklearn": "scikit-learn", "sphinx_gallery": "sphinx-gallery",
            "pydata_sphinx_theme": "pydata-sphinx-theme", "myst_parser": "myst-parser"}


def _top_level_imports(path: Path) -> set[str]:
    import ast

    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_docs_extra_holds_what_the_build_imports():
    """``pip install -e ".[docs]"`` in a fresh environment is enough for README's docs command:
    every third-party module the gallery examples and docs/conf.py import is a core dependency
    or in the ``[docs]`` extra (the gallery imported pandas, which only ``[test]`` installed, so
    the build failed in a docs-only environment; issue 29, item 6)."""
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirement = re.compile(r"^\s*([A-Za-z0-9_.\-]+)")
    declared = {requirement.match(r).group(1).lower().split("[")[0]
                for r in meta["dependencies"] + meta["optional-dependencies"]["docs"]}
    files = sorted((ROOT / "examples").glob("*.py")) + [DOCS / "conf.py"]
    assert len(files) > 5
    local = {"asymkern", "asymkern_apigen", "conf", "__future__"}
    for path in files:
        for mod in sorted(_top_level_imports(path) - set(sys.stdlib_module_names) - local):
            dist = _DIST_OF.get(mod, mod).lower().replace("_", "-")
            assert dist in declared, (
                f"{path.name} imports {mod!r}, but neither the dependencies nor the [docs] extra "
                f"of pyproject.toml name {dist!r}")


# ------------------------------------------------------------------ math renders offline
_TAG = re.compile(r"<(script|link)\b[^>]*>", re.I)
_REMOTE = re.compile(r"^(?:[a-z][a-z0-9+.\-]*:)?//", re.I)  # http://, https://, //host


def _remote_assets(html: str) -> list[str]:
    """The off-site URLs the page loads: ``<script src>`` and ``<link href>`` of stylesheets,
    preloads and icons (hyperlinks to other sites are fine)."""
    found = []
    for m in _TAG.finditer(html):
        tag = m.group(0)
        attr = "src" if m.group(1).lower() == "script" else "href"
        url = re.search(rf'\b{attr}="([^"]*)"', tag)
        if url is None or not _REMOTE.match(url.group(1)):
            continue
        if m.group(1).lower() == "link" and not re.search(
                r'\brel="[^"]*(stylesheet|preload|icon)', tag):
            continue
        found.append(url.group(1))
    return found


def _mathjax_scripts(html: str) -> list[str]:
    return [u for u in re.findall(r'<script\b[^>]*\bsrc="([^"]*)"', html) if "mathjax" in u.lower()]


def test_remote_asset_detection():
    page = ('<script src="_static/a.js"></script><script defer src="https://cdn.x/mathjax.js">'
            '</script><link rel="stylesheet" href="//cdn.y/s.css"><link rel="canonical" '
            'href="https://example.org/"><a href="https://example.org/">x</a>')
    assert _remote_assets(page) == ["https://cdn.x/mathjax.js", "//cdn.y/s.css"]
    assert _mathjax_scripts(page) == ["https://cdn.x/mathjax.js"]


def test_math_is_rendered_without_network(tmp_path, monkeypatch):
    """The math set-up of docs/conf.py (MATH_EXTENSIONS, with MyST's dollar math) builds a page
    whose MathJax is a file of the site itself, with no remote script, in a couple of seconds."""
    import subprocess

    pytest.importorskip("sphinx")
    pytest.importorskip("myst_parser")
    monkeypatch.setenv("ASYMKERN_DOCS_OFFLINE", "1")
    monkeypatch.setattr(sys, "path", list(sys.path))
    conf = _load(DOCS / "conf.py", "asymkern_docs_conf_math")
    for ext in conf.MATH_EXTENSIONS:
        assert ext in conf.extensions
        if importlib.util.find_spec(ext) is None:
            pytest.skip(f"{ext} is not installed (the [docs] extra)")
    src, out = tmp_path / "src", tmp_path / "html"
    src.mkdir()
    (src / "conf.py").write_text(
        f"extensions = {[*conf.MATH_EXTENSIONS, 'myst_parser']!r}\n"
        f"myst_enable_extensions = {conf.myst_enable_extensions!r}\n", encoding="utf-8")
    (src / "index.md").write_text("# Math\n\nInline $\\kappa(x, z)$ and\n\n$$\n"
                                  "\\hat S = \\Psi B \\Phi^\\top\n$$\n", encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(src),
                          str(out)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    html = (out / "index.html").read_text(encoding="utf-8")
    assert "\\kappa" in html, "the test page has no math"
    scripts = _mathjax_scripts(html)
    assert scripts, "no MathJax script on a page with math"
    assert not _remote_assets(html), f"remote scripts: {_remote_assets(html)}"
    for url in scripts:
        assert (out / url.split("?")[0]).is_file(), f"{url} is not in the built site"


def _built_pages(html_dir: Path) -> list[Path]:
    """The HTML pages of the last build: the documents its search index lists (pages of removed
    sources, which Sphinx leaves in the output directory, are not among them)."""
    index = (html_dir / "searchindex.js").read_text(encoding="utf-8")
    docnames = json.loads(re.search(r'"docnames":(\[.*?\])', index).group(1))
    return [html_dir / f"{d}.html" for d in docnames]


def test_built_site_loads_nothing_remote():
    """When the site has been built (README's third command) after the last change of
    docs/conf.py: no page loads a script or stylesheet from another site, and the pages with
    math load the site's own MathJax."""
    html_dir = DOCS / "_build" / "html"
    index = html_dir / "index.html"
    if not (index.is_file() and (html_dir / "searchindex.js").is_file()):
        pytest.skip("the site is not built (docs/_build/html)")
    if index.stat().st_mtime < (DOCS / "conf.py").stat().st_mtime:
        pytest.skip("docs/_build/html is older than docs/conf.py (rebuild to check it)")
    pages = _built_pages(html_dir)
    assert len(pages) > 50 and index in pages
    remote, with_math = {}, 0
    for page in pages:
        html = page.read_text(encoding="utf-8", errors="replace")
        if urls := _remote_assets(html):
            remote[str(page.relative_to(html_dir))] = urls
        for url in _mathjax_scripts(html):
            with_math += 1
            assert (page.parent / url.split("?")[0]).resolve().is_file(), (page, url)
    assert not remote, f"pages loading remote scripts or stylesheets: {remote}"
    assert with_math > 0, "no page loads MathJax (math pages are expected in the user guide)"


# ------------------------------------------------------------------ class pages
def test_class_pages_show_public_bases_only(apigen):
    from sklearn.base import BaseEstimator, TransformerMixin

    class _Private(BaseEstimator):
        pass

    class _Mixin:
        pass

    class Public(_Private):
        pass

    assert apigen.public_bases([_Private]) == [BaseEstimator]
    assert apigen.public_bases([_Mixin, TransformerMixin, _Private]) == \
        [TransformerMixin, BaseEstimator]
    assert apigen.public_bases([Public, _Private]) == [Public, BaseEstimator]
    assert apigen.public_bases([object]) == [] and apigen.public_bases([_Mixin]) == []
    # every documented class: no private base, and no asymkern base without a page of its own
    table = apigen.api_table()
    documented = apigen.documented_ids(table)
    for rows in table.values():
        for name, home in rows:
            obj = getattr(importlib.import_module(home), name)
            if isinstance(obj, type):
                for b in apigen.public_bases(list(obj.__bases__), documented):
                    assert not b.__name__.startswith("_"), (home, name, b)
                    assert not b.__module__.startswith("asymkern") or id(b) in documented, \
                        (home, name, b)


def test_user_guide_links_and_gallery_backreferences(apigen, monkeypatch):
    table = apigen.api_table()
    documented = {f"{home}.{n}" for rows in table.values() for n, home in rows}
    pages = {p.relative_to(DOCS).with_suffix("").as_posix() for p in DOCS.rglob("*.md")}
    for full, guide in apigen.USER_GUIDE.items():
        assert full in documented, f"USER_GUIDE names {full}, which is not documented"
        assert guide and all(g in pages for g in guide), (full, guide)
    for key in ("asymkern.decomposition.KernelSVD", "asymkern.operators.KoopmanOperator",
                "asymkern.lssvm.AsKLSClassifier", "asymkern.nystrom.NystromKernelRidge"):
        assert key in apigen.USER_GUIDE
    aliases = apigen.aliases(table)
    assert set(aliases) == documented
    assert aliases["asymkern.decomposition.KernelSVD"][:2] == \
        ["asymkern.decomposition.KernelSVD", "asymkern.KernelSVD"]
    # the templates use both, and sphinx-gallery records backreferences for asymkern objects
    for template in ("class.rst", "base.rst"):
        text = (DOCS / "_templates" / "autosummary" / template).read_text(encoding="utf-8")
        assert "asymkern_user_guide" in text and ".. minigallery::" in text, template
    monkeypatch.setenv("ASYMKERN_DOCS_OFFLINE", "1")
    monkeypatch.setattr(sys, "path", list(sys.path))
    conf = _load(DOCS / "conf.py", "asymkern_docs_conf_sg")
    assert conf.sphinx_gallery_conf["doc_module"] == ("asymkern",)
    backrefs = conf.sphinx_gallery_conf["backreferences_dir"]
    assert backrefs.startswith("api/generated/"), "generated, inside an ignored folder"


# ------------------------------------------------------------------ pages whose code runs
# The code of these pages is run as written, and what it prints is compared with the page's
# output blocks. Opt-in (ASYMKERN_TEST_DOC_PAGES=1; about a minute on 2 idle cores): the
# cross-validation of the forecasting page and the Dask cluster start-up are too slow for the
# default run.
RUN_PAGES = ["user_guide/forecasting.md", "scaling_out.md", "user_guide/scaling_out.md"]
_BLOCK = re.compile(r"```python\n(.*?)```(?:\s*\n(?:[^`\n][^\n]*:\n\s*)?```text\n(.*?)```)?", re.S)


def _page_blocks(page: Path) -> list[tuple[str, str]]:
    """(code, the output block shown after it or '') for every python block of a MyST page."""
    return _BLOCK.findall(page.read_text(encoding="utf-8"))


def test_page_blocks_are_found():
    blocks = _page_blocks(DOCS / "user_guide" / "forecasting.md")
    assert len(blocks) >= 5 and all(shown for _, shown in blocks)
    assert "KoopmanOperator" in blocks[0][0] and "period:" in blocks[0][1]


@pytest.mark.slow
@pytest.mark.parametrize("page", RUN_PAGES)
def test_page_code_prints_what_the_page_shows(page, tmp_path):
    import os
    import subprocess

    if not os.environ.get("ASYMKERN_TEST_DOC_PAGES"):
        pytest.skip("set ASYMKERN_TEST_DOC_PAGES=1 to run the code of the documentation pages")
    if "scaling_out" in page:
        pytest.importorskip("distributed")
    blocks = _page_blocks(DOCS / page)
    assert blocks, f"{page} has no python block"
    mark = "@@asymkern-docs-block "
    script = tmp_path / "page.py"
    # markers only in the main process: Dask's worker processes re-import the script
    script.write_text("".join(f"if __name__ == '__main__':\n    print({mark!r} + '{i}', "
                              f"flush=True)\n{code}\n" for i, (code, _) in enumerate(blocks)),
                      encoding="utf-8")
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=os.pathsep.join(
        [str(Path(asymkern.__file__).parents[1]), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=900, env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    printed = run.stdout.split(mark)[1:]
    assert len(printed) == len(blocks)
    for i, ((_, shown), got) in enumerate(zip(blocks, printed)):
        got = got.split("\n", 1)[1] if "\n" in got else ""
        if shown:
            assert got.strip() == shown.strip(), f"{page}, block {i}"
