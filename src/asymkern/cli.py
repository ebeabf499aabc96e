"""The ``asymkern`` command: ``demo``, ``embed``, ``reproduce``.

Exit status: 0 on success, 2 on bad input (missing or malformed file, unknown experiment or
dataset, bad option, output path that cannot be written, not enough memory), 1 on an unexpected
internal failure, 130 on Ctrl-C and 143 on SIGTERM (``kill``, ``timeout``; the run's partial
outputs and the folders it created are removed first, as after any failure). Every error prints
exactly one line, ``asymkern: error: ...``, to stderr (no traceback; set ``ASYMKERN_DEBUG=1`` to
see one); warnings print as ``asymkern: warning: ...``. Outputs are written to a temporary file
and renamed, so nothing is left half-written; they get the permissions of a normally created
file (0666 minus the umask).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import sys
import tempfile
import threading
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from . import __version__


class InputError(Exception):
    """Bad user input: reported in one line with exit status 2."""


# ------------------------------------------------------------------------------------- embed
def _check_matrix(M, path: Path, nonnegative: bool):
    """A matrix read from a file: 2-D, numeric, non-empty, finite (and ≥ 0 when required)."""
    name = path.name
    if sp.issparse(M):
        M = sp.csr_matrix(M)
        vals = M.data
    else:
        M = np.asarray(M)
        if not (np.issubdtype(M.dtype, np.number) or M.dtype == np.bool_):  # object, str, ...
            raise InputError(f"{name}: expected a numeric matrix, got dtype {M.dtype}")
        if M.ndim != 2:
            raise InputError(f"{name}: expected a 2-D matrix, got an array of shape {M.shape}")
        vals = M
    if np.iscomplexobj(vals):
        raise InputError(f"{name}: complex entries are not supported")
    if M.shape[0] == 0 or M.shape[1] == 0:
        raise InputError(f"{name}: the matrix is empty (shape {M.shape})")
    bad = ~np.isfinite(vals)  # (boolean entries are finite and not negative)
    if bad.any():
        raise InputError(f"{name}: {int(bad.sum())} entries are NaN or infinite; every entry must "
                         "be a finite number")
    if nonnegative and (vals < 0).any():
        raise InputError(f"{name}: {int((vals < 0).sum())} entries are negative; --normalize row "
                         "needs non-negative edge weights (use --normalize none for a general "
                         "data matrix)")
    if not np.issubdtype(M.dtype, np.floating):
        M = M.astype(np.float64)
    return M


#: the field separators ``--sep`` accepts (auto: any of comma, tab and spaces)
SEPARATORS = {"auto": None, "comma": ",", "tab": "\t", "space": " ", "semicolon": ";"}


def _split_fields(line: str, sep: str) -> list[str]:
    """The fields of one edge line for the ``--sep`` choice ``sep``."""
    if sep == "auto":
        return line.replace(",", " ").replace("\t", " ").split()
    if sep == "space":
        return line.split()
    return [f.strip() for f in line.split(SEPARATORS[sep])]


def _node_order(ids_seen: list[str]) -> np.ndarray:
    """Node ids in the order the rows of the embedding follow: integers in increasing numeric
    order (so that nodes 0..n-1 are rows 0..n-1), returned as int64; any other ids in the order
    of their first appearance in the input, as strings."""
    try:
        as_int = [int(v) for v in ids_seen]
    except ValueError:
        return np.array(ids_seen)
    if any(str(k) != v for k, v in zip(as_int, ids_seen)):  # "007", "+1": keep the text
        return np.array(ids_seen)
    return np.array(sorted(as_int), dtype=np.int64)


#: column names that make a first edge-list line a header (when they are not node ids of the
#: other lines); compared in lower case, without quotes
HEADER_WORDS = frozenset({
    "source", "target", "src", "dst", "from", "to", "weight", "weights", "w", "u", "v",
    "node1", "node2", "node_1", "node_2", "id1", "id2", "id_1", "id_2", "head", "tail",
    "citing", "cited", "citing_paper", "cited_paper", "citing_id", "cited_id",
    "source_id", "target_id", "src_id", "dst_id", "from_id", "to_id", "source_node",
    "target_node"})


def _is_number(text: str) -> bool:
    """Whether ``text`` reads as a number (``float`` accepts it)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def _is_header(first: list[str], rest: list[list[str]]) -> bool:
    """Whether the first line of an edge list (its fields ``first``) is a header.

    It is when none of its fields is a number while every node id (first two fields) of the
    other lines ``rest`` is one (``citing_paper,cited_paper`` above integer edges), or when all
    its fields are column names of :data:`HEADER_WORDS` none of which is a node id of the other
    lines (``source,target`` above ``alice,bob``; but ``u,v`` above ``u,w`` and ``w,v`` is an
    edge). Otherwise it is data, so a header never turns integer ids into strings and a real
    first edge is never dropped for looking like one.

    Parameters
    ----------
    first : list of str
        The fields of the first line that is not blank or a comment.
    rest : list of list of str
        The fields of the other such lines.

    Returns
    -------
    bool
        True when the first line is to be skipped as a header.
    """
    if not first or any(_is_number(f) for f in first):
        return False
    rest_ids = [f for parts in rest for f in parts[:2]]
    if rest_ids and all(_is_number(f) for f in rest_ids):
        return True
    words = [f.strip("'\"").lower() for f in first]
    if not all(f in HEADER_WORDS for f in words):
        return False
    ids = set(rest_ids)
    return not any(f in ids for f in first[:2])


