"""Quick-mode reports say so and omit the full protocol; saved figures are print quality."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from asymkern.experiments.report import FIGURE_DPI, QUICK_BANNER, Report
from asymkern.testing import requires_data


def _png_dpi(path) -> float:
    """Horizontal resolution of a PNG from its pHYs chunk (pixels per metre → dpi)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos = 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        if kind == b"pHYs":
            ppu_x, _, unit = struct.unpack(">IIB", data[pos + 8:pos + 17])
            assert unit == 1  # metres
            return ppu_x * 0.0254
        pos += 12 + length
    raise AssertionError(f"{path}: no pHYs chunk")


def test_quick_report_markdown_has_banner_not_protocol_heading():
    rep = Report("Demo", protocol="QUICK RUN: 10 samples.", quick=True)
    md = rep.to_markdown()
    assert md.startswith("# Demo (quick run)")
    assert QUICK_BANNER in md
    assert "**Quick-run settings.** QUICK RUN: 10 samples." in md
    assert "**Protocol.**" not in md
    full = Report("Demo", protocol="Full.").to_markdown()
    assert "**Protocol.** Full." in full and "Quick run" not in full


def test_save_figure_dpi(tmp_path):
    pytest.importorskip("matplotlib")
    from asymkern.experiments.report import new_figure, save_figure

    fig, ax = new_figure(figsize=(2, 1.5))
    ax.plot([0, 1], [0, 1])
    path = save_figure(fig, tmp_path, "demo.png", svg=True)
    assert FIGURE_DPI >= 150
    assert _png_dpi(path) == pytest.approx(FIGURE_DPI, rel=0.01)
    assert (tmp_path / "demo.svg").exists()
    with pytest.raises(ValueError, match=".png"):
        save_figure(fig, tmp_path, "demo.jpg")


def test_operators_covariance_quick(tmp_path):
    pytest.importorskip("matplotlib")
    from asymkern.experiments import operators

    rep = operators.run_covariance(quick=True, out=tmp_path)
    md = rep.to_markdown()
    assert rep.quick and QUICK_BANNER in md
    assert "**Protocol.**" not in md and "QUICK RUN" in rep.protocol
    assert not any("paper" in n for n in rep.notes)  # the paper comparison is a full-run note
    assert rep.figures and all(_png_dpi(f) >= 150 for f in rep.figures)


def test_operators_gyre_quick(tmp_path):
    pytest.importorskip("matplotlib")
    from asymkern.experiments import operators

    rep = operators.run_gyre(quick=True, out=tmp_path)
    md = rep.to_markdown()
    assert rep.quick and md.startswith("# ") and "(quick run)" in md.splitlines()[0]
    assert not any("Centring" in n for n in rep.notes)
    assert rep.figures and all(_png_dpi(f) >= 150 for f in rep.figures)
    assert np.isfinite(rep.tables["Leading singular values (canonical correlations)"][0]["σ_1"])


@requires_data("bcot/dblp/DBLP.mat")
def test_ksvd_biclustering_quick_omits_full_protocol(tmp_path):
    pytest.importorskip("matplotlib")
    from asymkern.experiments import ksvd_biclustering as bic

    rep = bic.run(quick=True, out=tmp_path)
    md = rep.to_markdown()
    assert QUICK_BANNER in md and "200 random documents of dblp" in md
    assert "Data: BCOT benchmarks as stored" not in md  # the full protocol's paragraph
    assert "The paper does not give" not in md
    assert rep.figures and all(_png_dpi(f) >= 150 for f in rep.figures)
