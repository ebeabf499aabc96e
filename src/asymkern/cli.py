"""The ``asymkern`` command: ``demo``, ``embed``, ``reproduce``.

Exit status: 0 on success, 2 on bad input (missing or malformed file, unknown experiment or
dataset, bad option), 1 on an unexpected failure. Errors print one line, ``asymkern: error: ...``,
to stderr; outputs are written to a temporary file and renamed, so nothing is left half-written.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp


class InputError(Exception):
    """Bad user input: reported in one line with exit status 2."""


# ------------------------------------------------------------------------------------- embed
def read_graph_or_matrix(path: Path, fmt: str = "auto"):
    """Read an edge list (``src,dst[,weight]`` per line; comma, tab or space separated; '#'
    comments and one header line allowed) or a matrix file (.npy, .npz, .mtx, dense .csv).

    Returns (matrix as CSR or ndarray, node ids or None).
    """
    if not path.exists():
        raise InputError(f"input file {str(path)!r} does not exist")
    suffix = path.suffix.lower()
    if fmt == "auto":
        fmt = {".npy": "npy", ".npz": "npz", ".mtx": "mtx"}.get(suffix, "edges")
    if fmt == "npy":
        try:
            return np.load(path, allow_pickle=False), None
        except Exception as exc:
            raise InputError(f"cannot read {path.name} as .npy: {exc}") from exc
    if fmt == "npz":
        try:
            return sp.load_npz(path).tocsr(), None
        except Exception as exc:
            raise InputError(f"cannot read {path.name} as a scipy sparse .npz: {exc}") from exc
    if fmt == "mtx":
        import scipy.io

        try:
            return sp.csr_matrix(scipy.io.mmread(path)), None
        except Exception as exc:
            raise InputError(f"cannot read {path.name} as Matrix Market: {exc}") from exc
    if fmt == "matrix":
        try:
            return np.loadtxt(path, delimiter="," if suffix == ".csv" else None, ndmin=2), None
        except Exception as exc:
            raise InputError(f"cannot read {path.name} as a dense matrix: {exc}") from exc
    if fmt != "edges":
        raise InputError(f"unknown --format {fmt!r}")
    src, dst, w = [], [], []
    header_words = {"source", "target", "src", "dst", "from", "to", "weight", "u", "v", "node1",
                    "node2", "id1", "id2", "citing", "cited"}
    first = True
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.replace(",", " ").replace("\t", " ").split()
            if first and all(p.lower() in header_words for p in parts):
                first = False
                continue  # a header line such as "source,target[,weight]"
            first = False
            if len(parts) not in (2, 3):
                raise InputError(
                    f"{path.name}:{lineno}: malformed edge line {line!r}; expected 'src dst' or "
                    "'src dst weight'"
                )
            weight = 1.0
            if len(parts) == 3:
                try:
                    weight = float(parts[2])
                except ValueError:
                    weight = float("nan")
                if not np.isfinite(weight):
                    raise InputError(f"{path.name}:{lineno}: edge weight {parts[2]!r} is not a "
                                     "finite number")
            src.append(parts[0])
            dst.append(parts[1])
            w.append(weight)
    if not src:
        raise InputError(f"{path.name} contains no edges")
    ids = sorted(set(src) | set(dst), key=lambda s: (len(s), s) if s.isdigit() else (1e9, s))
    index = {v: i for i, v in enumerate(ids)}
    n = len(ids)
    A = sp.csr_matrix((w, ([index[s] for s in src], [index[d] for d in dst])), shape=(n, n))
    return A, np.array(ids)


def _atomic_write(path: Path, writer) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix)
    os.close(fd)
    try:
        writer(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def cmd_embed(args) -> int:
    from .datasets.graphs import row_normalized_adjacency
    from .decomposition import KernelSVD

    out = Path(args.out)
    if out.suffix.lower() not in (".npz", ".csv"):
        raise InputError(f"--out must end in .npz or .csv, got {out.name!r}")
    A, ids = read_graph_or_matrix(Path(args.input), args.format)
    if args.normalize == "row":
        if A.shape[0] != A.shape[1]:
            raise InputError(f"--normalize row needs a square adjacency, got shape {A.shape}")
        A = row_normalized_adjacency(A, self_loops=not args.no_self_loops)
    params = {}
    if args.bandwidth is not None:
        params["bandwidth"] = args.bandwidth
    if args.gamma is not None:
        params["gamma"] = args.gamma
    r = min(args.n_components, min(A.shape))
    if args.n_components > min(A.shape):
        raise InputError(
            f"--n-components {args.n_components} exceeds min(shape) = {min(A.shape)} of the input"
        )
    model = KernelSVD(r, kernel=args.kernel, kernel_params=params or None, center=args.center,
                      compat=args.compat, solver=args.solver, random_state=args.seed)
    try:
        model.fit(A)
    except (ValueError, TypeError) as exc:
        raise InputError(str(exc)) from exc
    left, right = model.embeddings()
    if out.suffix.lower() == ".csv" and A.shape[0] != A.shape[1]:
        raise InputError("--out .csv needs a square input (one row per node); use .npz")
    if ids is None:
        ids = np.arange(A.shape[0]).astype(str)
    col_ids = ids if A.shape[0] == A.shape[1] else np.arange(A.shape[1]).astype(str)

    def write(tmp):
        if out.suffix.lower() == ".npz":
            with open(tmp, "wb") as fh:
                np.savez(fh, left=left, right=right, singular_values=model.singular_values_,
                         row_ids=ids, col_ids=col_ids)
        else:
            r_ = left.shape[1]
            header = ",".join(["node"] + [f"left_{i}" for i in range(r_)]
                              + [f"right_{i}" for i in range(r_)])
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(header + "\n")
                for k in range(left.shape[0]):
                    vals = np.concatenate([left[k], right[k]])
                    fh.write(ids[k] + "," + ",".join(f"{v:.10g}" for v in vals) + "\n")

    _atomic_write(out, write)
    print(f"wrote {out} (rows {left.shape}, columns {right.shape}, "
          f"singular values {np.array2string(model.singular_values_[:5], precision=4)}...)")
    return 0


# ----------------------------------------------------------------------------------- others
def parse_params(items: list[str] | None, run) -> dict:
    """``KEY=VALUE`` options of ``reproduce --param`` → keyword arguments of the experiment.

    VALUE is read as a Python literal (``10``, ``0.0``, ``None``, ``[1, 2]``); otherwise a value
    with commas becomes a tuple of strings (``datasets=spambase,monks-1``) and anything else
    stays a string (a one-element tuple for ``datasets`` and other list-valued options).
    Keys must be keyword parameters of ``run`` other than the common ones.
    """
    import ast
    import inspect

    if not items:
        return {}
    params = inspect.signature(run).parameters
    reserved = {"quick", "data_dir", "out", "seed"}
    allowed = sorted(k for k, v in params.items() if k not in reserved
                     and v.kind in (v.POSITIONAL_OR_KEYWORD, v.KEYWORD_ONLY))
    kwargs = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise InputError(f"--param expects KEY=VALUE, got {item!r}")
        if key not in allowed:
            raise InputError(f"--param {key!r} is not an option of this experiment; "
                             f"options: {', '.join(allowed) or '(none)'}")
        try:
            value = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            value = tuple(x.strip() for x in raw.split(",")) if "," in raw else raw
        default = params[key].default
        if isinstance(value, str) and (key == "datasets" or isinstance(default, (tuple, list))):
            value = (value,)  # one name for a list-valued option
        kwargs[key] = value
    return kwargs


def cmd_demo(args) -> int:
    from .demo import run_demo

    print(run_demo(seed=args.seed, quick=args.quick))
    return 0


def cmd_reproduce(args) -> int:
    from .datasets import DataNotFoundError
    from .experiments import REGISTRY, get_experiment

    if args.list or not args.name:
        for name, (_, _, desc) in sorted(REGISTRY.items()):
            print(f"{name:22s} {desc}")
        return 0
    if args.name not in REGISTRY:
        raise InputError(
            f"unknown experiment {args.name!r}; available: {', '.join(sorted(REGISTRY))}"
        )
    if args.data_dir is not None and not Path(args.data_dir).is_dir():
        raise InputError(f"--data-dir {args.data_dir!r} is not a directory")
    run = get_experiment(args.name)
    extra = parse_params(args.param, run)
    if args.progress:
        from .config import set_config

        set_config(show_progress=True)
    out = Path(args.out) if args.out else None
    staging = None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=out))
    try:
        report = run(quick=args.quick, data_dir=args.data_dir, out=staging, seed=args.seed,
                     **extra)
    except BaseException as exc:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        if isinstance(exc, DataNotFoundError):
            raise InputError(str(exc)) from exc
        raise
    print(report.to_markdown())
    if out is not None:
        # move figures then the table into place: nothing half-written is left behind
        for f in list(staging.iterdir()):
            os.replace(f, out / f.name)
        staging.rmdir()
        path = report.write(out, args.name)
        print(f"wrote {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="asymkern",
        description="Learning with asymmetric kernels: KSVD, asymmetric Nystrom, AsK-LS, "
        "RKHS operator SVD, Nystrom kernel machines.",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    d = sub.add_parser("demo", help="why direction matters: SVD/KPCA/KSVD on a directed graph "
                       "and a scikit-learn dataset (no downloads, under a minute)")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--quick", action="store_true", help="smaller graph")
    d.set_defaults(func=cmd_demo)

    e = sub.add_parser("embed", help="KSVD embeddings of a directed graph or data matrix")
    e.add_argument("input", help="edge list (src,dst[,weight]) or matrix file "
                   "(.npy, .npz sparse, .mtx, dense .csv with --format matrix)")
    e.add_argument("--out", required=True, help="output .npz (left, right, singular_values, "
                   "row_ids, col_ids) or .csv (node, left_*, right_*)")
    e.add_argument("--format", default="auto", choices=["auto", "edges", "matrix", "npy", "npz",
                                                          "mtx"])
    e.add_argument("--kernel", default="sne", help="kernel name (sne, rbf, t, linear, ...)")
    e.add_argument("--bandwidth", type=float, default=None,
                   help="paper bandwidth γ: exp(-||x-z||²/γ²) (rbf, sne)")
    e.add_argument("--gamma", type=float, default=None, help="kernel gamma (scikit-learn style)")
    e.add_argument("-r", "--n-components", type=int, default=16)
    e.add_argument("--solver", default="auto",
                   choices=["auto", "dense", "arpack", "randomized", "nystrom"])
    e.add_argument("--normalize", default="row", choices=["row", "none"],
                   help="row: use D^-1(A+I) as in paper 000 (default)")
    e.add_argument("--no-self-loops", action="store_true", help="with --normalize row: D^-1 A")
    e.add_argument("--center", action="store_true", help="centre both feature maps")
    e.add_argument("--compat", default="pca", help="compatibility for non-square matrices: "
                   "pca (a1), pinv (a0), random (a2)")
    e.add_argument("--seed", type=int, default=0)
    e.set_defaults(func=cmd_embed)

    r = sub.add_parser("reproduce", help="reproduce a paper table/figure (see --list)")
    r.add_argument("name", nargs="?", help="experiment name")
    r.add_argument("--list", action="store_true", help="list the experiments")
    r.add_argument("--quick", action="store_true", help="small, fast version")
    r.add_argument("--data-dir", default=None,
                   help="datasets folder (default: $ASYMKERN_DATA or ../shared/data)")
    r.add_argument("--out", default=None, help="folder for the Markdown table and PNG figures")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--progress", action="store_true", help="show progress bars")
    r.add_argument("-p", "--param", action="append", metavar="KEY=VALUE",
                   help="experiment option, repeatable (e.g. askls-uci: -p n_repeats=10 "
                   "-p datasets=spambase,monks-1 -p rcond_tol=0); unknown keys list the "
                   "experiment's options")
    r.set_defaults(func=cmd_reproduce)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except InputError as exc:
        print(f"asymkern: error: {exc}", file=sys.stderr)
        return 2
    except (FileNotFoundError, ValueError) as exc:
        print(f"asymkern: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # pragma: no cover
        print("asymkern: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
