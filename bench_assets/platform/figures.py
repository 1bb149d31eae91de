"""Matplotlib helpers every report plot shares: a headless figure, deterministic PNG bytes, one style."""

from __future__ import annotations

import io
from typing import Any


def figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure  # no pyplot: no global state, no GUI backend

    return Figure(figsize=(width, height), layout="constrained")


def png(fig: Any, dpi: int) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})  # no version tag: same bytes every run
    return buf.getvalue()


def plot_context() -> Any:
    import matplotlib.style

    # The built-in style whatever matplotlibrc says, and no mathtext: a "$" in a name is just a character.
    return matplotlib.style.context(["default", {"text.parse_math": False, "font.size": 9}])