def read_graph_or_matrix(path: Path, fmt: str = "auto", nonnegative: bool = False,
                         sep: str = "auto", reverse: bool = False,
                         notes: list[str] | None = None):
    """Read an edge list or a matrix file (.npy, .npz, .mtx, dense .csv).

    An edge list has one edge ``src dst [weight]`` per line (``reverse``: ``dst src [weight]``,
    as in citation files that list the cited paper first; an edge listed twice gets the sum of
    its weights, 2 for two unweighted lines); fields separated by ``sep``
    (:data:`SEPARATORS`; 'auto': comma, tab or spaces; for a dense text matrix, 'auto' is a
    comma if the first data line has one, else whitespace), '#' comments allowed, a UTF-8
    byte-order mark skipped, and the first line skipped when :func:`_is_header` says it is a
    header (its text is then appended to ``notes``, when given). Every entry / weight must be
    finite, and non-negative when ``nonnegative``.

    Returns (matrix as CSR or ndarray, node ids or None); the ids are those of
    :func:`_node_order` (int64 for integer ids, in numeric order; else strings in input order).
    """
    if not path.exists():
        raise InputError(f"input file {str(path)!r} does not exist")
    if path.is_dir():
        raise InputError(f"input {str(path)!r} is a directory, not a file")
    if not os.access(path, os.R_OK):
        raise InputError(f"input file {str(path)!r} is not readable (permission denied)")
    suffix = path.suffix.lower()
    if fmt == "auto":
        fmt = {".npy": "npy", ".npz": "npz", ".mtx": "mtx"}.get(suffix, "edges")
    matrix_readers = {  # format -> (what the file should be, its reader)
        "npy": (".npy", lambda: np.load(path, allow_pickle=False)),
        "npz": ("a scipy sparse .npz", lambda: sp.load_npz(path)),
        "mtx": ("Matrix Market", lambda: _mmread(path)),
        "matrix": ("a dense matrix", lambda: np.loadtxt(
            path, delimiter=_matrix_delimiter(path, sep), ndmin=2, encoding="utf-8-sig")),
    }
    if fmt in matrix_readers:
        M = _read(path, *matrix_readers[fmt], used=fmt)
        if isinstance(M, np.lib.npyio.NpzFile):  # np.load of an .npz archive
            M.close()
            raise InputError(f"{path.name} is an .npz archive, not a .npy array; use --format "
                             "npz for a scipy sparse matrix")
        return _check_matrix(M, path, nonnegative), None  # a dense result as an ndarray
    if fmt != "edges":
        raise InputError(f"unknown --format {fmt!r}")
    records = []  # (line number, line, fields) of every line that is not blank or a comment
    try:
        # utf-8-sig: a byte-order mark written by some editors is not part of the first node id
        with open(path, encoding="utf-8-sig") as fh:
            for lineno, line in enumerate(fh, 1):
                line = line.strip()
                if line and not line.startswith("#"):
                    records.append((lineno, line, _split_fields(line, sep)))
    except UnicodeDecodeError as exc:
        raise InputError(f"{path.name} is not a UTF-8 text edge list ({exc.reason} at byte "
                         f"{exc.start}); for a binary matrix use .npy/.npz/.mtx or "
                         "--format") from None
    if records and _is_header(records[0][2], [r[2] for r in records[1:]]):
        lineno, line, _ = records.pop(0)
        if notes is not None:
            notes.append(f"line {lineno} {line[:80]!r} skipped as a header")
    src, dst, w = [], [], []
    for lineno, line, parts in records:
        if len(parts) not in (2, 3):
            hint = ("; a dense matrix in a text file needs --format matrix"
                    if len(parts) > 3 else "")
            raise InputError(f"{path.name}:{lineno}: malformed edge line {line[:80]!r}; "
                             f"expected 'src dst' or 'src dst weight'{hint}")
        weight = 1.0
        if len(parts) == 3:
            try:
                weight = float(parts[2])
            except ValueError:
                weight = float("nan")
            if not np.isfinite(weight):
                raise InputError(f"{path.name}:{lineno}: edge weight {parts[2]!r} is not "
                                 "a finite number")
            if nonnegative and weight < 0:
                raise InputError(f"{path.name}:{lineno}: edge weight {parts[2]!r} is "
                                 "negative; --normalize row needs non-negative weights")
        a, b = (parts[1], parts[0]) if reverse else (parts[0], parts[1])
        if not a or not b:
            raise InputError(f"{path.name}:{lineno}: empty node id in {line[:80]!r}")
        src.append(a)
        dst.append(b)
        w.append(weight)
    if not src:
        raise InputError(f"{path.name} contains no edges")
    seen = list(dict.fromkeys(v for pair in zip(src, dst) for v in pair))
    ids = _node_order(seen)
    index = {str(v): i for i, v in enumerate(ids.tolist())}
    n = len(ids)
    A = sp.csr_matrix((w, ([index[s] for s in src], [index[d] for d in dst])), shape=(n, n))
    return A, ids


