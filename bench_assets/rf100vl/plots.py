"""Small plots for asset metadata (rendered to PNG and embedded as markdown)."""

from __future__ import annotations

import base64
import io
from typing import Any


def png_markdown(png: bytes, alt: str) -> str:
    return f"![{alt}](data:image/png;base64,{base64.b64encode(png).decode()})"


def training_curves(epochs: list[dict[str, Any]], title: str, best_epoch: int | None) -> bytes:
    """Loss and valid mAP per epoch, the best epoch marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [e["epoch"] for e in epochs]
    fig, ax1 = plt.subplots(figsize=(6.4, 3.2), dpi=100)
    ax1.plot(xs, [e.get("train_loss") for e in epochs], color="tab:red", marker=".", label="train loss")
    ax1.set_xlabel("epoch")
    ax1.set_ylabel("train loss", color="tab:red")
    ax2 = ax1.twinx()
    ax2.plot(xs, [e.get("valid_mAP50_95") for e in epochs], color="tab:blue", marker=".", label="valid mAP50-95")
    ax2.plot(xs, [e.get("valid_mAP50") for e in epochs], color="tab:cyan", marker=".", label="valid mAP50")
    ax2.set_ylabel("valid mAP", color="tab:blue")
    if best_epoch:
        ax2.axvline(best_epoch, color="gray", linestyle="--", linewidth=1)
    ax2.legend(loc="lower right", fontsize=8)
    ax1.set_title(title, fontsize=10)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()
