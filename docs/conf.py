"""Sphinx configuration of the asymkern documentation.

Build (README's third command): ``python -m sphinx -W -b html docs docs/_build/html``.
Needs the ``[docs]`` extra. Generated, never committed: ``docs/_build``, ``docs/auto_examples``
(sphinx-gallery), ``docs/api/modules`` and ``docs/api/generated`` (API pages from ``__all__``).

Intersphinx works offline: each inventory is read from a local file, ``docs/_intersphinx/
<name>.inv`` (committed by hand, if ever) or the cache ``docs/_build/intersphinx/<name>.inv``;
a missing one is downloaded once (5 s timeout). An inventory that can be neither found nor
downloaded is dropped from the mapping with a printed note, so a machine without network still
builds with ``-W`` (links to that project's objects then stay plain text).
"""

from __future__ import annotations

import os
import shutil
import sys
import urllib.request
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))
if (ROOT / "src" / "asymkern").is_dir():  # document this checkout, even if not installed
    sys.path.insert(0, str(ROOT / "src"))
os.environ.setdefault("MPLBACKEND", "Agg")  # gallery figures without a display

import asymkern  # noqa: E402

project = "asymkern"
author = "the asymkern developers"
copyright = "2026, the asymkern developers"  # noqa: A001 - Sphinx's name
release = asymkern.__version__
version = ".".join(release.split(".")[:2])

# Math is rendered by MathJax 3 served from the site itself: sphinx-mathjax-offline sets
# ``mathjax_path`` to ``_static/mathjax/tex-chtml.js`` and copies MathJax's files (and fonts)
# there at the end of the build, so equations render offline and from ``file://``, never from
# a CDN. tests/test_docs_site.py checks that no page loads a remote script.
MATH_EXTENSIONS = ["sphinx.ext.mathjax", "sphinx-mathjax-offline"]

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    *MATH_EXTENSIONS,
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "asymkern_apigen",  # docs/_ext: API pages from every public __all__
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = ["_build", "_intersphinx", "_ext", "Thumbs.db", ".DS_Store",
                    # sphinx-gallery's timing pages load their table scripts from CDNs; they
                    # are not written (write_computation_times) and old copies are ignored
                    "sg_execution_times.rst", "auto_examples/sg_execution_times.rst",
                    "auto_examples/*.ipynb", "auto_examples/*.py", "auto_examples/*.zip",
                    "auto_examples/*.json", "auto_examples/*.md5"]

# -- autodoc / autosummary / numpydoc --------------------------------------------------------
autosummary_generate = True
autodoc_typehints = "none"  # numpydoc's Parameters section carries the types
autoclass_content = "class"
numpydoc_show_class_members = False  # the class template lists the members itself
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False

# -- MyST (user guide, results pages, changelog) ---------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3

# -- sphinx-gallery --------------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"\.py$",  # execute every example (CI runs the gallery)
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "min_reported_time": 1,
    "image_scrapers": ("matplotlib",),
    "write_computation_times": False,  # see exclude_patterns
    # "Gallery examples using X" on the API pages (the templates' minigallery directive):
    # which examples use which asymkern object, recorded while the examples run
    "doc_module": ("asymkern",),
    "backreferences_dir": "api/generated/backreferences",
}

# -- HTML ------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"asymkern {release}"
html_theme_options = {
    "github_url": "https://github.com/asymkern/asymkern",
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
html_static_path: list[str] = []
html_sidebars = {"getting_started": []}  # a single page: no empty section navigation

# -- intersphinx, offline-safe ---------------------------------------------------------------
INTERSPHINX_TARGETS = {
    "python": "https://docs.python.org/3/",
    "numpy": "https://numpy.org/doc/stable/",
    "scipy": "https://docs.scipy.org/doc/scipy/",
    "sklearn": "https://scikit-learn.org/stable/",
    "dask": "https://docs.dask.org/en/stable/",
}


def local_inventory(name: str, url: str, dirs: list[Path], cache: Path | None,
                    timeout: float = 5.0) -> Path | None:
    """A readable ``objects.inv`` for ``name``: the first of ``dirs/<name>.inv`` that exists,
    else one downloaded from ``url`` into ``cache/<name>.inv``; None when neither works."""
    for d in dirs:
        path = d / f"{name}.inv"
        if path.is_file() and path.stat().st_size > 0:
            return path
    if cache is None or os.environ.get("ASYMKERN_DOCS_OFFLINE"):
        return None
    target = cache / f"{name}.inv"
    try:
        cache.mkdir(parents=True, exist_ok=True)
        with urllib.request.urlopen(url + "objects.inv", timeout=timeout) as resp:
            data = resp.read()
        if not data.startswith(b"# Sphinx inventory"):
            return None
        tmp = target.with_suffix(".tmp")
        tmp.write_bytes(data)
        shutil.move(tmp, target)
        return target
    except (OSError, ValueError):  # no network, DNS, HTTP error, timeout
        return None


def intersphinx_offline_safe(targets: dict[str, str], dirs: list[Path],
                             cache: Path | None) -> dict[str, tuple[str, str]]:
    """``intersphinx_mapping`` with local inventory files only; prints what was dropped."""
    mapping, dropped = {}, []
    for name, url in targets.items():
        inv = local_inventory(name, url, dirs, cache)
        if inv is None:
            dropped.append(name)
        else:
            mapping[name] = (url, str(inv))
    if dropped:
        print(f"asymkern docs: note: no intersphinx inventory for {', '.join(dropped)} (no local "
              "copy and no network); links to their objects stay plain text")
    return mapping


intersphinx_mapping = intersphinx_offline_safe(
    INTERSPHINX_TARGETS,
    dirs=[DOCS / "_intersphinx", DOCS / "_build" / "intersphinx"],
    cache=DOCS / "_build" / "intersphinx",
)
intersphinx_timeout = 5


def skip_sklearn_machinery(app, what, name, obj, skip, options):
    """Leave out scikit-learn's generated metadata-routing setters (``set_fit_request``, ...):
    not asymkern API, and their docstrings link into scikit-learn's own site."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", skip_sklearn_machinery)