def _matrix_delimiter(path: Path, sep: str) -> str | None:
    """The ``np.loadtxt`` delimiter of a dense text matrix for the ``--sep`` choice ``sep``.

    'auto' takes a comma when the first line that is not blank or a '#' comment holds one (a
    .csv, or a comma-separated file of another name), else runs of whitespace; 'space' is
    whitespace; the others are their character.
    """
    if sep == "space":
        return None
    if sep != "auto":
        return SEPARATORS[sep]
    try:
        with open(path, encoding="utf-8-sig") as fh:
            for line in fh:
                if line.strip() and not line.lstrip().startswith("#"):
                    return "," if "," in line else None
    except (OSError, UnicodeDecodeError):
        pass  # np.loadtxt reports the problem
    return None


def _mmread(path: Path):
    """A Matrix Market file as scipy reads it (sparse or dense)."""
    import scipy.io

    with warnings.catch_warnings():  # scipy ≥ 1.18 announces a new default return type;
        # we convert to CSR/ndarray ourselves, so either type is fine
        warnings.filterwarnings("ignore", message=".*spmatrix")
        return scipy.io.mmread(path)


def _one_line(exc: BaseException) -> str:
    """An exception message on one line."""
    msg = " ".join(str(exc).split())
    return msg or type(exc).__name__


#: leading bytes of the file kinds ``embed`` reads -> (what the file looks like, its --format)
_MAGIC = ((b"\x93NUMPY", "a .npy array", "npy"), (b"PK\x03\x04", "an .npz (zip) archive", "npz"),
          (b"%%MatrixMarket", "a Matrix Market file", "mtx"))


def _looks_like(path: Path, used: str | None = None) -> str:
    """What the first bytes of ``path`` say the file is, as a hint for a failed read ('' when
    they say nothing, name the format ``used`` for the read, or the file cannot be read)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(16)
    except OSError:
        return ""
    for magic, what, fmt in _MAGIC:
        if head.startswith(magic):
            return "" if fmt == used else f" (the file looks like {what}: --format {fmt})"
    text = head and all(32 <= b < 127 or b in b"\t\r\n" for b in head.lstrip(b"\xef\xbb\xbf"))
    return (" (the file looks like text: --format edges or matrix)"
            if text and used not in ("edges", "matrix") else "")


def _read(path: Path, what: str, load, used: str | None = None):
    """``load()``, any failure raised as an :class:`InputError` "cannot read <file> as <what>",
    with what the file's first bytes say it is (:func:`_looks_like`)."""
    try:
        return load()
    except Exception as exc:
        raise InputError(f"cannot read {path.name} as {what}: {_one_line(exc)}"
                         f"{_looks_like(path, used)}") from exc


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_output_file(out: Path, option: str = "--out") -> None:
    """Refuse an output path that cannot be a file we write: an existing folder, a parent path
    with a file in it, or a folder we may not write to. Called before any computation."""
    if out.exists() and out.is_dir():
        raise InputError(f"{option} {str(out)!r} is a folder; give a file name")
    _check_folder(out.parent if str(out.parent) else Path("."), option)


def _check_folder(folder: Path, option: str) -> None:
    """The folder exists and is writable, or can be created (no file in the way)."""
    p = folder
    while not p.exists() and p.parent != p:
        p = p.parent
    if p.exists() and not p.is_dir():
        raise InputError(f"{option}: {str(p)!r} is a file, not a folder")
    if not os.access(p, os.W_OK | os.X_OK):
        raise InputError(f"{option}: cannot write to folder {str(p)!r} (permission denied)")


def _write_error(path: Path, exc: OSError) -> InputError:
    """The one-line error for an output file that cannot be written."""
    return InputError(f"cannot write {str(path)!r}: {exc.strerror or _one_line(exc)}")


def _missing_folders(path: Path) -> list[Path]:
    """The folders above ``path`` that do not exist yet, deepest first (those a write would
    create, and a failed one removes with :func:`_remove_empty`)."""
    created = []
    p = path.parent
    while not p.exists() and p.parent != p:
        created.append(p)
        p = p.parent
    return created


