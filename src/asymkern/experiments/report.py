"""The report every experiment returns: tables, notes and figures, written as Markdown."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


def _timed(fn, *args, **kwargs):
    """``(seconds, fn(*args, **kwargs))``: a call and its wall-clock time."""
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - t, out


def _fmt(v) -> str:
    if isinstance(v, (float, np.floating)):
        return f"{v:.4g}" if np.isfinite(v) else "—"
    return str(v)


def markdown_table(rows: list[dict], columns: list[str] | None = None) -> str:
    """Render a list of dicts as a GitHub Markdown table."""
    if not rows:
        return "_(no rows)_\n"
    columns = columns or list(rows[0])
    out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        out.append("| " + " | ".join(_fmt(r.get(c, "")) for c in columns) + " |")
    return "\n".join(out) + "\n"


QUICK_BANNER = (
    "> **Quick run with reduced settings** (`--quick`): smaller data, fewer repeats and smaller "
    "grids than the full protocol. These numbers only exercise the code path; they are not the "
    "results pages' numbers, and neither the full protocol nor the comparisons with the paper "
    "apply to them."
)

#: Resolution of the saved PNG figures (print quality: at least 150 dpi).
FIGURE_DPI = 200


@dataclass
class Report:
    """Result of one experiment: named tables (lists of dict rows), notes, figure paths.

    Parameters
    ----------
    title : str
        The report's title (a level-1 heading).
    tables : dict of str to list of dict, optional
        Named tables, each a list of rows (dicts keyed by column).
    notes : list of str, optional
        Free-text notes (a bulleted list).
    figures : list of str, optional
        Paths of figure files, linked by file name.
    protocol : str, default ''
        How the experiment was run (printed under the title). In a quick report: the quick run's
        own (reduced) settings only, never the full protocol's text.
    quick : bool, default False
        A ``--quick`` run: the Markdown then opens with a banner saying so (reduced settings, not
        the full protocol; the numbers are a smoke test, not comparable with the results pages
        or the paper) and the protocol paragraph is headed "Quick-run settings".

    See Also
    --------
    get_experiment : The experiments that return a Report.

    Examples
    --------
    >>> from asymkern.experiments import Report
    >>> rep = Report("Demo", tables={"scores": [{"method": "a", "acc": 0.91234}]})
    >>> print(rep.to_markdown())
    # Demo
    <BLANKLINE>
    ## scores
    <BLANKLINE>
    | method | acc |
    |---|---|
    | a | 0.9123 |
    <BLANKLINE>
    """

    title: str
    tables: dict[str, list[dict]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)
    protocol: str = ""
    quick: bool = False

    def to_markdown(self) -> str:
        """Render the report as Markdown.

        Returns
        -------
        str
            Title, protocol, one section per table, the notes and the figure links.
        """
        if self.quick:
            parts = [f"# {self.title} (quick run)\n", QUICK_BANNER + "\n"]
        else:
            parts = [f"# {self.title}\n"]
        if self.protocol:
            heading = "Quick-run settings" if self.quick else "Protocol"
            parts.append(f"**{heading}.** {self.protocol}\n")
        for name, rows in self.tables.items():
            parts += [f"## {name}\n", markdown_table(rows)]
        if self.notes:
            parts.append("## Notes\n")
            parts.extend(f"- {n}" for n in self.notes)
            parts.append("")
        for f in self.figures:
            parts.append(f"![{Path(f).stem}]({Path(f).name})\n")
        return "\n".join(parts)

    def write(self, out_dir, name: str) -> Path:
        """Write ``<out_dir>/<name>.md`` atomically (a temp file renamed into place).

        Parameters
        ----------
        out_dir : str or os.PathLike
            The output directory (created when missing).
        name : str
            The file name without ``.md``.

        Returns
        -------
        pathlib.Path
            The path written.
        """
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / f"{name}.md"
        tmp = path.with_suffix(".md.tmp")
        tmp.write_text(self.to_markdown())
        tmp.replace(path)
        return path


def new_figure(nrows: int = 1, ncols: int = 1, *, figsize: tuple[float, float],
               **subplots_kw):
    """An off-screen figure and its axes, drawn by the Agg canvas.

    Neither :mod:`matplotlib.pyplot` nor :func:`matplotlib.use` is involved, so the process-wide
    backend and pyplot's figure registry stay as they were; the figure is freed with its last
    reference (no ``close`` needed).

    Parameters
    ----------
    nrows, ncols : int, default 1
        The grid of axes, as :meth:`matplotlib.figure.Figure.subplots`.
    figsize : tuple of float
        Width and height in inches.
    **subplots_kw
        Passed to :meth:`matplotlib.figure.Figure.subplots` (``squeeze``, ``sharex``, ...).

    Returns
    -------
    fig : matplotlib.figure.Figure
        The figure; save it with :func:`save_figure`.
    axes : matplotlib.axes.Axes or numpy.ndarray of them
        As :meth:`matplotlib.figure.Figure.subplots` returns them.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig, fig.subplots(nrows, ncols, **subplots_kw)


def ours_vs_paper_bars(ax, labels, ours, err, paper, ours_label: str,
                       paper_label: str = "paper", capsize: float = 3, **tick_kw) -> None:
    """Draw our values (with error bars) beside the paper's, one pair of bars per label.

    The layout every "ours vs paper" figure of the experiments shares: bars 0.4 wide at x ∓ 0.2,
    the labels as x ticks, the legend in the upper left corner (font size 7).

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes to draw on.
    labels : list of str
        One tick label per pair of bars.
    ours, err, paper : list of float
        Our values, their error bars, the paper's values (NaN: no bar).
    ours_label : str
        Legend entry of our bars (say what the error bars are).
    paper_label : str, default 'paper'
        Legend entry of the paper's bars.
    capsize : float, default 3
        Length of the error bars' caps (points).
    **tick_kw
        Passed to :meth:`matplotlib.axes.Axes.set_xticks` (``rotation``, ``fontsize``).
    """
    x = np.arange(len(labels))
    ax.bar(x - 0.2, ours, 0.4, yerr=err, capsize=capsize, label=ours_label)
    ax.bar(x + 0.2, paper, 0.4, label=paper_label)
    ax.set_xticks(x, labels, **tick_kw)
    ax.legend(fontsize=7, loc="upper left")


def save_figure(fig, out, name: str, *, svg: bool = False) -> str:
    """Save ``fig`` as ``<out>/<name>`` (a PNG at :data:`FIGURE_DPI` dpi), the one way
    experiments write figures.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure (e.g. from :func:`new_figure`).
    out : str or os.PathLike
        The output directory (created when missing).
    name : str
        The file name, ending in ``.png``.
    svg : bool, default False
        Also write a vector copy ``<name>.svg`` beside the PNG (the Markdown links the PNG).

    Returns
    -------
    str
        The PNG's path.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / name
    if path.suffix != ".png":
        raise ValueError(f"figure name must end in .png, got {name!r}")
    fig.savefig(path, dpi=FIGURE_DPI, bbox_inches="tight")
    if svg:
        fig.savefig(path.with_suffix(".svg"), bbox_inches="tight")
    return str(path)
