"""Small plots for asset metadata (rendered to PNG and embedded as markdown), sized for the Dagster UI.

matplotlib is imported inside functions: the code location imports this module and must stay light. Figures are
drawn outside pyplot (no global state) in the report's style, with units on every axis and the legend outside
the data, and saved without the Software tag so the same epochs give the same bytes.
"""

from __future__ import annotations

import base64
import math
from typing import Any

from bench_assets.platform.document import blank_figure, figure_png, plot_context

CURVES_SIZE = (7.0, 3.8)  # inches: 700 x 380 px at CURVES_DPI, readable in the UI's metadata panel unscaled
CURVES_DPI = 100
LOSS_LABEL = "train loss (LibreYOLO total, unitless)"
MAP_LABEL = "valid mAP (COCO AP x100, points)"


def png_markdown(png: bytes, alt: str) -> str:
    return f"![{alt}](data:image/png;base64,{base64.b64encode(png).decode()})"


def _value(x: Any, scale: float = 1.0) -> float:
    """A float for plotting; None (not measured that epoch) is a gap in the line."""
    return math.nan if x is None else scale * float(x)


def curve_series(epochs: list[dict[str, Any]]) -> dict[str, list[float]]:
    """What the curves plot draws: epoch numbers, train loss, and valid mAP50-95 / mAP50 as AP x100."""
    return {"epoch": [float(e["epoch"]) for e in epochs],
            "train_loss": [_value(e.get("train_loss")) for e in epochs],
            "valid_mAP50_95": [_value(e.get("valid_mAP50_95"), 100.0) for e in epochs],
            "valid_mAP50": [_value(e.get("valid_mAP50"), 100.0) for e in epochs]}


def curves_figure(epochs: list[dict[str, Any]], title: str, best_epoch: int | None) -> Any:
    """Loss (left axis) and valid mAP (right axis) per epoch, the best epoch marked; one legend for both axes,
    below the plot, so it never covers a line."""
    s = curve_series(epochs)
    fig = blank_figure(*CURVES_SIZE)
    ax1 = fig.add_subplot()
    ax1.plot(s["epoch"], s["train_loss"], color="tab:red", marker=".", label="train loss (left axis)")
    ax1.set_xlabel("epoch")
    ax1.set_ylabel(LOSS_LABEL, color="tab:red")
    ax1.grid(alpha=0.3)
    ax2 = ax1.twinx()
    ax2.plot(s["epoch"], s["valid_mAP50_95"], color="tab:blue", marker=".", label="valid mAP50-95 (right axis)")
    ax2.plot(s["epoch"], s["valid_mAP50"], color="tab:cyan", marker=".", label="valid mAP50 (right axis)")
    ax2.set_ylabel(MAP_LABEL, color="tab:blue")
    if best_epoch:
        ax2.axvline(best_epoch, color="gray", linestyle="--", linewidth=1, label=f"best epoch ({best_epoch})")
    handles = ax1.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize=8)
    ax1.set_title(title, fontsize=10)
    return fig


def training_curves(epochs: list[dict[str, Any]], title: str, best_epoch: int | None) -> bytes:
    """The curves as PNG bytes (see curves_figure)."""
    with plot_context():
        return figure_png(curves_figure(epochs, title, best_epoch), CURVES_DPI)