def _atomic_write(path: Path, writer) -> None:
    """Write via ``writer(tmp)`` to a temporary file next to ``path`` and rename it into place.
    The file gets mode 0666 & ~umask (tempfile would leave 0600). A failed write leaves
    nothing behind: neither the temporary file nor the folders it created."""
    created = _missing_folders(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix)
    except OSError as exc:
        _remove_empty(created)
        raise _write_error(path, exc) from exc
    os.close(fd)
    try:
        writer(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        _remove_empty(created)
        if isinstance(exc, OSError):
            raise _write_error(path, exc) from exc
        raise


def _number_arg(convert, ok, parse_msg: str, range_msg: str | None = None):
    """An argparse ``type`` for a command-line number: ``convert(text)`` checked by ``ok``.

    Parameters
    ----------
    convert : callable
        ``convert(text)`` returns the value or raises ``ValueError``.
    ok : callable
        ``ok(value)``: whether the value is in range.
    parse_msg : str
        Start of the ``argparse.ArgumentTypeError`` message when parsing fails.
    range_msg : str, optional
        Start of the message when the value is out of range (default: ``parse_msg``).

    Returns
    -------
    callable
        ``parse(text)``: the int or float value; both messages quote ``text``.
    """
    def parse(text: str):
        try:
            v = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{parse_msg}, got {text!r}") from None
        if not ok(v):
            raise argparse.ArgumentTypeError(f"{range_msg or parse_msg}, got {text!r}")
        return v

    return parse


def _positive_finite(v) -> bool:
    return bool(np.isfinite(v)) and v > 0


_positive_int = _number_arg(int, lambda v: v >= 1, "expected a positive integer")
#: the largest seed: numpy's legacy RandomState (scikit-learn's random_state) takes 32 bits
SEED_MAX = 2**32 - 1
_seed_int = _number_arg(int, lambda v: 0 <= v <= SEED_MAX,
                        f"expected an integer from 0 to {SEED_MAX} (2**32 - 1)")
_positive_float = _number_arg(float, _positive_finite, "expected a positive number",
                              "expected a positive finite number")
_bandwidth_number = _number_arg(float, _positive_finite,
                                "expected a positive number, 'auto' or 'median'",
                                "expected a positive finite number")


def _bandwidth_arg(text: str):
    """--bandwidth: a positive number, 'auto' or 'median'."""
    t = text.strip().lower()
    return t if t in ("auto", "median") else _bandwidth_number(text)


def _kernel_parameters(kernel: str) -> dict:
    """The constructor parameters of the named kernel (none for an unknown name)."""
    import inspect

    from .kernels import KERNELS

    cls = KERNELS.get(str(kernel).lower())
    return dict(inspect.signature(cls).parameters) if cls is not None else {}


def _required_arguments(kernel: str) -> list[str]:
    """The constructor arguments of the named kernel that have no default (embed gives none)."""
    return [p.name for p in _kernel_parameters(kernel).values() if p.default is p.empty
            and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


#: kernels whose rows are not points embed can give them -> why
_EMBED_UNUSABLE = {"kl_gmm": "its rows are Gaussian-mixture parameters (built by "
                             "asymkern.kernels.divergence.fit_gmm_features), not rows of "
                             "the input"}


def _check_kernel_options(args) -> None:
    from .kernels import KERNELS

    name = str(args.kernel).lower()
    usable = ", ".join(k for k in sorted(KERNELS)
                       if not _required_arguments(k) and k not in _EMBED_UNUSABLE)
    if name not in KERNELS:
        raise InputError(f"unknown --kernel {args.kernel!r}; expected one of {usable}")
    if name in _EMBED_UNUSABLE:
        raise InputError(f"--kernel {args.kernel} cannot be used by embed: "
                         f"{_EMBED_UNUSABLE[name]}; expected one of {usable}")
    if _required_arguments(name):
        raise InputError(f"--kernel {args.kernel} needs {', '.join(_required_arguments(name))}, "
                         f"which embed cannot give; expected one of {usable}")
    for opt in ("bandwidth", "gamma"):
        if getattr(args, opt) is not None and opt not in _kernel_parameters(args.kernel):
            raise InputError(f"--{opt} does not apply to --kernel {args.kernel}")
    if args.gamma is not None and args.bandwidth is not None:
        raise InputError("give either --gamma or --bandwidth, not both")


def _check_magnitude(A, normalize: str) -> None:
    """Refuse entries so large that the computation overflows float64 (exit status 2).

    ``--normalize row`` sums each row (each sum must stay finite); ``none`` feeds the matrix to
    the kernel, whose squared distances between rows (or columns) reach 4·max(n, m)·max|a|².
    """
    data = A.data if sp.issparse(A) else np.asarray(A)
    peak = float(np.abs(data).max()) if data.size else 0.0
    big = float(np.finfo(np.float64).max)
    n = max(A.shape)
    limit = big / (n + 1) if normalize == "row" else float(np.sqrt(big / (4.0 * n)))
    if peak > limit:
        what = ("the row sums of D^-1(A+I) overflow" if normalize == "row" else
                "the kernel's squared distances between rows overflow")
        raise InputError(f"input: entries up to {peak:.3g} are too large for float64 ({what} "
                         f"above {limit:.3g}); rescale the matrix, e.g. divide it by its "
                         "largest entry")


def cmd_embed(args) -> int:
    from .datasets.graphs import row_normalized_adjacency
    from .decomposition import KernelSVD

    out = Path(args.out)
    if out.suffix.lower() not in (".npz", ".csv"):
        raise InputError(f"--out must be a file name ending in .npz or .csv, got "
                         f"{args.out!r}")
    check_output_file(out)
    source = Path(args.input)
    if out.exists() and source.exists() and os.path.samefile(out, source):
        raise InputError(f"--out {args.out!r} is the input file; writing the embedding there "
                         "would destroy the input: give another file name")
    _check_kernel_options(args)
    reverse = args.edge_direction == "dst-src"
    notes: list[str] = []
    A, ids = read_graph_or_matrix(Path(args.input), args.format, sep=args.sep, reverse=reverse,
                                  nonnegative=args.normalize == "row", notes=notes)
    if ids is not None:  # an edge list: say how it was read
        first, second = ("target", "source") if reverse else ("source", "target")
        header = "; ".join(notes) or "no header line"
        print(f"read {A.nnz} edges among {A.shape[0]} nodes from {Path(args.input).name}: "
              f"column 1 = {first}, column 2 = {second} (edges source -> target; "
              f"--edge-direction {'src-dst' if reverse else 'dst-src'} reads them the "
              f"other way), separator: {args.sep}, {header}")
    if args.normalize == "row" and A.shape[0] != A.shape[1]:
        raise InputError(f"--normalize row needs a square adjacency, got shape {A.shape}; "
                         "use --normalize none for a data matrix")
    _check_magnitude(A, args.normalize)
    if args.normalize == "row":
        A = row_normalized_adjacency(A, self_loops=not args.no_self_loops)
    if out.suffix.lower() == ".csv" and A.shape[0] != A.shape[1]:
        raise InputError("--out .csv needs a square input (one row per node); use .npz")
    params = {}
    if args.gamma is not None:
        params["gamma"] = args.gamma
    elif args.bandwidth is not None:
        params["bandwidth"] = args.bandwidth
    elif "bandwidth" in _kernel_parameters(args.kernel):
        params["bandwidth"] = "auto"
    if args.n_components > min(A.shape):
        raise InputError(f"--n-components {args.n_components} exceeds min(shape) = "
                         f"{min(A.shape)} of the input")
    model = KernelSVD(args.n_components, kernel=args.kernel, kernel_params=params or None,
                      center=args.center, compat=args.compat, solver=args.solver,
                      random_state=args.seed)
    from scipy.sparse.linalg import ArpackNoConvergence

    try:
        model.fit(A)
    except (ValueError, TypeError, OverflowError, FloatingPointError) as exc:
        raise InputError(_one_line(exc)) from exc
    except ArpackNoConvergence as exc:
        raise InputError(f"the SVD solver did not converge ({_one_line(exc)}): the leading "
                         "singular values are nearly equal, as with too small a bandwidth; try "
                         "a larger --bandwidth or --solver randomized / dense") from exc
    left, right = model.embeddings()
    if ids is None:  # a matrix file: rows and columns are numbered from 0
        ids = np.arange(A.shape[0], dtype=np.int64)
    col_ids = ids if A.shape[0] == A.shape[1] else np.arange(A.shape[1], dtype=np.int64)

    def write(tmp):
        if out.suffix.lower() == ".npz":
            with open(tmp, "wb") as fh:
                np.savez(fh, left=left, right=right, singular_values=model.singular_values_,
                         row_ids=ids, col_ids=col_ids)
        else:
            import csv

            r_ = left.shape[1]
            with open(tmp, "w", encoding="utf-8", newline="") as fh:
                rows = csv.writer(fh, lineterminator="\n")  # ids with a comma or quote: quoted
                rows.writerow(["node"] + [f"left_{i}" for i in range(r_)]
                              + [f"right_{i}" for i in range(r_)])
                for node, lv, rv in zip(ids, left, right):
                    rows.writerow([node, *(f"{v:.10g}" for v in np.concatenate([lv, rv]))])

    _atomic_write(out, write)
    bw = f", bandwidth {model.bandwidth_:.4g}" if getattr(model, "bandwidth_", None) else ""
    print(f"wrote {out} (rows {left.shape}, columns {right.shape}{bw}, "
          f"singular values {np.array2string(model.singular_values_[:5], precision=4)}...)")
    return 0


# ----------------------------------------------------------------------------------- others
def _experiment_name(run) -> str | None:
    """The registered name of an experiment's ``run`` function (None for another callable)."""
    from .experiments import REGISTRY

    module = getattr(run, "__module__", "")
    for name, (mod, func, _) in REGISTRY.items():
        if module == f"asymkern.experiments.{mod}" and getattr(run, "__name__", "") == func:
            return name
    return None


def parse_params(items: list[str] | None, run) -> dict:
    """``KEY=VALUE`` options of ``reproduce --param`` → keyword arguments of the experiment.

    Parsed and checked in one place, the experiment's typed schema
    (:data:`asymkern.experiments.params.SCHEMAS`): an integer option takes an integer within
    its range, a float option a finite number within its range, a boolean option true/false, a
    list option (``datasets=spambase,monks-1``) comma-separated names among the allowed ones or
    numbers within range; ``KEY=None`` keeps the option's default. Keys must be options of the
    experiment other than the common ones (``quick``, ``data_dir``, ``out``, ``seed``: flags).

    Raises
    ------
    InputError
        Naming the option and its allowed values (exit status 2).
    """
    from .experiments.params import parse_experiment_params

    name = _experiment_name(run)
    if name is None:
        raise InputError(f"{run!r} is not a registered experiment")
    try:
        return parse_experiment_params(name, items)
    except ValueError as exc:
        raise InputError(_one_line(exc)) from exc


#: experiments that write no figure into ``--out`` (only their Markdown table)
_NO_FIGURES = frozenset({"askls-nodes", "askls-uci", "askls-kl"})


def _writes_figures(name: str, run, extra: dict) -> bool:
    """Whether ``reproduce name --out DIR`` with the options ``extra`` writes figures.

    Parameters
    ----------
    name : str
        The experiment's registered name.
    run : callable
        Its ``run`` function (for the default of nystrom-solvers' ``parts``).
    extra : dict
        The parsed ``-p`` options.

    Returns
    -------
    bool
        False for the experiments of :data:`_NO_FIGURES` and for nystrom-solvers without its
        figure parts ('gamma', 'f1'); True otherwise.
    """
    if name in _NO_FIGURES:
        return False
    if name == "nystrom-solvers":
        import inspect

        parts = extra.get("parts", inspect.signature(run).parameters["parts"].default)
        return bool({"gamma", "f1"} & set(parts))
    return True


def _check_matplotlib() -> None:
    """Refuse, before any computation, a run that will write figures without matplotlib.

    Raises
    ------
    InputError
        Naming ``--out`` and the ``[plot]`` extra when matplotlib (or its Agg canvas, which the
        figures are drawn with) cannot be imported.
    """
    try:
        import matplotlib.figure  # noqa: F401
        from matplotlib.backends import backend_agg  # noqa: F401
    except ImportError as exc:
        raise InputError("--out: this experiment writes PNG figures, which need the optional "
                         f"dependency matplotlib ({_one_line(exc)}); install the plot extra, "
                         "pip install 'asymkern[plot]', or leave out --out to print the "
                         "tables only") from exc


def _remove_empty(folders: list[Path]) -> None:
    """Remove each of ``folders`` (deepest first) that is empty; keep the others.

    Parameters
    ----------
    folders : list of pathlib.Path
        The folders a failed run created, each listed before its parent.
    """
    for folder in folders:
        try:
            folder.rmdir()
        except FileNotFoundError:
            continue
        except OSError:  # not empty: something else wrote there, so its parents stay too
            return


def _options_text(extra: dict) -> str:
    """The sentence that records a run's ``-p`` options in its report.

    Parameters
    ----------
    extra : dict
        The parsed ``-p`` options (non-empty).

    Returns
    -------
    str
        E.g. ``"Options of this run (-p): datasets=monks-1, n_repeats=2."``.
    """
    def text(v) -> str:
        if isinstance(v, bool):
            return str(v).lower()
        return ",".join(map(str, v)) if isinstance(v, tuple) else str(v)

    return ("Options of this run (-p): "
            + ", ".join(f"{k}={text(v)}" for k, v in extra.items()) + ".")


def cmd_demo(args) -> int:
    from .demo import run_demo

    print(run_demo(seed=args.seed, quick=args.quick))
    return 0


def cmd_reproduce(args) -> int:
    from .datasets import DataNotFoundError
    from .experiments import REGISTRY, get_experiment

    if args.name and args.name not in REGISTRY:  # also with --list: never ignored silently
        raise InputError(f"unknown experiment {args.name!r}; available: "
                         f"{', '.join(sorted(REGISTRY))}")
    if args.list or not args.name:  # --list NAME: that experiment's line only
        given = [opt for opt, on in (("--quick", args.quick), ("--out", args.out is not None),
                                     ("--data-dir", args.data_dir is not None),
                                     ("--seed", args.seed != 0), ("--progress", args.progress),
                                     ("-p", bool(args.param))) if on]
        if given:  # a run's options without a run: the name was forgotten, say so
            raise InputError(f"{', '.join(given)} given without an experiment to run"
                             + (" (--list only lists)" if args.list else "")
                             + "; usage: asymkern reproduce NAME [options] (asymkern reproduce "
                             "lists the names)")
        for name, (_, _, desc) in sorted(REGISTRY.items()):
            if name == args.name or not args.name:
                print(f"{name:22s} {desc}")
        return 0
    if args.name not in REGISTRY:
        raise InputError(f"unknown experiment {args.name!r}; available: "
                         f"{', '.join(sorted(REGISTRY))}")
    if args.data_dir is not None and not Path(args.data_dir).expanduser().is_dir():
        raise InputError(f"--data-dir {args.data_dir!r} is not a directory")
    env = os.environ.get("ASYMKERN_DATA")
    if args.data_dir is None and env and not Path(env).expanduser().is_dir():
        raise InputError(f"ASYMKERN_DATA={env!r} is not a directory (set it to the datasets "
                         "folder, unset it, or pass --data-dir)")
    run = get_experiment(args.name)
    extra = parse_params(args.param, run)
    out = Path(args.out) if args.out else None
    if out is not None:
        if out.exists() and not out.is_dir():
            raise InputError(f"--out {str(out)!r} is a file; give a folder")
        _check_folder(out, "--out")
        if _writes_figures(args.name, run, extra):
            _check_matplotlib()
    if args.progress:
        from .config import set_config

        try:
            set_config(show_progress=True)
        except ImportError as exc:  # tqdm is optional
            raise InputError(f"--progress: {_one_line(exc)}") from exc
    staging = None
    created: list[Path] = []  # the folders this run makes for its outputs, deepest first
    if out is not None:
        created = ([out] if not out.exists() else []) + _missing_folders(out)
        try:
            out.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=out))
        except OSError as exc:
            _remove_empty(created)
            raise InputError(f"--out: cannot create {str(out)!r}: "
                             f"{exc.strerror or _one_line(exc)}") from exc
    moved: list[Path] = []  # outputs already renamed into --out
    try:
        report = run(quick=args.quick, data_dir=args.data_dir, out=staging, seed=args.seed,
                     **extra)
        if extra:
            report.protocol = (report.protocol + " " if report.protocol else "") + \
                _options_text(extra)
        print(report.to_markdown())
        if out is not None:
            # the table is written beside the figures, then everything is renamed into place,
            # the table last: nothing half-written is left behind
            assert staging is not None  # made above whenever out is given
            table = report.write(staging, args.name)
            for f in sorted(staging.iterdir(), key=lambda f: f == table):
                os.replace(f, out / f.name)
                moved.append(out / f.name)
            staging.rmdir()
            print(f"wrote {out / table.name}")
    except BaseException as exc:  # also Ctrl-C and SIGTERM (see main)
        if staging is not None:
            for f in moved:
                with contextlib.suppress(OSError):
                    f.unlink()
            shutil.rmtree(staging, ignore_errors=True)
            _remove_empty(created)
        if isinstance(exc, DataNotFoundError):
            raise InputError(_one_line(exc)) from exc
        raise
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``asymkern: error: ...`` and exit status 2."""

    #: the subcommands' parsers by name (set by :func:`build_parser`), so that an unknown
    #: option after a subcommand is reported by that subcommand's parser
    commands: dict = {}

    def error(self, message):  # noqa: D401 - argparse API
        sub = self.prog.split(" ", 1)[1] if " " in self.prog else ""
        where = f"{sub}: " if sub else ""
        print(f"asymkern: error: {where}{' '.join(message.split())} (see "
              f"'{self.prog} --help')", file=sys.stderr)
        raise SystemExit(2)


class _Formatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows every default, except for options that have none to show."""

    def _get_help_string(self, action):
        h = action.help or ""
        if "(default" in h or action.default is None or action.default is False or \
                action.default is argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
            return h
        return h + " (default: %(default)s)"


