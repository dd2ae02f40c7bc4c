"""What every PNG figure of the report shares: the Agg canvas (no display, no pyplot state),
the resolution, files without a creation stamp (the same data gives the same bytes), the
"no data" image, and the short label a model spec gets in a plot."""

from __future__ import annotations

import io
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from callscope.core.paths import write_bytes_safely
from callscope.core.text import escape_controls

DPI = 100


def short_label(model: str, width: int = 40) -> str:
    """A plot label: ``backend:/long/path/file`` keeps only the file name (a label with a
    space is no such spec and keeps its text); long labels are cut from the left; control
    characters as visible escapes (no missing-glyph warning quotes them to the terminal)."""
    model = escape_controls(model, keep_cr=False)
    kind, sep, rest = model.partition(":")
    if sep and "/" in rest and not any(ch.isspace() for ch in model):
        model = f"{kind}:{rest.rstrip('/').rsplit('/', 1)[-1]}"
    return model if len(model) <= width else "…" + model[-(width - 1) :]


def save_png(fig: Figure, path: Path) -> Path:
    """Write ``fig`` to ``path`` as PNG at :data:`DPI`, without the software stamp."""
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    return write_bytes_safely(path, buf.getvalue())  # never through a symbolic link


def empty_png(path: Path, title: str) -> Path:
    """The image of a figure without data: ``<title>: no data``."""
    fig = Figure(figsize=(5, 2))
    ax = fig.add_subplot()
    ax.axis("off")
    ax.text(0.5, 0.5, f"{title}: no data", ha="center", va="center")
    return save_png(fig, path)
