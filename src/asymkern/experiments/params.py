"""The typed options of every experiment (``asymkern reproduce NAME -p KEY=VALUE``).

One schema per experiment, :data:`SCHEMAS`, maps each keyword option of its ``run`` function to
a :class:`Param` that parses the command-line text and refuses, by name and with the allowed
values, anything else: an unknown dataset or column, a grid that is not a list of positive
numbers, a count below its minimum, a word where a number belongs. ``None`` keeps an option's
default. :func:`parse_experiment_params` is the one place the CLI parses ``-p`` values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

_BOOL_WORDS = {"true": True, "1": True, "yes": True, "on": True,
               "false": False, "0": False, "no": False, "off": False}


_PAIRS = {"(": ")", "[": "]"}


def _unbracket(raw: str) -> str:
    """``raw`` without one pair of brackets enclosing all of it, else ``raw`` itself.

    ``"(4.0, 2.0)"`` and ``"[a,b]"`` lose their brackets; ``"KPCA (RBF)"`` (a name ending in a
    bracket) and ``"(a),(b)"`` (two bracketed parts, not one enclosing pair) are kept whole.

    Parameters
    ----------
    raw : str
        The stripped text of a list option.

    Returns
    -------
    str
        The text inside the enclosing pair, or ``raw`` unchanged when there is none.
    """
    if len(raw) < 2 or _PAIRS.get(raw[0]) != raw[-1]:
        return raw
    depth = 0
    for i, ch in enumerate(raw):
        if ch == raw[0]:
            depth += 1
        elif ch == raw[-1]:
            depth -= 1
            if depth == 0 and i < len(raw) - 1:  # the first bracket closes before the end
                return raw
    return raw[1:-1] if depth == 0 else raw


@dataclass(frozen=True)
class Param:
    """One experiment option: its type and the values it allows.

    Parameters
    ----------
    kind : {'int', 'float', 'bool', 'choice', 'names', 'numbers'}
        ``'choice'``: one of ``choices``; ``'names'``: a comma-separated list of ``choices``
        (a tuple, case-insensitive, duplicates dropped); ``'numbers'``: a comma-separated list
        of numbers (a tuple of floats) within the bounds. A list may be written inside one
        pair of brackets as a Python tuple or list, with one trailing comma: ``(4.0,)``,
        ``[cora, citeseer]``.
    choices : tuple of str, optional
        The allowed names (``'choice'``, ``'names'``).
    low, high : float, optional
        Bounds of a number (``'int'``, ``'float'``, each entry of ``'numbers'``).
    low_open, high_open : bool, default False
        Whether the bound itself is excluded.
    """

    kind: str
    choices: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def describe(self) -> str:
        """The allowed values, in words (for the error messages and ``--help``)."""
        if self.kind == "bool":
            return "true or false"
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        if self.kind == "names":
            return "a comma-separated list of " + ", ".join(self.choices)
        what = {"int": "an integer", "float": "a number",
                "numbers": "a comma-separated list of numbers"}[self.kind]
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.low_open else '>='} {self.low:g}")
        if self.high is not None:
            parts.append(f"{'<' if self.high_open else '<='} {self.high:g}")
        if parts:
            what += (", each " if self.kind == "numbers" else " ") + " and ".join(parts)
        return what

    def _number(self, key: str, text: str, integer: bool):
        bad = ValueError(f"--param {key} expects {self.describe()}, got {text!r}")
        try:
            value = int(text) if integer else float(text)
        except (TypeError, ValueError):
            raise bad from None
        if not math.isfinite(value):
            raise bad
        lo, hi = self.low, self.high
        if lo is not None and (value < lo or (self.low_open and value == lo)):
            raise bad
        if hi is not None and (value > hi or (self.high_open and value == hi)):
            raise bad
        return value

    def parse(self, key: str, text: str):
        """The value of ``-p key=text``.

        Parameters
        ----------
        key : str
            The option's name (for the message).
        text : str
            The command-line text after ``=``.

        Returns
        -------
        int, float, bool, str or tuple
            The parsed value.

        Raises
        ------
        ValueError
            Naming ``--param key``, the allowed values and what was given.
        """
        raw = text.strip()
        if self.kind in ("int", "float"):
            return self._number(key, raw, integer=self.kind == "int")
        if self.kind == "bool":
            if raw.lower() not in _BOOL_WORDS:
                raise ValueError(f"--param {key} expects true or false, got {text!r}")
            return _BOOL_WORDS[raw.lower()]
        inner = _unbracket(raw)
        items = [x.strip() for x in inner.split(",")]
        if inner != raw and len(items) > 1 and items[-1] == "":
            items.pop()  # a Python tuple's trailing comma: "(4.0,)", "[a, b,]"
        if "" in items:
            raise ValueError(f"--param {key} expects {self.describe()}, got {text!r} (an empty "
                             "entry)")
        if self.kind == "numbers":
            return tuple(float(self._number(key, x, integer=False)) for x in items)
        canonical = {c.lower(): c for c in self.choices}
        unknown = [x for x in items if x.strip("'\"").lower() not in canonical]
        if unknown:
            raise ValueError(f"--param {key} expects {self.describe()}; got unknown "
                             f"{', '.join(map(repr, unknown))}")
        names = [canonical[x.strip("'\"").lower()] for x in items]
        if self.kind == "choice":
            if len(names) != 1:
                raise ValueError(f"--param {key} expects {self.describe()}, got {text!r}")
            return names[0]
        return tuple(dict.fromkeys(names))  # in the given order, each once


_CITATION = ("cora", "citeseer", "pubmed")
_ORIENT = ("cites", "cited_by")
_COUNT = Param("int", low=1)
_POSITIVE = Param("float", low=0.0, low_open=True)
_NONNEG = Param("float", low=0.0)
_BOOL = Param("bool")
_MULTIPLES = Param("numbers", low=0.0, low_open=True)
_UCI = ("heart", "sonar", "monks-1", "monks-2", "monks-3", "pima", "australian", "spambase")

SCHEMAS: dict[str, dict[str, Param]] = {
    "nystrom-solvers": {
        "datasets": Param("names", _CITATION),
        "parts": Param("names", ("table", "gamma", "f1")),
        "verbose": _BOOL,
        "subspace_reference": Param("names", _CITATION),
        "tsvd_tol": _NONNEG,
        "tsvd_limit_s": _POSITIVE,
        "orientation": Param("choice", _ORIENT),
        "f1_r_max": _COUNT,
        "f1_mults": _MULTIPLES,
    },
    "askls-nodes": {"datasets": Param("names", _CITATION), "n_repeats": _COUNT},
    "askls-uci": {"n_repeats": _COUNT, "datasets": Param("names", _UCI), "rcond_tol": _NONNEG},
    "askls-kl": {},
    "operators-covariance": {},
    "operators-crosscov": {},
    "operators-gyre": {"regularization": _POSITIVE, "center": _BOOL},
    "nystrom-machines": {
        "n_seeds": _COUNT,
        "datasets": Param("names", ("usps", "dna", "phishing")),
        "ratios": Param("numbers", low=0.0, high=1.0, low_open=True),
        "show_progress": _BOOL,
    },
    "ksvd-graphs": {
        "datasets": Param("names", _CITATION),
        "train_size": Param("float", low=0.0, high=1.0, low_open=True, high_open=True),
        "orientations": Param("names", _ORIENT),
        "r": _COUNT,
        "grid": _MULTIPLES,
        "solver": Param("choice", ("auto", "dense", "arpack", "randomized", "block_krylov")),
        "trials": _COUNT,
        "folds": Param("int", low=2),
    },
    "ksvd-biclustering": {
        "datasets": Param("names", ("acm", "dblp", "wiki")),
        "compats": Param("names", ("a0", "a1", "a1c", "a2")),
        "methods": Param("names", ("SVD", "KPCA", "KSVD")),
        "grid": _MULTIPLES,
    },
    "ksvd-general": {
        "datasets": Param("names", ("pima", "ionosphere", "liver", "cholesterol", "yacht",
                                    "casp")),
        "columns": Param("names", ("KPCA (RBF)", "RBF a0", "RBF a1", "RBF a2", "RBF a3",
                                   "SNE a0", "SNE a1", "SNE a2", "SNE a3", "RBF a1c",
                                   "SNE a1c")),
        "with_a3": _BOOL,
        "with_table5": _BOOL,
    },
}


def parse_experiment_params(name: str, items: list[str] | None) -> dict:
    """``KEY=VALUE`` texts of ``reproduce NAME --param`` → keyword arguments of the experiment.

    Parameters
    ----------
    name : str
        The experiment (a key of :data:`SCHEMAS`).
    items : list of str or None
        The ``-p`` texts, e.g. ``['datasets=cora,citeseer', 'n_repeats=3']``.

    Returns
    -------
    dict
        The parsed options; ``KEY=None`` keeps the option's default (it is left out).

    Raises
    ------
    ValueError
        For a text without ``=``, an option the experiment does not have (listing those it
        has) or a value the option does not allow (naming the option and its allowed values).
    """
    schema = SCHEMAS[name]
    kwargs: dict = {}
    for item in items or ():
        key, sep, raw = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise ValueError(f"--param expects KEY=VALUE, got {item!r}")
        if key not in schema:
            listed = ", ".join(f"{k} ({p.describe()})" for k, p in schema.items())
            raise ValueError(f"--param {key!r} is not an option of {name}; options: "
                             f"{listed or '(none)'}")
        if raw.strip() == "None":
            kwargs.pop(key, None)
            continue
        kwargs[key] = schema[key].parse(key, raw)
    return kwargs