def build_parser() -> _Parser:
    p = _Parser(
        prog="asymkern",
        description="Learning with asymmetric kernels: KSVD, asymmetric Nystrom, AsK-LS, "
        "RKHS operator SVD, Nystrom kernel machines.",
        formatter_class=_Formatter,
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}",
                   help="print the version of asymkern and exit")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    d = sub.add_parser("demo", help="why direction matters: SVD/KPCA/KSVD on a directed graph "
                       "and a scikit-learn dataset (no downloads, under a minute)",
                       formatter_class=_Formatter)
    d.add_argument("--seed", type=_seed_int, default=0, help="random seed")
    d.add_argument("--quick", action="store_true", help="smaller graph (default: off)")
    d.set_defaults(func=cmd_demo)

    e = sub.add_parser("embed", help="KSVD embeddings of a directed graph or data matrix",
                       formatter_class=_Formatter)
    e.add_argument("input", help="edge list (src,dst[,weight]; a repeated edge adds its "
                   "weights; '#' comments; the first line is skipped as a header when none of "
                   "its fields is a number while every other node id is, or when its fields are "
                   "column names such as source,target,weight that are not node ids of other "
                   "lines; otherwise it is an edge) or matrix file "
                   "(.npy, .npz sparse, .mtx, dense text (.csv, .txt) with --format matrix)")
    e.add_argument("--out", required=True, help="(required) output .npz (left, right, "
                   "singular_values, row_ids, col_ids: row k of left/right is node row_ids[k]; "
                   "integer ids as integers in numeric order, other ids in input order) or .csv "
                   "(node, left_*, right_*)")
    e.add_argument("--format", default="auto", choices=["auto", "edges", "matrix", "npy", "npz",
                                                          "mtx"],
                   help="input format; auto: by suffix (.npy, .npz, .mtx), else an edge list")
    e.add_argument("--sep", default="auto", choices=list(SEPARATORS),
                   help="field separator of an edge list or a dense text matrix; auto: comma, "
                   "tab or spaces")
    e.add_argument("--edge-direction", default="src-dst", choices=["src-dst", "dst-src"],
                   help="column order of an edge list: src-dst (source then target) or "
                   "dst-src (target first, as in citation files listing the cited paper first)")
    e.add_argument("--kernel", default="sne", help="kernel name (sne, rbf, t, linear, ...)")
    e.add_argument("--bandwidth", type=_bandwidth_arg, default=None,
                   help="bandwidth γ of exp(-||x-z||²/γ²) (rbf, sne): a number, 'median' (median "
                   "distance between rows and columns) or 'auto' (8 x the median distance; "
                   "measured in docs/results/embed_defaults.md) (default: auto for kernels with "
                   "a bandwidth)")
    e.add_argument("--gamma", type=_positive_float, default=None,
                   help="kernel gamma (scikit-learn style), instead of --bandwidth "
                   "(default: unset)")
    e.add_argument("-r", "--n-components", type=_positive_int, default=16,
                   help="number of singular triplets")
    e.add_argument("--solver", default="auto",
                   choices=["auto", "dense", "arpack", "randomized", "block_krylov", "nystrom"],
                   help="SVD solver (block_krylov: randomized block Krylov iteration)")
    e.add_argument("--normalize", default="row", choices=["row", "none"],
                   help="row: use D^-1(A+I) as in Tao et al. (2024) (needs non-negative weights); "
                   "none: the matrix as given")
    e.add_argument("--no-self-loops", action="store_true",
                   help="with --normalize row: D^-1 A (default: off)")
    e.add_argument("--center", action=argparse.BooleanOptionalAction, default=True,
                   help="centre both feature maps (Tao et al., 2024, §2.2); --no-center keeps the "
                   "trivial leading component of a row-normalised kernel")
    e.add_argument("--compat", default="pca", type=str.lower,
                   choices=["pca", "polar", "pinv", "random", "a1", "a1c", "a0", "a2"],
                   help="compatibility for non-square matrices: "
                   "pca (a1), polar (a1c: a1 corrected), pinv (a0), random (a2)")
    e.add_argument("--seed", type=_seed_int, default=0, help="random seed")
    e.set_defaults(func=cmd_embed)

    r = sub.add_parser("reproduce", help="reproduce a paper table/figure (see --list)",
                       formatter_class=_Formatter)
    r.add_argument("name", nargs="?", help="experiment name (default: list them)")
    r.add_argument("--list", action="store_true", help="list the experiments (default: off)")
    r.add_argument("--quick", action="store_true", help="small, fast version (default: off)")
    r.add_argument("--data-dir", default=None,
                   help="datasets folder (default: $ASYMKERN_DATA or ../shared/data)")
    r.add_argument("--out", default=None,
                   help="folder for the Markdown table and PNG figures (default: print only)")
    r.add_argument("--seed", type=_seed_int, default=0, help="random seed")
    r.add_argument("--progress", action="store_true",
                   help="show progress bars (default: off; needs tqdm)")
    r.add_argument("-p", "--param", action="append", metavar="KEY=VALUE",
                   help="experiment option, repeatable (e.g. askls-uci: -p n_repeats=10 "
                   "-p datasets=spambase,monks-1 -p rcond_tol=0); unknown keys list the "
                   "experiment's options (default: none)")
    r.set_defaults(func=cmd_reproduce)
    p.commands = {"demo": d, "embed": e, "reproduce": r}
    return p


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, ``timeout``), raised in the main thread like Ctrl-C, so that a run
    removes its partial outputs on the way out; :func:`main` then exits with status 143."""


def _raise_terminated(signum, frame):
    raise Terminated()


@contextlib.contextmanager
def _sigterm_raises():
    """Within the block, SIGTERM raises :class:`Terminated` in the main thread.

    Elsewhere (a thread other than the main one, a platform without SIGTERM) the block runs
    with the handler as it was; the previous handler is restored on leaving.
    """
    previous = None
    installed = False
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "SIGTERM"):
        try:
            previous = signal.signal(signal.SIGTERM, _raise_terminated)
            installed = True
        except (ValueError, OSError):  # pragma: no cover - e.g. an embedded interpreter
            pass
    try:
        yield
    finally:
        if installed:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def _show_warning(message, category, filename, lineno, file=None, line=None):
    print(f"asymkern: warning: {' '.join(str(message).split())}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra:  # reported by the subcommand they follow ("demo: unrecognized ...")
            owner = parser.commands.get(getattr(args, "command", None) or "", parser)
            owner.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # a one-line usage error (2); --help exits 0 as argparse does
        if exc.code in (0, None):
            raise
        return 2
    if not getattr(args, "func", None):  # the usage on stderr, then the one error line
        parser.print_help(sys.stderr)
        print("asymkern: error: a command is required: demo, embed or reproduce",
              file=sys.stderr)
        return 2
    debug = bool(os.environ.get("ASYMKERN_DEBUG"))
    with warnings.catch_warnings():
        # once per source line and run; setting a filter also resets the registries of
        # warnings already shown in this process (a library user calling main() twice)
        warnings.simplefilter("default", UserWarning)
        warnings.simplefilter("default", RuntimeWarning)
        if not debug:
            warnings.showwarning = _show_warning
        try:
            with _sigterm_raises():
                return int(args.func(args) or 0)
        except InputError as exc:
            msg = _one_line(exc)
        except BrokenPipeError:  # output piped into e.g. `head`: stop quietly
            with contextlib.suppress(OSError, ValueError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 141
        except MemoryError:
            msg = "not enough memory for this input and these options (try fewer components " \
                  "or --solver randomized)"
        except (OSError, ValueError, TypeError, OverflowError, FloatingPointError) as exc:
            # an overflow from the input's magnitude is the input's error, as a ValueError
            if debug:
                raise
            msg = _one_line(exc)
        except Terminated:  # SIGTERM: outputs cleaned up on the way (cmd_reproduce)
            print("asymkern: terminated", file=sys.stderr)
            return 143
        except KeyboardInterrupt:  # pragma: no cover
            print("asymkern: interrupted", file=sys.stderr)
            return 130
        except Exception as exc:  # an internal error: still one line, status 1
            if debug:
                raise
            print(f"asymkern: error: internal error {type(exc).__name__}: {_one_line(exc)} "
                  "(rerun with ASYMKERN_DEBUG=1 for the traceback)", file=sys.stderr)
            return 1
    print(f"asymkern: error: {msg}", file=sys.stderr)
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
