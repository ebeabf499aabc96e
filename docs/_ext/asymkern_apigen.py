"""Generate the API reference pages from the ``__all__`` of every public asymkern module.

Run by Sphinx (``config-inited``, before Sphinx looks for source files): one page
``api/modules/<module>.rst`` per public module that has an ``__all__``, listing every entry.
Each object is documented once, at its *canonical* public location (see :func:`canonical`);
the other modules that re-export it list it in a second table that links to that page, so no
object is described twice (no duplicate-object warnings) and no public name is missing.

``tests/test_docs_site.py`` imports this file to check that every ``__all__`` entry is listed.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import Any

PACKAGE = "asymkern"
MAX_VALUE_REPR = 300  # longer constant values are not printed on the API page


def public_modules() -> list[str]:
    """Names of the public modules of asymkern that define ``__all__``, sorted.

    A module is public when no part of its dotted name after the package starts with ``_``.
    """
    pkg = importlib.import_module(PACKAGE)
    names = [PACKAGE] + sorted(
        m.name for m in pkgutil.walk_packages(pkg.__path__, PACKAGE + ".")
        if not any(part.startswith("_") for part in m.name.split(".")[1:])
    )
    return [n for n in names if getattr(importlib.import_module(n), "__all__", None)]


def _home(obj: Any) -> str | None:
    """The module that defines ``obj`` (classes and functions), else None (constants)."""
    if isinstance(obj, type) or callable(obj):
        mod = getattr(obj, "__module__", None)
        return mod if isinstance(mod, str) else None
    return None


def canonical(exporters: list[str], home: str | None) -> str:
    """The module under which an object exported by ``exporters`` is documented.

    The shortest exporting module that contains the defining module ``home`` (so
    ``asymkern.linalg.eta``, defined in ``asymkern.linalg.metrics``, is documented under
    ``asymkern.linalg``), the top-level package only when nothing else exports the object;
    without such a module, the shortest exporter (ties: alphabetical).
    """
    if not exporters:
        raise ValueError("exporters: expected at least one module name, got none")
    sub = [m for m in exporters if m != PACKAGE] or list(exporters)
    if home is not None:
        inside = [m for m in sub if home == m or home.startswith(m + ".")]
        if inside:
            return min(inside, key=lambda m: (len(m.split(".")), m))
    return min(sub, key=lambda m: (len(m.split(".")), m))


def api_table(modules: list[str] | None = None) -> dict[str, list[tuple[str, str]]]:
    """module → [(name, canonical module)] for every ``__all__`` entry, in ``__all__`` order."""
    modules = public_modules() if modules is None else modules
    exporters: dict[tuple[int, str], list[str]] = {}
    homes: dict[tuple[int, str], str | None] = {}
    entries: dict[str, list[tuple[str, tuple[int, str]]]] = {}
    for mod in modules:
        m = importlib.import_module(mod)
        entries[mod] = []
        for name in m.__all__:
            if not hasattr(m, name):
                raise AttributeError(f"{mod}.__all__ lists {name!r}, which {mod} does not define")
            obj = getattr(m, name)
            key = (id(obj), name)
            exporters.setdefault(key, []).append(mod)
            homes[key] = _home(obj)
            entries[mod].append((name, key))
    return {mod: [(name, canonical(exporters[key], homes[key])) for name, key in rows]
            for mod, rows in entries.items()}


def _underline(text: str, char: str) -> str:
    return f"{text}\n{char * len(text)}\n"


def module_page(mod: str, rows: list[tuple[str, str]], taken: frozenset[str] = frozenset()
                ) -> str:
    """reST source of the API page of ``mod``.

    ``taken``: full names documented as objects; a module of the same name (``asymkern.linalg.
    operator_svd`` is a module and a function of ``asymkern.linalg``) is shown, not indexed.
    """
    m = importlib.import_module(mod)
    constants = [n for n, home in rows if home == mod and _home(getattr(m, n)) is None]
    own = [n for n, home in rows if home == mod and n not in constants]
    other = [(n, home) for n, home in rows if home != mod]
    out = [
        ".. This page is generated from __all__ by docs/_ext/asymkern_apigen.py; do not edit.\n",
        _underline(f"``{mod}``", "="),
        f".. automodule:: {mod}\n   :no-members:\n" + ("   :no-index:\n" if mod in taken else ""),
        f".. currentmodule:: {mod}\n",
    ]
    if own:
        out.append(_underline("Documented here", "-"))
        out.append(".. autosummary::\n   :toctree: ../generated\n   :nosignatures:\n")
        out.extend(f"   {n}" for n in own)
        out.append("")
    if constants:
        # documented on this page: autosummary would show the docstring of the value's type
        out.append(_underline("Constants", "-"))
        for n in constants:
            long = len(repr(getattr(m, n))) > MAX_VALUE_REPR
            out.append(f".. autodata:: {n}" + ("\n   :no-value:" if long else "") + "\n")
    if other:
        out.append(_underline("Also exported here", "-"))
        out.append(f"These names are importable from ``{mod}`` too; each is documented at the "
                   "location linked.\n")
        # full names, outside the current module (autosummary warns about names under it)
        out.append(".. currentmodule:: None\n")
        out.append(".. autosummary::\n   :nosignatures:\n")
        out.extend(f"   ~{home}.{n}" for n, home in other)
        out.append("")
    return "\n".join(out) + "\n"


def write_pages(outdir: Path, table: dict[str, list[tuple[str, str]]] | None = None) -> list[Path]:
    """Write one page per public module into ``outdir`` (files unchanged are not rewritten,
    stale ones are removed); returns the paths of the pages."""
    table = api_table() if table is None else table
    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    taken = frozenset(f"{home}.{n}" for rows in table.values() for n, home in rows)
    for mod, rows in table.items():
        path = outdir / f"{mod}.rst"
        text = module_page(mod, rows, taken)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        written.append(path)
    for stale in set(outdir.glob("*.rst")) - set(written):
        stale.unlink()
    return written


def _on_config_inited(app: Any, config: Any) -> None:
    write_pages(Path(app.srcdir) / "api" / "modules")


def setup(app: Any) -> dict[str, Any]:
    """Sphinx extension entry point: generate the pages before Sphinx looks for sources."""
    app.connect("config-inited", _on_config_inited)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
