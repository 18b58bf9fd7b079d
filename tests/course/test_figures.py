"""`figures`: every key figure of the lessons is written as a non-empty PNG (--quick here)."""

import subprocess
import sys

import pytest

pytest.importorskip("matplotlib")

from numpy_transformer.course.lessons import figures     # noqa: E402

NAMES = ["positional_encoding", "masks", "gradient_norms_depth", "kv_cache_bytes",
         "noam_schedule", "attention_cross", "attention_encoder_self", "attention_decoder_self"]


def check_pngs(folder):
    for name in NAMES:
        path = folder / f"{name}.png"
        assert path.is_file(), f"{path} is missing"
        data = path.read_bytes()
        assert len(data) > 1000 and data[:8] == b"\x89PNG\r\n\x1a\n", path


@pytest.mark.slow
def test_figures_command_writes_every_png(tmp_path):
    out = tmp_path / "figs"
    done = subprocess.run([sys.executable, "-m", "numpy_transformer", "figures", "--quick",
                           "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "8 figures in" in done.stdout
    check_pngs(out)
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{name}.png" for name in NAMES)
    assert sorted(figures.FIGURES) == sorted(f"{name}.png" for name in NAMES)


def test_figure_helpers_return_figures_without_a_path():
    from matplotlib.figure import Figure
    assert isinstance(figures.plot_masks(), Figure)
    assert isinstance(figures.plot_noam_schedules(steps=100), Figure)
    assert isinstance(figures.plot_kv_cache_bytes(points=4), Figure)
    norms = figures.block_gradient_norms(True, 3, seed=0)
    assert norms.shape == (3,) and (norms > 0).all()
    assert isinstance(figures.plot_gradient_norms({False: norms, True: norms}), Figure)


@pytest.mark.slow
def test_figures_by_default_leave_a_clone_s_committed_figures_alone(tmp_path):
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "positional_encoding.png").write_bytes(b"committed")
    done = subprocess.run([sys.executable, "-m", "numpy_transformer", "figures", "--quick"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "figures" / "positional_encoding.png").read_bytes() == b"committed"
    check_pngs(tmp_path / "runs" / "figures")
    assert "runs/figures/positional_encoding.png" in done.stdout


def test_the_depth_figure_labels_its_log_axis_in_plain_numbers_at_both_ends():
    import numpy as np
    curves = {False: np.array([336.6, 900.0, 2030.5]), True: np.array([133.9, 300.0, 493.3])}
    fig = figures.plot_gradient_norms(curves)
    ax = fig.axes[0]
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert labels == ["100", "200", "500", "1,000", "2,000", "5,000"], labels
    assert not [t.get_text() for t in ax.get_yticklabels(minor=True) if t.get_text()]
    assert ax.get_ylim() == (100, 5000)              # both ends labelled, the data inside
